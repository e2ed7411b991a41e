/*
 * binding/module.c - the gpuscan._gpuscan module: its functions, exception and type.
 *
 * Level: host layer.  Importing does not touch CUDA: the backend is chosen at first use
 * (binding/backend.c), so the module imports on machines without a GPU or a driver.  Besides the
 * public functions it exports a few private helpers through which the tests read the kernels'
 * configuration (tile size, reduction chunk, scratch sizes) and how the extension was built.
 */
#define GS_IMPORT_NUMPY
#include "gpuscan.h"

#include <sys/utsname.h>

#include "cpu/cpu.h"
#include "gpuscan/config.h"
#include "gpuscan/teach_config.h"

PyObject *gs_GpuscanError;
PyObject *gs_AxisError;

/* ---- backend(), device_info() ------------------------------------------------------------- */

PyDoc_STRVAR(backend_doc,
             "backend()\n--\n\n"
             "Name the backend that runs gpuscan's calls in this process.\n\n"
             "It is chosen at first use: ``GPUSCAN_BACKEND=cuda|cpu`` forces one; otherwise "
             "CUDA when the\nextension was built with it and a device is usable, else the "
             "multi-threaded CPU backend.\n\n"
             "Returns\n-------\nstr\n    ``'cuda'`` or ``'cpu'``.\n\n"
             "Raises\n------\nRuntimeError\n    ``GPUSCAN_BACKEND=cuda`` was set but CUDA is "
             "not usable (no driver, no device,\n    driver too old, or built without CUDA); "
             "the message names the cause.\n\n"
             "Examples\n--------\n>>> gpuscan.backend()\n'cpu'");

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

PyDoc_STRVAR(device_info_doc,
             "device_info()\n--\n\n"
             "Describe the device that runs gpuscan's calls.\n\n"
             "Returns\n-------\ndict\n"
             "    ``backend`` ('cuda' or 'cpu') and ``name``; on CUDA also "
             "``compute_capability``\n    (major, minor), ``multiprocessors``, "
             "``memory_bytes``, ``driver_version`` and\n    ``runtime_version`` (\"13.0\") and "
             "``device`` (the ordinal); on the CPU ``threads``,\n    the worker threads the "
             "CPU backend uses.\n\n"
             "Raises\n------\nRuntimeError\n    ``GPUSCAN_BACKEND=cuda`` was set but CUDA is "
             "not usable.\n\n"
             "Examples\n--------\n>>> gpuscan.device_info()['backend']\n'cpu'");

static PyObject *device_info(PyObject *self, PyObject *unused)
{
    PyObject *info = NULL, *value = NULL;
    gs_backend b;

    if (gs_backend_get(&b) < 0)
        return NULL;
    info = PyDict_New();
    if (info == NULL)
        goto error;
    value = PyUnicode_FromString(b == GS_BACKEND_CUDA ? "cuda" : "cpu");
    if (value == NULL || PyDict_SetItemString(info, "backend", value) < 0)
        goto error;
    Py_CLEAR(value);
#ifdef GS_HAVE_CUDA
    if (b == GS_BACKEND_CUDA) {
        if (gs_cuda_device_info(info) < 0)
            goto error;
        return info;
    }
#endif
    value = cpu_name();
    if (value == NULL || PyDict_SetItemString(info, "name", value) < 0)
        goto error;
    Py_CLEAR(value);
    value = PyLong_FromLong(gs_cpu_threads());
    if (value == NULL || PyDict_SetItemString(info, "threads", value) < 0)
        goto error;
    Py_CLEAR(value);
    value = PyUnicode_FromString(gs_cpu_isa_name());
    if (value == NULL || PyDict_SetItemString(info, "simd", value) < 0)
        goto error;
    Py_CLEAR(value);
    return info;
error:
    Py_XDECREF(value);
    Py_XDECREF(info);
    return NULL;
}

PyDoc_STRVAR(to_device_doc,
             "to_device(a)\n--\n\n"
             "Copy an array to the CUDA device.\n\n"
             "Parameters\n----------\na : array_like or device array\n"
             "    A NumPy array or anything NumPy can turn into one (copied host to device), or "
             "an\n    array already on the device (``__cuda_array_interface__``, "
             "``__dlpack__``,\n    ``DeviceArray``: copied on the device into a new "
             "C-contiguous array).\n\n"
             "Returns\n-------\nDeviceArray\n    A C-contiguous copy with the same shape and "
             "dtype.\n\n"
             "Raises\n------\nTypeError\n    The backend is the CPU one (the message says why), "
             "or the dtype is not supported.\nMemoryError\n    Not enough device memory.\n\n"
             "Examples\n--------\n>>> d = gpuscan.to_device(np.arange(5))\n>>> d\n"
             "DeviceArray(shape=(5,), dtype=int64)\n>>> gpuscan.scan(d).get()\n"
             "array([ 0,  1,  3,  6, 10])");

