/*
 * ops/scan_device.c - gpuscan.scan() and segmented_scan() when the input, the flags or `out`
 * lives in device memory.
 *
 * Level: host layer, CUDA build only.  Device memory is used in place: the input is copied
 * (gs_cuda_copy, on the device) only when it is strided, needs a cast, or overlaps `out`
 * badly, the flags only when they are strided or overlap `out`; the scan writes straight into `out`
 * or a new DeviceArray when they are contiguous with the scanned axis last and of the accumulation
 * dtype, else into a pool temporary that gs_cuda_copy then scatters into place.  Everything is
 * enqueued on gpuscan's stream and nothing waits for it on the host.  Memory from another library
 * may be reused or read on the producer's stream as soon as we return, so that stream is made to
 * wait for our work (gs_cuda_release_foreign); only a producer that named no stream costs a host
 * sync. Every pool buffer goes back on every path.
 */
#include "gpuscan.h"

#ifdef GS_HAVE_CUDA

/* Move dimension `axis` of v to the end, keeping the order of the others. */
static void move_axis_last(gs_devview *v, int axis)
{
    int64_t shape = v->shape[axis], stride = v->strides[axis];
    for (int i = axis; i < v->ndim - 1; i++) {
        v->shape[i] = v->shape[i + 1];
        v->strides[i] = v->strides[i + 1];
    }
    v->shape[v->ndim - 1] = shape;
    v->strides[v->ndim - 1] = stride;
}

/* A C-contiguous view of `ptr` with like's shape and the given dtype. */
static void contiguous_like(gs_devview *v, const gs_devview *like, void *ptr, gs_dtype dtype)
{
    *v = *like;
    v->ptr = ptr;
    v->dtype = dtype;
    gs_devview_set_c_strides(v);
}

/* The bytes a view can touch, [*lo, *hi). */
static void view_extent(const gs_devview *v, const char **lo, const char **hi)
{
    int64_t low = 0, high = (int64_t)gs_dtype_size(v->dtype);
    for (int i = 0; i < v->ndim; i++) {
        int64_t span = (v->shape[i] - 1) * v->strides[i];
        if (span < 0)
            low += span;
        else
            high += span;
    }
    *lo = v->ptr + low;
    *hi = v->ptr + high;
}

