/*
 * core/raise.c - the module's exceptions, the one converter from a failure record to a Python
 * exception, and the check for Ctrl-C that long calls make between their pieces.
 * Level: core.
 */
#include "core/core.h"

#include <errno.h>

#include "cuda/cuda.h"

PyObject *gs_GpuscanError;
PyObject *gs_AxisError;

/* A failed CUDA call: GpuscanError naming it (the function name of the failed expression, not
 * its arguments), or MemoryError with the sizes. */
static int raise_cuda(int code, const char *call, size_t bytes)
{
    const int len = (int)strcspn(call, "(");
    gs_cuda_error e;

    gs_cuda_describe(code, &e);
    if (e.out_of_memory && bytes > 0)
        PyErr_Format(PyExc_MemoryError,
                     "out of device memory: %.*s could not allocate %zu bytes "
                     "(%zu of %zu bytes free on device %d)",
                     len, call, bytes, e.free_bytes, e.total_bytes, e.device);
    else if (e.out_of_memory)
        PyErr_Format(PyExc_MemoryError,
                     "out of device memory in %.*s (%zu of %zu bytes free on device %d)", len, call,
                     e.free_bytes, e.total_bytes, e.device);
    else if (e.name == NULL) /* a build without CUDA */
        PyErr_Format(PyExc_RuntimeError, "%.*s: %s", len, call, e.text);
    else
        PyErr_Format(gs_GpuscanError, "%.*s failed: %s (%s)", len, call, e.text, e.name);
    return -1;
}

int gs_raise(const gs_fail *f)
{
    const char *call = f->call != NULL ? f->call : "gpuscan";

    switch (f->kind) {
    case 'c':
        return raise_cuda(f->code, call, f->bytes);
    case 'e':
        if (f->code == ENOMEM) {
            if (f->bytes > 0)
                PyErr_Format(PyExc_MemoryError, "could not allocate %zu bytes of host memory",
                             f->bytes);
            else
                PyErr_NoMemory();
            return -1;
        }
        PyErr_Format(PyExc_RuntimeError, "%s failed: %s", call, strerror(f->code));
        return -1;
    default:
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "gpuscan: a call failed without a reason");
        return -1;
    }
}

_Thread_local PyThreadState *gs_released;

void gs_gil_take(void)
{
    PyEval_RestoreThread(gs_released);
}

void gs_gil_give(void)
{
    gs_released = PyEval_SaveThread();
}

int gs_interrupt_check(void)
{
    int rc;

    if (gs_released == NULL)
        return 0;
    gs_gil_take();
    rc = PyErr_CheckSignals();
    gs_gil_give();
    return rc < 0;
}
