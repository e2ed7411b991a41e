/*
 * ops/reduce.c - gpuscan.reduce(), and the min/max reduction other ops use.
 * Level: ops. As np.add.reduce and friends: everything about Python objects is settled first
 * (the operator, the reduced axes, the accumulation dtype, the result's shape, empty
 * reductions), then the steps of ops/ops.h with the reduced axes last, as `rows` contiguous rows
 * of `row_len` values (gs_reduce_desc; a backend whose table sets inner_axes reads one run of
 * reduced axes in place instead, ops/axis_layout.h). A full reduction of NumPy input returns a
 * NumPy scalar, as NumPy does; of device input, a 0-d DeviceArray, so that nothing travels to
 * the host unless asked. Empty reductions never reach a backend: row_len == 0 gives the
 * identity (min/max: NumPy's ValueError), rows == 0 an empty result.
 */
#include "ops/axis_layout.h"
#include "ops/ops.h"

#include "cpu/cpu.h" /* gs_cpu_identity: the operators' identities, written once */

/* Everything settled about one reduction before any data moves. */
typedef struct reduce_plan {
    gs_op op;
    gs_dtype in_type;      /* the input's dtype */
    gs_dtype acc_type;     /* accumulation and result dtype */
    gs_dtype red_in_type;  /* what the backend reads: in_type when the pair is direct */
    int ndim;              /* the input's dimensions */
    int perm[GS_MAX_NDIM]; /* the kept axes in order, then the reduced ones */
    int rnd;               /* the result's dimensions and shape */
    int64_t rshape[GS_MAX_NDIM];
    int64_t rows;      /* product of the kept lengths */
    int64_t row_len;   /* product of the reduced lengths */
    int64_t inner;     /* the kept lengths after the reduced axes when these are one run, else 0 */
    PyObject *initial; /* initial=, a 0-d array of acc_type, or NULL */
    gs_operand where;  /* where=, a bool array (a zeroed operand: none) */
} reduce_plan;

/* ---- running ------------------------------------------------------------------------------ */

/* Whether op has no identity in NumPy (an empty reduction, or a where= mask, needs initial=). */
static int no_identity(gs_op op)
{
    return op == GS_OP_MIN || op == GS_OP_MAX || op == GS_OP_FMIN || op == GS_OP_FMAX;
}

/* Fill `res` with the identity of op (gs_op_run()'s) in its dtype (add/or/xor 0, mul 1, and all
 * ones, the logaddexps -inf). */
static int fill_identity(PyArrayObject *res, gs_op op, gs_dtype t)
{
    PyObject *value;
    int rc;

    if (op == GS_OP_AND && t != GS_BOOL) {
        PyArray_FILLWBYTE(res, 0xff);
        return 0;
    }
    if (op == GS_OP_AND)
        value = Py_NewRef(Py_True);
    else if (gs_op_is_log(op))
        value = PyFloat_FromDouble(-INFINITY);
    else
        value = PyLong_FromLong(op == GS_OP_MUL ? 1 : 0);
    if (value == NULL)
        return -1;
    rc = PyArray_FillWithScalar(res, value);
    Py_DECREF(value);
    return rc;
}

/* The result `res` of an empty reduction: initial=, else the identity of op (made on the host,
 * then moved). */
static int identity_into(const reduce_plan *p, const gs_view *res, gs_bag *bag)
{
    gs_view host;
    PyObject *ident = gs_result_new(GS_MEM_HOST, p->rnd, p->rshape, p->acc_type, &host);
    int rc = ident != NULL &&
                     (p->initial != NULL
                          ? PyArray_CopyInto((PyArrayObject *)ident, (PyArrayObject *)p->initial)
                          : fill_identity((PyArrayObject *)ident, p->op, p->acc_type)) == 0 &&
                     gs_move(&host, res, bag) == 0
                 ? 0
                 : -1;

    Py_XDECREF(ident);
    return rc;
}

/* initial= combined into the reduced values `res` (op(value, initial), each rounded once): on
 * a host copy of the result, which has one value per row, then moved back. */