static int views_overlap(const gs_devview *a, const gs_devview *b)
{
    const char *alo, *ahi, *blo, *bhi;
    if (gs_devview_size(a) == 0 || gs_devview_size(b) == 0)
        return 0;
    view_extent(a, &alo, &ahi);
    view_extent(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

int gs_devview_upload(PyArrayObject *host, gs_dtype dtype, gs_devview *v, void **up)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    PyArray_Descr *descr = gs_descr(dtype);
    PyArrayObject *c;
    int rc = -1;

    if (descr == NULL)
        return -1;
    c = (PyArrayObject *)PyArray_FromAny((PyObject *)host, descr, 0, 0, NPY_ARRAY_CARRAY_RO, NULL);
    if (c == NULL)
        return -1;
    v->ndim = PyArray_NDIM(c);
    for (int i = 0; i < v->ndim; i++)
        v->shape[i] = PyArray_DIM(c, i);
    GS_CUDA_ALLOC(fail, *up, (size_t)PyArray_NBYTES(c));
    contiguous_like(v, v, *up, dtype);
    rc = gs_cuda_upload(*up, PyArray_DATA(c), (size_t)PyArray_NBYTES(c));
error:
    if (fail.err != cudaSuccess)
        gs_cuda_raise(&fail);
    Py_DECREF(c);
    return rc;
}

cudaError_t gs_devview_flatten(gs_devview *v, int contiguous, void **tmp, gs_cuda_fail *fail)
{
    int64_t n = gs_devview_size(v);
    gs_devview c;

    if (!gs_devview_is_c_contig(v) && (contiguous || v->ndim > 1)) {
        GS_CUDA_ALLOC(*fail, *tmp, (size_t)n * gs_dtype_size(v->dtype));
        contiguous_like(&c, v, *tmp, v->dtype);
        GS_CUDA_CHECK(*fail, gs_cuda_copy_view(v, &c));
        *v = c;
    }
    if (v->ndim != 1 || gs_devview_is_c_contig(v)) {
        v->ndim = 1;
        v->shape[0] = n;
        v->strides[0] = (int64_t)gs_dtype_size(v->dtype);
    }
error:
    return fail->err;
}

PyObject *gs_scan_device(const gs_scan_plan *plan, gs_operand *in, gs_operand *flags,
                         gs_operand *out, PyObject *out_obj, int rnd, const int64_t *rshape)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    gs_devview src, heads, work, target, scan_in, scan_out, shaped;
    void *up = NULL, *flat = NULL, *tmp_in = NULL, *tmp_out = NULL;
    void *up_heads = NULL, *flat_heads = NULL, *tmp_heads = NULL;
    PyArrayObject *host_res = NULL, *back = NULL;
    gs_DeviceArray *res = NULL;
    PyObject *ret = NULL;
    PyArray_Descr *descr;
    gs_dtype flag_type = GS_BOOL;
    int axis = plan->axis, on_device_target, need_in_copy, direct_out, whole;
    npy_intp dims[GS_MAX_NDIM], perm_v[GS_MAX_NDIM];
    PyArray_Dims perm = { perm_v, 0 };
    gs_scan_desc d;
    int64_t n;

    GS_CUDA_CHECK(fail, gs_cuda_enter());

    /* 1. The input (and flags) as device views: in place, or uploaded from the host. */
    if (in->on_device)
        src = in->dev;
    else if (gs_devview_upload(in->host, plan->in_type, &src, &up) < 0)
        goto error;
    n = gs_devview_size(&src);
    if (flags != NULL) {
        if (flags->on_device) {
            heads = flags->dev;
        } else {
            if (gs_dtype_from_descr(PyArray_DESCR(flags->host), "flags", &flag_type) < 0 ||
                gs_devview_upload(flags->host, flag_type, &heads, &up_heads) < 0)
                goto error;
        }
        flag_type = heads.dtype;
    }

    /* 2. axis=None, 0-d, 1-d and segmented: one scan over the elements in C order, the flags
     *    contiguous at their own width. */
    whole = axis < 0 || src.ndim <= 1;
    if (whole) {
        if (gs_devview_flatten(&src, 0, &flat, &fail) != cudaSuccess)
            goto error;
        if (flags != NULL && gs_devview_flatten(&heads, 1, &flat_heads, &fail) != cudaSuccess)
            goto error;
        axis = 0;
    }

    /* 3. The scanned axis last: the backend scans rows of contiguous memory. */
    work = src;
    move_axis_last(&work, axis);

    /* 4. Where the result goes: `out` or a new DeviceArray of the result's shape, seen with the
     *    same axis order as the input (whole: as one dimension, when contiguous). */
    on_device_target = 1;
    if (out->on_device) {
        /* Shape-checked by the caller: the result's shape. */
        target = out->dev;
    } else if (out->host != NULL) {
        on_device_target = 0;
    } else {
        res = gs_devarray_new(rnd, rshape, plan->acc_type);
        if (res == NULL)
            goto error;
        gs_devarray_view(res, &target);
    }
    direct_out = 0;
    if (on_device_target) {
        if (!whole)
            move_axis_last(&target, axis);
        direct_out = gs_devview_is_c_contig(&target) && target.dtype == plan->acc_type;
    }

    /* 5. The scan input: contiguous, of the dtype the backend reads, and either apart from the
     *    output or exactly the output (in place).  The flags apart from the output. */
    need_in_copy = !gs_devview_is_c_contig(&work) || work.dtype != plan->scan_in_type;
    if (!need_in_copy && direct_out && views_overlap(&work, &target) &&
        !(work.ptr == target.ptr && plan->scan_in_type == plan->acc_type))
        need_in_copy = 1;
    if (need_in_copy) {
        GS_CUDA_ALLOC(fail, tmp_in, (size_t)n * gs_dtype_size(plan->scan_in_type));
        contiguous_like(&scan_in, &work, tmp_in, plan->scan_in_type);
        GS_CUDA_CHECK(fail, gs_cuda_copy_view(&work, &scan_in));
    } else {
        scan_in = work;
    }
    if (flags != NULL && direct_out && views_overlap(&heads, &target)) {
        GS_CUDA_ALLOC(fail, tmp_heads, (size_t)n * gs_dtype_size(flag_type));
        contiguous_like(&shaped, &heads, tmp_heads, flag_type);
        GS_CUDA_CHECK(fail, gs_cuda_copy_view(&heads, &shaped));
        heads = shaped;
    }
    if (direct_out) {
        scan_out = work;
        scan_out.ptr = target.ptr;
        scan_out.dtype = plan->acc_type;
        gs_devview_set_c_strides(&scan_out);
    } else {
        GS_CUDA_ALLOC(fail, tmp_out, (size_t)n * gs_dtype_size(plan->acc_type));
        contiguous_like(&scan_out, &work, tmp_out, plan->acc_type);
    }

    /* 6. The scan. */
    if (n > 0) {
        memset(&d, 0, sizeof(d));
        d.in = scan_in.ptr;
        d.out = scan_out.ptr;
        d.flags = flags != NULL ? heads.ptr : NULL;
        d.n = n;
        d.row_len = work.ndim > 1 ? work.shape[work.ndim - 1] : 0;
        d.in_type = plan->scan_in_type;
        d.out_type = plan->acc_type;
        d.flag_type = flag_type;
        d.op = plan->op;
        d.exclusive = plan->exclusive;
        d.algorithm = plan->algorithm;
        Py_BEGIN_ALLOW_THREADS(void) gs_cuda_enqueue(&d, NULL, &fail);
        Py_END_ALLOW_THREADS if (fail.err != cudaSuccess) goto error;
    }

    /* 7. Delivery: scatter into the device target (whole: the contiguous result seen with the
     *    target's shape), or download into a NumPy out. */
    if (on_device_target && !direct_out) {
        if (whole)
            contiguous_like(&shaped, &target, scan_out.ptr, plan->acc_type);
        GS_CUDA_CHECK(fail, gs_cuda_copy_view(whole ? &shaped : &scan_out, &target));
    }
    if (!on_device_target) {
        if ((descr = gs_descr(plan->acc_type)) == NULL)
            goto error;
        perm.len = whole ? rnd : work.ndim;
        for (int i = 0; i < perm.len; i++) {
            dims[i] = (npy_intp)(whole ? rshape[i] : work.shape[i]);
            /* The inverse of move_axis_last (the identity for a whole scan). */
            perm_v[i] = whole || i < axis ? i : (i == axis ? work.ndim - 1 : i - 1);
        }
        host_res = (PyArrayObject *)PyArray_Empty(perm.len, dims, descr, 0);
        if (host_res == NULL)
            goto error;
        if (gs_cuda_download(PyArray_DATA(host_res), scan_out.ptr,
                             (size_t)PyArray_NBYTES(host_res)) < 0)
            goto error;
        back = (PyArrayObject *)PyArray_Transpose(host_res, &perm);
        if (back == NULL || PyArray_CopyInto(out->host, back) < 0)
            goto error;
    }
    if (gs_cuda_release_foreign(in) < 0 || (flags != NULL && gs_cuda_release_foreign(flags) < 0) ||
        gs_cuda_release_foreign(out) < 0)
        goto error;
    if (PyErr_CheckSignals() < 0)
        goto error;
    if (out_obj != Py_None) {
        Py_INCREF(out_obj);
        ret = out_obj;
    } else {
        ret = (PyObject *)res;
        res = NULL;
    }
error:
    if (fail.err != cudaSuccess)
        gs_cuda_raise(&fail);
    gs_cuda_free(tmp_heads);
    gs_cuda_free(flat_heads);
    gs_cuda_free(up_heads);
    gs_cuda_free(tmp_out);
    gs_cuda_free(tmp_in);
    gs_cuda_free(flat);
    gs_cuda_free(up);
    Py_XDECREF(res);
    Py_XDECREF(host_res);
    Py_XDECREF(back);
    return ret;
}

#endif /* GS_HAVE_CUDA */
