/*
 * ops/trace.c - _gpuscan._trace: a teaching scan run one parallel step at a time on the active
 * backend, with the working array recorded after every step (gpuscan/trace.py builds on it).
 * Level: ops.  The steps are the backend table's `step` entry (CUDA: one kernel launch each;
 * CPU: one parallel loop each); the operator applications are counted by the steps as they
 * happen (an atomic counter on the device, per-task counts on the CPU), never computed here.
 * Between steps the working array (and, for the flagged sweeps, the up-swept flags) is copied
 * into a new NumPy array: a snapshot of what the step left.
 */
#include "ops/ops.h"

#include "cpu/cpu.h" /* gs_cpu_identity: the operators' identities, written once */
#include "gpuscan/teach_config.h"

/* Largest input a trace takes: every step is kept, so memory grows as n log n. */
#define GS_TRACE_MAX_N 65536

/* One trace as it runs: buffers in the backend's memory (device or host). */
typedef struct trace_run {
    const gs_backend_ops *be;
    gs_step_desc d; /* the next step; rows = 1 */
    void *buf[2];   /* working arrays (Hillis-Steele swaps them) */
    void *x;        /* the padded input, for the inclusive step */
    unsigned char *fup, *forig;
    unsigned long long *work; /* the step counter */
    unsigned long long total; /* counted so far */
    int span;
    PyObject *steps; /* list of (kind, stride, values, flags or None, work) */
    gs_bag bag;
} trace_run;

/* Host -> backend memory, or back (`to_host`): n values of t.  Raises on failure. */
static int trace_copy(trace_run *r, void *dst, const void *src, int64_t n, gs_dtype t, int to_host)
{
    const gs_mem from = to_host ? r->be->mem : GS_MEM_HOST, to = to_host ? GS_MEM_HOST : r->be->mem;
    gs_view a = gs_view_flat((void *)src, n, from, t), b = gs_view_flat(dst, n, to, t);
    return gs_move(&a, &b, &r->bag);
}

/* A new NumPy array of n values of t copied from backend memory `src`. */
static PyObject *trace_snapshot(trace_run *r, const void *src, int64_t n, gs_dtype t)
{
    gs_view v;
    PyObject *a = gs_result_new(GS_MEM_HOST, 1, &n, t, &v);
    if (a != NULL && trace_copy(r, v.ptr, src, n, t, 1) < 0)
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
        goto done;
    if (r->fup != NULL) {
        if ((f = trace_snapshot(r, r->fup, r->d.m, GS_UINT8)) == NULL)
            goto done;
    } else {
        f = Py_NewRef(Py_None);
    }
    item = Py_BuildValue("(sLOOK)", kind, (long long)stride, v, f, work);
    if (item != NULL)
        rc = PyList_Append(r->steps, item);
done:
    Py_XDECREF(v);
    Py_XDECREF(f);
    Py_XDECREF(item);
    return rc;
}

