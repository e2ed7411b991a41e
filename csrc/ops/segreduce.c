/*
 * ops/segreduce.c - gpuscan.reduceat() and gpuscan.segmented_reduce(): one reduction per segment.
 * Level: ops.  Both settle everything about Python objects first (the operator, the
 * accumulation dtype by reduce's rules, dtype=, out=, the axis or the flags), then turn their
 * segments into the backend's one form (gs_segreduce_desc): starts (and ends) over a flat run
 * of values in the backend's memory.
 *   reduceat      np.<ufunc>.reduceat: the indices are placed where the backend reads them and
 *                 checked against [0, n) there (IndexError). One row of increasing indices is
 *                 itself a sorted partition's starts (reduceat_run); any other indices are read
 *                 on the host and become, for every row seen with `axis` last, either a sorted
 *                 partition (strictly increasing indices; a row whose first index is past 0
 *                 gets one more segment in front, whose result is dropped, so that the row
 *                 before ends at its end) or explicit [start, end) pairs (an index not smaller
 *                 than the next is the one value at it).
 *   segmented_reduce  a nonzero flag starts a segment and element 0 always does: the backend
 *                 counts the heads, the host sizes the result, the backend writes their
 *                 positions, and they are a sorted partition of the flat values.
 * The result is delivered as reduce delivers: a NumPy array for host operands, a DeviceArray
 * when an operand is on the device, or `out`.
 */
#include "ops/ops.h"

/* ---- running a flat segmented reduction --------------------------------------------------- */

/* The backend's reduction of `nseg` segments of the placed values `src` (starts and ends in the
 * backend's memory; ends NULL for a sorted partition) into `dst`, guarded by an index check's
 * words when `guard` is not NULL (gs_segreduce_desc). */
