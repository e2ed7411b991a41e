/*
 * dispatch/launch.cu - the launchers' debug switch (dispatch/launch.cuh, gs_launch_check).
 * Level: dispatch.  Set once by the host at initialisation (GPUSCAN_DEBUG_SYNC=1, csrc/cuda/
 * runtime.c) or by a standalone tool; when set, every launcher synchronizes after its launch so
 * that a kernel's error is reported by the call that launched it.
 */
#include "gpuscan/launch.h"

extern "C" int gs_launch_debug_sync = 0;
