/*
 * ops/scan.c - gpuscan.scan() and gpuscan.segmented_scan().
 * Level: ops. Everything about Python objects is settled first, by code the two functions
 * share: the operator, the accumulation dtype (NumPy's accumulate rules, dtype=, out=), the
 * axis (scan) or the flags (segmented_scan: a's shape, any dtype) and the result's shape. Then
 * the steps of ops/ops.h, with the views seen with the scanned axis last (axis=None, 0-d, 1-d
 * and segmented scans: the elements in C order; a backend whose table sets inner_axes scans
 * another axis in place instead, as rows x row_len x inner: ops/axis_layout.h). Ctrl-C is
 * honoured when the scan returns.
 */
#include "ops/ops.h"

/* Everything settled about one scan call before any data moves. */
typedef struct gs_scan_plan {
    gs_op op;
    int exclusive;
    int axis;              /* -1: the flattened array */
    gs_dtype in_type;      /* the input's dtype */
    gs_dtype acc_type;     /* accumulation and result dtype */
    gs_dtype scan_in_type; /* what the backend reads: in_type when the pair is direct */
    gs_dtype flag_type;    /* segmented: the flags' dtype */
    gs_algorithm algorithm;
} gs_scan_plan;

/* ---- settling, shared by scan() and segmented_scan() ---------------------------------------- */

/* One scan-like call as it is settled step by step; zero it first, scan_call_release it last. */
typedef struct scan_call {
    gs_scan_plan plan;
    gs_backend backend;
    gs_operand in, flags, out; /* flags, out: zeroed when not given */
    int ndim;                  /* the input's dimensions and shape */
    int64_t shape[GS_MAX_NDIM];
    int64_t n;
} scan_call;

static void scan_call_release(scan_call *c)
{
    gs_operand_release(&c->in);
    gs_operand_release(&c->flags);
    gs_operand_release(&c->out);
}

/* The operator, the backend, the input and `out` operands, and the input's dtype and shape. */
static int scan_begin(scan_call *c, PyObject *a, PyObject *op_obj, int exclusive, PyObject *out_obj)
{
    /* Names and the backend first: they fail the same way whatever the data. */
    c->plan.op = GS_OP_ADD;
    c->plan.exclusive = exclusive;
    c->plan.axis = -1;
    if (op_obj != NULL && gs_parse_op(op_obj, &c->plan.op) < 0)
        return -1;
    if (gs_backend_get(&c->backend) < 0)
        return -1;
    if (gs_operand_get(a, &c->in) < 0)
        return -1;
    if (out_obj != Py_None && gs_out_get(out_obj, &c->out) < 0)
        return -1;
    if (gs_operand_info(&c->in, "input", &c->plan.in_type, &c->ndim, c->shape) < 0)
        return -1;
    c->n = 1;
    for (int i = 0; i < c->ndim; i++)
        c->n *= c->shape[i];
    return 0;
}

/* The accumulation dtype (dtype=, else out's, else NumPy's accumulate rule) and the checks of
 * `out` against the result's shape (rnd dimensions, rshape). */
static int scan_settle(scan_call *c, PyArray_Descr *dtype, PyObject *out_obj, int rnd,
                       const int64_t *rshape)
{
    gs_scan_plan *plan = &c->plan;

    if (gs_settle_acc(plan->op, plan->in_type, dtype, out_obj != Py_None ? &c->out : NULL, rnd,
                      rshape, &plan->acc_type) < 0)
        return -1;
    plan->scan_in_type = gs_scan_pair_direct(plan->in_type, plan->acc_type, plan->op)
                             ? plan->in_type
                             : plan->acc_type;
    plan->op = gs_op_run(plan->op, plan->acc_type);
    return 0;
}

/* ---- running ------------------------------------------------------------------------------ */

/* The descriptor of the plan's scan over n values (rows of row_len; 0: one scan; with inner > 1,
 * blocks of row_len x inner scanned down their columns), its buffers not yet set. */
static gs_scan_desc scan_desc_of(const gs_scan_plan *plan, int64_t n, int64_t row_len,
                                 int64_t inner)
{
    gs_scan_desc d;

    memset(&d, 0, sizeof(d));
    d.n = n;
    d.row_len = row_len;
    d.inner = inner > 1 ? inner : 0;
    d.in_type = plan->scan_in_type;
    d.out_type = plan->acc_type;
    d.flag_type = plan->flag_type;
    d.op = plan->op;
    d.exclusive = plan->exclusive;
    d.algorithm = plan->algorithm;
    d.unpadded = gs_test_knobs.teach_unpadded;
    return d;
}

/* The backend's scan of the placed buffers (n values, rows of row_len when row_len > 0, blocks
 * of row_len x inner when inner > 1). */
