/*
 * cpu/sort_qs.h - an AVX-512 quicksort of unsigned words (32 or 64 bits), for a sort without
 * indices: included by cpu/sort.c once per width (no include guard on purpose), after it
 * defines GS_QS_W (32 or 64); undefines it.
 *
 * Level: backend (CPU), the innermost level of the sort, x86-64 only, compiled for AVX-512
 * (F, BW, DQ, VL) whatever the build targets and called only where cpu/isa.c chose AVX-512.
 * The shape of x86-simd-sort's (NumPy's default kind): a range of at most GS_QS_NET_REGS
 * vectors sorted in registers by a bitonic network (net); a longer one partitioned around the
 * median of a vector of samples: the lanes of a vector compressed in a register (vpcompress to
 * memory is microcoded on Zen 4) and stored by masked stores at both ends of the range's gap,
 * GS_QS_UNROLL_N vectors a step, as many held back at each end so that no store overtakes the
 * loads.  Equal keys: a pivot that is the range's least key partitions again by "greater
 * than", so that the keys equal to it are done; one that is its largest leaves a side of equal
 * keys, done at the next level that way.  Past 2 log2(n) levels a range is heap-sorted: no
 * input takes quadratic time.
 * Not stable, and needs not be: equal words are the same bits (cpu/sort.c decides when the
 * words are a key's whole bits).  The argsorts at the end (gs_qs_argsort_k32, _k64) sort words
 * of a key (32 bits of it) above its position: no two equal, so the order is the stable one.
 */
#if GS_QS_W == 32
#define GS_QS_T uint32_t
#define GS_QS_L 16
#define GS_QS_MASK __mmask16
#define GS_QS_SFX u32
#define GS_QS_MIN _mm512_min_epu32
#define GS_QS_MAX _mm512_max_epu32
#define GS_QS_PERM _mm512_permutexvar_epi32
#define GS_QS_BLEND _mm512_mask_blend_epi32
#define GS_QS_CMP _mm512_cmp_epu32_mask
#define GS_QS_COMPRESS _mm512_maskz_compress_epi32
#define GS_QS_LOADM _mm512_mask_loadu_epi32
#define GS_QS_STOREM _mm512_mask_storeu_epi32
#define GS_QS_SET1(x) _mm512_set1_epi32((int)(x))
#define GS_QS_IOTA _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define GS_QS_SRAI _mm512_srai_epi32
#define GS_QS_MADD _mm512_mask_add_epi32
#define GS_QS_NET_REGS 32 /* 512 keys; of 16 vectors the sorts took 1.05-1.2x as long */
#else
#define GS_QS_T uint64_t
#define GS_QS_L 8
#define GS_QS_MASK __mmask8
#define GS_QS_SFX u64
#define GS_QS_MIN _mm512_min_epu64
#define GS_QS_MAX _mm512_max_epu64
#define GS_QS_PERM _mm512_permutexvar_epi64
#define GS_QS_BLEND _mm512_mask_blend_epi64
#define GS_QS_CMP _mm512_cmp_epu64_mask
#define GS_QS_COMPRESS _mm512_maskz_compress_epi64
#define GS_QS_LOADM _mm512_mask_loadu_epi64
#define GS_QS_STOREM _mm512_mask_storeu_epi64
#define GS_QS_SET1(x) _mm512_set1_epi64((long long)(x))
#define GS_QS_IOTA _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0)
#define GS_QS_SRAI _mm512_srai_epi64
#define GS_QS_MADD _mm512_mask_add_epi64
#define GS_QS_NET_REGS 32 /* 256 keys (as above) */
#endif
#define GS_QS_N(name) GS_QS_PASTE(name, GS_QS_SFX)
#define GS_QS_PASTE(a, b) GS_QS_PASTE2(a, b)
#define GS_QS_PASTE2(a, b) gs_qs_##a##_##b
#define GS_QS_ATTR __attribute__((target("avx2,bmi,bmi2,popcnt,avx512f,avx512bw,avx512dq,avx512vl")))
#define GS_QS_FN static GS_QS_ATTR
#define GS_QS_UNROLL _Pragma("GCC unroll 32")
#define GS_QS_UNROLL_N 4 /* vectors a step of a partition loads */
#define GS_QS_STOP_MIN ((int64_t)1 << 20)
#define GS_QS_INLINE static GS_ALWAYS_INLINE GS_QS_ATTR

/* v's lane i ^ x in lane i: by one shuffle of an immediate where one does it (cheaper than a
 * permutation by a vector of indices). */
GS_QS_INLINE __m512i GS_QS_N(pxor)(__m512i v, int x)
{
    switch (x * GS_QS_W) {
    case 32:
        return _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0xB1); /* 32-bit lanes' neighbours */
    case 64:
        return _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x4E); /* 64-bit lanes' neighbours */
    case 96:
        return _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x1B); /* 4 32-bit lanes reversed */
    case 128:
        return _mm512_shuffle_i64x2(v, v, 0xB1); /* 128-bit lanes' neighbours */
    case 256:
        return _mm512_shuffle_i64x2(v, v, 0x4E);
    default:
        return GS_QS_PERM(_mm512_xor_si512(GS_QS_IOTA, GS_QS_SET1(x)), v);
    }
}

/* The lanes whose index has bit `bit` (1, 2, 4 or 8) set. */
#define GS_QS_LANES(bit) \
    ((GS_QS_MASK)((bit) == 1 ? 0xAAAA : (bit) == 2 ? 0xCCCC : (bit) == 4 ? 0xF0F0 : 0xFF00))

