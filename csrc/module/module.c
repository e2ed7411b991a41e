/*
 * module/module.c - the gpuscan._gpuscan module: its functions, exception and type.
 * Level: module, the top: it registers the ops' entry points (csrc/ops/), DeviceArray
 * (binding/devarray.c), the module's services below, and the private hooks (hooks.c); the
 * docstrings are binding/docstrings.c's.  Importing does not touch CUDA: the backend is chosen
 * at first use (core/backend.c), so the module imports on machines without a GPU or a driver.
 */
#define GS_IMPORT_NUMPY
#include "module/module.h"

#include <sys/utsname.h>

#include "cpu/cpu.h"
#include "cuda/cuda.h"

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

/* "12.4" from CUDA's 12040. */
static PyObject *version_string(int v)
{
    return PyUnicode_FromFormat("%d.%d", v / 1000, v % 1000 / 10);
}

/* info[key] = value, stealing value; -1 on failure (value NULL included). */
static int set_item(PyObject *info, const char *key, PyObject *value)
{
    int rc = value != NULL ? PyDict_SetItemString(info, key, value) : -1;
    Py_XDECREF(value);
    return rc;
}

/* device_info()'s entries of the CUDA backend, added to `info`. */
static int cuda_info(PyObject *info)
{
    gs_cuda_props p;
    gs_fail f = { 0 };

    if (gs_cuda_device_props(&p, &f) < 0)
        return gs_raise(&f);
    if (set_item(info, "name", PyUnicode_FromString(p.name)) < 0 ||
        set_item(info, "device", PyLong_FromLong(p.device)) < 0 ||
        set_item(info, "compute_capability", Py_BuildValue("(ii)", p.major, p.minor)) < 0 ||
        set_item(info, "multiprocessors", PyLong_FromLong(p.multiprocessors)) < 0 ||
        set_item(info, "memory_bytes", PyLong_FromSize_t(p.memory_bytes)) < 0 ||
        set_item(info, "driver_version", version_string(p.driver_version)) < 0 ||
        set_item(info, "runtime_version", version_string(p.runtime_version)) < 0 ||
        set_item(info, "pinned_bytes_in_use", PyLong_FromSize_t(p.pinned_in_use)) < 0 ||
        set_item(info, "pinned_bytes_cached", PyLong_FromSize_t(p.pinned_cached)) < 0)
        return -1;
    return 0;
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
        if (cuda_info(info) < 0)
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
    gs_fail f = { 0 };
    gs_backend b;
    int rc = 0;

    if (gs_backend_get(&b) < 0)
        return NULL;
    if (b == GS_BACKEND_CUDA) {
        Py_BEGIN_ALLOW_THREADS
            rc = gs_cuda_free_cached(&device, &host, &f);
        Py_END_ALLOW_THREADS
    }
    (void)gs_cpu_sort_release(); /* host memory the CPU sort kept, counted in neither */
    if (rc < 0) {
        gs_raise(&f);
        return NULL;
    }
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
    GS_METHOD("sort", gs_sort, gs_doc_sort),
    GS_METHOD("argsort", gs_argsort, gs_doc_argsort),
    { "backend", backend, METH_NOARGS, gs_doc_backend },
    { "device_info", device_info, METH_NOARGS, gs_doc_device_info },
    { "free_cached_memory", free_cached_memory, METH_NOARGS, gs_doc_free_cached_memory },
    { "to_device", gs_to_device, METH_O, gs_doc_to_device },
    GS_METHOD("_trace", gs_trace,
              "_trace(algorithm, a, flags=None, op='add', exclusive=False)\n--\n\n"
              "gpuscan.trace's engine: a teaching scan one parallel step at a time on the active "
              "backend -> (steps, result, work, span), each step (kind, stride, values, flags or "
              "None, work)."),
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
    if (gs_devarray_register(m) < 0 || gs_operator_register(m) < 0 ||
        PyModule_AddIntConstant(m, "MAX_NDIM", GS_MAX_NDIM) < 0 ||
        PyModule_AddFunctions(m, gs_hook_methods) < 0)
        goto fail;
    gs_stop_set_check(gs_interrupt_check);
    return m;
fail:
    Py_XDECREF(m);
    return NULL;
}
