/*
 * binding/operator.c - gpuscan.Operator (an associative operator you write in C) and
 * gpuscan.CompileError.
 * Level: binding.  An Operator settles once, when it is made, all that its calls need: the
 * value type T as C declares it (binding builds the declaration from the dtype, with
 * _Static_asserts of its layout), the dtype of that layout (`cdescr`: NumPy's aligned struct,
 * native byte order, which the ops lay every operand out in), the identity as the bytes of one
 * T.  The backend compiles it at its first use (gs_operator_prog) and the Operator keeps what it
 * loaded.  Equal operators (the same combine, dtype and identity) are equal and hash alike, and
 * share one compiled object (the backends' caches are keyed by the source).
 */
#include "binding/binding.h"

#include <ctype.h>

PyObject *gs_CompileError;

/* The C type of a NumPy scalar dtype that T's fields may have; NULL when it has none. */
static const char *c_type_of(PyArray_Descr *d)
{
    static const char *const ints[] = { "int8_t", "int16_t", "int32_t", "int64_t" };
    static const char *const uints[] = { "uint8_t", "uint16_t", "uint32_t", "uint64_t" };
    const int size = (int)PyDataType_ELSIZE(d), log2 = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;

    if (PyDataType_HASFIELDS(d) || PyDataType_HASSUBARRAY(d) || (size & (size - 1)) || size > 8)
        return NULL;
    switch (d->kind) {
    case 'b':
        return size == 1 ? "bool" : NULL;
    case 'i':
        return ints[log2];
    case 'u':
        return uints[log2];
    case 'f':
        return size == 2 ? "_Float16" : size == 4 ? "float" : size == 8 ? "double" : NULL;
    default:
        return NULL;
    }
}

static int bad_dtype(PyArray_Descr *d, const char *what)
{
    PyErr_Format(PyExc_TypeError,
                 "Operator's dtype must be bool, int8/16/32/64, uint8/16/32/64, float16/32/64, or "
                 "a structured dtype whose fields are those (not subarrays or nested "
                 "structures); %s is %R",
                 what, (PyObject *)d);
    return -1;
}

/* Whether s is a C identifier (a field name T can have). */
static int c_identifier(const char *s)
{
    if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return 0;
    for (const char *p = s; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

/* A structured dtype's T: `decl` receives the C declaration (with asserts of NumPy's aligned
 * layout), *cdescr that layout's dtype. */
static int settle_struct(gs_Operator *op, PyArray_Descr *d, PyObject **decl)
{
    PyObject *names = PyDataType_NAMES(d), *fields = PyDataType_FIELDS(d), *list = NULL;
    PyObject *body = PyUnicode_FromString("typedef struct T {\n"), *checks = NULL;
    const Py_ssize_t n = PyTuple_GET_SIZE(names);
    int rc = -1;

    if (body == NULL || (list = PyList_New(n)) == NULL || n == 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i), *info = PyDict_GetItem(fields, name), *t;
        PyArray_Descr *fd = (PyArray_Descr *)PyTuple_GET_ITEM(info, 0), *native;
        const char *ctype = c_type_of(fd), *s = PyUnicode_AsUTF8(name);
        if (s == NULL)
            goto done;
        if (ctype == NULL) {
            bad_dtype(fd, "a field's dtype");
            goto done;
        }
        if (!c_identifier(s)) {
            PyErr_Format(PyExc_ValueError,
                         "Operator's field names must be C identifiers (T's members), not %R", name);
            goto done;
        }
        if ((native = PyArray_DescrNewByteorder(fd, NPY_NATIVE)) == NULL)
            goto done;
        t = Py_BuildValue("(ON)", name, (PyObject *)native);
        if (t == NULL)
            goto done;
        PyList_SET_ITEM(list, i, t);
        Py_SETREF(body, PyUnicode_FromFormat("%U    %s %s;\n", body, ctype, s));
        if (body == NULL)
            goto done;
    }
    if (!PyArray_DescrAlignConverter(list, &op->cdescr))
        goto done;
    checks = PyUnicode_FromFormat("} T;\n_Static_assert(sizeof(T) == %zd, \"T's size\");\n",
                                  (Py_ssize_t)PyDataType_ELSIZE(op->cdescr));
    for (Py_ssize_t i = 0; checks != NULL && i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *info = PyDict_GetItem(PyDataType_FIELDS(op->cdescr), name);
        Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(info, 1));
        Py_SETREF(checks, PyUnicode_FromFormat("%U_Static_assert(offsetof(T, %U) == %zd, "
                                               "\"NumPy's aligned layout\");\n",
                                               checks, name, off));
    }
    if (checks == NULL)
        goto done;
    *decl = PyUnicode_Concat(body, checks);
    op->nfields = (int)n;
    rc = *decl == NULL ? -1 : 0;
done:
    Py_XDECREF(list);
    Py_XDECREF(body);
    Py_XDECREF(checks);
    return rc;
}

