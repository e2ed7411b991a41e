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
 * so an array is held at its second use: the first is remembered (its owner, the owner's data and
 * size); the second page-locks the owner's whole buffer, with a weak reference to the owner whose
 * callback undoes it (NumPy clears an array's weak references before it frees the data).
 * Held: an operand of 64 MiB or more, C-contiguous in native byte order, whose base chain ends
 * in an ndarray owning its data (not a memmap, not another library's buffer), on the CUDA
 * backend, within the page-locked memory limit (GPUSCAN_PINNED_BYTES). NumPy refuses to resize
 * in place an array that has a weak reference (PyArray_Resize, whatever refcheck says), so a held
 * owner's memory stays where it was until it is freed; memory that moved all the same is let go
 * at the owner's next use.
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
    const void *owner; /* compared, never dereferenced: the owner may be gone */
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
        if (holds[i].ref == ref)
            let_go(i);
    Py_RETURN_NONE;
}

static PyMethodDef gone_def = { "_gpuscan_hold_gone", hold_gone, METH_O, NULL };

/* The live owner of entry i (a borrowed reference), or NULL. */
static PyObject *owner_of(int i)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(holds[i].ref, &o) <= 0) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(o); /* alive: others hold it (only compared and read here) */
    return o;
#else
    PyObject *o = PyWeakref_GetObject(holds[i].ref);
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
}

void gs_hold_host(PyArrayObject *a, const gs_view *v)
{
    PyArrayObject *owner = a;
    gs_backend backend;
    const gs_backend_ops *be;
    char *ptr;
    size_t bytes;

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
    if (hold_min == 0 || bytes < hold_min)
        return;
    for (int i = 0; i < GS_HOLD_MAX; i++) {
        if (holds[i].ref == NULL || owner_of(i) != (PyObject *)owner)
            continue;
        if (holds[i].ptr == ptr && holds[i].bytes == bytes)
            return; /* held */
        let_go(i); /* its memory moved (not through NumPy: see the header) */
    }
    for (int j = 0; j < GS_HOLD_SEEN; j++) {
        if (seen[j].owner == owner && seen[j].ptr == ptr && seen[j].bytes == bytes) {
            seen[j].owner = NULL;
            hold_now(be, owner, ptr, bytes);
            return;
        }
    }
    seen[seen_next].owner = owner;
    seen[seen_next].ptr = ptr;
    seen[seen_next].bytes = bytes;
    seen_next = (seen_next + 1) % GS_HOLD_SEEN;
}