/* One step of a network inside v: lane i against lane i ^ x, the larger into the lane of the
 * two whose index has `bit` set. */
GS_QS_INLINE __m512i GS_QS_N(step)(__m512i v, int x, int bit)
{
    const __m512i p = GS_QS_N(pxor)(v, x);

    return GS_QS_BLEND(GS_QS_LANES(bit), GS_QS_MIN(v, p), GS_QS_MAX(v, p));
}

GS_QS_INLINE void GS_QS_N(coex)(__m512i *a, __m512i *b)
{
    const __m512i x = *a;

    *a = GS_QS_MIN(x, *b);
    *b = GS_QS_MAX(x, *b);
}

/* The r vectors of v (r a power of two) sorted as one sequence, vector by vector, in the shape
 * of x86-simd-sort's networks: each column (a lane across the vectors) sorted by a bitonic
 * network over whole vectors (no shuffle); then for blocks of 2, 4, .. lanes, sorted runs of
 * the block's lanes across the vectors merged: between vectors, the upper half's lanes
 * reversed within the block and mirrored vectors compared, recursively over halves; then
 * inside each vector, a flip within the block and half-cleaners.  The loops count exponents
 * (k = 1 << lk, not k *= 2): under -fwrapv, which Python's build flags add, GCC cannot count
 * the trips of a doubling loop and leaves some of them rolled, the vectors then in memory (the
 * networks took 1.7x as long, the whole sort of 10^4 int32 keys 1.5x). */
GS_QS_INLINE void GS_QS_N(net)(__m512i *v, int r)
{
    const int lr = __builtin_ctz((unsigned)r), ll = __builtin_ctz(GS_QS_L);

    GS_QS_UNROLL
    for (int lk = 1; lk <= lr; lk++) {
        const int k = 1 << lk;
        GS_QS_UNROLL
        for (int b = 0; b < r; b += k)
            GS_QS_UNROLL
            for (int i = 0; i < k / 2; i++)
                GS_QS_N(coex)(&v[b + i], &v[b + k - 1 - i]);
        GS_QS_UNROLL
        for (int ld = lk - 2; ld >= 0; ld--) {
            const int d = 1 << ld;
            GS_QS_UNROLL
            for (int b = 0; b < r; b += 2 * d)
                GS_QS_UNROLL
                for (int i = b; i < b + d; i++)
                    GS_QS_N(coex)(&v[i], &v[i + d]);
        }
    }
    GS_QS_UNROLL
    for (int ls = 1; ls <= ll; ls++) {
        const int scale = 1 << ls;
        GS_QS_UNROLL
        for (int lw = lr; lw >= 1; lw--) {
            const int w = 1 << lw;
            GS_QS_UNROLL
            for (int b = 0; b < r; b += w) {
                GS_QS_UNROLL
                for (int i = b + w / 2; i < b + w; i++)
                    v[i] = GS_QS_N(pxor)(v[i], scale - 1);
                GS_QS_UNROLL
                for (int i = 0; i < w / 2; i++)
                    GS_QS_N(coex)(&v[b + i], &v[b + w - 1 - i]);
            }
        }
        GS_QS_UNROLL
        for (int i = 0; i < r; i++) {
            v[i] = GS_QS_N(step)(v[i], scale - 1, scale / 2);
            GS_QS_UNROLL
            for (int l2 = ls - 1; l2 >= 1; l2--)
                v[i] = GS_QS_N(step)(v[i], 1 << (l2 - 1), 1 << (l2 - 1));
        }
    }
}

/* a[0, n) sorted by the network of r vectors ((r / 2) * GS_QS_L < n <= r * GS_QS_L): the lanes
 * past n read as all ones, which sort last and are not stored.  The first r / 2 vectors are
 * whole: loaded and stored as they are; the others by masks of their lanes below n, without a
 * branch (the ranges' lengths are random). */
GS_QS_INLINE void GS_QS_N(net_n)(GS_QS_T *a, int64_t n, int r)
{
    __m512i v[GS_QS_NET_REGS];
    GS_QS_MASK m[GS_QS_NET_REGS];
    const int h = r / 2;

    GS_QS_UNROLL
    for (int i = h; i < r; i++) {
        const int64_t k = n - i * GS_QS_L;
        m[i] = (GS_QS_MASK)_bzhi_u32(~0u, (unsigned)(k < 0 ? 0 : k > GS_QS_L ? GS_QS_L : k));
    }
    GS_QS_UNROLL
    for (int i = 0; i < h; i++)
        v[i] = _mm512_loadu_si512(a + i * GS_QS_L);
    GS_QS_UNROLL
    for (int i = h; i < r; i++)
        v[i] = GS_QS_LOADM(GS_QS_SET1(~(GS_QS_T)0), m[i], a + i * GS_QS_L);
    GS_QS_N(net)(v, r);
    GS_QS_UNROLL
    for (int i = 0; i < h; i++)
        _mm512_storeu_si512(a + i * GS_QS_L, v[i]);
    GS_QS_UNROLL
    for (int i = h; i < r; i++)
        GS_QS_STOREM(a + i * GS_QS_L, m[i], v[i]);
}