/* op->cdescr, op->type_decl and op->nfields from op->dtype. */
static int settle_type(gs_Operator *op)
{
    PyArray_Descr *d = op->dtype;
    PyObject *decl = NULL;
    const char *s;

    if (PyDataType_HASFIELDS(d)) {
        if (settle_struct(op, d, &decl) < 0)
            return -1;
    } else {
        const char *ctype = c_type_of(d);
        if (ctype == NULL)
            return bad_dtype(d, "it");
        if ((op->cdescr = PyArray_DescrNewByteorder(d, NPY_NATIVE)) == NULL)
            return -1;
        decl = PyUnicode_FromFormat("typedef %s T;\n", ctype);
    }
    if (PyDataType_ELSIZE(op->cdescr) > GS_USER_MAX_SIZE) {
        Py_XDECREF(decl);
        PyErr_Format(PyExc_TypeError, "Operator's dtype is at most %d bytes; %R has %zd",
                     GS_USER_MAX_SIZE, (PyObject *)d, (Py_ssize_t)PyDataType_ELSIZE(op->cdescr));
        return -1;
    }
    if (decl == NULL || (s = PyUnicode_AsUTF8(decl)) == NULL || (op->type_decl = strdup(s)) == NULL) {
        Py_XDECREF(decl);
        return decl == NULL ? -1 : (PyErr_NoMemory(), -1);
    }
    Py_DECREF(decl);
    return 0;
}

int gs_operator_value(gs_Operator *op, PyObject *obj, const char *what, void *buf)
{
    PyArrayObject *a;

    Py_INCREF(op->cdescr);
    a = (PyArrayObject *)PyArray_FromAny(obj, op->cdescr, 0, 0, NPY_ARRAY_CARRAY, NULL);
    if (a == NULL)
        return -1;
    if (PyArray_NDIM(a) != 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s must be one value of the Operator's dtype %R (a scalar, or a tuple with "
                     "one value per field), not an array of %d dimensions",
                     what, (PyObject *)op->dtype, PyArray_NDIM(a));
        Py_DECREF(a);
        return -1;
    }
    memcpy(buf, PyArray_DATA(a), (size_t)PyDataType_ELSIZE(op->cdescr));
    Py_DECREF(a);
    return 0;
}

/* Whether the combine source holds the word `return` (statements), else it is an expression. */
static int has_return(const char *s)
{
    for (const char *p = strstr(s, "return"); p != NULL; p = strstr(p + 1, "return")) {
        int before = p > s && (p[-1] == '_' || isalnum((unsigned char)p[-1]));
        int after = p[6] == '_' || isalnum((unsigned char)p[6]);
        if (!before && !after)
            return 1;
    }
    return 0;
}

/* #line's file name: the operator's name, its quotes, backslashes and control characters
 * replaced. */
static char *line_name(const char *name)
{
    char *s = strdup(name);
    for (char *p = s; p != NULL && *p; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < ' ')
            *p = '_';
    return s;
}

