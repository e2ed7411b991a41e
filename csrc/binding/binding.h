/*
 * binding/binding.h - Python objects in: arguments parsed, operands made views of host or device
 * memory, and gpuscan.DeviceArray's Python type.
 * Level: binding, below ops/ (which call it) and above core/.  Declares:
 *   args.c         op / algorithm / axis parsing and NumPy's result dtype rules;
 *   operand.c      Python objects -> views of host or device memory (CAI v2/v3, DLPack);
 *   devarray.c     gpuscan.DeviceArray's type and to_device();
 *   half.c         float16 NumPy input, computed in float32 and rounded once per output;
 *   docstrings.c   every docstring of the module, in one place.
 * Functions that return int return 0 on success and -1 with a Python exception set.
 */
#ifndef GS_BINDING_H
#define GS_BINDING_H

#include "core/core.h"

/* ---- half.c --------------------------------------------------------------------------- */

/* The float16 door of scan, segmented_scan, reduce, reduceat and segmented_reduce (fn: the op's
 * own entry, its op argument at op_pos): 0 when the call's `a` is not float16 input and its
 * result not float16 (logaddexp of bool or 8-bit integers) (the op goes on), else 1 with *ret
 * the float16 call's result, computed in float32 and rounded once (NULL with an exception set). */
int gs_half_route(PyCFunctionWithKeywords fn, PyObject *self, PyObject *args, PyObject *kwargs,
                  Py_ssize_t op_pos, PyObject **ret);

/* histogram's float16 operands: `a` widened to float32, with the float16 array itself (a_half,
 * whose edges and bins NumPy's are; NULL when `a` is not float16), `weights` widened when they
 * are float16 (half_weights: then the counts round back to float16).  0 when neither is
 * float16 (h empty); 1 with h filled (release it); -1 with an exception. */
typedef struct gs_half_hist {
    PyObject *a, *a_half, *weights;
    int half_weights;
} gs_half_hist;
int gs_half_histogram(PyObject *a, PyObject *weights, gs_half_hist *h);
void gs_half_histogram_release(gs_half_hist *h);

/* ---- args.c --------------------------------------------------------------------------- */

/* op: a name from GS_OPS or the matching NumPy ufunc; else ValueError listing the choices. */
int gs_parse_op(PyObject *obj, gs_op *op);

/* The name of op's NumPy ufunc ("add", "multiply", "minimum", ...). */
const char *gs_op_ufunc_name(gs_op op);

/* algorithm: "auto", "hillis_steele" or "blelloch" (segmented: "auto" or "blelloch"); else
 * ValueError listing the choices. */
int gs_parse_algorithm(const char *name, int segmented, gs_algorithm *algo);

/* NumPy's accumulate result dtype: add/mul widen bool and narrow integers to 64 bits. */
gs_dtype gs_default_acc_type(gs_dtype in, gs_op op);

/* TypeError for a bitwise operator on a float accumulation dtype. */
int gs_check_op_dtype(gs_op op, gs_dtype acc);

/* A Python int axis (negative counts from the end) -> [0, ndim); else TypeError or AxisError. */
int gs_normalize_axis(PyObject *axis, int ndim, int *out);

/* reduce()'s axis: None (every axis), an int or a tuple of ints -> reduced[i] = 1 for each
 * reduced axis i < ndim; duplicates are a ValueError, out of range an AxisError (as NumPy). */
int gs_parse_axes(PyObject *axis, int ndim, unsigned char *reduced);

/* ValueError for an array whose shape is not the one wanted; `what` names both ("out has
 * shape (3,) but the result has shape (4,)").  Returns -1. */
int gs_shape_error(const char *have_name, int have_nd, const int64_t *have, const char *want_name,
                   int want_nd, const int64_t *want);

/* ---- operand.c ------------------------------------------------------------------------ */

/* A Python argument: a NumPy array (`host`: a new reference), or a device array whose memory
 * is kept alive by `owner` (the producer, or a consumed DLPack capsule) and, for DLPack,
 * released through `managed`'s deleter.  `view` describes it once gs_operand_info succeeded. */
typedef struct gs_operand {
    int on_device;
    int readonly;
    PyArrayObject *host;
    gs_view view;
    PyObject *owner;
    void *managed;
    /* The producer's stream from __cuda_array_interface__ v3 (1: the legacy default stream),
     * or 0 when the producer named none (CAI v2, "stream": None, DLPack). */
    uintptr_t foreign_stream;
} gs_operand;

/* Turn obj into an operand.  Device objects need the CUDA backend (see gs_require_cuda);
 * anything else goes through PyArray_FromAny.  On success the caller owns `op` and must call
 * gs_operand_release; on failure `op` holds nothing. */
int gs_operand_get(PyObject *obj, gs_operand *op);