/* a[0, n) sorted by the smallest network that holds it (n <= GS_QS_NET_REGS * GS_QS_L). */
GS_QS_FN void GS_QS_N(small)(GS_QS_T *a, int64_t n)
{
    if (n <= GS_QS_L)
        GS_QS_N(net_n)(a, n, 1);
    else if (n <= 2 * GS_QS_L)
        GS_QS_N(net_n)(a, n, 2);
    else if (n <= 4 * GS_QS_L)
        GS_QS_N(net_n)(a, n, 4);
    else if (n <= 8 * GS_QS_L)
        GS_QS_N(net_n)(a, n, 8);
    else if (n <= 16 * GS_QS_L)
        GS_QS_N(net_n)(a, n, 16);
    else
        GS_QS_N(net_n)(a, n, 32);
}

/* a[0, n) heap-sorted: the fallback past the depth limit. */
static void GS_QS_N(heap)(GS_QS_T *a, int64_t n)
{
    for (int64_t end = n, k = n / 2; end > 1;) {
        GS_QS_T x;
        int64_t i;
        if (k > 0) { /* building the heap: sift a[--k] down */
            x = a[--k];
            i = k;
        } else { /* the largest to the end, the last to the root */
            x = a[--end];
            a[end] = a[0];
            i = 0;
        }
        for (int64_t c; (c = 2 * i + 1) < end; i = c) {
            c += c + 1 < end && a[c + 1] > a[c];
            if (a[c] <= x)
                break;
            a[i] = a[c];
        }
        a[i] = x;
    }
}

/* The median of GS_QS_L keys of a[0, n) spread over it (n >= GS_QS_L). */
GS_QS_FN GS_QS_T GS_QS_N(pivot)(const GS_QS_T *a, int64_t n)
{
    GS_QS_T s[GS_QS_L];

    for (int i = 0; i < GS_QS_L; i++)
        s[i] = a[(n - 1) * i / (GS_QS_L - 1)];
    __m512i v = _mm512_loadu_si512(s);

    GS_QS_N(net)(&v, 1);
    _mm512_storeu_si512(s, v);
    return s[GS_QS_L / 2];
}

/* v's keys that go right (> p with `gt`, else >= p) stored before a + hi, the others from
 * a + lo; lo and hi moved past them. */
GS_QS_INLINE void GS_QS_N(split1)(GS_QS_T *a, int64_t *lo, int64_t *hi, __m512i v, __m512i p,
                                  int gt)
{
    const GS_QS_MASK right = gt ? GS_QS_CMP(v, p, _MM_CMPINT_NLE) : GS_QS_CMP(v, p, _MM_CMPINT_NLT);
    const int nr = __builtin_popcount((unsigned)right);

    /* the first k lanes by bzhi: a branch on k would be random */
    GS_QS_STOREM(a + *lo, (GS_QS_MASK)_bzhi_u32(~0u, (unsigned)(GS_QS_L - nr)),
                 GS_QS_COMPRESS((GS_QS_MASK)~right, v));
    *hi -= nr;
    GS_QS_STOREM(a + *hi, (GS_QS_MASK)_bzhi_u32(~0u, (unsigned)nr), GS_QS_COMPRESS(right, v));
    *lo += GS_QS_L - nr;
}

/* a[0, n) partitioned around p: the keys that go right (> p with `gt`, else >= p) after the
 * others; returns how many do not.  First the n % GS_QS_L keys of the front, one at a time
 * (without a branch), then the vectors, GS_QS_UNROLL_N at a time while they last, from the end
 * whose gap is smaller, as many held back at each end (else one). */
GS_QS_FN int64_t GS_QS_N(part)(GS_QS_T *a, int64_t n, GS_QS_T p, int gt)
{
    int64_t lo = 0, hi = n, l, r, u;
    const __m512i pv = GS_QS_SET1(p);
    __m512i held[2 * GS_QS_UNROLL_N];

    while ((hi - lo) % GS_QS_L != 0) {
        const GS_QS_T x = a[lo], y = a[hi - 1];
        const int go = gt ? x > p : x >= p;
        a[lo] = go ? y : x;
        a[hi - 1] = go ? x : y;
        hi -= go;
        lo += !go;
    }
    if (hi - lo < 2 * GS_QS_L) { /* at most one vector left: held, then split */
        if (hi > lo)
            GS_QS_N(split1)(a, &lo, &hi, _mm512_loadu_si512(a + lo), pv, gt);
        return lo;
    }
    u = hi - lo >= 2 * GS_QS_UNROLL_N * GS_QS_L ? GS_QS_UNROLL_N : 1;
    for (int64_t i = 0; i < u; i++) {
        held[i] = _mm512_loadu_si512(a + lo + i * GS_QS_L);
        held[u + i] = _mm512_loadu_si512(a + hi - (i + 1) * GS_QS_L);
    }
    l = lo + u * GS_QS_L; /* the unread keys: [l, r) */
    r = hi - u * GS_QS_L;
    if (u == GS_QS_UNROLL_N)
        while (r - l >= GS_QS_UNROLL_N * GS_QS_L) {
            __m512i v[GS_QS_UNROLL_N];
            const int64_t at = hi - r < l - lo ? (r -= GS_QS_UNROLL_N * GS_QS_L) : l;
            l += at == l ? GS_QS_UNROLL_N * GS_QS_L : 0;
            GS_QS_UNROLL
            for (int i = 0; i < GS_QS_UNROLL_N; i++)
                v[i] = _mm512_loadu_si512(a + at + i * GS_QS_L);
            GS_QS_UNROLL
            for (int i = 0; i < GS_QS_UNROLL_N; i++)
                GS_QS_N(split1)(a, &lo, &hi, v[i], pv, gt);
        }
    while (l < r) {
        __m512i v;
        if (hi - r < l - lo) {
            r -= GS_QS_L;
            v = _mm512_loadu_si512(a + r);
        } else {
            v = _mm512_loadu_si512(a + l);
            l += GS_QS_L;
        }
        GS_QS_N(split1)(a, &lo, &hi, v, pv, gt);
    }
    for (int64_t i = 0; i < 2 * u; i++)
        GS_QS_N(split1)(a, &lo, &hi, held[i], pv, gt);
    return lo;
}