/* ---- private helpers for the tests -------------------------------------------------------- */

static PyObject *scan_tile_items(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(GS_NV);
}

/* A count of values, n >= 0, from a Python int. */
static int size_arg(PyObject *arg, int64_t *n)
{
    long long v = PyLong_AsLongLong(arg);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be >= 0");
        return -1;
    }
    *n = (int64_t)v;
    return 0;
}

static PyObject *scan_scratch_bytes(PyObject *self, PyObject *arg)
{
    int64_t n;
    return size_arg(arg, &n) < 0 ? NULL : PyLong_FromSize_t(gs_scan_scratch_bytes(n));
}

static PyObject *split_scratch_bytes(PyObject *self, PyObject *arg)
{
    int64_t n;
    return size_arg(arg, &n) < 0 ? NULL : PyLong_FromSize_t(gs_split_scratch_bytes(n));
}

static PyObject *reduce_chunk_items(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(GS_REDUCE_CHUNK);
}

static PyObject *reduce_scratch_bytes(PyObject *self, PyObject *args)
{
    long long rows, row_len;
    if (!PyArg_ParseTuple(args, "LL:_reduce_scratch_bytes", &rows, &row_len))
        return NULL;
    if (rows < 0 || row_len < 0) {
        PyErr_SetString(PyExc_ValueError, "rows and row_len must be >= 0");
        return NULL;
    }
    return PyLong_FromSize_t(gs_reduce_scratch_bytes((int64_t)rows, (int64_t)row_len));
}

static PyObject *teach_tile_items(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(GS_TEACH_TILE);
}

static PyObject *teach_scratch_bytes(PyObject *self, PyObject *args)
{
    const char *algorithm;
    long long n, row_len;
    int itemsize, segmented, in_place;
    gs_scan_desc d;
    gs_algorithm algo;
    if (!PyArg_ParseTuple(args, "sLLipp:_teach_scratch_bytes", &algorithm, &n, &row_len, &itemsize,
                          &segmented, &in_place))
        return NULL;
    if (gs_parse_algorithm(algorithm, segmented, &algo) < 0)
        return NULL;
    if (n < 0 || row_len < 0 || gs_dtype_from_kind('u', itemsize, &d.out_type) < 0) {
        PyErr_SetString(PyExc_ValueError, "n, row_len >= 0 and an item size of 1, 2, 4 or 8");
        return NULL;
    }
    d.n = n;
    d.row_len = row_len;
    d.algorithm = algo;
    d.flags = segmented ? &d : NULL; /* only whether there are flags counts */
    d.in = &d;
    d.out = in_place ? (void *)&d : (void *)&d.n;
    return PyLong_FromSize_t(gs_teach_scratch_bytes(&d));
}

static PyObject *teach_set_unpadded(PyObject *self, PyObject *flag)
{
    int on = PyObject_IsTrue(flag);
    if (on < 0)
        return NULL;
#ifdef GS_HAVE_CUDA
    int was = gs_teach_unpadded;
    gs_teach_unpadded = on;
    return PyBool_FromLong(was);
#else
    PyErr_SetString(PyExc_RuntimeError, "the Blelloch tiles exist in CUDA builds only");
    return NULL;
#endif
}