static int segreduce_backend(const gs_backend_ops *be, const gs_view *src, const gs_view *dst,
                             const int64_t *starts, const int64_t *ends, int64_t nseg, gs_op op,
                             const void *guard)
{
    gs_segreduce_desc d;
    gs_fail f = { 0 };
    int rc;

    memset(&d, 0, sizeof(d));
    d.in = src->ptr;
    d.out = dst->ptr;
    d.starts = starts;
    d.ends = ends;
    d.n = gs_view_size(src);
    d.nseg = nseg;
    d.in_type = src->dtype;
    d.out_type = dst->dtype;
    d.op = gs_op_run(op, dst->dtype);
    d.guard = guard;
    d.many_tiles = gs_test_knobs.segreduce_many;
    d.per_warp = gs_test_knobs.segreduce_per_warp;
    GS_BEGIN_UNLOCKED
        rc = be->segreduce(&d, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : PyErr_CheckSignals();
}

/* *out = `count` int64 of host memory `host` (owned by the bag) where the backend reads them. */
static int place_int64(const gs_backend_ops *be, int64_t *host, int64_t count, gs_bag *bag,
                       int64_t **out)
{
    gs_view h, placed;

    memset(&h, 0, sizeof(h));
    h.ndim = 1;
    h.shape[0] = count;
    gs_view_contiguous(&h, &h, host, GS_MEM_HOST, GS_INT64);
    if (gs_place(&h, be->mem, GS_INT64, bag, &placed) < 0)
        return -1;
    *out = (int64_t *)placed.ptr;
    return 0;
}

/* ---- reduceat() --------------------------------------------------------------------------- */

/* Everything settled about one reduceat call before any data moves. */
typedef struct reduceat_plan {
    gs_op op;
    int axis;
    gs_dtype in_type;     /* the input's dtype */
    gs_dtype acc_type;    /* accumulation and result dtype */
    gs_dtype red_in_type; /* what the backend reads: in_type when the pair is direct */
    int64_t n;            /* the length along axis */
    int64_t rows;         /* the product of the other lengths */
    gs_view ind;          /* the m indices: a host intp array or a device array of integers */
    int64_t m;
    int rnd; /* the result's shape: a's, with m along axis */
    int64_t rshape[GS_MAX_NDIM];
} reduceat_plan;

/* The indices: on the host, converted as NumPy's reduceat converts them (one dimension, intp;
 * *host owns them), or a device array of one dimension and an integer dtype (*dev). */
static int get_indices(PyObject *obj, PyArrayObject **host, gs_operand *dev, reduceat_plan *p)
{
    int64_t shape[GS_MAX_NDIM];
    gs_dtype t;
    int nd, is_dev = gs_operand_get_device(obj, dev);

    if (is_dev < 0)
        return -1;
    if (!is_dev) {
        /* NumPy's own call (it steals the descriptor). */
        *host = (PyArrayObject *)PyArray_FromAny(obj, PyArray_DescrFromType(NPY_INTP), 1, 1,
                                                 NPY_ARRAY_CARRAY, NULL);
        if (*host == NULL || gs_operand_get((PyObject *)*host, dev) < 0)
            return -1;
    }
    if (gs_operand_info(dev, "indices", &t, &nd, shape) < 0)
        return -1;
    if (gs_dtype_read_kind(t) == 'f' || t == GS_BOOL || nd != 1) {
        PyErr_SetString(is_dev && nd == 1 ? PyExc_TypeError : PyExc_ValueError,
                        "reduceat's indices must be one dimension of integers");
        return -1;
    }
    p->ind = dev->view;
    p->m = shape[0];
    return 0;
}

/* The indices placed as int64 where the backend reads them, and their check against [0, n)
 * started (*a: the backend's answer, or its guard while on the way; finish_check waits). */
static int start_check(const reduceat_plan *p, const gs_backend_ops *be, gs_bag *bag,
                       gs_view *placed, gs_index_answer *a)
{
    gs_fail f = { 0 };
    int rc;

    memset(a, 0, sizeof(*a));
    a->first_bad = -1;
    a->increasing = 1;
    if (p->m == 0)
        return 0;
    if (gs_place(&p->ind, be->mem, GS_INT64, bag, placed) < 0)
        return -1;
    GS_BEGIN_UNLOCKED
        rc = be->index_check((const int64_t *)placed->ptr, p->m, p->n, a, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : 0;
}

/* The check's answer (waited for; released on every path, `failed`: an exception is already
 * set, which it keeps): NumPy's IndexError for the first index outside [0, n). */
static int finish_check(const reduceat_plan *p, const gs_backend_ops *be, const gs_view *placed,
                        gs_index_answer *a, gs_bag *bag, int failed)
{
    int64_t value = 0;
    gs_view one, host;
    gs_fail f = { 0 };
    int rc = 0;

    if (p->m > 0) { /* start_check called the backend's index_check */
        GS_BEGIN_UNLOCKED
            rc = be->index_wait(a, &f);
        GS_END_UNLOCKED
    }
    if (failed)
        return -1;
    if (rc < 0)
        return gs_raise(&f);
    if (a->first_bad < 0)
        return 0;
    one = *placed;
    one.ptr += a->first_bad * 8;
    one.shape[0] = 1;
    gs_view_contiguous(&host, &one, &value, GS_MEM_HOST, GS_INT64);
    if (gs_move(&one, &host, bag) < 0)
        return -1;
    PyErr_Format(PyExc_IndexError, "index %lld out-of-bounds in %s.reduceat [0, %lld)",
                 (long long)value, gs_op_ufunc_name(p->op), (long long)p->n);
    return -1;
}

/* The m checked indices on the host: where the backend read them, the caller's own host array,
 * or a copy of the placed ones. */
static int indices_on_host(const reduceat_plan *p, const gs_view *placed, gs_bag *bag,
                           const int64_t **idx)
{
    gs_view host;
    void *buf;

    if (placed->mem == GS_MEM_HOST || gs_view_ready(&p->ind, GS_MEM_HOST, GS_INT64)) {
        *idx = (const int64_t *)(placed->mem == GS_MEM_HOST ? placed->ptr : p->ind.ptr);
        return 0;
    }
    if (gs_bag_alloc(bag, GS_MEM_HOST, (size_t)p->m * 8, &buf) < 0)
        return -1;
    gs_view_contiguous(&host, placed, buf, GS_MEM_HOST, GS_INT64);
    *idx = buf;
    return gs_move(placed, &host, bag);
}

/* The flat segments of every row (row r's values start at r * n) in host memory owned by the
 * bag: *nseg starts, and ends (NULL for a sorted partition: increasing indices).  *gap: every
 * row has one more segment in front, [row start, first index), whose result is dropped. */
static int build_segments(const reduceat_plan *p, const int64_t *idx, int sorted, gs_bag *bag,
                          int64_t **starts, int64_t **ends, int64_t *nseg, int *gap)
{
    int64_t k = 0;

    *gap = sorted && p->rows > 1 && idx[0] > 0;
    *nseg = p->rows * (p->m + *gap);
    *ends = NULL;
    if (gs_bag_alloc(bag, GS_MEM_HOST, (size_t)*nseg * 8, (void **)starts) < 0 ||
        (!sorted && gs_bag_alloc(bag, GS_MEM_HOST, (size_t)*nseg * 8, (void **)ends) < 0))
        return -1;
    for (int64_t r = 0; r < p->rows; r++) {
        const int64_t base = r * p->n;
        if (*gap)
            (*starts)[k++] = base;
        for (int64_t i = 0; i < p->m; i++, k++) {
            (*starts)[k] = base + idx[i];
            if (sorted)
                continue;
            /* As NumPy: up to the next index when it is larger, else the one value at i. */
            const int64_t end = i + 1 == p->m         ? p->n
                                : idx[i + 1] > idx[i] ? idx[i + 1]
                                                      : idx[i] + 1;
            (*ends)[k] = base + end;
        }
    }
    return 0;
}

/* The segments where the backend reads them: the checked indices themselves for one row of
 * increasing ones, else built on the host and placed. */
static int place_segments(const reduceat_plan *p, const gs_backend_ops *be, const gs_view *placed,
                          int increasing, gs_bag *bag, int64_t **starts, int64_t **ends,
                          int64_t *nseg, int *gap)
{
    const int64_t *idx;
    int64_t *hstarts, *hends;

    if (increasing && p->rows == 1) {
        *starts = (int64_t *)placed->ptr;
        *ends = NULL;
        *nseg = p->m;
        *gap = 0;
        return 0;
    }
    *ends = NULL;
    return indices_on_host(p, placed, bag, &idx) < 0 ||
                   build_segments(p, idx, increasing, bag, &hstarts, &hends, nseg, gap) < 0 ||
                   place_int64(be, hstarts, *nseg, bag, starts) < 0 ||
                   (hends != NULL && place_int64(be, hends, *nseg, bag, ends) < 0)
               ? -1
               : 0;
}

/* Where the backend writes: `res` itself (kept apart from the input), or a temporary of nseg
 * values; *tview then views the part of it that `res` receives. */
static int reduceat_target(const gs_backend_ops *be, const gs_view *res, gs_view *src, int gap,
                           int64_t nseg, gs_bag *bag, gs_view *dst, gs_view *tview)
{
    void *buf;

    if (!gap && gs_view_ready(res, be->mem, res->dtype)) {
        *dst = *res;
        *tview = *res;
        return gs_apart_from(dst, src, 0, bag);
    }
    if (gs_bag_alloc(bag, be->mem, (size_t)nseg * gs_dtype_size(res->dtype), &buf) < 0)
        return -1;
    /* The temporary is res's shape with one more value per row (the gap's), then sliced. */
    gs_view_contiguous(tview, res, buf, be->mem, res->dtype);
    tview->shape[tview->ndim - 1] += gap;
    gs_view_set_c_strides(tview);
    memset(dst, 0, sizeof(*dst));
    dst->ndim = 1;
    dst->shape[0] = nseg;
    gs_view_contiguous(dst, dst, buf, be->mem, res->dtype);
    tview->ptr += gap * (int64_t)gs_dtype_size(res->dtype);
    tview->shape[tview->ndim - 1] -= gap;
    return 0;
}

/* Check, place, target, run, deliver: the settled reduceat of `in` into `res`. Where the check's
 * answer is still on its way (CUDA) and the indices are one row's, their reduction as increasing
 * indices is enqueued behind the check, guarded by it, before the host waits: the values placed
 * and the target made before the check, so that the reduction follows it directly (it starts
 * while the check runs, and waits for it only to read the guard). Indices the check finds bad
 * leave everything untouched (IndexError); indices that do not increase are reduced again the
 * general way. */
static int reduceat_run(const reduceat_plan *p, const gs_backend_ops *be, const gs_operand *in,
                        gs_view res, gs_bag *bag)
{
    gs_view v = in->view, placed, src, dst, tview;
    int64_t *starts, *ends, nseg;
    gs_index_answer a;
    int gap, ahead, rc;
    /* One row has no gap: its target serves either way. */
    const int one_row = p->rows == 1 && p->m > 0;

    /* Seen with the axis last: rows of n values, each giving m results. */
    gs_view_move_axis_last(&v, p->axis);
    gs_view_move_axis_last(&res, p->axis);
    if ((one_row && (gs_place(&v, be->mem, p->red_in_type, bag, &src) < 0 ||
                     reduceat_target(be, &res, &src, 0, p->m, bag, &dst, &tview) < 0)) ||
        start_check(p, be, bag, &placed, &a) < 0)
        return -1;
    ahead = a.guard != NULL && one_row;
    rc = ahead ? segreduce_backend(be, &src, &dst, (const int64_t *)placed.ptr, NULL, p->m, p->op,
                                   a.guard)
               : 0;
    if (finish_check(p, be, &placed, &a, bag, rc < 0) < 0)
        return -1;
    if (p->rows == 0 || p->m == 0)
        return 0;
    /* Not run ahead, or run ahead as increasing when they are not. */
    if ((!ahead || !a.increasing) &&
        ((!one_row && gs_place(&v, be->mem, p->red_in_type, bag, &src) < 0) ||
         place_segments(p, be, &placed, a.increasing, bag, &starts, &ends, &nseg, &gap) < 0 ||
         (!one_row && reduceat_target(be, &res, &src, gap, nseg, bag, &dst, &tview) < 0) ||
         segreduce_backend(be, &src, &dst, starts, ends, nseg, p->op, NULL) < 0))
        return -1;
    return dst.ptr == res.ptr ? 0 : gs_move(&tview, &res, bag);
}

/* The axis (an int, 0 when not given; as NumPy's, a tuple of one axis or None for 1-D input,
 * whose every axis is one; more axes: NumPy's ValueError), the length along it, the rows (the
 * product of the other lengths) and the result's shape. */
static int reduceat_axis(reduceat_plan *p, PyObject *axis_obj, int ndim, const int64_t *shape)
{
    p->axis = 0;
    if (axis_obj != NULL && PyTuple_Check(axis_obj) && PyTuple_GET_SIZE(axis_obj) == 1)
        axis_obj = PyTuple_GET_ITEM(axis_obj, 0);
    else if (axis_obj == Py_None && ndim == 1)
        axis_obj = NULL;
    if (axis_obj != NULL && (axis_obj == Py_None || PyTuple_Check(axis_obj))) {
        PyErr_SetString(PyExc_ValueError, "reduceat does not allow multiple axes");
        return -1;
    }
    if (axis_obj != NULL && gs_normalize_axis(axis_obj, ndim, &p->axis) < 0)
        return -1;
    p->n = shape[p->axis];
    p->rows = 1;
    for (int i = 0; i < ndim; i++)
        if (i != p->axis)
            p->rows *= shape[i];
    p->rnd = ndim;
    memcpy(p->rshape, shape, sizeof(int64_t) * (size_t)ndim);
    p->rshape[p->axis] = p->m;
    return 0;
}

/* The result (out=, or new where the operands are) and the run on its backend. */
static PyObject *reduceat_call(const reduceat_plan *p, gs_backend backend, gs_operand *in,
                               gs_operand *ind, gs_operand *out, PyObject *out_obj)
{
    const int device = in->on_device || ind->on_device || out->on_device;
    const gs_backend_ops *be = gs_backend_for(backend, device);
    gs_operand *const used[] = { in, ind, out };
    gs_bag bag = { 0 };
    PyObject *ret;
    gs_view res;

    if (out_obj != Py_None) {
        res = out->view;
        ret = Py_NewRef(out_obj);
    } else if ((ret = gs_result_new(device ? GS_MEM_DEVICE : GS_MEM_HOST, p->rnd, p->rshape,
                                    p->acc_type, &res)) == NULL) {
        return NULL;
    }
    const int failed = reduceat_run(p, be, in, res, &bag) < 0;
    if (gs_release_operands(used, 3) < 0 || failed)
        Py_CLEAR(ret);
    gs_bag_free(&bag);
    return ret;
}

PyObject *gs_reduceat(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "indices", "op", "axis", "dtype", "out", NULL };
    PyObject *a, *ind_obj, *op_obj = NULL, *axis_obj = NULL, *out_obj = Py_None, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    PyArrayObject *host_ind = NULL;
    int64_t shape[GS_MAX_NDIM];
    gs_operand in, ind, out;
    gs_backend backend;
    reduceat_plan p;
    int ndim;

    if (gs_uop_wanted(args, kwargs, 2))
        return gs_uop_reduceat(args, kwargs); /* an Operator: ops/userop.c */
    if (gs_half_route(gs_reduceat, self, args, kwargs, 2, &ret))
        return ret; /* float16: binding/half.c */
    memset(&in, 0, sizeof(in));
    memset(&ind, 0, sizeof(ind));
    memset(&out, 0, sizeof(out));
    memset(&p, 0, sizeof(p));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$OO&O:reduceat", kwlist, &a, &ind_obj,
                                     &op_obj, &axis_obj, PyArray_DescrConverter2, &dtype, &out_obj))
        return NULL;

    /* Names and the backend first, then the input, the indices, the axis and `out`. */
    p.op = GS_OP_ADD;
    if ((op_obj != NULL && gs_parse_op(op_obj, &p.op) < 0) || gs_backend_get(&backend) < 0)
        goto done;
    if (gs_operand_get(a, &in) < 0 || gs_operand_info(&in, "input", &p.in_type, &ndim, shape) < 0)
        goto done;
    if (ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "cannot reduceat on a scalar");
        goto done;
    }
    if (get_indices(ind_obj, &host_ind, &ind, &p) < 0 ||
        reduceat_axis(&p, axis_obj, ndim, shape) < 0)
        goto done;
    if ((out_obj != Py_None && gs_out_get(out_obj, &out) < 0) ||
        gs_settle_acc(p.op, p.in_type, dtype, out_obj != Py_None ? &out : NULL, p.rnd, p.rshape,
                      &p.acc_type) < 0)
        goto done;
    p.red_in_type = gs_scan_pair_direct(p.in_type, p.acc_type, p.op) ? p.in_type : p.acc_type;
    ret = reduceat_call(&p, backend, &in, &ind, &out, out_obj);
