/*
 * gpuscan/radix.h - the radix sort's arithmetic on keys, one definition for the CUDA kernels
 * (agent/radix.cuh) and the C model that checks them against NumPy (tools/sort_model.c): a key's
 * bits to its order key, which digit positions need a pass, and which buffers each pass reads
 * and writes.
 * Level: include (plain C, both compilers, no CUDA). The tile geometry and the scratch are in
 * gpuscan/config.h.
 *
 * The order key: the unsigned integer of the key's width whose order is NumPy's stable order
 * (kind="stable"), ascending or descending; keys with equal order keys keep their input order,
 * which the stable passes give:
 *   unsigned  the bits;  signed  the bits with the sign bit flipped;  bool  0 or 1 (any nonzero
 *   byte is True);
 *   float     NaN (either sign, any payload) -> all ones, after +inf in both directions; -0.0 ->
 *             +0.0 (equal, input order kept); then negative -> the bits complemented, positive ->
 *             the sign bit set (the IEEE order of the bits as an unsigned integer);
 *   descending: the order key complemented, except NaN's, which stays last (no other key's
 *             complement is all ones: that would be a float whose order key is 0, whose bits
 *             are all ones, a NaN).
 * Every transform but NaN's is a XOR with a per-call constant, `flip` (gs_sort_flip). The
 * passes move the keys' own bits, never order keys, so the output is the input's bits.
 */
#ifndef GS_RADIX_H
#define GS_RADIX_H

#include "gpuscan/config.h"

/* All ones in the low `bytes` bytes. */
static inline GS_HD uint64_t gs_sort_width_mask(int bytes)
{
    return bytes >= 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * bytes)) - 1u;
}

/* The per-call XOR of the order keys of dtype t (see above). */
static inline GS_HD uint64_t gs_sort_flip(gs_dtype t, int descending)
{
    const int bytes = (int)gs_dtype_size(t);
    const uint64_t mask = gs_sort_width_mask(bytes);
    uint64_t flip = descending ? mask : 0u;
    if (gs_dtype_kind(t) == 'i')
        flip ^= (uint64_t)1 << (8 * bytes - 1);
    return flip;
}

/* The order key of the bits of a key of dtype t of at most 4 bytes (zero-extended). */
static inline GS_HD uint32_t gs_sort_key32(gs_dtype t, uint32_t b, uint32_t flip)
{
    if (t == GS_FLOAT32) {
        const uint32_t mag = b & 0x7fffffffu;
        if (mag > 0x7f800000u) /* NaN: last, in both directions */
            return 0xffffffffu;
        if (mag == 0u) /* -0.0 == +0.0 */
            b = 0u;
        return ((b >> 31) ? ~b : b | 0x80000000u) ^ flip;
    }
    if (t == GS_BOOL)
        b = b != 0u;
    return b ^ flip;
}

/* The order key of the bits of an 8-byte key of dtype t. */
static inline GS_HD uint64_t gs_sort_key64(gs_dtype t, uint64_t b, uint64_t flip)
{
    if (t == GS_FLOAT64) {
        const uint64_t mag = b & 0x7fffffffffffffffull;
        if (mag > 0x7ff0000000000000ull)
            return ~(uint64_t)0;
        if (mag == 0u)
            b = 0u;
        return ((b >> 63) ? ~b : b | 0x8000000000000000ull) ^ flip;
    }
    return b ^ flip;
}

/* Digit `pass` (0: the least significant byte) of an order key. */
static inline GS_HD unsigned gs_sort_digit(uint64_t key, int pass)
{
    return (unsigned)(key >> (GS_SORT_DIGIT_BITS * pass)) & (GS_SORT_DIGITS - 1u);
}

/* The live passes, bit p for digit position p, from `diff` (the OR over every key of its order
 * key XOR its row's first key's): a position where no row has two different digits keeps every
 * row as it is and is skipped. When none differ, the top pass alone runs (a stable pass over one
 * digit moves every key to where it is: the copy to the outputs). */
static inline GS_HD unsigned gs_sort_live(uint64_t diff, int passes)
{
    unsigned live = 0;
    for (int p = 0; p < passes; ++p)
        if (gs_sort_digit(diff, p) != 0u)
            live |= 1u << p;
    return live ? live : 1u << (passes - 1);
}

/* The buffers of the plan: the input, the caller's output (keys_out or index_out), the
 * scratch arrays (ktmp0/ktmp1, itmp: gpuscan/config.h), none (no keys written; the first pass's
 * index, each key's position, computed rather than read). */
typedef enum gs_sort_buf {
    GS_SORT_IN,
    GS_SORT_OUT,
    GS_SORT_TMP0,
    GS_SORT_TMP1,
    GS_SORT_NONE
} gs_sort_buf;

/* Where the keys of a live pass go, with `after` live passes after it: the last pass writes the
 * caller's keys_out (or nothing), and the passes before alternate, so that consecutive passes
 * never read and write one buffer: with keys_out, between it and TMP0; without, between TMP0 and
 * TMP1. */
static inline GS_HD gs_sort_buf gs_sort_key_dst(int after, int want_keys)
{
    if (after == 0)
        return want_keys ? GS_SORT_OUT : GS_SORT_NONE;
    if (after & 1)
        return GS_SORT_TMP0;
    return want_keys ? GS_SORT_OUT : GS_SORT_TMP1;
}

/* Where the keys of a live pass come from, with `before` live passes before it. */
static inline GS_HD gs_sort_buf gs_sort_key_src(int before, int after, int want_keys)
{
    return before == 0 ? GS_SORT_IN : gs_sort_key_dst(after + 1, want_keys);
}

/* Where the index of a live pass goes (an index is wanted): index_out for the last (int64) and,
 * in the pass's own width, every second one before it; the others in between to TMP0. */
static inline GS_HD gs_sort_buf gs_sort_idx_dst(int after)
{
    return after & 1 ? GS_SORT_TMP0 : GS_SORT_OUT;
}

/* Where the index of a live pass comes from: none for the first (the key's position). */
static inline GS_HD gs_sort_buf gs_sort_idx_src(int before, int after)
{
    return before == 0 ? GS_SORT_NONE : gs_sort_idx_dst(after + 1);
}

#endif /* GS_RADIX_H */