static int operator_init(gs_Operator *op, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "combine", "dtype", "identity", "name", NULL };
    PyObject *combine, *name = Py_None, *value = NULL;
    PyArray_Descr *dtype = NULL;
    const char *src, *nm;

    if (op->dtype != NULL) {
        PyErr_SetString(PyExc_TypeError, "an Operator is made once (it is immutable)");
        return -1;
    }
    PyObject *identity = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|$O&OO:Operator", kwlist, &combine,
                                     PyArray_DescrConverter2, &dtype, &identity, &name))
        return -1;
    if (dtype == NULL || identity == NULL) {
        Py_XDECREF(dtype);
        PyErr_Format(PyExc_TypeError, "Operator() needs the keyword argument '%s'",
                     dtype == NULL ? "dtype" : "identity");
        return -1;
    }
    op->dtype = dtype;
    if (name != Py_None && !PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "Operator's name must be a str or None, not %.100s",
                     Py_TYPE(name)->tp_name);
        return -1;
    }
    if ((src = PyUnicode_AsUTF8(combine)) == NULL)
        return -1;
    if (src[strspn(src, " \t\r\n")] == '\0') {
        PyErr_SetString(PyExc_ValueError,
                        "Operator's combine is empty: write C over x and y, such as \"x + y\"");
        return -1;
    }
    nm = name == Py_None ? "combine" : PyUnicode_AsUTF8(name);
    if (nm == NULL || settle_type(op) < 0 || gs_operator_value(op, identity, "identity", op->identity) < 0)
        return -1;
    Py_INCREF(op->cdescr);
    value = PyArray_Scalar(op->identity, op->cdescr, NULL);
    Py_DECREF(op->cdescr);
    if (value == NULL)
        return -1;
    op->identity_obj = PyObject_CallMethod(value, "item", NULL);
    Py_DECREF(value);
    if (op->identity_obj == NULL || (op->line_name = line_name(nm)) == NULL)
        return op->identity_obj == NULL ? -1 : (PyErr_NoMemory(), -1);
    op->expression = !has_return(src);
    op->combine = Py_NewRef(combine);
    op->name = Py_NewRef(name);
    return 0;
}

static void operator_dealloc(gs_Operator *op)
{
    Py_XDECREF(op->combine);
    Py_XDECREF(op->dtype);
    Py_XDECREF(op->cdescr);
    Py_XDECREF(op->identity_obj);
    Py_XDECREF(op->name);
    free(op->type_decl);
    free(op->line_name);
    Py_TYPE(op)->tp_free((PyObject *)op);
}

static PyObject *operator_repr(gs_Operator *op)
{
    if (op->dtype == NULL)
        return PyUnicode_FromString("Operator(<not made>)");
    if (op->name != Py_None)
        return PyUnicode_FromFormat("Operator(%R, dtype=%R, identity=%R, name=%R)", op->combine,
                                    (PyObject *)op->dtype, op->identity_obj, op->name);
    return PyUnicode_FromFormat("Operator(%R, dtype=%R, identity=%R)", op->combine,
                                (PyObject *)op->dtype, op->identity_obj);
}

