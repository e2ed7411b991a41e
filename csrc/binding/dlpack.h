/*
 * binding/dlpack.h - the few DLPack ABI structs gpuscan exchanges, written out per the DLPack ABI.
 * Level: binding, shared by binding/operand.c (consuming "dltensor" capsules) and
 * binding/devarray.c (producing them).  Only the legacy, unversioned DLManagedTensor is used: every
 * producer hands it out when no max_version is asked for, and every consumer accepts it.  Layouts
 * must match dlpack.h byte for byte; the enum values are fixed by the standard.
 */
#ifndef GS_DLPACK_H
#define GS_DLPACK_H

#include <stdint.h>

/* Device types (DLDeviceType). */
#define GS_DL_CPU 1
#define GS_DL_CUDA 2

/* Type codes (DLDataTypeCode). */
#define GS_DL_INT 0
#define GS_DL_UINT 1
#define GS_DL_FLOAT 2
#define GS_DL_BOOL 6

/* Capsule names: a fresh tensor, and one whose ownership a consumer has taken. */
#define GS_DL_CAPSULE "dltensor"
#define GS_DL_CAPSULE_USED "used_dltensor"

typedef struct {
    int32_t device_type;
    int32_t device_id;
} gs_DLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} gs_DLDataType;

typedef struct {
    void *data;
    gs_DLDevice device;
    int32_t ndim;
    gs_DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL means C-contiguous */
    uint64_t byte_offset;
} gs_DLTensor;

typedef struct gs_DLManagedTensor {
    gs_DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct gs_DLManagedTensor *self);
} gs_DLManagedTensor;

#endif /* GS_DLPACK_H */