done:
    gs_operand_release(&in);
    gs_operand_release(&ind);
    gs_operand_release(&out);
    Py_XDECREF(host_ind);
    Py_XDECREF(dtype);
    return ret;
}

/* ---- segmented_reduce() ------------------------------------------------------------------- */

/* Positions the backend may write before the host knows their count: all of them up to 65536,
 * then one for every 32 values more (segments of 32 values on average). More segments than
 * that cost one more positions pass. */
static int64_t heads_room(int64_t n)
{
    const int64_t room = 65536 + n / 32;
    return room < n ? room : n;
}

/* The positions of the heads of the placed flags, in the backend's memory: counted by the
 * backend's heads_count (which waits for the count, and writes them when they fit in the room
 * it is given), else written by its heads entry.  *count receives how many. */
static int head_positions(const gs_backend_ops *be, const gs_view *flags, gs_bag *bag,
                          int64_t **positions, int64_t *count)
{
    gs_split_desc d;
    gs_fail f = { 0 };
    void *state = NULL;
    int64_t room;
    int placed = 0, rc;

    memset(&d, 0, sizeof(d));
    d.flags = flags->ptr;
    d.n = gs_view_size(flags);
    d.flag_type = flags->dtype;
    room = heads_room(d.n);
    if ((rc = gs_bag_alloc(bag, be->mem, (size_t)room * 8, (void **)positions)) < 0)
        return -1;
    GS_BEGIN_UNLOCKED
        rc = be->heads_count(&d, &state, *positions, room, count, &placed, &f);
    GS_END_UNLOCKED
    if (rc < 0) {
        gs_raise(&f);
        goto done;
    }
    if (placed)
        goto done;
    if ((rc = gs_bag_alloc(bag, be->mem, (size_t)*count * 8, (void **)positions)) < 0)
        goto done;
    GS_BEGIN_UNLOCKED
        rc = be->heads(&d, state, *positions, &f);
    GS_END_UNLOCKED
    if (rc < 0)
        gs_raise(&f);
done:
    be->split_end(state);
    return rc < 0 ? -1 : PyErr_CheckSignals();
}

