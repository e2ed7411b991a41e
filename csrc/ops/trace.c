/*
 * ops/trace.c - _gpuscan._trace: a teaching scan run one parallel step at a time on the active
 * backend, with the working array recorded after every step (gpuscan/trace.py builds on it).
 *
 * Level: host layer.  The steps are the backends' own (gs_cuda_step: one kernel launch each;
 * gs_cpu_step: one parallel loop each); the operator applications are counted by the steps as
 * they happen (an atomic counter on the device, per-task counts on the CPU), never computed
 * here.  Between steps the working array (and, for the flagged sweeps, the up-swept flags) is
 * copied into a new NumPy array: a snapshot of what the step left.
 */
#include "gpuscan.h"

#include <errno.h>

#include "cpu/cpu.h"
#include "gpuscan/teach_config.h"

/* Largest input a trace takes: every step is kept, so memory grows as n log n. */
#define GS_TRACE_MAX_N 65536

/* One trace as it runs: buffers on the active backend (device or host memory). */
typedef struct trace_run {
    gs_backend backend;
    gs_step_desc d; /* the next step; rows = 1 */
    void *buf[2];   /* working arrays (Hillis-Steele swaps them) */
    void *x;        /* the padded input, for the inclusive step */
    unsigned char *fup, *forig;
    unsigned long long *work; /* the step counter */
    unsigned long long total; /* counted so far */
    int span;
    PyObject *steps; /* list of (kind, stride, values, flags or None, work) */
} trace_run;

static void *trace_alloc(const trace_run *r, size_t bytes)
{
#ifdef GS_HAVE_CUDA
    if (r->backend == GS_BACKEND_CUDA) {
        void *p = NULL;
        return gs_cuda_malloc(&p, bytes ? bytes : 1) == cudaSuccess ? p : NULL;
    }
#endif
    return calloc(1, bytes ? bytes : 1);
}

static void trace_free(const trace_run *r, void *p)
{
#ifdef GS_HAVE_CUDA
    if (r->backend == GS_BACKEND_CUDA) {
        gs_cuda_free(p);
        return;
    }
#endif
    free(p);
}

/* Host -> backend memory, or back (`to_host`).  Raises on failure. */
static int trace_copy(const trace_run *r, void *dst, const void *src, size_t bytes, int to_host)
{
#ifdef GS_HAVE_CUDA
    if (r->backend == GS_BACKEND_CUDA)
        return to_host ? gs_cuda_download(dst, src, bytes) : gs_cuda_upload(dst, src, bytes);
#endif
    (void)to_host;
    memcpy(dst, src, bytes);
    return 0;
}

/* A new NumPy array of n values of t copied from backend memory `src`. */
static PyObject *trace_snapshot(const trace_run *r, const void *src, int64_t n, gs_dtype t)
{
    npy_intp dims[1] = { (npy_intp)n };
    PyArray_Descr *descr = gs_descr(t);
    PyObject *a = descr != NULL ? PyArray_Empty(1, dims, descr, 0) : NULL;
    if (a != NULL &&
        trace_copy(r, PyArray_DATA((PyArrayObject *)a), src, (size_t)n * gs_dtype_size(t), 1) < 0)
        Py_CLEAR(a);
    return a;
}

/* Record the state after a step (or the start): the values in `values`, the flags if any. */
static int trace_record(trace_run *r, const char *kind, int64_t stride, const void *values,
                        unsigned long long work)
{
    PyObject *v = trace_snapshot(r, values, r->d.m, r->d.type), *f = NULL, *item = NULL;
    int rc = -1;
    if (v == NULL)
        goto finally;
    if (r->fup != NULL) {
        if ((f = trace_snapshot(r, r->fup, r->d.m, GS_UINT8)) == NULL)
            goto finally;
    } else {
        Py_INCREF(Py_None);
        f = Py_None;
    }
    item = Py_BuildValue("(sLOOK)", kind, (long long)stride, v, f, work);
    if (item != NULL)
        rc = PyList_Append(r->steps, item);
finally:
    Py_XDECREF(v);
    Py_XDECREF(f);
    Py_XDECREF(item);
    return rc;
}

