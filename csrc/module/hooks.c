/*
 * module/hooks.c - the module's private hooks, through which the tests and benchmarks read the
 * kernels' configuration (tile sizes, scratch sizes, histogram plans), how the extension was
 * built and how the last histogram launch counted, and set the knobs of core/core.h's
 * gs_test_knobs and of the pipeline.
 * Level: module.  None of these is public API: their names start with an underscore and
 * gpuscan/__init__.py re-exports none of them.  A knob is read by the ops under the GIL and
 * carried to the backend in a descriptor, so setting one never races with a launch.
 */
#include "module/module.h"

#include "cuda/cuda.h"
#include "gpuscan/config.h"
#include "gpuscan/teach_config.h"
#ifdef GS_HAVE_CUDA
#include "gpuscan/launch.h" /* gs_launch_hist_last */
#endif

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

static PyObject *reduce_chunk_items(PyObject *self, PyObject *arg)
{
    int64_t row_len;
    if (size_arg(arg, &row_len) < 0)
        return NULL;
    return PyLong_FromLongLong(gs_reduce_chunk_len(row_len));
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

static PyObject *segreduce_scratch_bytes(PyObject *self, PyObject *args)
{
    long long n, nseg;
    int sorted;
    if (!PyArg_ParseTuple(args, "LLp:_segreduce_scratch_bytes", &n, &nseg, &sorted))
        return NULL;
    if (n < 0 || nseg < 0) {
        PyErr_SetString(PyExc_ValueError, "n and nseg must be >= 0");
        return NULL;
    }
    return PyLong_FromSize_t(gs_segreduce_scratch_bytes((int64_t)n, (int64_t)nseg, sorted));
}

static PyObject *segreduce_set_many(PyObject *self, PyObject *args)
{
    long long tiles;
    int per_warp = 0;
    if (!PyArg_ParseTuple(args, "L|i:_segreduce_set_many", &tiles, &per_warp))
        return NULL;
    if (tiles < 0 || per_warp < 0 || per_warp > 1024) {
        PyErr_SetString(PyExc_ValueError, "tiles must be >= 0, per_warp in [0, 1024]");
        return NULL;
    }
    PyObject *was = Py_BuildValue("(Li)", (long long)gs_test_knobs.segreduce_many,
                                  gs_test_knobs.segreduce_per_warp);
    gs_test_knobs.segreduce_many = tiles;
    gs_test_knobs.segreduce_per_warp = per_warp;
    return was;
}

static PyObject *linrec_scratch_bytes(PyObject *self, PyObject *arg)
{
    int64_t n;
    return size_arg(arg, &n) < 0 ? NULL : PyLong_FromSize_t(gs_linrec_scratch_bytes(n));
}

static PyObject *sort_scratch_bytes(PyObject *self, PyObject *args)
{
    long long rows, row_len;
    int key_bytes, is_float, want_keys, want_index;
    if (!PyArg_ParseTuple(args, "LLippp:_sort_scratch_bytes", &rows, &row_len, &key_bytes,
                          &is_float, &want_keys, &want_index))
        return NULL;
    if (rows < 0 || row_len < 0 ||
        (key_bytes != 1 && key_bytes != 2 && key_bytes != 4 && key_bytes != 8)) {
        PyErr_SetString(PyExc_ValueError, "rows, row_len >= 0 and key_bytes of 1, 2, 4 or 8");
        return NULL;
    }
    return PyLong_FromSize_t(
        gs_sort_scratch_bytes((int64_t)rows, (int64_t)row_len, key_bytes, is_float, want_keys,
                              want_index));
}

/* _sort_layout(rows, row_len, key_bytes, is_float, keys, index): the device-wide sort's geometry
 * and the offsets of its scratch (gs_sort_layout_of), for the tests. */
static PyObject *sort_layout(PyObject *self, PyObject *args)
{
    long long rows, row_len;
    int key_bytes, is_float, want_keys, want_index;
    gs_sort_layout l;
    if (!PyArg_ParseTuple(args, "LLippp:_sort_layout", &rows, &row_len, &key_bytes, &is_float,
                          &want_keys, &want_index))
        return NULL;
    if (rows < 1 || row_len < 1 ||
        (key_bytes != 1 && key_bytes != 2 && key_bytes != 4 && key_bytes != 8)) {
        PyErr_SetString(PyExc_ValueError, "rows, row_len >= 1 and key_bytes of 1, 2, 4 or 8");
        return NULL;
    }
    gs_sort_layout_of((int64_t)rows, (int64_t)row_len, key_bytes, is_float, want_keys, want_index,
                      &l);
    return Py_BuildValue(
        "{sisisLsLsLsLsLsLsLsLsLsLsLsLsLsLsi}", "passes", l.passes, "idx_bytes", l.idx_bytes, "nv",
        (long long)l.nv, "row_tiles", (long long)l.row_tiles, "tiles", (long long)l.tiles,
        "desc_bytes", (long long)l.desc_bytes, "hist_tiles", (long long)l.hist_tiles, "row_chunks",
        (long long)l.row_chunks, "hist", (long long)l.hist, "desc0", (long long)l.desc0, "desc1",
        (long long)l.desc1, "ktmp0", (long long)l.ktmp0, "ktmp1", (long long)l.ktmp1, "itmp",
        (long long)l.itmp, "zero_bytes", (long long)l.zero_bytes, "bytes", (long long)l.bytes,
        "in_block", gs_sort_in_block((int64_t)row_len));
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
    int was = gs_test_knobs.teach_unpadded;
    gs_test_knobs.teach_unpadded = on;
    return PyBool_FromLong(was);
}

static PyObject *hist_last_launch(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
#ifdef GS_HAVE_CUDA
    gs_hist_launch l;
    gs_launch_hist_last(&l);
    return Py_BuildValue("{sisisLsLsLsL}", "shared", l.shared, "replicas", l.replicas, "slices",
                         (long long)l.slices, "slice_bins", (long long)l.slice_bins, "blocks",
                         (long long)l.blocks, "smem_bytes", (long long)l.smem_bytes);
#else
    Py_RETURN_NONE;
#endif
}

static PyObject *hist_plan(PyObject *self, PyObject *args)
{
    long long nbins, budget;
    int acc_bytes, replicas;
    int64_t slices, slice_bins;

    (void)self;
    if (!PyArg_ParseTuple(args, "LiL:_hist_plan", &nbins, &acc_bytes, &budget))
        return NULL;
    if (nbins < 1 || (acc_bytes != 4 && acc_bytes != 8) || budget < 1) {
        PyErr_SetString(PyExc_ValueError, "_hist_plan: nbins >= 1, acc_bytes 4 or 8, budget >= 1");
        return NULL;
    }
    gs_hist_plan(nbins, acc_bytes, budget, &slices, &slice_bins, &replicas);
    return Py_BuildValue("(LLi)", (long long)slices, (long long)slice_bins, replicas);
}

/* A size setting's knob: with an int argument (>= 0), set it; return the previous value. */
static PyObject *size_knob(PyObject *args, const char *format, const char *what,
                           size_t (*get)(void), void (*set)(size_t))
{
    PyObject *arg = NULL;
    size_t old = get();
    long long v;

    if (!PyArg_ParseTuple(args, format, &arg))
        return NULL;
    if (arg != NULL && arg != Py_None) {
        if (!PyLong_Check(arg)) {
            PyErr_Format(PyExc_TypeError, "the %s must be an int, not %.100s", what,
                         Py_TYPE(arg)->tp_name);
            return NULL;
        }
        if ((v = PyLong_AsLongLong(arg)) == -1 && PyErr_Occurred())
            return NULL;
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "the %s must be >= 0", what);
            return NULL;
        }
        set((size_t)v);
    }
    return PyLong_FromSize_t(old);
}