/* Place, count, target, run, deliver: the settled segmented reduction of `in` by `flags`. */
static PyObject *segmented_reduce_run(const gs_backend_ops *be, int device, gs_operand *in,
                                      gs_operand *flags, gs_op op, gs_dtype red_in_type,
                                      gs_dtype acc_type)
{
    gs_operand *const used[] = { in, flags };
    gs_view src = { 0 }, heads, res, dst;
    int64_t *positions = NULL, count = 0;
    PyObject *ret = NULL;
    gs_bag bag = { 0 };

    if (gs_view_size(&in->view) > 0 &&
        (gs_place(&in->view, be->mem, red_in_type, &bag, &src) < 0 ||
         gs_place(&flags->view, be->mem, flags->view.dtype, &bag, &heads) < 0 ||
         head_positions(be, &heads, &bag, &positions, &count) < 0))
        goto done;
    if ((ret = gs_result_new(device ? GS_MEM_DEVICE : GS_MEM_HOST, 1, &count, acc_type, &res)) ==
        NULL)
        goto done;
    if (count > 0) {
        dst = res;
        if ((!gs_view_ready(&res, be->mem, acc_type) &&
             gs_temp_like(&bag, &res, be->mem, acc_type, &dst) < 0) ||
            segreduce_backend(be, &src, &dst, positions, NULL, count, op, NULL) < 0 ||
            (dst.ptr != res.ptr && gs_move(&dst, &res, &bag) < 0))
            goto fail;
    }
    if (gs_release_operands(used, 2) < 0)
        goto fail;
    goto done;
fail:
    (void)gs_release_operands(used, 2); /* after work already enqueued too; the failure kept */
    Py_CLEAR(ret);
done:
    gs_bag_free(&bag);
    return ret;
}