/* a[0, n) sorted: networks for short ranges, else a partition and each side (the shorter by
 * recursion, the longer by the loop); heap sort past `depth` levels.  Before a partition of
 * GS_QS_STOP_MIN keys or more (a tenth of a millisecond and up) it asks whether the call stops. */
GS_QS_FN void GS_QS_N(qsort)(GS_QS_T *a, int64_t n, int depth)
{
    while (n > GS_QS_NET_REGS * GS_QS_L) {
        if (n >= GS_QS_STOP_MIN && gs_cpu_stopping())
            return; /* Ctrl-C (host/pool.h): the keys then mean nothing */
        if (depth-- == 0) {
            GS_QS_N(heap)(a, n);
            return;
        }
        const GS_QS_T p = GS_QS_N(pivot)(a, n);
        int64_t m = GS_QS_N(part)(a, n, p, 0); /* [0, m) < p <= [m, n), m < n: p is a key */
        if (m == 0) { /* p is the least: the keys equal to it first, done */
            m = GS_QS_N(part)(a, n, p, 1);
            a += m;
            n -= m;
        } else if (m <= n - m) {
            GS_QS_N(qsort)(a, m, depth);
            a += m;
            n -= m;
        } else {
            GS_QS_N(qsort)(a + m, n - m, depth);
            n = m;
        }
    }
    if (n > 1)
        GS_QS_N(small)(a, n);
}

/* The radix key of the float bits x (cpu/sort_body.h's): -0.0 folded onto +0.0, the sign
 * flipped, the mask, every NaN all ones. */
GS_QS_INLINE GS_QS_T GS_QS_N(fkey)(GS_QS_T x, GS_QS_T m)
{
    const GS_QS_T sign = (GS_QS_T)1 << (GS_QS_W - 1);
    const GS_QS_T inf = GS_QS_W == 32 ? (GS_QS_T)0x7F800000u : (GS_QS_T)0x7FF0000000000000ull;
    const GS_QS_T y = x == sign ? 0 : x;
    const GS_QS_T t = y ^ ((GS_QS_T)((GS_QS_T)0 - (y >> (GS_QS_W - 1))) | sign) ^ m;

    return (y & ~sign) > inf ? ~(GS_QS_T)0 : t;
}

/* The n radix keys of floats at t back into their words at d (t itself, or not overlapping it),
 * the NaNs' and the zeros' bits as they were (zero_or, nan_or: one pattern each): by masks,
 * GCC vectorises no nested selects. */
GS_QS_FN void GS_QS_N(unkey)(const GS_QS_T *t, GS_QS_T *d, int64_t n, GS_QS_T m, GS_QS_T zero_or,
                            GS_QS_T nan_or)
{
    const GS_QS_T sign = (GS_QS_T)1 << (GS_QS_W - 1), ones = ~(GS_QS_T)0;
    for (int64_t i = 0; i < n; i++) {
        const GS_QS_T k = t[i], u = k ^ m;
        const GS_QS_T x = u ^ (sign | (GS_QS_T)((u >> (GS_QS_W - 1)) - 1));
        const GS_QS_T nan = (GS_QS_T)0 - (GS_QS_T)(k == ones);
        d[i] = ((x | (zero_or & ((GS_QS_T)0 - (GS_QS_T)(x == 0)))) & ~nan) | (nan_or & nan);
    }
}

/* 2 log2(n): the partitions' depth past which a range is heap-sorted. */
static int GS_QS_N(depth)(int64_t n)
{
    int depth = 0;

    for (int64_t k = n; k > 1; k /= 2)
        depth += 2;
    return depth;
}

/* The n words of src, keys of cpu/sort_body.h's shape (floats with `is_float`, read through
 * the XOR mask `mask`), sorted into dst (src itself, or not overlapping it): returns 1, or 0
 * (src as it was; dst, when another place, overwritten) when an unstable sort cannot give the
 * stable order: floats with -0.0
 * and +0.0 both, or NaNs of more than one bit pattern (the radix key folds each group onto one
 * key; one pattern of each is put back from the sorted keys). */
