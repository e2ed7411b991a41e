/*
 * ops/settle.c - what the ops settle the same way: the `out=` operand, the accumulation dtype
 * (dtype=, out's, NumPy's rule) with the checks of `out`, shapes that must agree, a placed input
 * kept apart from the buffer written over it, and the operands' release after a call.
 * Level: ops.  Every failure is the exception NumPy raises for the same mistake.
 */
#include "ops/ops.h"

int gs_out_get(PyObject *out_obj, gs_operand *out)
{
    return gs_operand_get_array(out_obj, out, "out");
}

int gs_check_same_kind(gs_dtype from, gs_dtype to)
{
    PyArray_Descr *f = gs_descr(from), *t = gs_descr(to);
    int ok = f != NULL && t != NULL && PyArray_CanCastTypeTo(f, t, NPY_SAME_KIND_CASTING);

    Py_XDECREF(f);
    Py_XDECREF(t);
    if (ok)
        return 0;
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError,
                     "cannot cast the result from %s to the out dtype %s with casting rule "
                     "'same_kind'",
                     gs_dtype_name(from), gs_dtype_name(to));
    return -1;
}

int gs_settle_acc(gs_op op, gs_dtype in_type, PyArray_Descr *dtype, gs_operand *out, int rnd,
                  const int64_t *rshape, gs_dtype *acc)
{
    gs_dtype out_type;
    int64_t oshape[GS_MAX_NDIM];
    int ond;

    if (dtype != NULL && gs_dtype_from_descr(dtype, "dtype", acc) < 0)
        return -1;
    if (out != NULL) {
        if (gs_operand_info(out, "out", &out_type, &ond, oshape) < 0)
            return -1;
        if (gs_check_same_shape("out", ond, oshape, "the result", rnd, rshape) < 0)
            return -1;
        if (out->readonly) {
            PyErr_SetString(PyExc_ValueError, "output array is read-only");
            return -1;
        }
        if (dtype == NULL)
            *acc = out_type;
        /* what the loop makes, cast into out: the input's values (a logical op's bools) */
        if (gs_check_same_kind(dtype != NULL        ? *acc
                               : gs_op_is_logical(op) ? GS_BOOL
                                                      : in_type,
                               out_type) < 0)
            return -1;
    } else if (dtype == NULL) {
        *acc = gs_default_acc_type(in_type, op);
    }
    return gs_check_op_dtype(op, *acc);
}

int gs_apart_from(const gs_view *dst, gs_view *src, int in_place_ok, gs_bag *bag)
{
    gs_view copy;

    if (!gs_views_overlap(src, dst) || (in_place_ok && src->ptr == dst->ptr))
        return 0;
    if (gs_temp_like(bag, src, src->mem, src->dtype, &copy) < 0 || gs_move(src, &copy, bag) < 0)
        return -1;
    *src = copy;
    return 0;
}

int gs_check_same_shape(const char *name, int nd, const int64_t *shape, const char *other_name,
                        int other_nd, const int64_t *other)
{
    int same = nd == other_nd;
    for (int i = 0; same && i < nd; i++)
        same = shape[i] == other[i];
    return same ? 0 : gs_shape_error(name, nd, shape, other_name, other_nd, other);
}

int gs_release_operands(gs_operand *const *ops, int n)
{
    PyObject *type, *value, *tb;
    int rc = 0;
    PyErr_Fetch(&type, &value, &tb); /* a failure of the call, kept */
    for (int i = 0; i < n; i++)
        if (ops[i] != NULL && gs_operand_release_foreign(ops[i]) < 0) {
            if (rc == 0 && type == NULL)
                PyErr_Fetch(&type, &value, &tb); /* the first release's failure */
            else
                PyErr_Clear();
            rc = -1;
        }
    PyErr_Restore(type, value, tb);
    return rc;
}
