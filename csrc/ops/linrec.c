/*
 * ops/linrec.c - gpuscan.linear_recurrence(): h[t] = a[t] * h[t-1] + b[t] along an axis.
 * Level: ops. Settled first: the dtype the recurrence runs in (float32 or float64: out's, else
 * float64 when a or b is, else float32; anything else is a TypeError, as the contract says),
 * a and b of one shape, the axis, h0 (None, a scalar, or a's shape without the axis) and `out`.
 * Then the steps of ops/ops.h with the axis last (the recurrence's rows consecutive), h0 placed
 * as one value per row (a scalar broadcast). The result may be `a` or `b` itself (in place).
 */
#include "ops/ops.h"

/* Everything settled about one call before any data moves. */
typedef struct linrec_call {
    gs_backend backend;
    gs_operand a, b, h0, out; /* h0, out: zeroed when not given */
    gs_dtype type;            /* float32 or float64 */
    int axis;
    int ndim; /* a's dimensions and shape */
    int64_t shape[GS_MAX_NDIM];
    int has_h0, h0_scalar, reverse;
} linrec_call;

/* TypeError unless t is float32 or float64. */
static int check_float(gs_dtype t, const char *what)
{
    if (t == GS_FLOAT32 || t == GS_FLOAT64)
        return 0;
    PyErr_Format(PyExc_TypeError,
                 "linear_recurrence takes float32 and float64 only; %s has dtype %s", what,
                 gs_dtype_name(t));
    return -1;
}

/* a, b, their dtypes and shapes, the axis, and the dtype the recurrence runs in. */
static int linrec_inputs(linrec_call *c, PyObject *a, PyObject *b, PyObject *axis_obj)
{
    gs_dtype ta, tb;
    int64_t bshape[GS_MAX_NDIM];
    int bnd;

    if (gs_operand_get(a, &c->a) < 0 || gs_operand_info(&c->a, "a", &ta, &c->ndim, c->shape) < 0 ||
        gs_operand_get(b, &c->b) < 0 || gs_operand_info(&c->b, "b", &tb, &bnd, bshape) < 0 ||
        check_float(ta, "a") < 0 || check_float(tb, "b") < 0 ||
        gs_check_same_shape("b", bnd, bshape, "a", c->ndim, c->shape) < 0)
        return -1;
    c->type = ta == GS_FLOAT64 || tb == GS_FLOAT64 ? GS_FLOAT64 : GS_FLOAT32;
    /* A 0-d pair is one step along any axis, as scan takes a 0-d array. */
    return gs_normalize_axis(axis_obj, c->ndim > 0 ? c->ndim : 1, &c->axis);
}

/* h0: a scalar (broadcast to every row) or an array of a's shape without the axis. */
static int linrec_h0(linrec_call *c, PyObject *h0_obj)
{
    int64_t hshape[GS_MAX_NDIM], want[GS_MAX_NDIM];
    gs_dtype t;
    int hnd, k = 0;

    if (h0_obj == Py_None)
        return 0;
    c->has_h0 = 1;
    if (gs_operand_get(h0_obj, &c->h0) < 0 || gs_operand_info(&c->h0, "h0", &t, &hnd, hshape) < 0)
        return -1;
    if (gs_dtype_kind(t) == 'f' && t != c->type && check_float(t, "h0") < 0)
        return -1;
    for (int i = 0; i < c->ndim; i++)
        if (i != c->axis)
            want[k++] = c->shape[i];
    c->h0_scalar = hnd == 0;
    return c->h0_scalar ? 0 : gs_check_same_shape("h0", hnd, hshape, "a without the axis", k, want);
}

/* `out`: a's shape, writable, taking the result under 'same_kind' casting; it fixes the dtype
 * the recurrence runs in (float32 or float64). */
static int linrec_out(linrec_call *c, PyObject *out_obj)
{
    gs_dtype acc = c->type;

    if (out_obj == Py_None)
        return 0;
    if (gs_out_get(out_obj, &c->out) < 0 ||
        gs_settle_acc(GS_OP_ADD, c->type, NULL, &c->out, c->ndim, c->shape, &acc) < 0 ||
        check_float(acc, "out") < 0)
        return -1;
    c->type = acc;
    return 0;
}

/* h0 placed as one value per row, in the recurrence's dtype (NULL when not given). */
static int place_h0(const linrec_call *c, const gs_backend_ops *be, int64_t rows, gs_bag *bag,
                    const void **h0)
{
    gs_view v = c->h0.view, placed;

    *h0 = NULL;
    if (!c->has_h0)
        return 0;
    if (c->h0_scalar) { /* every row starts from the one value */
        v.ndim = 1;
        v.shape[0] = rows;
        v.strides[0] = 0;
    }
    if (gs_place(&v, be->mem, c->type, bag, &placed) < 0)
        return -1;
    *h0 = placed.ptr;
    return 0;
}