/* Run r->d as one step, then record it with the operator applications it counted. */
static int trace_step(trace_run *r, const char *kind)
{
    unsigned long long counted = 0;
    int rc;
#ifdef GS_HAVE_CUDA
    if (r->backend == GS_BACKEND_CUDA) {
        cudaError_t err;
        Py_BEGIN_ALLOW_THREADS err = gs_cuda_enter();
        if (err == cudaSuccess)
            err = gs_cuda_step(&r->d, gs_cuda_stream);
        Py_END_ALLOW_THREADS if (err != cudaSuccess)
        {
            gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
            gs_cuda_fail_set(&fail, err, "gs_cuda_step", 0);
            return gs_cuda_raise(&fail);
        }
    } else
#endif
    {
        Py_BEGIN_ALLOW_THREADS rc = gs_cpu_step(&r->d);
        Py_END_ALLOW_THREADS if (rc < 0)
        {
            if (rc == -ENOMEM)
                PyErr_NoMemory();
            else
                PyErr_Format(PyExc_RuntimeError, "the CPU backend failed: %s", strerror(-rc));
            return -1;
        }
    }
    if (trace_copy(r, &counted, r->work, sizeof(counted), 1) < 0)
        return -1;
    r->span++;
    rc = trace_record(r, kind, r->d.s, r->d.buf, counted - r->total);
    r->total = counted;
    return rc;
}

/* The whole algorithm, step after step, from the working arrays already initialised. */
static int trace_algorithm(trace_run *r, gs_algorithm algo, int exclusive, int64_t n)
{
    const int64_t m = r->d.m;
    if (algo == GS_ALGO_HILLIS_STEELE) {
        r->d.kind = GS_STEP_HS;
        for (int64_t s = 1; s < n; s *= 2) {
            r->d.src = r->buf[0];
            r->d.buf = r->buf[1];
            r->d.s = s;
            if (trace_step(r, "hs") < 0)
                return -1;
            void *t = r->buf[0]; /* swap the buffers' roles: never a copy */
            r->buf[0] = r->buf[1];
            r->buf[1] = t;
        }
        return 0;
    }
    r->d.buf = r->buf[0];
    r->d.kind = GS_STEP_UP;
    for (r->d.s = 1; r->d.s < m; r->d.s *= 2)
        if (trace_step(r, "up") < 0)
            return -1;
    if (m == 1) { /* a tree of one leaf: the root is cleared with no down-sweep step */
        gs_val id;
        gs_cpu_identity(r->d.op, r->d.type, &id);
        if (trace_copy(r, r->buf[0], &id, gs_dtype_size(r->d.type), 0) < 0)
            return -1;
    }
    r->d.kind = GS_STEP_DOWN;
    for (r->d.s = m / 2; r->d.s >= 1; r->d.s /= 2) {
        r->d.clear_root = r->d.s == m / 2;
        if (trace_step(r, "down") < 0)
            return -1;
    }
    if (!exclusive) {
        r->d.kind = GS_STEP_INCL;
        r->d.src = r->x;
        r->d.s = 1;
        r->d.len = n;
        if (trace_step(r, "inclusive") < 0)
            return -1;
    }
    return 0;
}