static int initial_into(const reduce_plan *p, const gs_view *res, gs_bag *bag)
{
    gs_view host;
    PyObject *tmp = gs_result_new(GS_MEM_HOST, p->rnd, p->rshape, p->acc_type, &host);
    PyObject *numpy = NULL, *ufunc = NULL, *call = NULL, *kw = NULL, *done = NULL;
    int rc = -1;

    if (tmp == NULL || gs_move(res, &host, bag) < 0 ||
        (numpy = PyImport_ImportModule("numpy")) == NULL ||
        (ufunc = PyObject_GetAttrString(numpy, gs_op_ufunc_name(p->op))) == NULL ||
        (call = PyTuple_Pack(2, tmp, p->initial)) == NULL ||
        (kw = Py_BuildValue("{sO}", "out", tmp)) == NULL ||
        (done = PyObject_Call(ufunc, call, kw)) == NULL)
        goto done;
    rc = gs_move(&host, res, bag);
done:
    Py_XDECREF(tmp);
    Py_XDECREF(numpy);
    Py_XDECREF(ufunc);
    Py_XDECREF(call);
    Py_XDECREF(kw);
    Py_XDECREF(done);
    return rc;
}

/* The backend's reduction of placed rows into dst. */
static int reduce_backend(const gs_backend_ops *be, const gs_reduce_desc *d)
{
    gs_fail f = { 0 };
    int rc;

    GS_BEGIN_UNLOCKED
        rc = be->reduce(d, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : PyErr_CheckSignals();
}

/* where=: *v (the input) becomes a C-contiguous copy, in the input's memory and of the dtype the
 * backend reads, whose values the mask leaves out are the operator's identity (in the dtype's
 * own range for min and max, which then combine with initial=, as NumPy starts from it): a
 * reduction over every value of that copy is NumPy's over the values the mask keeps.  The mask
 * broadcasts to the input's shape, as NumPy's. */
static int where_fill(const reduce_plan *p, gs_view *v, gs_bag *bag)
{
    const gs_backend_ops *be =
        gs_backend_table(v->mem == GS_MEM_DEVICE ? GS_BACKEND_CUDA : GS_BACKEND_CPU);
    gs_view mask = p->where.view, src, bytes;
    gs_select_desc d;
    gs_fail f = { 0 };
    int rc, k = mask.ndim - 1;

    /* The mask seen with the input's shape: its trailing axes matched, the rest broadcast. */
    for (int i = v->ndim - 1; i >= 0; i--, k--) {
        const int64_t len = k >= 0 ? mask.shape[k] : 1, stride = k >= 0 ? mask.strides[k] : 0;
        if (len != v->shape[i] && len != 1)
            return gs_shape_error("where", mask.ndim, mask.shape, "the input", v->ndim, v->shape);
        mask.strides[i] = len == 1 ? 0 : stride;
        mask.shape[i] = v->shape[i];
    }
    if (k >= 0)
        return gs_shape_error("where", mask.ndim, mask.shape, "the input", v->ndim, v->shape);
    mask.ndim = v->ndim;
    memset(&d, 0, sizeof(d));
    if (gs_place(&mask, v->mem, GS_BOOL, bag, &bytes) < 0 ||
        gs_temp_like(bag, v, v->mem, p->red_in_type, &src) < 0 || gs_move(v, &src, bag) < 0)
        return -1;
    d.in = d.out = src.ptr;
    d.mask = (const unsigned char *)bytes.ptr;
    d.n = gs_view_size(v);
    d.size = (int64_t)gs_dtype_size(p->red_in_type);
    gs_cpu_identity(p->op, p->red_in_type, d.fill);
    if (p->op == GS_OP_ADD && gs_dtype_is_float(p->red_in_type)) {
        /* -0.0, add's identity (x + -0.0 is x for every x, -0.0 included), not the +0.0 that an
         * exclusive scan starts from: the values left out change no sign of zero of the sum
         * (initial=-0.0 over -0.0 values left in is -0.0, as NumPy's); little-endian bits */
        const uint64_t sign = 1ull << (8 * d.size - 1);
        memcpy(d.fill, &sign, (size_t)d.size);
    }
    GS_BEGIN_UNLOCKED
        rc = be->select(&d, &f);
    GS_END_UNLOCKED
    if (rc < 0)
        return gs_raise(&f);
    *v = src;
    return 0;
}

/* Place, target, run, deliver: the settled reduction of `in` on its backend, into `out` when
 * given (a zeroed operand: none). */
static PyObject *reduce_run(const reduce_plan *p, gs_backend backend, gs_operand *in,
                            gs_operand *out)
{
    const int given = out->host != NULL || out->on_device;
    const int device = in->on_device || out->on_device;
    const gs_backend_ops *be = gs_backend_for(backend, device);
    gs_operand *const used[] = { in, out, (gs_operand *)&p->where };
    gs_view v = in->view, res, src, dst;
    gs_reduce_desc d;
    gs_bag bag = { 0 };
    PyObject *ret;

    if (given) {
        ret = Py_NewRef(out->host != NULL ? (PyObject *)out->host : out->owner);
        res = out->view;
    } else {
        ret = gs_result_new(device ? GS_MEM_DEVICE : GS_MEM_HOST, p->rnd, p->rshape, p->acc_type,
                            &res);
        if (ret == NULL)
            return NULL;
    }
    if ((p->where.host != NULL || p->where.on_device) && p->rows > 0 && p->row_len > 0 &&
        where_fill(p, &v, &bag) < 0)
        goto fail;
    if (given && p->rows > 0 && p->row_len > 0 && gs_apart_from(&res, &v, 0, &bag) < 0)
        goto fail; /* out= over the input: the input read from a copy */
    if (p->rows > 0 && p->row_len == 0 && identity_into(p, &res, &bag) < 0)
        goto fail;
    if (p->rows > 0 && p->row_len > 0) {
        /* The reduced axes last, placed (or, for host input on a backend with its own memory,
         * streamed through it); the result written in place or through a temporary.  A backend
         * that reads axes in place gets reduced axes that are one run as they are, with the
         * kept axes after them as `inner` columns (no transpose). */
        const int streamed = !device && be->stream_reduce != NULL;
        const int in_place = be->inner_axes && !streamed && p->inner > 1;
        if (!in_place)
            gs_view_permute(&v, p->perm);
        memset(&d, 0, sizeof(d));
        d.rows = in_place ? p->rows / p->inner : p->rows;
        d.row_len = p->row_len;
        d.inner = in_place ? p->inner : 0;
        d.in_type = p->red_in_type;
        d.out_type = p->acc_type;
        d.op = p->op;
        /* NumPy's reduce starts from +0.0, or from initial=: a float sum from the rows' first
         * values keeps the -0.0 of -0.0 values alone for initial_into to combine. */
        d.plus_zero = p->initial == NULL;
        if (streamed) {
            if (gs_stream_reduce(be, &d, &v, &res) < 0)
                goto fail;
            goto delivered;
        }
        if (gs_place(&v, be->mem, p->red_in_type, &bag, &src) < 0)
            goto fail;
        dst = res;
        if (!gs_view_ready(&res, be->mem, p->acc_type) &&
            gs_temp_like(&bag, &res, be->mem, p->acc_type, &dst) < 0)
            goto fail;
        d.in = src.ptr;
        d.out = dst.ptr;
        if (reduce_backend(be, &d) < 0 || (dst.ptr != res.ptr && gs_move(&dst, &res, &bag) < 0))
            goto fail;
    }
delivered:
    if (p->initial != NULL && p->rows > 0 && p->row_len > 0 && initial_into(p, &res, &bag) < 0)
        goto fail;
    if (gs_release_operands(used, 3) < 0)
        goto fail;
    /* A 0-d host result becomes a NumPy scalar of its dtype, as np.add.reduce returns; out= is
     * returned as it is. */
    if (!device && !given)
        ret = PyArray_Return((PyArrayObject *)ret);
    goto done;
fail:
    (void)gs_release_operands(used, 3); /* after work already enqueued too; the failure kept */
    Py_CLEAR(ret);
done:
    gs_bag_free(&bag);
    return ret;
}

int gs_reduce_min_max(const gs_backend_ops *be, const gs_view *v, uint64_t out[2])
{
    const size_t size = gs_dtype_size(v->dtype);
    gs_view pair, host;
    gs_reduce_desc d;
    gs_bag bag = { 0 };
    int64_t two = 2;
    char bits[16];
    void *buf;
    int rc = -1;

    memset(&d, 0, sizeof(d));
    d.in = v->ptr;
    d.rows = 1;
    d.row_len = gs_view_size(v);
    d.in_type = d.out_type = v->dtype;
    if (gs_bag_alloc(&bag, be->mem, 2 * size, &buf) < 0)
        goto done;
    for (int k = 0; k < 2; k++) {
        d.out = (char *)buf + k * size;
        d.op = k == 0 ? GS_OP_MIN : GS_OP_MAX;
        if (reduce_backend(be, &d) < 0)
            goto done;
    }
    /* The two values to the host, as one array of two. */
    memset(&pair, 0, sizeof(pair));
    pair.ndim = 1;
    pair.shape[0] = two;
    gs_view_contiguous(&pair, &pair, buf, be->mem, v->dtype);
    gs_view_contiguous(&host, &pair, bits, GS_MEM_HOST, v->dtype);
    if (gs_move(&pair, &host, &bag) < 0)
        goto done;
    out[0] = out[1] = 0;
    memcpy(&out[0], bits, size); /* little-endian: the low bytes */
    memcpy(&out[1], bits + size, size);
    rc = 0;
done:
    gs_bag_free(&bag);
    return rc;
}

/* ---- reduce() ----------------------------------------------------------------------------- */

/* The reduced axes, the result's shape, rows x row_len and the permutation that puts the
 * reduced axes last. */
static void plan_shape(reduce_plan *p, const int64_t *shape, const unsigned char *reduced,
                       int keepdims)
{
    int k = 0;

    p->rnd = 0;
    p->rows = 1;
    p->row_len = 1;
    for (int i = 0; i < p->ndim; i++) {
        if (reduced[i]) {
            p->row_len *= shape[i];
            if (keepdims)
                p->rshape[p->rnd++] = 1;
        } else {
            p->rows *= shape[i];
            p->rshape[p->rnd++] = shape[i];
            p->perm[k++] = i;
        }
    }
    for (int i = 0; i < p->ndim; i++)
        if (reduced[i])
            p->perm[k++] = i;
}

/* where= as NumPy takes it: a bool array (any other dtype is NumPy's TypeError of a 'safe'
 * cast), or anything that converts to one; True (everything) is no mask at all. */
static int where_get(PyObject *where, gs_operand *op)
{
    PyObject *mask;
    gs_dtype t;
    int nd, rc;
    int64_t shape[GS_MAX_NDIM];

    if (where == Py_True)
        return 0;
    if ((rc = gs_operand_get_device(where, op)) != 0) {
        if (rc > 0 && (gs_operand_info(op, "where", &t, &nd, shape) < 0 || t != GS_BOOL)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "where must be a bool array");
            return -1;
        }
        return rc < 0 ? -1 : 0;
    }
    mask = PyArray_FromAny(where, PyArray_DescrFromType(NPY_BOOL), 0, 0, 0, NULL);
    rc = mask == NULL ? -1 : gs_operand_get(mask, op);
    Py_XDECREF(mask);
    return rc < 0 || gs_operand_info(op, "where", &t, &nd, shape) < 0 ? -1 : 0;
}