/* Equal: the same combine source, dtype and identity (the bytes of one T). */
static PyObject *operator_richcompare(PyObject *a, PyObject *b, int cmp)
{
    gs_Operator *x = (gs_Operator *)a, *y = (gs_Operator *)b;
    int eq;

    if (!gs_operator_check(b) || (cmp != Py_EQ && cmp != Py_NE) || x->dtype == NULL || y->dtype == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    eq = PyUnicode_Compare(x->combine, y->combine) == 0 &&
         PyObject_RichCompareBool((PyObject *)x->dtype, (PyObject *)y->dtype, Py_EQ) == 1 &&
         memcmp(x->identity, y->identity, (size_t)PyDataType_ELSIZE(x->cdescr)) == 0;
    if (PyErr_Occurred())
        return NULL;
    return PyBool_FromLong(cmp == Py_EQ ? eq : !eq);
}

static Py_hash_t operator_hash(gs_Operator *op)
{
    PyObject *key;
    Py_hash_t h;
    if (op->dtype == NULL)
        return PyObject_HashNotImplemented((PyObject *)op);
    key = Py_BuildValue("(OOy#)", op->combine, (PyObject *)op->dtype, op->identity,
                        (Py_ssize_t)PyDataType_ELSIZE(op->cdescr));
    if (key == NULL)
        return -1;
    h = PyObject_Hash(key);
    Py_DECREF(key);
    return h;
}

static PyObject *get_combine(gs_Operator *op, void *closure)
{
    return Py_NewRef(op->combine != NULL ? op->combine : Py_None);
}

static PyObject *get_dtype(gs_Operator *op, void *closure)
{
    return Py_NewRef(op->dtype != NULL ? (PyObject *)op->dtype : Py_None);
}

static PyObject *get_identity(gs_Operator *op, void *closure)
{
    return Py_NewRef(op->identity_obj != NULL ? op->identity_obj : Py_None);
}

static PyObject *get_name(gs_Operator *op, void *closure)
{
    return Py_NewRef(op->name != NULL ? op->name : Py_None);
}

static PyGetSetDef operator_getset[] = {
    { "combine", (getter)get_combine, NULL, "The C source over x (earlier) and y (later).", NULL },
    { "dtype", (getter)get_dtype, NULL, "The dtype of the values it combines.", NULL },
    { "identity", (getter)get_identity, NULL,
      "The neutral element (a scalar, or a tuple with one value per field).", NULL },
    { "name", (getter)get_name, NULL, "Its name (None when not given).", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

/* Pickling: functools.partial(Operator, dtype=, identity=, name=) called with combine, so that
 * an Operator travels to other processes (multiprocessing, Dask's workers), where gpuscan's
 * caches find its compiled code again. */
static PyObject *operator_reduce(gs_Operator *op, PyObject *unused)
{
    PyObject *functools = NULL, *partial = NULL, *cls = NULL, *kw = NULL, *fn = NULL, *ret = NULL;

    (void)unused;
    if (op->dtype == NULL) {
        PyErr_SetString(PyExc_TypeError, "an Operator that was never made cannot be pickled");
        return NULL;
    }
    if ((functools = PyImport_ImportModule("functools")) == NULL ||
        (partial = PyObject_GetAttrString(functools, "partial")) == NULL ||
        (cls = PyTuple_Pack(1, (PyObject *)Py_TYPE(op))) == NULL ||
        (kw = Py_BuildValue("{sOsOsO}", "dtype", (PyObject *)op->dtype, "identity",
                            op->identity_obj, "name", op->name)) == NULL ||
        (fn = PyObject_Call(partial, cls, kw)) == NULL)
        goto done;
    ret = Py_BuildValue("(O(O))", fn, op->combine);
done:
    Py_XDECREF(functools);
    Py_XDECREF(partial);
    Py_XDECREF(cls);
    Py_XDECREF(kw);
    Py_XDECREF(fn);
    return ret;
}

static PyMethodDef operator_methods[] = {
    { "__reduce__", (PyCFunction)operator_reduce, METH_NOARGS, NULL },
    { NULL, NULL, 0, NULL },
};

static PyTypeObject operator_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpuscan.Operator",
    .tp_basicsize = sizeof(gs_Operator),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = gs_doc_operator,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)operator_init,
    .tp_dealloc = (destructor)operator_dealloc,
    .tp_repr = (reprfunc)operator_repr,
    .tp_richcompare = operator_richcompare,
    .tp_hash = (hashfunc)operator_hash,
    .tp_getset = operator_getset,
    .tp_methods = operator_methods,
};

int gs_operator_check(PyObject *obj)
{
    return PyObject_TypeCheck(obj, &operator_type);
}

/* gpuscan's version for the cache key ("?" when the package is not imported). */
static PyObject *package_version(void)
{
    PyObject *name = PyUnicode_FromString("gpuscan"), *mod, *v = NULL;
    mod = name != NULL ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    if (mod != NULL)
        v = PyObject_GetAttrString(mod, "__version__");
    Py_XDECREF(mod);
    PyErr_Clear();
    return v != NULL && PyUnicode_Check(v) ? v : (Py_XDECREF(v), PyUnicode_FromString("?"));
}

/* The exception of a failed user_load: CompileError with the compiler's log, RuntimeError
 * saying what to install, or the failure record's. */
static int load_error(gs_user_msg *msg, const gs_fail *f)
{
    if (msg->error == NULL)
        return gs_raise(f);
    PyErr_SetString(msg->error_kind == 'c' ? gs_CompileError : PyExc_RuntimeError, msg->error);
    return -1;
}

/* The folders of the nvidia-cuda-nvrtc wheel's library, where Python finds the `nvidia`
 * namespace package (':' separated; "" when it is not installed): <path>/cu13/lib (CUDA 13's
 * wheel) and <path>/cuda_nvrtc/lib (CUDA 12's), for each of its paths. */
static PyObject *nvrtc_dirs(void)
{
    PyObject *mod = PyImport_ImportModule("nvidia"), *paths = NULL, *parts, *sep, *res = NULL;
    if (mod != NULL)
        paths = PyObject_GetAttrString(mod, "__path__");
    Py_XDECREF(mod);
    PyErr_Clear();
    if ((parts = PyList_New(0)) == NULL) {
        Py_XDECREF(paths);
        return NULL;
    }
    PyObject *it = paths != NULL ? PyObject_GetIter(paths) : NULL, *p;
    PyErr_Clear();
    while (it != NULL && (p = PyIter_Next(it)) != NULL) {
        PyObject *a = PyUnicode_FromFormat("%S/cu13/lib", p), *b = PyUnicode_FromFormat("%S/cuda_nvrtc/lib", p);
        if (a != NULL && b != NULL) {
            PyList_Append(parts, a);
            PyList_Append(parts, b);
        }
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_DECREF(p);
    }
    Py_XDECREF(it);
    Py_XDECREF(paths);
    PyErr_Clear();
    if ((sep = PyUnicode_FromString(":")) != NULL)
        res = PyUnicode_Join(sep, parts);
    Py_XDECREF(sep);
    Py_DECREF(parts);
    return res;
}

int gs_operator_prog(gs_Operator *op, const gs_backend_ops *be, int family,
                     const gs_user_prog **prog)
{
    gs_user_spec spec;
    gs_user_msg msg = { 0 };
    gs_fail f = { 0 };
    PyObject *version, *dirs;
    int rc;

    if (op->prog != NULL && op->prog_be == be && (op->families >> family) & 1u) {
        *prog = op->prog;
        return 0;
    }
    if (be->user_load == NULL) {
        PyErr_Format(PyExc_NotImplementedError,
                     "gpuscan.Operator does not run on the %s backend of this build.  Set "
                     "GPUSCAN_BACKEND=cpu to run Operators on the CPU.",
                     be->name);
        return -1;
    }
    if ((version = package_version()) == NULL)
        return -1;
    dirs = be->mem == GS_MEM_DEVICE ? nvrtc_dirs() : PyUnicode_FromString("");
    if (dirs == NULL) {
        Py_DECREF(version);
        return -1;
    }
    spec.type_decl = op->type_decl;
    spec.combine = PyUnicode_AsUTF8(op->combine);
    spec.expression = op->expression;
    spec.name = op->line_name;
    spec.size = (size_t)PyDataType_ELSIZE(op->cdescr);
    spec.key_extra = PyUnicode_AsUTF8(version);
    spec.family = family;
    spec.lib_dirs = PyUnicode_AsUTF8(dirs);
    if (spec.combine == NULL || spec.key_extra == NULL || spec.lib_dirs == NULL) {
        Py_DECREF(version);
        Py_DECREF(dirs);
        return -1;
    }
    GS_BEGIN_UNLOCKED
        rc = be->user_load(&spec, prog, &msg, &f);
    GS_END_UNLOCKED
    Py_DECREF(version);
    Py_DECREF(dirs);
    if (msg.warning != NULL && PyErr_WarnEx(PyExc_RuntimeWarning, msg.warning, 1) < 0)
        rc = -1;
    else if (rc < 0)
        load_error(&msg, &f);
    free(msg.warning);
    free(msg.error);
    if (rc < 0)
        return -1;
    if (op->prog_be != be)
        op->families = 0;
    op->prog = *prog;
    op->prog_be = be;
    op->families |= 1u << family;
    return 0;
}

int gs_operator_register(PyObject *module)
{
    if (PyType_Ready(&operator_type) < 0)
        return -1;
    if (gs_CompileError == NULL &&
        (gs_CompileError = PyErr_NewExceptionWithDoc("gpuscan.CompileError", gs_doc_compile_error,
                                                     PyExc_ValueError, NULL)) == NULL)
        return -1;
    if (PyModule_AddObjectRef(module, "Operator", (PyObject *)&operator_type) < 0 ||
        PyModule_AddObjectRef(module, "CompileError", gs_CompileError) < 0)
        return -1;
    return 0;
}