GS_QS_FN int GS_QS_N(sort)(const void *src, void *dst, int64_t n, uint64_t mask, int is_float)
{
    const GS_QS_T m = (GS_QS_T)mask, sign = (GS_QS_T)1 << (GS_QS_W - 1), ones = ~(GS_QS_T)0;
    const GS_QS_T inf = GS_QS_W == 32 ? (GS_QS_T)0x7F800000u : (GS_QS_T)0x7FF0000000000000ull;
    const GS_QS_T *s = src;
    GS_QS_T *d = dst, zero_or = 0, zero_and = ones, nan_or = 0, nan_and = ones;
    const int depth = GS_QS_N(depth)(n);

    if (!is_float) {
        for (int64_t i = 0; i < n; i++)
            d[i] = s[i] ^ m;
        GS_QS_N(qsort)(d, n, depth);
        if (n >= GS_QS_STOP_MIN && gs_cpu_stopping())
            return 1; /* Ctrl-C: the keys mean nothing */
        for (int64_t i = 0; i < n; i++)
            d[i] ^= m;
        return 1;
    }
    for (int64_t i = 0; i < n; i++) { /* the zeros' and the NaNs' bits; the keys, unless */
        const GS_QS_T x = s[i], a = x & ~sign; /* in place (the radix sort may need them) */
        zero_or |= a == 0 ? x : 0;
        zero_and &= a == 0 ? x : ones;
        nan_or |= a > inf ? x : 0;
        nan_and &= a > inf ? x : ones;
        if (s != d)
            d[i] = GS_QS_N(fkey)(x, m);
    }
    if ((zero_and != ones && zero_or != zero_and) || (nan_and != ones && nan_or != nan_and))
        return 0;
    for (int64_t i = 0; i < n && s == d; i++)
        d[i] = GS_QS_N(fkey)(d[i], m);
    GS_QS_N(qsort)(d, n, depth);
    if (n >= GS_QS_STOP_MIN && gs_cpu_stopping())
        return 1;
    GS_QS_N(unkey)(d, d, n, m, zero_or, nan_or);
    return 1;
}

/* ---- a long range on several threads ----------------------------------------------------------
 * Split by the threads first: splitters from a sample of the keys, each thread counting then
 * moving a chunk of the keys into the buckets they make (in a temporary), and each bucket then
 * quicksorted on its own thread: the sorted buckets in order are the sorted range.  The order
 * among equal keys is no matter (equal words are the same bits, as above), so any split gives
 * the result the stable sort gives. */
#define GS_QS_PAR_MAX 16     /* buckets at most: one a thread */
#define GS_QS_PAR_SAMPLE 256 /* sample keys a bucket */

typedef struct GS_QS_N(par) {
    const GS_QS_T *s;
    GS_QS_T *d, *tmp, m;
    int64_t n, chunk;
    int nb, is_float;
    GS_QS_T split[GS_QS_PAR_MAX]; /* bucket b: split[b - 1] <= key < split[b] */
    int64_t at[GS_QS_PAR_MAX][GS_QS_PAR_MAX]; /* [chunk][bucket]: its count, then its place */
    int64_t start[GS_QS_PAR_MAX + 1];         /* each bucket's first key, then n */
    GS_QS_T zor[GS_QS_PAR_MAX], zand[GS_QS_PAR_MAX], nor[GS_QS_PAR_MAX], nand[GS_QS_PAR_MAX];
    GS_QS_T zero_or, nan_or;
} GS_QS_N(par);

GS_QS_INLINE GS_QS_T GS_QS_N(key)(const GS_QS_N(par) * p, GS_QS_T x)
{
    return p->is_float ? GS_QS_N(fkey)(x, p->m) : x ^ p->m;
}

GS_QS_INLINE int GS_QS_N(bucket)(const GS_QS_N(par) * p, GS_QS_T k)
{
    int b = 0;
    for (int j = 0; j < p->nb - 1; j++)
        b += k >= p->split[j];
    return b;
}

/* GS_QS_N(key) of a vector (fkey's steps, lane by lane). */
GS_QS_INLINE __m512i GS_QS_N(vkey)(const GS_QS_N(par) * p, __m512i x)
{
    const __m512i m = GS_QS_SET1(p->m), sign = GS_QS_SET1((GS_QS_T)1 << (GS_QS_W - 1));
    if (!p->is_float)
        return _mm512_xor_si512(x, m);
    const __m512i inf = GS_QS_SET1(GS_QS_W == 32 ? (GS_QS_T)0x7F800000u
                                                 : (GS_QS_T)0x7FF0000000000000ull);
    const __m512i y = GS_QS_BLEND(GS_QS_CMP(x, sign, _MM_CMPINT_EQ), x, _mm512_setzero_si512());
    const __m512i t =
        _mm512_xor_si512(_mm512_xor_si512(y, _mm512_or_si512(GS_QS_SRAI(y, GS_QS_W - 1), sign)), m);
    return GS_QS_BLEND(GS_QS_CMP(_mm512_andnot_si512(sign, y), inf, _MM_CMPINT_NLE), t,
                       GS_QS_SET1(~(GS_QS_T)0));
}

/* Chunk c's keys [*lo, *hi), and the splitters as vectors. */
GS_QS_INLINE void GS_QS_N(chunk)(const GS_QS_N(par) * p, int64_t c, int64_t *lo, int64_t *hi,
                                 __m512i *split)
{
    *lo = c * p->chunk;
    *hi = *lo + p->chunk < p->n ? *lo + p->chunk : p->n;
    for (int j = 0; j < p->nb - 1; j++)
        split[j] = GS_QS_SET1(p->split[j]);
}

/* Chunk c's keys counted by bucket (and, of floats, its zeros' and NaNs' bits): how many are
 * at least each splitter, a vector at a time. */
