/*
 * core/hold.c - big NumPy arrays used again, held page-locked while their memory lives, so that
 * the pipeline copies them straight in or out (cuda/pipeline.c's "direct" arrays) as it does the
 * results it makes itself.
 * Level: core (the arrays' owners and their memory are NumPy's); the locking is the backend's
 * (host_hold / host_unhold of gpuscan/backend.h).
 * Why: an ordinary NumPy operand of the pipeline travels through the staging ring, one more host
 * copy of each of its bytes (the pack of an input, the unpack of out=), and on an H200 host that
 * copy, not the PCIe link, bounds a round trip (docs/performance-notes.md, "NumPy in, NumPy
 * out"). Page-locking an array costs more than one copy of it (1 GiB: 26 ms, and 17 ms to undo),
 * so an array is held at its second use: the first is remembered (a weak reference to its owner,
 * the owner's data and size: a new array at a freed one's address is not taken for it, so the
 * temporaries of a loop stay unheld); the second page-locks the owner's whole buffer.
 * Until when: the locked range must be let go before its memory is freed or moved, however
 * that happens (the owner freed, `__setstate__`, a resize): the driver would otherwise keep it,
 * and a new allocation at that address would pass for page-locked and be copied through the old
 * pages. So a held owner's memory handler (NumPy's PyDataMem_Handler, which frees and moves its
 * data) is replaced by one of this file's, which passes every call on to the owner's own
 * handler and first unlocks the range when it is freed or moved. The locking and unlocking run
 * with the GIL held, so no Python code frees the memory between the two.
 * Held: an operand of 64 MiB or more, C-contiguous in native byte order, whose base chain ends
 * in an ndarray owning its data (not a memmap, not another library's buffer), on the CUDA
 * backend, within the page-locked memory limit (GPUSCAN_PINNED_BYTES). A remembered owner has a
 * weak reference, and NumPy refuses to resize in place an array that has one.
 */
#include "core/core.h"

/* Arrays from this size up are held at their second use (0: none; the tests' and benchmarks'
 * knob _hold_bytes sets it). */
static size_t hold_min = (size_t)64 << 20;
/* Arrays held at most, and first uses remembered. */
#define GS_HOLD_MAX 16
#define GS_HOLD_SEEN 8
#define GS_MEM_HANDLER "mem_handler" /* NumPy's name of a handler's capsule */

/* A held owner's memory handler: the owner's own (`own`), with the locked range let go first
 * when the memory is freed or moved. An entry is taken while its capsule lives (the owner holds
 * it as its handler); `ptr` is NULL once the range is let go. */
typedef struct hold {
    PyDataMem_Handler handler; /* first: the capsule's pointer is the entry's */
    PyObject *capsule;         /* borrowed (the owner's); NULL: a free entry */
    PyObject *own;             /* the owner's handler before, its reference */
    const PyDataMem_Handler *own_h;
    const gs_backend_ops *be;
    char *ptr;
    size_t bytes;
} hold;

typedef struct sighting {
    PyObject *ref; /* a weak reference to the owner; NULL: none */
    const char *ptr;
    size_t bytes;
} sighting;

/* Under the GIL, as NumPy's calls of a handler are. */
static hold holds[GS_HOLD_MAX];
static sighting seen[GS_HOLD_SEEN];
static int seen_next;

/* The range of entry h unlocked, if it was still locked and `ptr` is in it. */
static void let_go(hold *h, const void *ptr)
{
    if (h->ptr == NULL || (const char *)ptr < h->ptr || (const char *)ptr >= h->ptr + h->bytes)
        return;
    h->be->host_unhold(h->ptr);
    h->ptr = NULL;
}

static void *held_malloc(void *ctx, size_t size)
{
    const PyDataMemAllocator *a = &((hold *)ctx)->own_h->allocator;
    return a->malloc(a->ctx, size);
}

static void *held_calloc(void *ctx, size_t nelem, size_t elsize)
{
    const PyDataMemAllocator *a = &((hold *)ctx)->own_h->allocator;
    return a->calloc(a->ctx, nelem, elsize);
}

static void *held_realloc(void *ctx, void *ptr, size_t size)
{
    const PyDataMemAllocator *a = &((hold *)ctx)->own_h->allocator;
    let_go(ctx, ptr);
    return a->realloc(a->ctx, ptr, size);
}

static void held_free(void *ctx, void *ptr, size_t size)
{
    const PyDataMemAllocator *a = &((hold *)ctx)->own_h->allocator;
    let_go(ctx, ptr);
    a->free(a->ctx, ptr, size);
}

/* The capsule's destructor: its owner is gone or has another handler (after its data was freed
 * through this one); the entry is free again. */
static void hold_gone(PyObject *capsule)
{
    hold *h = PyCapsule_GetPointer(capsule, GS_MEM_HANDLER);

    if (h == NULL) {
        PyErr_Clear();
        return;
    }
    let_go(h, h->ptr); /* not expected: its memory is freed first */
    Py_CLEAR(h->own);
    h->capsule = NULL;
}