/* The backend's recurrences over the placed buffers. */
static int linrec_backend(const gs_backend_ops *be, const linrec_call *c, const gs_view *a,
                          const gs_view *b, const void *h0, const gs_view *h, int64_t row_len)
{
    gs_linrec_desc d;
    gs_fail f = { 0 };
    int rc;

    memset(&d, 0, sizeof(d));
    d.a = a->ptr;
    d.b = b->ptr;
    d.h0 = h0;
    d.h = h->ptr;
    d.n = gs_view_size(a);
    d.row_len = row_len;
    d.type = c->type;
    d.reverse = c->reverse;
    GS_BEGIN_UNLOCKED
        rc = be->linrec(&d, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : PyErr_CheckSignals();
}

/* Place, target, run, deliver: the settled call into the result `res`. */
static int linrec_run(const linrec_call *c, const gs_backend_ops *be, gs_view res, gs_bag *bag)
{
    gs_view va = c->a.view, vb = c->b.view, a, b, dst;
    const int64_t n = gs_view_size(&va);
    const int64_t row_len = c->ndim > 0 ? c->shape[c->axis] : 1;
    const void *h0;

    if (n == 0)
        return 0;
    if (c->ndim > 0) {
        gs_view_move_axis_last(&va, c->axis);
        gs_view_move_axis_last(&vb, c->axis);
        gs_view_move_axis_last(&res, c->axis);
    }
    if (gs_place(&va, be->mem, c->type, bag, &a) < 0 ||
        gs_place(&vb, be->mem, c->type, bag, &b) < 0 || place_h0(c, be, n / row_len, bag, &h0) < 0)
        return -1;
    /* The result itself when the backend can write it (exactly over a or b is fine). */
    dst = res;
    if (gs_view_ready(&res, be->mem, c->type)) {
        if (gs_apart_from(&dst, &a, 1, bag) < 0 || gs_apart_from(&dst, &b, 1, bag) < 0)
            return -1;
    } else if (gs_temp_like(bag, &res, be->mem, c->type, &dst) < 0) {
        return -1;
    }
    if (linrec_backend(be, c, &a, &b, h0, &dst, row_len) < 0)
        return -1;
    return dst.ptr == res.ptr ? 0 : gs_move(&dst, &res, bag);
}

PyObject *gs_linear_recurrence(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "b", "axis", "h0", "reverse", "out", NULL };
    PyObject *a, *b, *axis_obj = NULL, *h0_obj = Py_None, *out_obj = Py_None, *ret = NULL;
    PyObject *minus_one = PyLong_FromLong(-1);
    gs_bag bag = { 0 };
    linrec_call c;
    gs_view res;

    memset(&c, 0, sizeof(c));
    if (minus_one == NULL ||
        !PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOpO:linear_recurrence", kwlist, &a, &b,
                                     &axis_obj, &h0_obj, &c.reverse, &out_obj))
        goto done;
    if (gs_backend_get(&c.backend) < 0 ||
        linrec_inputs(&c, a, b, axis_obj != NULL ? axis_obj : minus_one) < 0 ||
        linrec_h0(&c, h0_obj) < 0 || linrec_out(&c, out_obj) < 0)
        goto done;
    {
        const int device = c.a.on_device || c.b.on_device || c.h0.on_device || c.out.on_device;
        const gs_backend_ops *be = gs_backend_for(c.backend, device);
        gs_operand *const used[] = { &c.a, &c.b, &c.h0, &c.out };
        if (out_obj != Py_None) {
            res = c.out.view;
            ret = Py_NewRef(out_obj);
        } else if ((ret = device ? gs_result_new(GS_MEM_DEVICE, c.ndim, c.shape, c.type, &res)
                                 : gs_result_streamed(be, c.ndim, c.shape, c.type, &res)) == NULL) {
            goto done;
        }
        const int failed = linrec_run(&c, be, res, &bag) < 0;
        if (gs_release_operands(used, 4) < 0 || failed)
            Py_CLEAR(ret);
    }
done:
    gs_bag_free(&bag);
    gs_operand_release(&c.a);
    gs_operand_release(&c.b);
    gs_operand_release(&c.h0);
    gs_operand_release(&c.out);
    Py_XDECREF(minus_one);
    return ret;
}