GS_QS_FN void GS_QS_N(par_count)(void *ctx, int64_t c)
{
    GS_QS_N(par) *p = ctx;
    const GS_QS_T sign = (GS_QS_T)1 << (GS_QS_W - 1), ones = ~(GS_QS_T)0;
    const GS_QS_T inf = GS_QS_W == 32 ? (GS_QS_T)0x7F800000u : (GS_QS_T)0x7FF0000000000000ull;
    const __m512i vsign = GS_QS_SET1(sign), vinf = GS_QS_SET1(inf);
    __m512i split[GS_QS_PAR_MAX], zor = _mm512_setzero_si512(), zand = GS_QS_SET1(ones),
                                  nor = zor, nand = zand;
    int64_t lo, hi, ge[GS_QS_PAR_MAX] = { 0 }, i;
    GS_QS_N(chunk)(p, c, &lo, &hi, split);
    i = lo;
    for (int64_t b = lo; b < hi; b += GS_QS_STOP_MIN) {
        const int64_t e = hi - b < GS_QS_STOP_MIN ? hi : b + GS_QS_STOP_MIN;
        if (gs_cpu_stopping())
            return;
        for (i = b; i + GS_QS_L <= e; i += GS_QS_L) {
            const __m512i x = _mm512_loadu_si512(p->s + i), k = GS_QS_N(vkey)(p, x);
            for (int j = 0; j < p->nb - 1; j++)
                ge[j] += __builtin_popcount((unsigned)GS_QS_CMP(k, split[j], _MM_CMPINT_NLT));
            if (p->is_float) {
                const __m512i a = _mm512_andnot_si512(vsign, x);
                const GS_QS_MASK z = GS_QS_CMP(a, _mm512_setzero_si512(), _MM_CMPINT_EQ);
                const GS_QS_MASK nn = GS_QS_CMP(a, vinf, _MM_CMPINT_NLE);
                zor = GS_QS_BLEND(z, zor, _mm512_or_si512(zor, x));
                zand = GS_QS_BLEND(z, zand, _mm512_and_si512(zand, x));
                nor = GS_QS_BLEND(nn, nor, _mm512_or_si512(nor, x));
                nand = GS_QS_BLEND(nn, nand, _mm512_and_si512(nand, x));
            }
        }
    }
    GS_QS_T lz[GS_QS_L], la[GS_QS_L], ln[GS_QS_L], lm[GS_QS_L], szor = 0, szand = ones,
                                                               snor = 0, snand = ones;
    _mm512_storeu_si512(lz, zor);
    _mm512_storeu_si512(la, zand);
    _mm512_storeu_si512(ln, nor);
    _mm512_storeu_si512(lm, nand);
    for (int l = 0; l < GS_QS_L; l++) {
        szor |= lz[l];
        szand &= la[l];
        snor |= ln[l];
        snand &= lm[l];
    }
    for (; i < hi; i++) { /* the tail, one at a time */
        const GS_QS_T x = p->s[i], a = x & ~sign, k = GS_QS_N(key)(p, x);
        for (int j = 0; j < p->nb - 1; j++)
            ge[j] += k >= p->split[j];
        szor |= a == 0 ? x : 0;
        szand &= a == 0 ? x : ones;
        snor |= a > inf ? x : 0;
        snand &= a > inf ? x : ones;
    }
    for (int b = 0; b < p->nb; b++) /* bucket b: at least split[b - 1], below split[b] */
        p->at[c][b] = (b == 0 ? hi - lo : ge[b - 1]) - (b == p->nb - 1 ? 0 : ge[b]);
    p->zor[c] = szor;
    p->zand[c] = szand;
    p->nor[c] = snor;
    p->nand[c] = snand;
}

/* Chunk c's keys, as radix keys, into their buckets' places in tmp: a vector's keys of each
 * bucket compressed and stored by a masked store (no store past the bucket's chunk). */
GS_QS_FN void GS_QS_N(par_move)(void *ctx, int64_t c)
{
    GS_QS_N(par) *p = ctx;
    const __m512i one = GS_QS_SET1(1);
    __m512i split[GS_QS_PAR_MAX];
    int64_t lo, hi, at[GS_QS_PAR_MAX], i;
    GS_QS_N(chunk)(p, c, &lo, &hi, split);
    i = lo;
    for (int b = 0; b < p->nb; b++)
        at[b] = p->at[c][b];
    for (int64_t b = lo; b < hi; b += GS_QS_STOP_MIN) {
        const int64_t e = hi - b < GS_QS_STOP_MIN ? hi : b + GS_QS_STOP_MIN;
        if (gs_cpu_stopping())
            return;
        for (i = b; i + GS_QS_L <= e; i += GS_QS_L) {
            const __m512i k = GS_QS_N(vkey)(p, _mm512_loadu_si512(p->s + i));
            if (p->nb == 2) {
                const GS_QS_MASK r = GS_QS_CMP(k, split[0], _MM_CMPINT_NLT);
                const int nr = __builtin_popcount((unsigned)r);
                GS_QS_STOREM(p->tmp + at[0], (GS_QS_MASK)_bzhi_u32(~0u, (unsigned)(GS_QS_L - nr)),
                             GS_QS_COMPRESS((GS_QS_MASK)~r, k));
                GS_QS_STOREM(p->tmp + at[1], (GS_QS_MASK)_bzhi_u32(~0u, (unsigned)nr),
                             GS_QS_COMPRESS(r, k));
                at[0] += GS_QS_L - nr;
                at[1] += nr;
                continue;
            }
            __m512i idx = _mm512_setzero_si512();
            for (int j = 0; j < p->nb - 1; j++)
                idx = GS_QS_MADD(idx, GS_QS_CMP(k, split[j], _MM_CMPINT_NLT), idx, one);
            for (int q = 0; q < p->nb; q++) {
                const GS_QS_MASK mq = GS_QS_CMP(idx, GS_QS_SET1(q), _MM_CMPINT_EQ);
                const int nq = __builtin_popcount((unsigned)mq);
                GS_QS_STOREM(p->tmp + at[q], (GS_QS_MASK)_bzhi_u32(~0u, (unsigned)nq),
                             GS_QS_COMPRESS(mq, k));
                at[q] += nq;
            }
        }
    }
    for (; i < hi; i++) { /* the tail, one at a time */
        const GS_QS_T k = GS_QS_N(key)(p, p->s[i]);
        p->tmp[at[GS_QS_N(bucket)(p, k)]++] = k;
    }
}