/* Run r->d as one step, then record it with the operator applications it counted. */
static int trace_step(trace_run *r, const char *kind)
{
    unsigned long long counted = 0;
    gs_fail f = { 0 };
    int rc;

    GS_BEGIN_UNLOCKED
        rc = r->be->step(&r->d, &f);
    GS_END_UNLOCKED
    if (rc < 0)
        return gs_raise(&f);
    if (trace_copy(r, &counted, r->work, 1, GS_UINT64, 1) < 0)
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
        if (trace_copy(r, r->buf[0], &id, 1, r->d.type, 0) < 0)
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

/* The input as a contiguous 1-D array of the accumulation dtype (NumPy's rule), and the flags
 * as bools of its length. */
static int trace_inputs(trace_run *r, PyObject *a_obj, PyObject *flags_obj, PyArrayObject **a,
                        PyArrayObject **heads)
{
    PyArrayObject *in;
    gs_dtype in_type;

    in = (PyArrayObject *)PyArray_FROMANY(a_obj, NPY_NOTYPE, 0, 0, NPY_ARRAY_CARRAY_RO);
    if (in == NULL)
        return -1;
    if (gs_dtype_from_descr(PyArray_DESCR(in), "input", &in_type) < 0)
        goto fail;
    r->d.type = gs_default_acc_type(in_type, r->d.op);
    if (gs_check_op_dtype(r->d.op, r->d.type) < 0)
        goto fail;
    r->d.op = gs_op_run(r->d.op, r->d.type);
    if (PyArray_SIZE(in) > GS_TRACE_MAX_N) {
        PyErr_Format(PyExc_ValueError, "a trace takes at most %d elements, got %lld",
                     GS_TRACE_MAX_N, (long long)PyArray_SIZE(in));
        goto fail;
    }
    *a = (PyArrayObject *)PyArray_CastToType(in, gs_descr(r->d.type), 0);
    Py_DECREF(in);
    if (*a == NULL || flags_obj == Py_None)
        return *a != NULL ? 0 : -1;
    *heads = (PyArrayObject *)PyArray_FROMANY(flags_obj, NPY_BOOL, 0, 0,
                                              NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
    if (*heads == NULL)
        return -1;
    if (PyArray_SIZE(*heads) != PyArray_SIZE(*a)) {
        PyErr_Format(PyExc_ValueError, "flags has %lld elements but a has %lld",
                     (long long)PyArray_SIZE(*heads), (long long)PyArray_SIZE(*a));
        return -1;
    }
    return 0;
fail:
    Py_DECREF(in);
    return -1;
}

/* The working array on the host: the n input values (shifted right by one for an exclusive
 * Hillis-Steele), the identity in front or as padding up to r->d.m.  The flags likewise,
 * padded with zeros. */
static int trace_working(trace_run *r, PyArrayObject *a, PyArrayObject *heads, int shift,
                         PyObject **w, PyObject **fw)
{
    const int64_t n = PyArray_SIZE(a), m = r->d.m;
    const size_t size = gs_dtype_size(r->d.type);
    gs_view v;
    char *dst;

    if ((*w = gs_result_new(GS_MEM_HOST, 1, &m, r->d.type, &v)) == NULL)
        return -1;
    dst = v.ptr;
    for (int64_t i = 0; i < m; i++) {
        int64_t j = i - shift;
        if (j >= 0 && j < n)
            memcpy(dst + i * size, PyArray_BYTES(a) + j * size, size);
        else
            gs_cpu_identity(r->d.op, r->d.type, dst + i * size);
    }
    if (heads == NULL)
        return 0;
    npy_intp dims = (npy_intp)m;
    if ((*fw = PyArray_ZEROS(1, &dims, NPY_UINT8, 0)) == NULL)
        return -1;
    memcpy(PyArray_DATA((PyArrayObject *)*fw), PyArray_DATA(heads), (size_t)n); /* 0 or 1 */
    return 0;
}

/* The buffers in the backend's memory, from the host working arrays; the start recorded. */
static int trace_buffers(trace_run *r, PyObject *w, PyObject *fw)
{
    const int64_t m = r->d.m;
    const size_t bytes = (size_t)m * gs_dtype_size(r->d.type);
    const gs_mem mem = r->be->mem;
    const void *wp = PyArray_DATA((PyArrayObject *)w);

    if (gs_bag_alloc(&r->bag, mem, bytes + 1, &r->buf[0]) < 0 ||
        gs_bag_alloc(&r->bag, mem, bytes + 1, &r->buf[1]) < 0 ||
        gs_bag_alloc(&r->bag, mem, bytes + 1, &r->x) < 0 ||
        gs_bag_alloc(&r->bag, mem, sizeof(*r->work), (void **)&r->work) < 0 ||
        trace_copy(r, r->buf[0], wp, m, r->d.type, 0) < 0 ||
        trace_copy(r, r->x, wp, m, r->d.type, 0) < 0 ||
        trace_copy(r, r->work, &r->total, 1, GS_UINT64, 0) < 0)
        return -1;
    if (fw != NULL) {
        const void *fp = PyArray_DATA((PyArrayObject *)fw);
        if (gs_bag_alloc(&r->bag, mem, (size_t)m + 1, (void **)&r->fup) < 0 ||
            gs_bag_alloc(&r->bag, mem, (size_t)m + 1, (void **)&r->forig) < 0 ||
            trace_copy(r, r->fup, fp, m, GS_UINT8, 0) < 0 ||
            trace_copy(r, r->forig, fp, m, GS_UINT8, 0) < 0)
            return -1;
    }
    r->d.rows = 1;
    r->d.fup = r->fup;
    r->d.forig = r->forig;
    r->d.work = r->work;
    return trace_record(r, "input", 0, r->buf[0], 0);
}

PyObject *gs_trace(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "algorithm", "a", "flags", "op", "exclusive", NULL };
    const char *algorithm;
    PyObject *a_obj, *flags_obj = Py_None, *op_obj = NULL, *ret = NULL, *w = NULL, *fw = NULL;
    PyObject *res;
    PyArrayObject *a = NULL, *heads = NULL;
    int exclusive = 0;
    gs_algorithm algo;
    gs_backend backend;
    trace_run r;
    int64_t n;

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
    if ((op_obj != NULL && gs_parse_op(op_obj, &r.d.op) < 0) || gs_backend_get(&backend) < 0)
        return NULL;
    r.be = gs_backend_table(backend);
    if (trace_inputs(&r, a_obj, flags_obj, &a, &heads) < 0)
        goto done;
    n = PyArray_SIZE(a);
    r.d.m = algo == GS_ALGO_BLELLOCH && n > 0 ? (int64_t)1 << gs_ceil_log2(n) : n;
    if ((r.steps = PyList_New(0)) == NULL ||
        trace_working(&r, a, heads, algo == GS_ALGO_HILLIS_STEELE && exclusive, &w, &fw) < 0 ||
        trace_buffers(&r, w, fw) < 0 || (r.d.m > 0 && trace_algorithm(&r, algo, exclusive, n) < 0))
        goto done;
    /* Hillis-Steele swapped its buffers after each step: the last one written is buf[0]. */
    if ((res = trace_snapshot(&r, r.buf[0], r.d.m, r.d.type)) == NULL)
        goto done;
    ret = Py_BuildValue("(ONKi)", r.steps, res, r.total, r.span); /* (steps, result, work, span) */
done:
    Py_XDECREF(r.steps);
    gs_bag_free(&r.bag);
    Py_XDECREF(a);
    Py_XDECREF(heads);
    Py_XDECREF(w);
    Py_XDECREF(fw);
    (void)self;
    return ret;
}