PyObject *gs_reduce(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a",        "op",      "axis",  "dtype", "out",
                              "keepdims", "initial", "where", NULL };
    PyObject *a, *op_obj = NULL, *axis_obj = Py_None, *out_obj = Py_None, *initial = Py_None;
    PyObject *where = Py_True;
    PyObject *ret = NULL;
    PyArray_Descr *dtype = NULL;
    int keepdims = 0;
    int64_t shape[GS_MAX_NDIM];
    unsigned char reduced[GS_MAX_NDIM];
    gs_backend backend;
    gs_operand in, out;
    reduce_plan p;

    if (gs_uop_wanted(args, kwargs, 1))
        return gs_uop_reduce(args, kwargs); /* an Operator: ops/userop.c */
    if (gs_half_route(gs_reduce, self, args, kwargs, 1, &ret))
        return ret; /* float16: binding/half.c */

    memset(&in, 0, sizeof(in));
    memset(&out, 0, sizeof(out));
    memset(&p, 0, sizeof(p));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OO&OpOO:reduce", kwlist, &a, &op_obj,
                                     &axis_obj, PyArray_DescrConverter2, &dtype, &out_obj,
                                     &keepdims, &initial, &where))
        return NULL;

    /* Names and the backend first: they fail the same way whatever the data. */
    p.op = GS_OP_ADD;
    if (op_obj != NULL && gs_parse_op(op_obj, &p.op) < 0)
        goto done;
    if (gs_backend_get(&backend) < 0)
        goto done;
    if (gs_operand_get(a, &in) < 0 || gs_operand_info(&in, "input", &p.in_type, &p.ndim, shape) < 0)
        goto done;
    if (out_obj != Py_None && gs_out_get(out_obj, &out) < 0)
        goto done;
    if (gs_parse_axes(axis_obj, p.ndim, reduced) < 0)
        goto done;
    plan_shape(&p, shape, reduced, keepdims);
    p.inner = gs_axis_inner(p.ndim, shape, reduced);

    /* The accumulation dtype: dtype=, else out's, else NumPy's reduce rule (that of
     * accumulate); out= checked against the result. */
    if (gs_settle_acc(p.op, p.in_type, dtype, out_obj != Py_None ? &out : NULL, p.rnd, p.rshape,
                      &p.acc_type) < 0)
        goto done;
    p.red_in_type = gs_scan_pair_direct(p.in_type, p.acc_type, p.op) ? p.in_type : p.acc_type;

    /* initial= (None: none, as NumPy): a scalar, cast to the accumulation dtype as NumPy's. */
    if (initial != Py_None) {
        PyArray_Descr *descr = gs_descr(p.acc_type);
        if (descr == NULL)
            goto done;
        p.initial = PyArray_FromAny(initial, descr, 0, 0, NPY_ARRAY_FORCECAST, NULL);
        if (p.initial == NULL)
            goto done;
        if (PyArray_NDIM((PyArrayObject *)p.initial) != 0) {
            PyErr_SetString(PyExc_TypeError, "initial must be a scalar");
            goto done;
        }
    }

    /* A mask leaves values out: min, max, fmin and fmax, which have no identity, start from
     * initial=. */
    if (where_get(where, &p.where) < 0)
        goto done;
    if ((p.where.host != NULL || p.where.on_device) && p.initial == NULL && no_identity(p.op)) {
        PyErr_Format(PyExc_ValueError,
                     "reduction operation '%s' does not have an identity, so to use a where mask "
                     "one has to specify 'initial'",
                     gs_op_ufunc_name(p.op));
        goto done;
    }

    /* An empty reduction has the identity, which min, max, fmin and fmax lack (NumPy's
     * message). */
    if (p.row_len == 0 && p.initial == NULL && no_identity(p.op)) {
        PyErr_Format(PyExc_ValueError,
                     "zero-size array to reduction operation %s which has no identity",
                     gs_op_ufunc_name(p.op));
        goto done;
    }
    p.op = gs_op_run(p.op, p.acc_type);

    ret = reduce_run(&p, backend, &in, &out);
done:
    gs_operand_release(&in);
    gs_operand_release(&out);
    gs_operand_release(&p.where);
    Py_XDECREF(p.initial);
    Py_XDECREF(dtype);
    return ret;
}
