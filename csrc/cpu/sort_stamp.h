/*
 * cpu/sort_stamp.h - stamps cpu/sort_body.h for one key shape with both index types: uint32
 * (rows shorter than 2^32) and int64.  Included by cpu/sort.c once per shape, after it defines
 * GS_SK_T, GS_SK_BITS, GS_SK_FLOAT, GS_SK_INF (floats) and GS_SK_SHAPE (the shape's name in
 * GS_SK_NAME); undefines them all (no include guard on purpose).
 *
 * Level: backend (CPU).
 */
#define GS_SK_IDX uint32_t
#define GS_SK_IW i32
#include "cpu/sort_body.h"
#undef GS_SK_IDX
#undef GS_SK_IW

#define GS_SK_IDX int64_t
#define GS_SK_IW i64
#include "cpu/sort_body.h"
#undef GS_SK_IDX
#undef GS_SK_IW

#undef GS_SK_T
#undef GS_SK_BITS
#undef GS_SK_FLOAT
#undef GS_SK_INF
#undef GS_SK_SHAPE