PyObject *gs_trace(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "algorithm", "a", "flags", "op", "exclusive", NULL };
    const char *algorithm;
    PyObject *a_obj, *flags_obj = Py_None, *op_obj = NULL, *ret = NULL;
    PyArrayObject *a = NULL, *w = NULL, *heads = NULL;
    PyArray_Descr *descr;
    int exclusive = 0;
    gs_algorithm algo;
    gs_dtype in_type;
    trace_run r;
    unsigned char *fhost = NULL;
    int64_t n, m;
    size_t size, bytes;

    memset(&r, 0, sizeof(r));
    r.d.op = GS_OP_ADD;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sO|OOp:_trace", kwlist, &algorithm, &a_obj,
                                     &flags_obj, &op_obj, &exclusive))
        return NULL;
    if (gs_parse_algorithm(algorithm, flags_obj != Py_None, &algo) < 0)
        return NULL;
    if (algo == GS_ALGO_AUTO) {
        PyErr_SetString(PyExc_ValueError,
                        "a trace runs 'hillis_steele' or 'blelloch' (algorithm='auto' has no "
                        "textbook steps)");
        return NULL;
    }
    if ((op_obj != NULL && gs_parse_op(op_obj, &r.d.op) < 0) || gs_backend_get(&r.backend) < 0)
        return NULL;

    /* ---- The input as a contiguous 1-D array of the accumulation dtype (NumPy's rule). ---- */
    a = (PyArrayObject *)PyArray_FROMANY(a_obj, NPY_NOTYPE, 0, 0, NPY_ARRAY_CARRAY_RO);
    if (a == NULL || gs_dtype_from_descr(PyArray_DESCR(a), "input", &in_type) < 0)
        goto finally;
    r.d.type = gs_default_acc_type(in_type, r.d.op);
    if (gs_check_op_dtype(r.d.op, r.d.type) < 0)
        goto finally;
    n = PyArray_SIZE(a);
    if (n > GS_TRACE_MAX_N) {
        PyErr_Format(PyExc_ValueError, "a trace takes at most %d elements, got %lld",
                     GS_TRACE_MAX_N, (long long)n);
        goto finally;
    }
    if (flags_obj != Py_None) {
        heads = (PyArrayObject *)PyArray_FROMANY(flags_obj, NPY_BOOL, 0, 0,
                                                 NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
        if (heads == NULL)
            goto finally;
        if (PyArray_SIZE(heads) != n) {
            PyErr_Format(PyExc_ValueError, "flags has %lld elements but a has %lld",
                         (long long)PyArray_SIZE(heads), (long long)n);
            goto finally;
        }
    }
    m = algo == GS_ALGO_BLELLOCH && n > 0 ? (int64_t)1 << gs_ceil_log2(n) : n;
    r.d.rows = 1;
    r.d.m = m;
    size = gs_dtype_size(r.d.type);
    bytes = (size_t)m * size;

    /* ---- The working array on the host: the input (shifted right for an exclusive
     * Hillis-Steele), the identity in front or as padding up to m. ---- */
    {
        npy_intp dims[1] = { (npy_intp)m };
        if ((descr = gs_descr(r.d.type)) == NULL)
            goto finally;
        w = (PyArrayObject *)PyArray_Empty(1, dims, descr, 0);
        if (w == NULL)
            goto finally;
        PyArrayObject *conv = (PyArrayObject *)PyArray_CastToType(a, gs_descr(r.d.type), 0);
        if (conv == NULL)
            goto finally;
        char *dst = PyArray_DATA(w), *src = PyArray_DATA(conv);
        const int shift = algo == GS_ALGO_HILLIS_STEELE && exclusive;
        for (int64_t i = 0; i < m; i++) {
            int64_t j = i - shift;
            if (j >= 0 && j < n)
                memcpy(dst + i * size, src + j * size, size);
            else
                gs_cpu_identity(r.d.op, r.d.type, dst + i * size);
        }
        Py_DECREF(conv);
    }
    if (heads != NULL) {
        fhost = calloc((size_t)(m ? m : 1), 1);
        if (fhost == NULL) {
            PyErr_NoMemory();
            goto finally;
        }
        memcpy(fhost, PyArray_DATA(heads), (size_t)n); /* NumPy bools: 0 or 1 */
    }

    /* ---- The buffers on the backend, and the start recorded. ---- */
    if ((r.steps = PyList_New(0)) == NULL)
        goto finally;
    r.buf[0] = trace_alloc(&r, bytes);
    r.buf[1] = trace_alloc(&r, bytes);
    r.x = trace_alloc(&r, bytes);
    r.work = trace_alloc(&r, sizeof(unsigned long long));
    if (heads != NULL) {
        r.fup = trace_alloc(&r, (size_t)m);
        r.forig = trace_alloc(&r, (size_t)m);
    }
    if (!r.buf[0] || !r.buf[1] || !r.x || !r.work || (heads != NULL && (!r.fup || !r.forig))) {
        PyErr_NoMemory();
        goto finally;
    }
    if (trace_copy(&r, r.buf[0], PyArray_DATA(w), bytes, 0) < 0 ||
        trace_copy(&r, r.x, PyArray_DATA(w), bytes, 0) < 0 ||
        trace_copy(&r, r.work, &r.total, sizeof(r.total), 0) < 0 ||
        (heads != NULL && (trace_copy(&r, r.fup, fhost, (size_t)m, 0) < 0 ||
                           trace_copy(&r, (void *)r.forig, fhost, (size_t)m, 0) < 0)))
        goto finally;
    r.d.fup = r.fup;
    r.d.forig = r.forig;
    r.d.work = r.work;
    if (trace_record(&r, "input", 0, r.buf[0], 0) < 0)
        goto finally;

    /* ---- The steps. ---- */
    if (m > 0 && trace_algorithm(&r, algo, exclusive, n) < 0)
        goto finally;
    {
        /* Hillis-Steele swapped its buffers after each step: the last one written is buf[0]. */
        PyObject *res = trace_snapshot(&r, r.buf[0], m, r.d.type);
        if (res == NULL)
            goto finally;
        ret = Py_BuildValue("(NNKi)", r.steps, res, r.total, r.span);
        r.steps = NULL;
    }
finally:
    Py_XDECREF(r.steps);
    trace_free(&r, r.buf[0]);
    trace_free(&r, r.buf[1]);
    trace_free(&r, r.x);
    trace_free(&r, r.work);
    trace_free(&r, r.fup);
    trace_free(&r, (void *)r.forig);
    free(fhost);
    Py_XDECREF(a);
    Py_XDECREF(w);
    Py_XDECREF(heads);
    return ret;
}