/* _pipeline_chunk_bytes(n=None): the pipeline's chunk in bytes; with n, set it (0: back to the
 * default) and return the previous one. */
static PyObject *pipeline_chunk_bytes(PyObject *self, PyObject *args)
{
    return size_knob(args, "|O:_pipeline_chunk_bytes", "chunk size (0: the default)",
                     gs_xfer_chunk_bytes, gs_xfer_set_chunk_bytes);
}

/* _pinned_limit(n=None): the page-locked result cache's limit in bytes; with n, set it (0: no
 * cache) and return the previous one. */
static PyObject *pinned_limit(PyObject *self, PyObject *args)
{
    return size_knob(args, "|O:_pinned_limit", "limit", gs_xfer_pinned_limit,
                     gs_xfer_set_pinned_limit);
}

/* _hold_bytes(n=None): the size from which a NumPy operand used again is held page-locked
 * (core/hold.c); with n, set it (0: none) and return the previous one. */
static PyObject *hold_bytes(PyObject *self, PyObject *args)
{
    return size_knob(args, "|O:_hold_bytes", "size", gs_hold_min_bytes, gs_hold_set_min_bytes);
}

/* _pipeline_prefault(on=None): whether the pipeline faults in the pages of contiguous host
 * outputs ahead of their unpack; with on, set it and return the previous setting. */