/* gs_operand_get for a device object only: 1 with `op` filled when obj is one (the caller
 * releases it), 0 with `op` empty when it is not, -1 on error (`op` empty).  One read of
 * __cuda_array_interface__ both detects and describes it. */
int gs_operand_get_device(PyObject *obj, gs_operand *op);

/* 1 when obj has __cuda_array_interface__ or __dlpack_device__ (asking its type first, so that
 * CuPy's and PyTorch's interface is not built: gs_device_like in operand.c), 0 when not, -1 on
 * error. */
int gs_device_like(PyObject *obj);

/* gs_operand_get for an argument that must already be an array (`out=`): a NumPy array or a
 * device object, else TypeError naming `what`. */
int gs_operand_get_array(PyObject *obj, gs_operand *op, const char *what);

/* Release what gs_operand_get took; safe on a zeroed operand and called twice. */
void gs_operand_release(gs_operand *op);

/* An operand's dtype (TypeError naming the supported dtypes otherwise; `what` names the
 * argument), number of dimensions (at most GS_MAX_NDIM, else ValueError) and shape; fills
 * op->view. */
int gs_operand_info(gs_operand *op, const char *what, gs_dtype *dtype, int *ndim, int64_t *shape);

/* After a call that used op's device memory: order the producer's later work after ours (its
 * CAI stream waits on an event; a producer that named no stream gets a host sync).  Nothing
 * for host operands and for gpuscan's own DeviceArrays. */
int gs_operand_release_foreign(const gs_operand *op);

/* ---- devarray.c ----------------------------------------------------------------------- */

/* Make gpuscan.DeviceArray ready, add it to `module` and register it with core (module init). */
int gs_devarray_register(PyObject *module);

/* gpuscan.to_device(a). */
PyObject *gs_to_device(PyObject *self, PyObject *arg);

/* ---- operator.c ----------------------------------------------------------------------- */

/* gpuscan.Operator: an associative operator written in C (see the file).  Immutable once made. */
typedef struct gs_Operator {
    PyObject_HEAD PyObject *combine; /* str: the user's source */
    PyArray_Descr *dtype;            /* as given */
    PyArray_Descr *cdescr;           /* T's layout: native fields, aligned as C lays them out */
    PyObject *identity_obj;          /* the identity as Python values (int, float or a tuple) */
    PyObject *name;                  /* str or None */
    char identity[GS_USER_MAX_SIZE]; /* the identity: one T */
    char *type_decl;                 /* C declaring T (gs_user_spec) */
    char *line_name;                 /* the name #line gives the combine */
    int expression;                  /* combine is one expression (no `return`) */
    int nfields;                     /* structured: its fields; 0: a scalar dtype */
    const gs_backend_ops *prog_be;   /* the backend whose compiled operator `prog` is */
    const gs_user_prog *prog;
    unsigned families;               /* bit k: prog has the kernels of family k (gs_user_spec) */
} gs_Operator;

/* gpuscan.CompileError (a ValueError), made at import. */
extern PyObject *gs_CompileError;

/* Add Operator and CompileError to the module (module init). */
int gs_operator_register(PyObject *module);

/* Whether obj is an Operator. */
int gs_operator_check(PyObject *obj);

/* obj (a scalar, a tuple, a structured scalar) as one T into buf (what: "identity",
 * "initial"); else the exception NumPy's conversion raises, or ValueError for an array. */
int gs_operator_value(gs_Operator *op, PyObject *obj, const char *what, void *buf);

/* The operator compiled for backend be, with the kernels of `family` (gs_user_spec; once, then
 * kept): 0 with *prog, else CompileError,
 * RuntimeError (no compiler), NotImplementedError (a backend without operators you write) or
 * the failure's exception. */
int gs_operator_prog(gs_Operator *op, const gs_backend_ops *be, int family,
                     const gs_user_prog **prog);

/* ---- docstrings.c --------------------------------------------------------------------- */

extern const char gs_doc_scan[], gs_doc_segmented_scan[], gs_doc_reduce[], gs_doc_split[],
    gs_doc_compact[], gs_doc_histogram[], gs_doc_bincount[], gs_doc_backend[], gs_doc_device_info[],
    gs_doc_to_device[], gs_doc_free_cached_memory[], gs_doc_module[], gs_doc_reduceat[],
    gs_doc_segmented_reduce[], gs_doc_linear_recurrence[], gs_doc_devarray[], gs_doc_devarray_get[],
    gs_doc_devarray_dlpack[], gs_doc_devarray_dlpack_device[], gs_doc_devarray_array[],
    gs_doc_sort[], gs_doc_argsort[], gs_doc_operator[], gs_doc_compile_error[];

#endif /* GS_BINDING_H */