/* The live object of weak reference ref (a borrowed reference), or NULL. */
static PyObject *alive(PyObject *ref)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(ref, &o) <= 0) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(o); /* alive: others hold it (only compared and read here) */
    return o;
#else
    PyObject *o = PyWeakref_GetObject(ref);
    return o == Py_None ? NULL : o;
#endif
}

/* The entry whose handler `owner` has, or NULL. */
static hold *held_entry(PyArrayObject *owner)
{
    PyObject *handler = PyArray_HANDLER(owner);

    for (int i = 0; i < GS_HOLD_MAX; i++)
        if (holds[i].capsule != NULL && holds[i].capsule == handler)
            return &holds[i];
    return NULL;
}

/* Hold the owner's buffer now: locked (the GIL kept: nothing frees it meanwhile), then the
 * owner's handler replaced by an entry's (or its entry's range set again, once let go when the
 * owner was resized). */
static void hold_now(const gs_backend_ops *be, PyArrayObject *owner, char *ptr, size_t bytes)
{
    PyArrayObject_fields *fa = (PyArrayObject_fields *)owner;
    PyObject *own = fa->mem_handler;
    const PyDataMem_Handler *own_h;
    hold *h = held_entry(owner);

    if (h != NULL) {
        if (h->ptr == NULL && be->host_hold(ptr, bytes)) {
            h->be = be;
            h->ptr = ptr;
            h->bytes = bytes;
        }
        return;
    }
    if (own == NULL || (own_h = PyCapsule_GetPointer(own, GS_MEM_HANDLER)) == NULL) {
        PyErr_Clear();
        return;
    }
    for (int i = 0; i < GS_HOLD_MAX && h == NULL; i++)
        if (holds[i].capsule == NULL)
            h = &holds[i];
    if (h == NULL || !be->host_hold(ptr, bytes))
        return;
    memcpy(h->handler.name, "gpuscan_held", sizeof("gpuscan_held"));
    h->handler.version = 1;
    h->handler.allocator.ctx = h;
    h->handler.allocator.malloc = held_malloc;
    h->handler.allocator.calloc = held_calloc;
    h->handler.allocator.realloc = held_realloc;
    h->handler.allocator.free = held_free;
    h->own_h = own_h;
    h->be = be;
    h->ptr = ptr;
    h->bytes = bytes;
    if ((h->capsule = PyCapsule_New(h, GS_MEM_HANDLER, hold_gone)) == NULL) {
        PyErr_Clear();
        let_go(h, ptr);
        return;
    }
    h->own = own;                 /* the owner's reference, now the entry's */
    fa->mem_handler = h->capsule; /* and the entry's capsule the owner's */
}

size_t gs_hold_min_bytes(void)
{
    return hold_min;
}

void gs_hold_set_min_bytes(size_t bytes)
{
    hold_min = bytes;
    for (int j = 0; j < GS_HOLD_SEEN; j++) /* first uses forgotten */
        Py_CLEAR(seen[j].ref);
}

void gs_hold_host(PyArrayObject *a, const gs_view *v)
{
    PyArrayObject *owner = a;
    gs_backend backend;
    const gs_backend_ops *be;
    char *ptr;
    size_t bytes;
    hold *h;
    int j;

    if (hold_min == 0 || (size_t)PyArray_NBYTES(a) < hold_min)
        return;
    if (gs_backend_get(&backend) < 0) {
        PyErr_Clear(); /* the call itself reports it */
        return;
    }
    be = gs_backend_table(backend);
    if (be->host_hold == NULL || v->swapped || !gs_view_is_c_contig(v))
        return;
    while (PyArray_BASE(owner) != NULL && PyArray_Check(PyArray_BASE(owner)))
        owner = (PyArrayObject *)PyArray_BASE(owner);
    if (PyArray_BASE(owner) != NULL || !PyArray_CHKFLAGS(owner, NPY_ARRAY_OWNDATA))
        return;
    ptr = PyArray_BYTES(owner);
    bytes = (size_t)PyArray_NBYTES(owner);
    if ((h = held_entry(owner)) != NULL && h->ptr != NULL)
        return; /* held */
    for (j = 0; j < GS_HOLD_SEEN; j++) {
        if (seen[j].ref != NULL && alive(seen[j].ref) == (PyObject *)owner && seen[j].ptr == ptr &&
            seen[j].bytes == bytes) {
            Py_CLEAR(seen[j].ref);
            hold_now(be, owner, ptr, bytes);
            return;
        }
    }
    /* A first use, remembered in place of the oldest (or of a freed owner's). */
    for (j = 0; j < GS_HOLD_SEEN; j++)
        if (seen[j].ref == NULL || alive(seen[j].ref) == NULL)
            break;
    if (j == GS_HOLD_SEEN) {
        j = seen_next;
        seen_next = (seen_next + 1) % GS_HOLD_SEEN;
    }
    Py_CLEAR(seen[j].ref);
    if ((seen[j].ref = PyWeakref_NewRef((PyObject *)owner, NULL)) == NULL) {
        PyErr_Clear();
        return;
    }
    seen[j].ptr = ptr;
    seen[j].bytes = bytes;
}
