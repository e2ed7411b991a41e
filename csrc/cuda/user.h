/*
 * cuda/user.h - operators you write (gpuscan.Operator) on the CUDA backend: compiled by NVRTC
 * (cuda/nvrtc.c) into the kernels of kernels/agent/user.cuh, one program per kernel family, and
 * launched over the calls' buffers (cuda/user.c).
 * Level: backend (CUDA), host side; nothing of Python; a build with CUDA only.
 */
#ifndef GS_CUDA_USER_H
#define GS_CUDA_USER_H

#include "cuda/cuda_rt.h"
#include "gpuscan/user_params.h"

/* A loaded operator (gpuscan/backend.h's opaque gs_user_prog): the kernel of each family
 * loaded so far (NULL until a call needs it), the dynamic shared memory it is launched with
 * (GS_USER_SMEM, or for the scan two tiles where three do not fit) and how many of its blocks
 * the device holds at once (0: not one, T being too large for its shared memory); T's size. */
struct gs_user_prog {
    char key[65]; /* the operator's, whatever the family */
    size_t size;
    cudaKernel_t kernel[GS_USER_FAMILIES];
    int smem[GS_USER_FAMILIES];
    int resident[GS_USER_FAMILIES];
    struct gs_user_prog *next; /* the process's list of operators (cuda/nvrtc.c) */
};

/* Compile (or find in the process, then on disk) the family spec->family of the operator:
 * 0 with *prog; -1 with the failure in *f, or with msg->error set (a compile error: 'c'; no
 * NVRTC: 'm'). */
int gs_cuda_user_load(const gs_user_spec *spec, const gs_user_prog **prog, gs_user_msg *msg,
                      gs_fail *f);

/* gs_user_desc's scan, reduce and segreduce (cuda/user.c). */
int gs_cuda_user_scan(const gs_user_desc *d, gs_fail *f);
int gs_cuda_user_reduce(const gs_user_desc *d, gs_fail *f);
int gs_cuda_user_segreduce(const gs_user_desc *d, gs_fail *f);

#endif /* GS_CUDA_USER_H */