/* Bucket b quicksorted in tmp, then its words back into d. */
GS_QS_FN void GS_QS_N(par_sort)(void *ctx, int64_t b)
{
    GS_QS_N(par) *p = ctx;
    const int64_t lo = p->start[b], n = p->start[b + 1] - lo;
    GS_QS_N(qsort)(p->tmp + lo, n, GS_QS_N(depth)(n));
    if (n >= GS_QS_STOP_MIN && gs_cpu_stopping())
        return;
    if (p->is_float)
        GS_QS_N(unkey)(p->tmp + lo, p->d + lo, n, p->m, p->zero_or, p->nan_or);
    else
        for (int64_t i = 0; i < n; i++)
            p->d[lo + i] = p->tmp[lo + i] ^ p->m;
}

/* GS_QS_N(sort) of n words on `threads` threads (2 or more), tmp holding n words: returns 1,
 * or 0 (dst and tmp overwritten, src as it was) where the sort alone declines. */
GS_QS_FN int GS_QS_N(sort_par)(const void *src, void *dst, void *tmp, int64_t n, uint64_t mask,
                               int is_float, int threads)
{
    const GS_QS_T ones = ~(GS_QS_T)0;
    GS_QS_T smp[GS_QS_PAR_SAMPLE * GS_QS_PAR_MAX], zand = ones, nand = ones;
    GS_QS_N(par) p;
    int64_t ns;

    memset(&p, 0, sizeof(p));
    p.s = src;
    p.d = dst;
    p.tmp = tmp;
    p.m = (GS_QS_T)mask;
    p.n = n;
    p.is_float = is_float;
    p.nb = threads < GS_QS_PAR_MAX ? threads : GS_QS_PAR_MAX;
    p.chunk = (n + p.nb - 1) / p.nb;
    ns = (int64_t)GS_QS_PAR_SAMPLE * p.nb; /* evenly spaced keys: the splitters their quantiles */
    for (int64_t i = 0; i < ns; i++)
        smp[i] = GS_QS_N(key)(&p, p.s[i * (n / ns)]);
    GS_QS_N(qsort)(smp, ns, GS_QS_N(depth)(ns));
    for (int b = 0; b < p.nb - 1; b++)
        p.split[b] = smp[(b + 1) * GS_QS_PAR_SAMPLE];
    if (gs_cpu_parallel_for(p.nb, GS_QS_N(par_count), &p) < 0 || gs_cpu_stopping())
        return 1; /* Ctrl-C: the keys mean nothing */
    for (int c = 0; c < p.nb; c++) {
        p.zero_or |= p.zor[c];
        zand &= p.zand[c];
        p.nan_or |= p.nor[c];
        nand &= p.nand[c];
    }
    if (is_float && ((zand != ones && p.zero_or != zand) || (nand != ones && p.nan_or != nand)))
        return 0;
    for (int b = 0; b < p.nb; b++) { /* the places: bucket by bucket, chunk by chunk */
        int64_t at = p.start[b];
        for (int c = 0; c < p.nb; c++) {
            const int64_t k = p.at[c][b];
            p.at[c][b] = at;
            at += k;
        }
        p.start[b + 1] = at;
    }
    if (gs_cpu_parallel_for(p.nb, GS_QS_N(par_move), &p) < 0 || gs_cpu_stopping())
        return 1;
    (void)gs_cpu_parallel_for(p.nb, GS_QS_N(par_sort), &p);
    return 1;
}

#if GS_QS_W == 64
/* Whether the radix passes argsort n keys of this span faster than the quicksort: a span of
 * one or two bytes is one or two passes (cpu/sort.c counts the digits of key - least), faster
 * from 2^12 and 2^16 keys (int32 keys of a 2^8 span at 10^6: 1.4 ms against 4.8; int64 1.9
 * against 4.8). */
GS_QS_INLINE int gs_qs_arg_radix_pays(uint64_t span, int64_t n)
{
    return (span < (1u << 8) && n >= (1 << 12)) || (span < (1u << 16) && n >= (1 << 16));
}

/* The positions in the low halves of the sorted words tmp[0, n), from ibase on, into di (the
 * argsorts' last step; Ctrl-C asked between blocks). */
GS_QS_INLINE void gs_qs_arg_indices(const uint64_t *tmp, int64_t n, int64_t ibase, int64_t *di)
{
    for (int64_t b = 0; b < n; b += GS_QS_STOP_MIN) {
        const int64_t e = n - b < GS_QS_STOP_MIN ? n : b + GS_QS_STOP_MIN;
        if (gs_cpu_stopping())
            return;
        for (int64_t i = b; i < e; i++)
            di[i] = ibase + (int64_t)(uint32_t)tmp[i];
    }
}

/* The argsort of n 32-bit keys of cpu/sort_body.h's shape (floats with `is_float`, the XOR
 * mask `mask`) in positions ibase.., into di: each key's radix key above its position, sorted
 * as 64-bit words (ties in position order: the stable order, whatever the quicksort does with
 * equal words, which are none), the low halves then the indices; tmp holds n words.  Returns
 * 0, having written nothing, for keys whose span the radix passes sort faster, else 1. */