static int scan_backend(const gs_backend_ops *be, const gs_scan_plan *plan, const gs_view *src,
                        const gs_view *heads, const gs_view *dst, int64_t n, int64_t row_len,
                        int64_t inner)
{
    gs_scan_desc d = scan_desc_of(plan, n, row_len, inner);
    gs_fail f = { 0 };
    int rc;

    if (n == 0)
        return 0;
    d.in = src->ptr;
    d.out = dst->ptr;
    d.flags = heads != NULL ? heads->ptr : NULL;
    GS_BEGIN_UNLOCKED
        rc = be->scan(&d, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : PyErr_CheckSignals();
}

/* The scan of host operands streamed through the backend's memory (gs_backend_ops): the input
 * (and flags) copied first if the result overlaps them other than exactly in place, since
 * chunks are read and written at once. */
static int scan_stream(const gs_backend_ops *be, scan_call *c, int segmented, int whole,
                       const gs_view *in, const gs_view *res, gs_bag *bag)
{
    const gs_scan_plan *plan = &c->plan;
    gs_view src = *in, heads = c->flags.view;
    const int same = src.ptr == res->ptr && src.dtype == res->dtype &&
                     memcmp(src.strides, res->strides, sizeof(int64_t) * src.ndim) == 0;
    const gs_scan_desc d = scan_desc_of(plan, c->n, whole ? 0 : in->shape[in->ndim - 1], 0);

    if ((!same && gs_apart_from(res, &src, 0, bag) < 0) ||
        (segmented && gs_apart_from(res, &heads, 0, bag) < 0))
        return -1;
    return gs_stream_scan(be, &d, &src, segmented ? &heads : NULL, res);
}

/* Place, target, run, deliver: the settled call on its backend; returns the result. */
static PyObject *scan_run(scan_call *c, int segmented, PyObject *out_obj, int rnd,
                          const int64_t *rshape)
{
    const int device = c->in.on_device || c->flags.on_device || c->out.on_device;
    const gs_backend_ops *be = gs_backend_for(c->backend, device);
    const gs_scan_plan *plan = &c->plan;
    const int whole = plan->axis < 0 || c->ndim <= 1;
    const int streamed = !device && be->stream_scan != NULL && plan->algorithm == GS_ALGO_AUTO;
    /* Another axis than the last, on a backend that reads it in place: the columns after it. */
    int64_t inner = 1;
    if (!whole && plan->axis != c->ndim - 1 && be->inner_axes && !streamed &&
        plan->algorithm == GS_ALGO_AUTO)
        inner = gs_shape_size(c->ndim - plan->axis - 1, c->shape + plan->axis + 1);
    const int in_place = inner > 1;
    gs_operand *const used[] = { &c->in, segmented ? &c->flags : NULL, &c->out };
    gs_view in = c->in.view, res, src, heads, dst;
    PyObject *ret;
    gs_bag bag = { 0 };
    int direct;

    /* 1. The result (out=, or new where the operands are) and the input, both seen with the
     *    scanned axis last (or as they are, when it is read in place). */
    if (out_obj != Py_None) {
        res = c->out.view;
        ret = Py_NewRef(out_obj);
    } else if ((ret = streamed ? gs_result_streamed(be, rnd, rshape, plan->acc_type, &res)
                               : gs_result_new(device ? GS_MEM_DEVICE : GS_MEM_HOST, rnd, rshape,
                                               plan->acc_type, &res)) == NULL) {
        return NULL;
    }
    if (!whole && !in_place) {
        gs_view_move_axis_last(&in, plan->axis);
        gs_view_move_axis_last(&res, plan->axis);
    }

    /* 2. Host operands on a backend with its own memory: streamed through it in chunks. */
    if (streamed) {
        if (scan_stream(be, c, segmented, whole, &in, &res, &bag) < 0)
            goto fail;
        goto done;
    }

    /* 3. The input and the flags where the backend reads them, each in its own dtype. */
    if (gs_place(&in, be->mem, plan->scan_in_type, &bag, &src) < 0 ||
        (segmented && gs_place(&c->flags.view, be->mem, plan->flag_type, &bag, &heads) < 0))
        goto fail;

    /* 4. Where it writes: the result itself, apart from the input and the flags (exactly in
     *    place is fine), else a temporary. */
    direct = gs_view_ready(&res, be->mem, plan->acc_type);
    if (direct) {
        dst = res;
        if (gs_apart_from(&dst, &src, plan->scan_in_type == plan->acc_type, &bag) < 0 ||
            (segmented && gs_apart_from(&dst, &heads, 0, &bag) < 0))
            goto fail;
    } else if (gs_temp_like(&bag, &res, be->mem, plan->acc_type, &dst) < 0) {
        goto fail;
    }

    /* 5. The scan, and the delivery of a temporary. */
    if (scan_backend(be, plan, &src, segmented ? &heads : NULL, &dst, c->n,
                     whole ? 0 : in.shape[in_place ? plan->axis : in.ndim - 1], inner) < 0 ||
        (!direct && gs_move(&dst, &res, &bag) < 0) || gs_release_operands(used, 3) < 0)
        goto fail;
    goto done;
fail:
    (void)gs_release_operands(used, 3); /* after work already enqueued too; the failure kept */
    Py_CLEAR(ret);
done:
    gs_bag_free(&bag);
    return ret;
}

/* ---- scan() ------------------------------------------------------------------------------- */

PyObject *gs_scan(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "op", "exclusive", "axis", "dtype", "out", "algorithm", NULL };
    PyObject *a, *op_obj = NULL, *axis_obj = Py_None, *out_obj = Py_None, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    const char *algorithm = "auto";
    int exclusive = 0, rnd;
    int64_t rshape[GS_MAX_NDIM];
    gs_algorithm algo;
    scan_call c;

    if (gs_uop_wanted(args, kwargs, 1))
        return gs_uop_scan(args, kwargs); /* an Operator: ops/userop.c */
    if (gs_half_route(gs_scan, self, args, kwargs, 1, &ret))
        return ret; /* float16: binding/half.c */

    memset(&c, 0, sizeof(c));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$pOO&Os:scan", kwlist, &a, &op_obj,
                                     &exclusive, &axis_obj, PyArray_DescrConverter2, &dtype,
                                     &out_obj, &algorithm))
        return NULL;
    if (gs_parse_algorithm(algorithm, 0, &algo) < 0)
        goto done;
    if (scan_begin(&c, a, op_obj, exclusive, out_obj) < 0)
        goto done;
    c.plan.algorithm = algo;

    /* The axis and the result's shape: 1-D for axis=None and for 0-d input (as np.cumsum). */
    if (axis_obj != Py_None &&
        gs_normalize_axis(axis_obj, c.ndim > 0 ? c.ndim : 1, &c.plan.axis) < 0)
        goto done;
    if (c.plan.axis < 0 || c.ndim == 0) {
        rnd = 1;
        rshape[0] = c.n;
    } else {
        rnd = c.ndim;
        memcpy(rshape, c.shape, sizeof(int64_t) * (size_t)c.ndim);
    }
    if (scan_settle(&c, dtype, out_obj, rnd, rshape) < 0)
        goto done;
    ret = scan_run(&c, 0, out_obj, rnd, rshape);
