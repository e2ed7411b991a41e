/*
 * core/dtype.c - the dtype table (gpuscan/types.h) as NumPy sees it: NumPy dtypes to gs_dtype and
 * back, and their names for messages.
 * Level: core.
 */
#include "core/core.h"

/* NumPy's name of a dtype, from the table's kind letter and storage size ("bool", "int8",
 * "uint16", "float32", ...), made once. */
static char dtype_names[GS_NDTYPES][8];
static char supported[GS_NDTYPES * 9];

static void make_names(void)
{
    static const char *const prefix[] = {
        ['b'] = "bool", ['i'] = "int", ['u'] = "uint", ['f'] = "float"
    };
    size_t used = 0;

    if (dtype_names[0][0] != '\0')
        return;
    for (int t = 0; t < GS_NDTYPES; t++) {
        const char kind = gs_dtype_kind((gs_dtype)t);
        if (kind == 'b')
            snprintf(dtype_names[t], sizeof(dtype_names[t]), "bool");
        else
            snprintf(dtype_names[t], sizeof(dtype_names[t]), "%s%d", prefix[(int)kind],
                     8 * (int)gs_dtype_size((gs_dtype)t));
        used += (size_t)snprintf(supported + used, sizeof(supported) - used, "%s%s",
                                 t > 0 ? ", " : "", dtype_names[t]);
    }
}

const char *gs_dtype_name(gs_dtype t)
{
    make_names();
    return (t >= 0 && t < GS_NDTYPES) ? dtype_names[t] : "?";
}

const char *gs_supported_dtypes(void)
{
    make_names();
    return supported;
}

int gs_dtype_from_kind(char kind, int itemsize, gs_dtype *out)
{
#define GS_X_MATCH(code, ctype, sfx, k, npy)             \
    if (kind == (k) && itemsize == (int)sizeof(ctype)) { \
        *out = code;                                     \
        return 0;                                        \
    }
    GS_DTYPES(GS_X_MATCH)
#undef GS_X_MATCH
    return -1;
}

int gs_dtype_from_descr(PyArray_Descr *descr, const char *what, gs_dtype *out)
{
    if (!PyDataType_HASFIELDS(descr) && !PyDataType_HASSUBARRAY(descr) &&
        gs_dtype_from_kind(descr->kind, (int)PyDataType_ELSIZE(descr), out) == 0) {
        return 0;
    }
    /* "dtype=float16 is not supported; ..." or "input dtype complex64 is not supported; ..." */
    if (strcmp(what, "dtype") == 0)
        PyErr_Format(PyExc_TypeError, "dtype=%S is not supported; supported dtypes: %s",
                     (PyObject *)descr, gs_supported_dtypes());
    else
        PyErr_Format(PyExc_TypeError, "%s dtype %S is not supported; supported dtypes: %s", what,
                     (PyObject *)descr, gs_supported_dtypes());
    return -1;
}

PyArray_Descr *gs_descr(gs_dtype t)
{
    switch (t) {
#define GS_X_DESCR(code, ctype, sfx, kind, npy) \
    case code:                                  \
        return PyArray_DescrFromType(npy);
        GS_DTYPES(GS_X_DESCR)
#undef GS_X_DESCR
    default:
        PyErr_SetString(PyExc_SystemError, "gpuscan: bad dtype code");
        return NULL;
    }
}