GS_QS_FN int gs_qs_argsort_k32(const void *src, int64_t n, uint64_t mask, int is_float,
                               int64_t ibase, int64_t *di, uint64_t *tmp)
{
    const uint32_t *s = src, m = (uint32_t)mask;
    uint32_t least = ~0u, most = 0;

    for (int64_t b = 0; b < n; b += GS_QS_STOP_MIN) { /* asking between blocks: Ctrl-C */
        const int64_t e = n - b < GS_QS_STOP_MIN ? n : b + GS_QS_STOP_MIN;
        if (b > 0 && gs_cpu_stopping())
            return 1;
        for (int64_t i = b; i < e; i++) { /* the words, and the keys' span on the way */
            const uint32_t k = is_float ? gs_qs_fkey_u32(s[i], m) : s[i] ^ m;
            least = k < least ? k : least;
            most = k > most ? k : most;
            tmp[i] = (uint64_t)k << 32 | (uint64_t)i;
        }
    }
    if (gs_qs_arg_radix_pays(most - least, n))
        return 0; /* tmp is scratch; nothing else was written */
    gs_qs_qsort_u64(tmp, n, gs_qs_depth_u64(n));
    gs_qs_arg_indices(tmp, n, ibase, di);
    return 1;
}

/* The radix key of the 64-bit word x (cpu/sort_body.h's). */
GS_QS_INLINE uint64_t gs_qs_key_k64(uint64_t x, uint64_t m, int is_float)
{
    return is_float ? gs_qs_fkey_u64(x, m) : x ^ m;
}

/* The argsort of n 64-bit keys as gs_qs_argsort_k32's, 32 bits of each key at a time above
 * its position: the keys' offsets from the least (the same order) first by their top 32 bits
 * (the offsets whole where they fit in 32 bits); then each run of equal top bits again by the
 * rest, in the run's place: ties stay in position order.  The top bits of the span, not a fixed
 * high half: 1000 keys of a 40-bit span made runs of about four (7.7 us against 3.0 for a
 * 63-bit span).  tmp holds n words.  Returns 0, having written nothing, for keys whose span the
 * radix passes sort faster (cpu/sort.c then takes them), else 1. */
GS_QS_FN int gs_qs_argsort_k64(const void *src, int64_t n, uint64_t mask, int is_float,
                               int64_t ibase, int64_t *di, uint64_t *tmp)
{
    const uint64_t *s = src;
    uint64_t least = ~(uint64_t)0, most = 0;
    int sh;

    for (int64_t i = 0; i < n; i++) { /* the span */
        const uint64_t k = gs_qs_key_k64(s[i], mask, is_float);
        least = k < least ? k : least;
        most = k > most ? k : most;
    }
    if (gs_qs_arg_radix_pays(most - least, n))
        return 0;
    /* the offsets' top 32 bits first (their bits past 32), or the offsets whole */
    sh = most - least > UINT32_MAX ? 32 - __builtin_clzll(most - least) : 0;
    for (int64_t b = 0; b < n; b += GS_QS_STOP_MIN) { /* asking between blocks: Ctrl-C */
        const int64_t e = n - b < GS_QS_STOP_MIN ? n : b + GS_QS_STOP_MIN;
        if (gs_cpu_stopping())
            return 1;
        for (int64_t i = b; i < e; i++)
            tmp[i] = (gs_qs_key_k64(s[i], mask, is_float) - least) >> sh << 32 | (uint64_t)i;
    }
    gs_qs_qsort_u64(tmp, n, gs_qs_depth_u64(n));
    for (int64_t i = 0, j; sh != 0 && i < n; i = j) { /* runs of equal top bits, by the rest */
        const uint64_t high = tmp[i] >> 32;
        for (j = i + 1; j < n && tmp[j] >> 32 == high; j++)
            ;
        if (j - i < 2)
            continue;
        if (gs_cpu_stopping())
            return 1;
        for (int64_t t = i; t < j; t++) {
            const uint64_t at = (uint32_t)tmp[t];
            const uint64_t off = gs_qs_key_k64(s[at], mask, is_float) - least;
            tmp[t] = (off & ((1ull << sh) - 1)) << 32 | at;
        }
        gs_qs_qsort_u64(tmp + i, j - i, gs_qs_depth_u64(j - i));
    }
    gs_qs_arg_indices(tmp, n, ibase, di);
    return 1;
}
#endif

#undef GS_QS_T
#undef GS_QS_L
#undef GS_QS_MASK
#undef GS_QS_SFX
#undef GS_QS_MIN
#undef GS_QS_MAX
#undef GS_QS_PERM
#undef GS_QS_BLEND
#undef GS_QS_CMP
#undef GS_QS_COMPRESS
#undef GS_QS_LOADM
#undef GS_QS_STOREM
#undef GS_QS_SET1
#undef GS_QS_IOTA
#undef GS_QS_SRAI
#undef GS_QS_MADD
#undef GS_QS_NET_REGS
#undef GS_QS_N
#undef GS_QS_PASTE
#undef GS_QS_PASTE2
#undef GS_QS_ATTR
#undef GS_QS_FN
#undef GS_QS_UNROLL
#undef GS_QS_UNROLL_N
#undef GS_QS_STOP_MIN
#undef GS_QS_LANES
#undef GS_QS_INLINE
#undef GS_QS_PAR_MAX
#undef GS_QS_PAR_SAMPLE
#undef GS_QS_W
