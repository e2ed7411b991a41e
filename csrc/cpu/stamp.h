/*
 * cpu/stamp.h - stamps one CPU-backend body (GS_CPU_BODY, a header name) once for every dtype
 * of GS_DTYPES, in its order: the one list of the CPU backend's per-dtype parameters.
 *
 * Level: backend (CPU).  Each body sees
 *   GS_T     the storage type          GS_U     the unsigned type its wrapping arithmetic uses
 *   GS_SFX   the suffix of gpuscan/types.h  GS_KIND  'b', 'i', 'u' or 'f'
 *   GS_MIN, GS_MAX  the dtype's range (the identities of max and min)
 *   GS_SIZE  sizeof(GS_T), for #if      GS_I     the signed integer type of that size (masks)
 * Usage, in a .c file:  #define GS_CPU_BODY "cpu/scan_body.h"  #include "cpu/stamp.h"
 */
#ifndef GS_CPU_BODY
#error "define GS_CPU_BODY to the body header before including cpu/stamp.h"
#endif

#define GS_T uint8_t
#define GS_SIZE 1
#define GS_I int8_t
#define GS_U unsigned int
#define GS_SFX b1
#define GS_KIND 'b'
#define GS_MIN 0
#define GS_MAX 1
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T int8_t
#define GS_SIZE 1
#define GS_I int8_t
#define GS_U unsigned int
#define GS_SFX i8
#define GS_KIND 'i'
#define GS_MIN INT8_MIN
#define GS_MAX INT8_MAX
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T int16_t
#define GS_SIZE 2
#define GS_I int16_t
#define GS_U unsigned int
#define GS_SFX i16
#define GS_KIND 'i'
#define GS_MIN INT16_MIN
#define GS_MAX INT16_MAX
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T int32_t
#define GS_SIZE 4
#define GS_I int32_t
#define GS_U uint32_t
#define GS_SFX i32
#define GS_KIND 'i'
#define GS_MIN INT32_MIN
#define GS_MAX INT32_MAX
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T int64_t
#define GS_SIZE 8
#define GS_I int64_t
#define GS_U uint64_t
#define GS_SFX i64
#define GS_KIND 'i'
#define GS_MIN INT64_MIN
#define GS_MAX INT64_MAX
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T uint8_t
#define GS_SIZE 1
#define GS_I int8_t
#define GS_U unsigned int
#define GS_SFX u8
#define GS_KIND 'u'
#define GS_MIN 0
#define GS_MAX UINT8_MAX
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T uint16_t
#define GS_SIZE 2
#define GS_I int16_t
#define GS_U unsigned int
#define GS_SFX u16
#define GS_KIND 'u'
#define GS_MIN 0
#define GS_MAX UINT16_MAX
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T uint32_t
#define GS_SIZE 4
#define GS_I int32_t
#define GS_U uint32_t
#define GS_SFX u32
#define GS_KIND 'u'
#define GS_MIN 0
#define GS_MAX UINT32_MAX
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T uint64_t
#define GS_SIZE 8
#define GS_I int64_t
#define GS_U uint64_t
#define GS_SFX u64
#define GS_KIND 'u'
#define GS_MIN 0
#define GS_MAX UINT64_MAX
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T float
#define GS_SIZE 4
#define GS_I int32_t
#define GS_U float
#define GS_SFX f32
#define GS_KIND 'f'
#define GS_MIN (-INFINITY)
#define GS_MAX INFINITY
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

#define GS_T double
#define GS_SIZE 8
#define GS_I int64_t
#define GS_U double
#define GS_SFX f64
#define GS_KIND 'f'
#define GS_MIN (-INFINITY)
#define GS_MAX INFINITY
_Static_assert(sizeof(GS_T) == GS_SIZE && sizeof(GS_I) == GS_SIZE, "cpu/stamp.h: GS_SIZE");
#include GS_CPU_BODY
#undef GS_T
#undef GS_SIZE
#undef GS_I
#undef GS_U
#undef GS_SFX
#undef GS_KIND
#undef GS_MIN
#undef GS_MAX

/* Every body stamped above declares its kind letter and works on its dtype's storage size. */
#define GS_X_CHECK(code, ctype, sfx, kind, npy)                                                    \
    _Static_assert(GS_NAME(kind_letter, sfx) == kind, GS_CPU_BODY " for " #sfx ": wrong GS_KIND"); \
    _Static_assert(sizeof(((gs_val *)0)->sfx) == sizeof(ctype), #sfx);
GS_DTYPES(GS_X_CHECK)
#undef GS_X_CHECK