PyObject *gs_segmented_reduce(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "flags", "op", "dtype", NULL };
    PyObject *a, *flags_obj, *op_obj = NULL, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    int64_t shape[GS_MAX_NDIM], fshape[GS_MAX_NDIM];
    gs_dtype in_type, flag_type, acc_type;
    gs_operand in, flags;
    gs_backend backend;
    gs_op op = GS_OP_ADD;
    int ndim, fnd;

    if (gs_uop_wanted(args, kwargs, 2))
        return gs_uop_segmented_reduce(args, kwargs); /* an Operator: ops/userop.c */
    if (gs_half_route(gs_segmented_reduce, self, args, kwargs, 2, &ret))
        return ret; /* float16: binding/half.c */
    memset(&in, 0, sizeof(in));
    memset(&flags, 0, sizeof(flags));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$O&:segmented_reduce", kwlist, &a,
                                     &flags_obj, &op_obj, PyArray_DescrConverter2, &dtype))
        return NULL;
    if ((op_obj != NULL && gs_parse_op(op_obj, &op) < 0) || gs_backend_get(&backend) < 0)
        goto done;
    /* The flags: any supported dtype, exactly a's shape (no broadcasting); the result dtype as
     * reduce's. */
    if (gs_operand_get(a, &in) < 0 || gs_operand_info(&in, "input", &in_type, &ndim, shape) < 0 ||
        gs_operand_get(flags_obj, &flags) < 0 ||
        gs_operand_info(&flags, "flags", &flag_type, &fnd, fshape) < 0 ||
        gs_check_same_shape("flags", fnd, fshape, "a", ndim, shape) < 0 ||
        gs_settle_acc(op, in_type, dtype, NULL, 0, NULL, &acc_type) < 0)
        goto done;
    ret = segmented_reduce_run(
        gs_backend_for(backend, in.on_device || flags.on_device), in.on_device || flags.on_device,
        &in, &flags, op, gs_scan_pair_direct(in_type, acc_type, op) ? in_type : acc_type, acc_type);
done:
    gs_operand_release(&in);
    gs_operand_release(&flags);
    Py_XDECREF(dtype);
    return ret;
}