done:
    scan_call_release(&c);
    Py_XDECREF(dtype);
    return ret;
}

/* ---- segmented_scan() --------------------------------------------------------------------- */

PyObject *gs_segmented_scan(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "flags", "op", "exclusive", "dtype", "out", "algorithm", NULL };
    PyObject *a, *flags_obj, *op_obj = NULL, *out_obj = Py_None, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    const char *algorithm = "auto";
    int exclusive = 0, fnd;
    int64_t fshape[GS_MAX_NDIM];
    gs_algorithm algo;
    scan_call c;

    if (gs_uop_wanted(args, kwargs, 2))
        return gs_uop_segmented_scan(args, kwargs); /* an Operator: ops/userop.c */
    if (gs_half_route(gs_segmented_scan, self, args, kwargs, 2, &ret))
        return ret; /* float16: binding/half.c */

    memset(&c, 0, sizeof(c));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$pO&Os:segmented_scan", kwlist, &a,
                                     &flags_obj, &op_obj, &exclusive, PyArray_DescrConverter2,
                                     &dtype, &out_obj, &algorithm))
        return NULL;
    if (gs_parse_algorithm(algorithm, 1, &algo) < 0)
        goto done;
    if (scan_begin(&c, a, op_obj, exclusive, out_obj) < 0)
        goto done;
    c.plan.algorithm = algo;

    /* The flags: any supported dtype, exactly a's shape (no broadcasting); wider than a byte,
     * the backend gets them as bool (nonzero: a head, NaN too), as it reads 1-byte flags at
     * their fastest (gs_scan_desc). */
    if (gs_operand_get(flags_obj, &c.flags) < 0 ||
        gs_operand_info(&c.flags, "flags", &c.plan.flag_type, &fnd, fshape) < 0 ||
        gs_check_same_shape("flags", fnd, fshape, "a", c.ndim, c.shape) < 0)
        goto done;
    if (gs_dtype_size(c.plan.flag_type) != 1)
        c.plan.flag_type = GS_BOOL;

    /* The result has a's shape; the scan runs over it in C order. */
    if (scan_settle(&c, dtype, out_obj, c.ndim, c.shape) < 0)
        goto done;
    ret = scan_run(&c, 1, out_obj, c.ndim, c.shape);
done:
    scan_call_release(&c);
    Py_XDECREF(dtype);
    return ret;
}
