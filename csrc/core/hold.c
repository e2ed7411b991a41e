/*
 * core/hold.c - big NumPy arrays used again, held page-locked while they live, so that the
 * pipeline copies them straight in or out (cuda/pipeline.c's "direct" arrays) as it does the
 * results it makes itself.
 * Level: core (the arrays' owners and their lifetimes are Python's); the locking is the
 * backend's (host_hold / host_unhold of gpuscan/backend.h).
 * Why: an ordinary NumPy operand of the pipeline travels through the staging ring, one more host
 * copy of each of its bytes (the pack of an input, the unpack of out=), and on an H200 host that
 * copy, not the PCIe link, bounds a round trip (docs/performance-notes.md, "NumPy in, NumPy
 * out"). Page-locking an array costs more than one copy of it (1 GiB: 26 ms, and 17 ms to undo),
 * so an array is held at its second use: the first is remembered (a weak reference to its owner,
 * the owner's data and size: a new array at a freed one's address is not taken for it, so the
 * temporaries of a loop stay unheld); the second page-locks the owner's whole buffer, with a weak
 * reference to the owner whose callback undoes it (NumPy clears an array's weak references
 * before it frees the data).
 * Held: an operand of 64 MiB or more, C-contiguous in native byte order, whose base chain ends
 * in an ndarray owning its data (not a memmap, not another library's buffer), on the CUDA
 * backend, within the page-locked memory limit (GPUSCAN_PINNED_BYTES). NumPy refuses to resize
 * in place an array that has a weak reference (PyArray_Resize, whatever refcheck says), so a held
 * or remembered owner cannot be resized in place (np.resize still works). Its memory can still
 * be freed under it (ndarray.__setstate__), so every call that touches host memory first checks
 * that each held owner's data is where it was held (gs_hold_check) and lets go of what moved,
 * before a new array at the old address could be taken for locked memory.
 */
#include "core/core.h"

/* Arrays from this size up are held at their second use (0: none; the tests' and benchmarks'
 * knob _hold_bytes sets it). */
static size_t hold_min = (size_t)64 << 20;
/* Arrays held at most, and first uses remembered. */
#define GS_HOLD_MAX 16
#define GS_HOLD_SEEN 8

typedef struct hold {
    PyObject *ref; /* a weak reference to the owner; NULL: a free entry */
    const gs_backend_ops *be;
    char *ptr;
    size_t bytes;
} hold;

typedef struct sighting {
    PyObject *ref; /* a weak reference to the owner; NULL: none */
    const char *ptr;
    size_t bytes;
} sighting;

/* Under the GIL (which host_hold and host_unhold run without: an entry is taken before and
 * given up after). */
static hold holds[GS_HOLD_MAX];
static sighting seen[GS_HOLD_SEEN];
static int seen_next;
static PyObject *gone_fn; /* the weak references' callback */

/* Entry i given up, its memory unlocked. */
static void let_go(int i)
{
    hold h = holds[i];

    holds[i].ref = NULL;
    Py_DECREF(h.ref);
    GS_BEGIN_UNLOCKED
        h.be->host_unhold(h.ptr);
    GS_END_UNLOCKED
}

/* The callback of a held owner's weak reference: the owner is being freed. */
static PyObject *hold_gone(PyObject *self, PyObject *ref)
{
    for (int i = 0; i < GS_HOLD_MAX; i++)
        if (holds[i].ref == ref) {
            let_go(i);
            break;
        }
    Py_RETURN_NONE;
}

static PyMethodDef gone_def = { "_gpuscan_hold_gone", hold_gone, METH_O, NULL };

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

/* Hold the owner's buffer now: an entry taken, the memory locked without the GIL. */
static void hold_now(const gs_backend_ops *be, PyArrayObject *owner, char *ptr, size_t bytes)
{
    PyObject *ref;
    int i = 0, ok;

    while (i < GS_HOLD_MAX && holds[i].ref != NULL)
        i++;
    if (i == GS_HOLD_MAX)
        return;
    if (gone_fn == NULL && (gone_fn = PyCFunction_New(&gone_def, NULL)) == NULL) {
        PyErr_Clear();
        return;
    }
    if ((ref = PyWeakref_NewRef((PyObject *)owner, gone_fn)) == NULL) {
        PyErr_Clear();
        return;
    }
    holds[i].ref = ref;
    holds[i].be = be;
    holds[i].ptr = ptr;
    holds[i].bytes = bytes;
    GS_BEGIN_UNLOCKED
        ok = be->host_hold(ptr, bytes);
    GS_END_UNLOCKED
    if (holds[i].ref != ref) { /* let go by another thread meanwhile: undone here */
        if (ok) {
            GS_BEGIN_UNLOCKED
                be->host_unhold(ptr);
            GS_END_UNLOCKED
        }
    } else if (!ok) { /* refused: nothing to undo */
        holds[i].ref = NULL;
        Py_DECREF(ref);
    }
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

void gs_hold_check(void)
{
    for (int i = 0; i < GS_HOLD_MAX; i++) {
        PyArrayObject *o;
        if (holds[i].ref == NULL)
            continue;
        o = (PyArrayObject *)alive(holds[i].ref);
        if (o == NULL || PyArray_BYTES(o) != holds[i].ptr ||
            (size_t)PyArray_NBYTES(o) != holds[i].bytes)
            let_go(i);
    }
}

void gs_hold_host(PyArrayObject *a, const gs_view *v)
{
    PyArrayObject *owner = a;
    gs_backend backend;
    const gs_backend_ops *be;
    char *ptr;
    size_t bytes;
    int j;

    gs_hold_check();
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
    for (int i = 0; i < GS_HOLD_MAX; i++)
        if (holds[i].ref != NULL && alive(holds[i].ref) == (PyObject *)owner)
            return; /* held (gs_hold_check let go of what moved) */
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
