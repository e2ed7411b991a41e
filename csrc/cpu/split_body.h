/*
 * cpu/split_body.h - the loops of split and compact for one instruction set: written once,
 * included once per set by cpu/split.c through cpu/stamp_isa.h (GS_CPU_ISA_ONLY; no include guard
 * on purpose).
 *
 * Level: backend (CPU), the innermost level of split and compact.  The flags are read 64 at
 * a time as the bits of a word (cpu/flags.h; 1-byte flags with vector compares), so that:
 *   count  adds the words' popcounts;
 *   move   skips a word of no flag set (a compact's sparse masks), copies a word of all set
 *          whole (dense masks), copies runs of set flags where the word has few runs, and else
 *          moves the set values one by one (count trailing zeros, clear the lowest bit): no
 *          branch per value; a split moves the values of the clear flags the same way.
 * Values move as unsigned integers of their width (every dtype's bits, NaN payloads kept).
 * The includer defines GS_ISA, GS_ISA_ATTR and GS_ISA_WIDE (cpu/stamp_isa.h) and GS_NAME(name)
 * (a name of this set).
 */

/* The flags [i, i + len) (len <= 64) as bits. */
static GS_ALWAYS_INLINE GS_ISA_ATTR uint64_t GS_NAME(bits)(const void *flags, gs_dtype t, int64_t i,
                                                           int len)
{
#if GS_ISA_WIDE
    if (len == 64 && gs_dtype_size(t) == 1) {
        const __m256i zero = _mm256_setzero_si256();
        const uint8_t *p = (const uint8_t *)flags + i;
        __m256i a = _mm256_loadu_si256((const __m256i *)p);
        __m256i b = _mm256_loadu_si256((const __m256i *)(p + 32));
        uint64_t zeros = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, zero)) |
                         (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, zero)) << 32;
        return ~zeros;
    }
#endif
    return gs_flag_bits(flags, t, i, len);
}

/* The set flags among [from, to). */
static GS_ISA_ATTR int64_t GS_NAME(count)(const void *flags, gs_dtype t, int64_t from, int64_t to)
{
    int64_t count = 0;
    for (int64_t i = from; i < to; i += 64)
        count += __builtin_popcountll(GS_NAME(bits)(flags, t, i, to - i < 64 ? (int)(to - i) : 64));
    return count;
}

/* Move the values src[k] whose bit k of `bits` is set to dst, in order; returns dst's end. */
#define GS_SPLIT_PICK(W)                                                                           \
    static GS_ALWAYS_INLINE GS_ISA_ATTR W *GS_NAME(pick_##W)(W * dst, const W *src, uint64_t bits) \
    {                                                                                              \
        int set = __builtin_popcountll(bits);                                                      \
        int runs = __builtin_popcountll(bits & ~(bits << 1));                                      \
        if (4 * runs <= set) {                                                                     \
            /* few long runs: copy each run whole */                                               \
            while (bits != 0) {                                                                    \
                int k = __builtin_ctzll(bits);                                                     \
                uint64_t rest = ~(bits >> k);                                                      \
                int len = rest == 0 ? 64 - k : __builtin_ctzll(rest);                              \
                memcpy(dst, src + k, (size_t)len * sizeof(W));                                     \
                dst += len;                                                                        \
                bits = len + k >= 64 ? 0 : bits & (~(uint64_t)0 << (k + len));                     \
            }                                                                                      \
            return dst;                                                                            \
        }                                                                                          \
        while (bits != 0) {                                                                        \
            *dst++ = src[__builtin_ctzll(bits)];                                                   \
            bits &= bits - 1;                                                                      \
        }                                                                                          \
        return dst;                                                                                \
    }
GS_SPLIT_PICK(uint8_t)
GS_SPLIT_PICK(uint16_t)
GS_SPLIT_PICK(uint32_t)
GS_SPLIT_PICK(uint64_t)
#undef GS_SPLIT_PICK

/* The values [from, to) of d: the flagged ones to out + f on, the others (split) to out + u on;
 * returns how many were flagged. */
#define GS_SPLIT_MOVE(W)                                                                           \
    static GS_ISA_ATTR int64_t GS_NAME(move_##W)(const gs_split_desc *d, int64_t from, int64_t to, \
                                                 int64_t f, int64_t u)                             \
    {                                                                                              \
        const W *in = d->in;                                                                       \
        W *flagged = (W *)d->out + f, *other = (W *)d->out + u;                                    \
        for (int64_t i = from; i < to; i += 64) {                                                  \
            int len = to - i < 64 ? (int)(to - i) : 64;                                            \
            uint64_t all = len == 64 ? ~(uint64_t)0 : ((uint64_t)1 << len) - 1;                    \
            uint64_t bits = GS_NAME(bits)(d->flags, d->flag_type, i, len);                         \
            if (bits == all) {                                                                     \
                memcpy(flagged, in + i, (size_t)len * sizeof(W));                                  \
                flagged += len;                                                                    \
                continue;                                                                          \
            }                                                                                      \
            if (bits != 0)                                                                         \
                flagged = GS_NAME(pick_##W)(flagged, in + i, bits);                                \
            if (d->compact)                                                                        \
                continue;                                                                          \
            if (bits == 0) {                                                                       \
                memcpy(other, in + i, (size_t)len * sizeof(W));                                    \
                other += len;                                                                      \
            } else {                                                                               \
                other = GS_NAME(pick_##W)(other, in + i, ~bits & all);                             \
            }                                                                                      \
        }                                                                                          \
        return flagged - ((W *)d->out + f);                                                        \
    }
GS_SPLIT_MOVE(uint8_t)
GS_SPLIT_MOVE(uint16_t)
GS_SPLIT_MOVE(uint32_t)
GS_SPLIT_MOVE(uint64_t)
#undef GS_SPLIT_MOVE

/* Move the values [from, to) of d into place; returns how many were flagged
 * (gs_split_kernels.move). */
static GS_ISA_ATTR int64_t GS_NAME(move)(const gs_split_desc *d, int64_t from, int64_t to,
                                         int64_t f, int64_t u)
{
    switch (gs_dtype_size(d->in_type)) {
    case 1:
        return GS_NAME(move_uint8_t)(d, from, to, f, u);
    case 2:
        return GS_NAME(move_uint16_t)(d, from, to, f, u);
    case 4:
        return GS_NAME(move_uint32_t)(d, from, to, f, u);
    default:
        return GS_NAME(move_uint64_t)(d, from, to, f, u);
    }
}
