/*
 * binding/module.c - the gpuscan._gpuscan module: its functions, exception and type.
 *
 * Level: binding.  Importing does not touch CUDA: the backend is chosen at first use
 * (binding/backend.c), so the module imports on machines without a GPU or a driver.  The
 * private hooks of the tests are testing.c's, the docstrings docstrings.c's.
 */
#define GS_IMPORT_NUMPY
#include "cuda/cuda.h"

#include <sys/utsname.h>

#include "cpu/cpu.h"

PyObject *gs_GpuscanError;
PyObject *gs_AxisError;

/* ---- backend(), device_info() ------------------------------------------------------------- */

static PyObject *backend(PyObject *self, PyObject *unused)
{
    gs_backend b;
    if (gs_backend_get(&b) < 0)
        return NULL;
    return PyUnicode_FromString(b == GS_BACKEND_CUDA ? "cuda" : "cpu");
}

/* The CPU's model name from /proc/cpuinfo, else the machine type from uname. */
static PyObject *cpu_name(void)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    struct utsname u;

    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL) {
            char *colon = strchr(line, ':');
            if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
                fclose(f);
                colon += strspn(colon + 1, " \t") + 1;
                colon[strcspn(colon, "\n")] = '\0';
                return PyUnicode_DecodeUTF8(colon, (Py_ssize_t)strlen(colon), "replace");
            }
        }
        fclose(f);
    }
    if (uname(&u) == 0)
        return PyUnicode_FromString(u.machine);
    return PyUnicode_FromString("cpu");
}

static PyObject *device_info(PyObject *self, PyObject *unused)
{
    PyObject *info = NULL, *value = NULL;
    gs_backend b;

    if (gs_backend_get(&b) < 0)
        return NULL;
    info = PyDict_New();
    if (info == NULL)
        goto fail;
    value = PyUnicode_FromString(b == GS_BACKEND_CUDA ? "cuda" : "cpu");
    if (value == NULL || PyDict_SetItemString(info, "backend", value) < 0)
        goto fail;
    Py_CLEAR(value);
    if (b == GS_BACKEND_CUDA) {
        if (gs_cuda_device_info(info) < 0)
            goto fail;
        return info;
    }
    value = cpu_name();
    if (value == NULL || PyDict_SetItemString(info, "name", value) < 0)
        goto fail;
    Py_CLEAR(value);
    value = PyLong_FromLong(gs_cpu_threads());
    if (value == NULL || PyDict_SetItemString(info, "threads", value) < 0)
        goto fail;
    Py_CLEAR(value);
    value = PyUnicode_FromString(gs_cpu_isa_name());
    if (value == NULL || PyDict_SetItemString(info, "simd", value) < 0)
        goto fail;
    Py_CLEAR(value);
    return info;
fail:
    Py_XDECREF(value);
    Py_XDECREF(info);
    return NULL;
}

/* free_cached_memory(): what the backend's caches hold unused, given back. */
static PyObject *free_cached_memory(PyObject *self, PyObject *unused)
{
    size_t device = 0, host = 0;
    gs_backend b;

    if (gs_backend_get(&b) < 0 || (b == GS_BACKEND_CUDA && gs_cuda_free_cached(&device, &host) < 0))
        return NULL;
    return Py_BuildValue("{s:n,s:n}", "device_bytes", (Py_ssize_t)device, "pinned_bytes",
                         (Py_ssize_t)host);
}

/* ---- the module --------------------------------------------------------------------------- */

#define GS_METHOD(name, fn, doc)                                                   \
    {                                                                              \
        name, (PyCFunction)(void (*)(void))(fn), METH_VARARGS | METH_KEYWORDS, doc \
    }

static PyMethodDef methods[] = {
    GS_METHOD("scan", gs_scan, gs_doc_scan),
    GS_METHOD("segmented_scan", gs_segmented_scan, gs_doc_segmented_scan),
    GS_METHOD("reduce", gs_reduce, gs_doc_reduce),
    GS_METHOD("split", gs_split, gs_doc_split),
    GS_METHOD("compact", gs_compact, gs_doc_compact),
    GS_METHOD("histogram", gs_histogram, gs_doc_histogram),
    GS_METHOD("bincount", gs_bincount, gs_doc_bincount),
    GS_METHOD("reduceat", gs_reduceat, gs_doc_reduceat),
    GS_METHOD("segmented_reduce", gs_segmented_reduce, gs_doc_segmented_reduce),
    GS_METHOD("linear_recurrence", gs_linear_recurrence, gs_doc_linear_recurrence),
    { "backend", backend, METH_NOARGS, gs_doc_backend },
    { "device_info", device_info, METH_NOARGS, gs_doc_device_info },
    { "free_cached_memory", free_cached_memory, METH_NOARGS, gs_doc_free_cached_memory },
    { "to_device", gs_to_device, METH_O, gs_doc_to_device },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_gpuscan", gs_doc_module, -1, methods,
};

/* numpy.exceptions.AxisError (NumPy >= 1.25), else numpy.AxisError. */
static PyObject *fetch_axis_error(void)
{
    PyObject *mod = PyImport_ImportModule("numpy.exceptions"), *exc;
    if (mod == NULL) {
        PyErr_Clear();
        mod = PyImport_ImportModule("numpy");
        if (mod == NULL)
            return NULL;
    }
    exc = PyObject_GetAttrString(mod, "AxisError");
    Py_DECREF(mod);
    return exc;
}

PyMODINIT_FUNC PyInit__gpuscan(void)
{
    PyObject *m = NULL;

    import_array();
    if (PyType_Ready(&gs_DeviceArray_Type) < 0)
        return NULL;
    m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (gs_AxisError == NULL && (gs_AxisError = fetch_axis_error()) == NULL)
        goto fail;
    if (gs_GpuscanError == NULL) {
        gs_GpuscanError = PyErr_NewExceptionWithDoc(
            "gpuscan.GpuscanError",
            "A CUDA call failed; the message names the call and CUDA's error.", PyExc_RuntimeError,
            NULL);
        if (gs_GpuscanError == NULL)
            goto fail;
    }
    Py_INCREF(gs_GpuscanError);
    if (PyModule_AddObject(m, "GpuscanError", gs_GpuscanError) < 0) {
        Py_DECREF(gs_GpuscanError);
        goto fail;
    }
    Py_INCREF(&gs_DeviceArray_Type);
    if (PyModule_AddObject(m, "DeviceArray", (PyObject *)&gs_DeviceArray_Type) < 0) {
        Py_DECREF(&gs_DeviceArray_Type);
        goto fail;
    }
    if (PyModule_AddIntConstant(m, "MAX_NDIM", GS_MAX_NDIM) < 0 ||
        PyModule_AddFunctions(m, gs_testing_methods) < 0)
        goto fail;
    return m;
fail:
    Py_XDECREF(m);
    return NULL;
}