static PyObject *pipeline_prefault(PyObject *self, PyObject *args)
{
    int old = gs_xfer_prefault(), on;
    PyObject *arg = Py_None;

    if (!PyArg_ParseTuple(args, "|O:_pipeline_prefault", &arg))
        return NULL;
    if (arg != Py_None) {
        if ((on = PyObject_IsTrue(arg)) < 0)
            return NULL;
        gs_xfer_set_prefault(on);
    }
    return PyBool_FromLong(old);
}

/* Why the backend is the CPU one (core/backend.c's reason), None on CUDA: for the demo. */
static PyObject *backend_reason(PyObject *self, PyObject *unused)
{
    gs_backend b;
    if (gs_backend_get(&b) < 0)
        return NULL;
    if (b == GS_BACKEND_CUDA)
        Py_RETURN_NONE;
    return PyUnicode_FromString(gs_backend_cpu_reason());
}

/* setup.py's one line on the kernels it compiled, or why it compiled none. */
#ifndef GS_BUILD_NOTE
#define GS_BUILD_NOTE "not recorded: built without setup.py"
#endif

/* _config(): how the extension was built and the kernels' tiles. */
static PyObject *config(PyObject *self, PyObject *unused)
{
#ifdef GS_HAVE_CUDA
    PyObject *cuda = Py_True;
#else
    PyObject *cuda = Py_False;
#endif
    return Py_BuildValue("{sOsssisisisisi}", "built_with_cuda", cuda, "build_note", GS_BUILD_NOTE,
                         "scan_tile_items", GS_NV, "segreduce_tile_items", GS_SEG_W,
                         "linrec_tile_items", GS_LR_NV, "teach_tile_items", GS_TEACH_TILE,
                         "sort_block_items", GS_SORT_BLOCK_NV);
}

