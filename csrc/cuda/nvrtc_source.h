/*
 * cuda/nvrtc_source.h - what NVRTC compiles for an operator you write, besides the embedded
 * headers (cuda/user_src.h): the prelude, the options and the program's layout.  Read by
 * cuda/nvrtc.c, and by tools/user_bench.cu, which compiles variants of kernels/agent/user.cuh
 * the same way.  Level: backend (CUDA), host side; plain C, no include.
 */
#ifndef GS_NVRTC_SOURCE_H
#define GS_NVRTC_SOURCE_H

/* Before the operator: the integer types, offsetof and the float constants the user may need
 * (NVRTC has no C library headers; its math functions are built in). */
static const char gs_nvrtc_prelude[] =
    "typedef signed char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\n"
    "typedef long long int64_t;\ntypedef unsigned char uint8_t;\ntypedef unsigned short "
    "uint16_t;\ntypedef unsigned int uint32_t;\ntypedef unsigned long long uint64_t;\n"
    "typedef unsigned long size_t;\n#define NULL 0\n#define _Static_assert static_assert\n"
    "#define offsetof(t, m) __INTADDR__(&((t *)0)->m)\n"
    "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n"
    "#define FLT_MAX 3.402823466e+38F\n#define DBL_MAX 1.7976931348623158e+308\n"
    "#define INT32_MAX 2147483647\n#define INT32_MIN (-INT32_MAX - 1)\n"
    "#define INT64_MAX 9223372036854775807LL\n#define INT64_MIN (-INT64_MAX - 1)\n"
    "#define UINT32_MAX 4294967295U\n#define UINT64_MAX 18446744073709551615ULL\n"
    /* float16 as C's _Float16 computes: in float, rounded to half where stored (PTX cvt). */
    "struct gs_f16 {\n    unsigned short bits;\n    gs_f16() = default;\n"
    "    gs_f16(float f) { asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(bits) : \"f\"(f)); }\n"
    "    operator float() const { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : "
    "\"h\"(bits)); return f; }\n};\ntypedef gs_f16 _Float16;\n";

/* The options (besides the architecture); they enter the key. */
static const char *const gs_nvrtc_options[] = { "-default-device", "--fmad=false", "-std=c++17" };
#define GS_NVRTC_NOPTIONS (int)(sizeof(gs_nvrtc_options) / sizeof(gs_nvrtc_options[0]))

/* The program, a printf format of: the prelude, the family (GS_USER_FAMILY), T's declaration,
 * the opening of an expression ("    return (" or ""), the operator's name, its lines, the
 * closing (");" or "").  The user's lines are under a #line directive: NVRTC's log counts them
 * from 1 in a file named after the operator. */
#define GS_NVRTC_SOURCE                                                                      \
    "%s#define GS_USER_FAMILY %d\n%s\nstatic __forceinline__ T gs_user_combine(T x, T y)\n{\n" \
    "%s\n#line 1 \"%s\"\n%s\n#line 1 \"gpuscan-kernels\"\n%s\n}\n#include \"agent/user.cuh\"\n"

#endif /* GS_NVRTC_SOURCE_H */