static PyObject *built_with_cuda(PyObject *self, PyObject *unused)
{
#ifdef GS_HAVE_CUDA
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

/* ---- the module --------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    { "scan", (PyCFunction)(void (*)(void))gs_scan, METH_VARARGS | METH_KEYWORDS, gs_scan_doc },
    { "segmented_scan", (PyCFunction)(void (*)(void))gs_segmented_scan,
      METH_VARARGS | METH_KEYWORDS, gs_segmented_scan_doc },
    { "reduce", (PyCFunction)(void (*)(void))gs_reduce, METH_VARARGS | METH_KEYWORDS,
      gs_reduce_doc },
    { "split", (PyCFunction)(void (*)(void))gs_split, METH_VARARGS | METH_KEYWORDS, gs_split_doc },
    { "compact", (PyCFunction)(void (*)(void))gs_compact, METH_VARARGS | METH_KEYWORDS,
      gs_compact_doc },
    { "histogram", (PyCFunction)(void (*)(void))gs_histogram, METH_VARARGS | METH_KEYWORDS,
      gs_histogram_doc },
    { "bincount", (PyCFunction)(void (*)(void))gs_bincount, METH_VARARGS | METH_KEYWORDS,
      gs_bincount_doc },
    { "backend", backend, METH_NOARGS, backend_doc },
    { "device_info", device_info, METH_NOARGS, device_info_doc },
    { "to_device", gs_to_device, METH_O, to_device_doc },
    { "_scan_tile_items", scan_tile_items, METH_NOARGS,
      "_scan_tile_items()\n--\n\nValues per tile of the device scan (GS_NV), for tests." },
    { "_scan_scratch_bytes", scan_scratch_bytes, METH_O,
      "_scan_scratch_bytes(n)\n--\n\nScratch bytes of a device scan over n values, for tests." },
    { "_split_scratch_bytes", split_scratch_bytes, METH_O,
      "_split_scratch_bytes(n)\n--\n\nScratch bytes of a device split over n values, for tests." },
    { "_reduce_chunk_items", reduce_chunk_items, METH_NOARGS,
      "_reduce_chunk_items()\n--\n\nValues per chunk of a row of a reduction (GS_REDUCE_CHUNK), "
      "for tests." },
    { "_hist_last_launch", gs_hist_last_launch, METH_NOARGS,
      "_hist_last_launch()\n--\n\nHow the last CUDA histogram launch counted (shared, replicas, "
      "slices, slice_bins, blocks, smem_bytes), for tests; None without CUDA." },
    { "_hist_plan", gs_hist_plan_py, METH_VARARGS,
      "_hist_plan(nbins, acc_bytes, budget)\n--\n\nThe shared-memory split of a histogram "
      "(slices, slice_bins, replicas), for tests." },
    { "_reduce_scratch_bytes", reduce_scratch_bytes, METH_VARARGS,
      "_reduce_scratch_bytes(rows, row_len)\n--\n\nScratch bytes of a device reduction, for "
      "tests." },
    { "_trace", (PyCFunction)(void (*)(void))gs_trace, METH_VARARGS | METH_KEYWORDS,
      "_trace(algorithm, a, flags=None, op='add', exclusive=False)\n--\n\n"
      "A teaching scan one parallel step at a time on the active backend, for gpuscan.trace: "
      "(steps, result, work, span), each step (kind, stride, values, flags or None, work)." },
    { "_teach_tile_items", teach_tile_items, METH_NOARGS,
      "_teach_tile_items()\n--\n\nValues per tile of the Blelloch scan on CUDA "
      "(GS_TEACH_TILE), for tests." },
    { "_teach_scratch_bytes", teach_scratch_bytes, METH_VARARGS,
      "_teach_scratch_bytes(algorithm, n, row_len, out_itemsize, segmented, in_place)\n--\n\n"
      "Scratch bytes of a teaching scan on CUDA, for tests." },
    { "_teach_set_unpadded", teach_set_unpadded, METH_O,
      "_teach_set_unpadded(flag)\n--\n\nRun the Blelloch tiles without bank-conflict padding "
      "(True) or with it (False, the default); returns the previous setting.  CUDA builds "
      "only: the tests run both shared-memory layouts." },
    { "_built_with_cuda", built_with_cuda, METH_NOARGS,
      "_built_with_cuda()\n--\n\nWhether the extension was compiled with the CUDA kernels." },
    { NULL, NULL, 0, NULL },
};

PyDoc_STRVAR(module_doc, "gpuscan's C extension: parallel scan, reduction and split primitives "
                         "on CUDA or the CPU.");

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_gpuscan", module_doc, -1, methods,
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
        goto error;
    if (gs_GpuscanError == NULL) {
        gs_GpuscanError = PyErr_NewExceptionWithDoc(
            "gpuscan.GpuscanError",
            "A CUDA call failed; the message names the call and CUDA's error.", PyExc_RuntimeError,
            NULL);
        if (gs_GpuscanError == NULL)
            goto error;
    }
    Py_INCREF(gs_GpuscanError);
    if (PyModule_AddObject(m, "GpuscanError", gs_GpuscanError) < 0) {
        Py_DECREF(gs_GpuscanError);
        goto error;
    }
    Py_INCREF(&gs_DeviceArray_Type);
    if (PyModule_AddObject(m, "DeviceArray", (PyObject *)&gs_DeviceArray_Type) < 0) {
        Py_DECREF(&gs_DeviceArray_Type);
        goto error;
    }
    if (PyModule_AddIntConstant(m, "MAX_NDIM", GS_MAX_NDIM) < 0)
        goto error;
    return m;
error:
    Py_XDECREF(m);
    return NULL;
}
