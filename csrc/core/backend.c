/*
 * core/backend.c - which backend runs the calls of this process, decided once, at first use, and
 * its table; the private knobs the ops carry to it.
 * Level: core.  $GPUSCAN_BACKEND=cuda|cpu forces a backend; unset (or "auto") picks CUDA
 * when the build has it and a device is usable, else the CPU.  Importing never touches CUDA, so
 * a machine without a GPU or driver imports fine; a forced but unusable CUDA makes every call
 * (and backend()) raise RuntimeError naming the cause.  Called with the GIL held, which also
 * serialises the one-time decision.
 */
#include "core/core.h"

#include "cuda/cuda.h"

#include <stdlib.h>

static int decided;
static gs_backend chosen = GS_BACKEND_CPU;
/* Set when $GPUSCAN_BACKEND holds something unusable: every call raises it. */
static int forced_failure;
static char reason[256];

static void decide(void)
{
    const char *env = getenv("GPUSCAN_BACKEND");
    int want_cuda = 0, force = 0;

    decided = 1;
    if (env == NULL || env[0] == '\0' || strcmp(env, "auto") == 0) {
        want_cuda = 1;
    } else if (strcmp(env, "cuda") == 0) {
        want_cuda = force = 1;
    } else if (strcmp(env, "cpu") == 0) {
        snprintf(reason, sizeof(reason), "GPUSCAN_BACKEND=cpu");
        return;
    } else {
        snprintf(reason, sizeof(reason),
                 "GPUSCAN_BACKEND must be 'cuda' or 'cpu' (or unset), got '%.64s'", env);
        forced_failure = 1;
        return;
    }
    if (!want_cuda)
        return;
    if (gs_cuda_init(reason, sizeof(reason)) == 0) {
        chosen = GS_BACKEND_CUDA;
        return;
    }
    if (force)
        forced_failure = 1;
}

int gs_backend_get(gs_backend *backend)
{
    if (!decided)
        decide();
    if (forced_failure) {
        if (strncmp(reason, "GPUSCAN_BACKEND", 15) == 0)
            PyErr_SetString(PyExc_RuntimeError, reason);
        else
            PyErr_Format(PyExc_RuntimeError,
                         "GPUSCAN_BACKEND=cuda but the CUDA backend is not usable: %s", reason);
        return -1;
    }
    *backend = chosen;
    return 0;
}

const char *gs_backend_cpu_reason(void)
{
    return reason;
}

int gs_require_cuda(void)
{
    gs_backend backend;
    if (gs_backend_get(&backend) < 0)
        return -1;
    if (backend != GS_BACKEND_CUDA) {
        PyErr_Format(PyExc_TypeError,
                     "device arrays need the CUDA backend; backend() is 'cpu' because %s", reason);
        return -1;
    }
    return 0;
}

const gs_backend_ops *gs_backend_table(gs_backend backend)
{
    return backend == GS_BACKEND_CUDA ? &gs_cuda_backend : &gs_cpu_backend;
}

const gs_backend_ops *gs_backend_for(gs_backend backend, int device)
{
    return gs_backend_table(device ? GS_BACKEND_CUDA : backend);
}

gs_knobs gs_test_knobs;