PyMethodDef gs_hook_methods[] = {
    { "_config", config, METH_NOARGS,
      "_config()\n--\n\nHow the extension was built (built_with_cuda; build_note: setup.py's line "
      "on the kernels' targets, or why there are none) and the kernels' tiles in values "
      "(scan_tile_items GS_NV, segreduce_tile_items GS_SEG_W, linrec_tile_items GS_LR_NV, "
      "teach_tile_items GS_TEACH_TILE, sort_block_items GS_SORT_BLOCK_NV: the longest row sorted "
      "inside one block), for the tests and the demo." },
    { "_scan_scratch_bytes", scan_scratch_bytes, METH_O,
      "_scan_scratch_bytes(n)\n--\n\nScratch bytes of a device scan over n values, for tests." },
    { "_split_scratch_bytes", split_scratch_bytes, METH_O,
      "_split_scratch_bytes(n)\n--\n\nScratch bytes of a device split over n values, for tests." },
    { "_reduce_chunk_items", reduce_chunk_items, METH_O,
      "_reduce_chunk_items(row_len)\n--\n\nValues per chunk of a reduction's row of row_len "
      "values (gs_reduce_chunk_len), for tests." },
    { "_hist_last_launch", hist_last_launch, METH_NOARGS,
      "_hist_last_launch()\n--\n\nHow the last CUDA histogram launch counted (shared, replicas, "
      "slices, slice_bins, blocks, smem_bytes), for tests; None without CUDA." },
    { "_hist_plan", hist_plan, METH_VARARGS,
      "_hist_plan(nbins, acc_bytes, budget)\n--\n\nThe shared-memory split of a histogram "
      "(slices, slice_bins, replicas), for tests." },
    { "_reduce_scratch_bytes", reduce_scratch_bytes, METH_VARARGS,
      "_reduce_scratch_bytes(rows, row_len)\n--\n\nScratch bytes of a device reduction, for "
      "tests." },
    { "_segreduce_scratch_bytes", segreduce_scratch_bytes, METH_VARARGS,
      "_segreduce_scratch_bytes(n, nseg, sorted)\n--\n\nScratch bytes of a device segmented "
      "reduction, for tests." },
    { "_linrec_scratch_bytes", linrec_scratch_bytes, METH_O,
      "_linrec_scratch_bytes(n)\n--\n\nScratch bytes of a device linear recurrence over n "
      "values, for tests." },
    { "_sort_scratch_bytes", sort_scratch_bytes, METH_VARARGS,
      "_sort_scratch_bytes(rows, row_len, key_bytes, is_float, keys, index)\n--\n\nScratch bytes "
      "of a device sort (is_float: of float keys; keys: sorted keys wanted; index: argsort's "
      "index wanted), for tests." },
    { "_sort_layout", sort_layout, METH_VARARGS,
      "_sort_layout(rows, row_len, key_bytes, is_float, keys, index)\n--\n\nThe device-wide sort's "
      "geometry and scratch offsets (gs_sort_layout_of; in_block: rows sorted inside a block "
      "instead), for tests." },
    { "_teach_scratch_bytes", teach_scratch_bytes, METH_VARARGS,
      "_teach_scratch_bytes(algorithm, n, row_len, out_itemsize, segmented, in_place)\n--\n\n"
      "Scratch bytes of a teaching scan on CUDA, for tests." },
    { "_teach_set_unpadded", teach_set_unpadded, METH_O,
      "_teach_set_unpadded(flag)\n--\n\nRun the Blelloch tiles without bank-conflict padding "
      "(True) or with it (False, the default); returns the previous setting.  CUDA only "
      "(the CPU has no shared memory to pad): the tests run both layouts." },
    { "_segreduce_set_many", segreduce_set_many, METH_VARARGS,
      "_segreduce_set_many(tiles, per_warp=0)\n--\n\nThe tile count of a segmented "
      "reduction's level from which a warp takes several tiles as one range, and how many "
      "(CUDA; tiles 0: chosen from the device's resident warps, per_warp 0: at most 8); "
      "returns the previous (tiles, per_warp).  For tests and benchmarks: a low count reaches "
      "the ranges' carried runs at small sizes." },
    { "_pipeline_prefault", pipeline_prefault, METH_VARARGS,
      "_pipeline_prefault(on=None, /)\n--\n\nWhether the host<->device pipeline faults in the "
      "pages of a contiguous NumPy result ahead of unpacking into it (True by default); with "
      "on, set it and return the previous setting.  For benchmarks." },
    { "_pipeline_chunk_bytes", pipeline_chunk_bytes, METH_VARARGS,
      "_pipeline_chunk_bytes(n=None, /)\n--\n\nThe host<->device pipeline's chunk in bytes "
      "($GPUSCAN_CHUNK_BYTES); with n, set it (0: the default) and return the previous one.  "
      "The tests make it tiny, so that every primitive's streamed path runs at small sizes; "
      "a float scan's bits depend on it." },
    { "_pinned_limit", pinned_limit, METH_VARARGS,
      "_pinned_limit(n=None, /)\n--\n\nThe limit of the page-locked cache that large NumPy "
      "results of the CUDA backend's streamed calls come from ($GPUSCAN_PINNED_BYTES), in "
      "bytes of blocks in use or cached; with n, set it (0: no cache, results in ordinary "
      "memory) and return the previous one.  For tests and benchmarks." },
    { "_hold_bytes", hold_bytes, METH_VARARGS,
      "_hold_bytes(n=None, /)\n--\n\nThe size in bytes from which a NumPy operand that a call "
      "sees a second time is held page-locked until it is freed (CUDA; 64 MiB by default); "
      "with n, set it (0: none held) and return the previous one.  For tests and "
      "benchmarks." },
    { "_backend_reason", backend_reason, METH_NOARGS,
      "_backend_reason()\n--\n\nWhy backend() is 'cpu' (for example 'no CUDA driver was "
      "found'), None on CUDA." },
    { NULL, NULL, 0, NULL },
};
