/*
 * cpu/sort_body.h - the loops of the sort for one key shape: written once, included once per
 * shape by cpu/sort.c (no include guard on purpose).
 *
 * Level: backend (CPU), the innermost level of the sort.  A key shape is an unsigned word of
 * the key's width holding its bits (GS_SK_T, GS_SK_BITS) and how it becomes the radix key:
 *   integers (GS_SK_FLOAT 0)  the bits XOR a mask: the sign bit for signed types (negatives
 *                             first), every bit for descending (largest first), both, or none;
 *   floats (GS_SK_FLOAT 1)    -0.0 folded onto +0.0, then the sign flip (a negative's every bit,
 *                             a positive's sign bit: the unsigned order is the numeric order),
 *                             then the mask (every bit for descending), and every NaN, of
 *                             either sign and any payload, mapped to all ones: above +inf (and
 *                             above -inf complemented), so NaNs go last in both orders, in
 *                             input order (they share one key, and the sort is stable).
 * The keys themselves move as their bits (values come out bit for bit: -0.0 stays -0.0); the
 * radix key is recomputed from them where a digit is read.  Indices travel between passes as
 * GS_SK_IDX (uint32 for rows shorter than 2^32, else int64: cpu/sort.c), and the last pass
 * writes them as int64; keys still in input order have their positions as indices.
 * The includer defines GS_SK_T, GS_SK_BITS, GS_SK_FLOAT, GS_SK_INF (the bits of +inf, floats),
 * GS_SK_IDX and GS_SK_NAME(name) (a name of this shape and index type).
 */

/* The radix key of the bits x (see the file's header). */
static GS_ALWAYS_INLINE GS_SK_T GS_SK_NAME(key)(GS_SK_T x, GS_SK_T mask)
{
#if GS_SK_FLOAT
    const GS_SK_T sign = (GS_SK_T)1 << (GS_SK_BITS - 1);
    const int nan = (GS_SK_T)(x & ~sign) > (GS_SK_T)GS_SK_INF;
    x = x == sign ? 0 : x; /* -0.0 is +0.0 */
    const GS_SK_T flip = (GS_SK_T)((GS_SK_T)0 - (x >> (GS_SK_BITS - 1))) | sign;
    const GS_SK_T t = (GS_SK_T)((x ^ flip) ^ mask);
    return nan ? (GS_SK_T) ~(GS_SK_T)0 : t;
#else
    return (GS_SK_T)(x ^ mask);
#endif
}

#define GS_SK_DIGITS (GS_SK_BITS / 8)

/* range[0] and range[1] = the least and the largest key(k) of the n keys (n >= 1): four of
 * each, the keys taken in turn, so that the comparisons of consecutive keys overlap. */
static void GS_SK_NAME(range)(const void *keys, int64_t n, uint64_t mask, uint64_t *range)
{
    const GS_SK_T *k = keys;
    const GS_SK_T m = (GS_SK_T)mask;
    GS_SK_T least[4], most[4];
    int64_t j = 0;

    for (int l = 0; l < 4; l++)
        least[l] = most[l] = GS_SK_NAME(key)(k[0], m);
    for (; j + 4 <= n; j += 4)
        for (int l = 0; l < 4; l++) {
            const GS_SK_T t = GS_SK_NAME(key)(k[j + l], m);
            least[l] = t < least[l] ? t : least[l];
            most[l] = t > most[l] ? t : most[l];
        }
    for (; j < n; j++) {
        const GS_SK_T t = GS_SK_NAME(key)(k[j], m);
        least[0] = t < least[0] ? t : least[0];
        most[0] = t > most[0] ? t : most[0];
    }
    for (int l = 1; l < 4; l++) {
        least[0] = least[l] < least[0] ? least[l] : least[0];
        most[0] = most[l] > most[0] ? most[l] : most[0];
    }
    range[0] = least[0];
    range[1] = most[0];
}

/* counts[d * 256 + b] += how many of the n keys k have b as digit d of key(k) - base, for the
 * digits d in [0, nd) (nd 1 with `shift` a digit's: that digit alone).  A long range counts
 * into four tables of 32-bit counters, a key in each in turn, so that keys of one digit value
 * (the common case of small integers) never wait on the same counter's previous increment,
 * added up per block of at most 2^31 keys (no counter overflows); a short one (fewer than
 * GS_SORT_HIST_WIDE keys) straight into counts. */
static void GS_SK_NAME(hist)(const void *keys, int64_t n, uint64_t mask, uint64_t base, int nd,
                             int shift, int64_t *counts)
{
    const GS_SK_T *k = keys;
    const GS_SK_T m = (GS_SK_T)mask, b0 = (GS_SK_T)base;
    uint32_t c[4][GS_SK_DIGITS][256];

    if (n < GS_SORT_HIST_WIDE) {
        for (int64_t j = 0; j < n; j++) {
            const GS_SK_T u = (GS_SK_T)((GS_SK_T)(GS_SK_NAME(key)(k[j], m) - b0) >> shift);
            for (int d = 0; d < nd; d++)
                counts[d * 256 + (int)((u >> (8 * d)) & 0xFF)]++;
        }
        return;
    }
    for (int64_t block = 0; block < n; block += (int64_t)1 << 31) {
        const int64_t end = n - block < ((int64_t)1 << 31) ? n : block + ((int64_t)1 << 31);
        int64_t j = block;
        memset(c, 0, sizeof(c[0][0]) * (size_t)nd);
        memset(c[1], 0, sizeof(c[0][0]) * (size_t)nd);
        memset(c[2], 0, sizeof(c[0][0]) * (size_t)nd);
        memset(c[3], 0, sizeof(c[0][0]) * (size_t)nd);
        /* one loop per digit count, so that the digits' loop unrolls */
#define GS_SK_HIST4(ND)                                                                         \
    for (; j + 4 <= end; j += 4)                                                                \
        for (int l = 0; l < 4; l++) {                                                           \
            const GS_SK_T u = (GS_SK_T)((GS_SK_T)(GS_SK_NAME(key)(k[j + l], m) - b0) >> shift); \
            for (int d = 0; d < (ND); d++)                                                      \
                c[l][d][(u >> (8 * d)) & 0xFF]++;                                               \
        }
        switch (nd) {
        case 1:
            GS_SK_HIST4(1)
            break;
#if GS_SK_DIGITS >= 2
        case 2:
            GS_SK_HIST4(2)
            break;
#endif
#if GS_SK_DIGITS >= 4
        case 3:
            GS_SK_HIST4(3)
            break;
        case 4:
            GS_SK_HIST4(4)
            break;
#endif
        default:
            GS_SK_HIST4(nd)
            break;
        }
#undef GS_SK_HIST4
        for (; j < end; j++) {
            const GS_SK_T u = (GS_SK_T)((GS_SK_T)(GS_SK_NAME(key)(k[j], m) - b0) >> shift);
            for (int d = 0; d < nd; d++)
                c[0][d][(u >> (8 * d)) & 0xFF]++;
        }
        for (int d = 0; d < nd; d++)
            for (int b = 0; b < 256; b++)
                counts[d * 256 + b] += (int64_t)c[0][d][b] + c[1][d][b] + c[2][d][b] + c[3][d][b];
    }
}

/* One stable scatter by the digit at `shift` of key(k) - base: key j goes to off[its
 * digit]++.  The kinds are
 * constants at every call, so each mode compiles to its own loop:
 *   si_kind  0: the indices are the positions ibase + j; 1: read from si (GS_SK_IDX);
 *   di_kind  0: none written; 1: written to di as GS_SK_IDX; 2: as int64 (the last pass);
 *   has_dk   keys written to dk.
 * Four keys at a time: their four offsets are loaded before any is stored back, and a key
 * whose digit an earlier one of the four shares adds that one's step itself, so that a run of
 * one digit value waits for a stored offset once per four keys, not once per key. */
static GS_ALWAYS_INLINE void GS_SK_NAME(scatter)(const GS_SK_T *sk, const GS_SK_IDX *si,
                                                 int64_t ibase, GS_SK_T *dk, void *di, int64_t n,
                                                 int shift, GS_SK_T mask, GS_SK_T base,
                                                 int64_t *off, const int si_kind, const int di_kind,
                                                 const int has_dk)
{
#define GS_SK_DIGIT(x) ((unsigned)((GS_SK_T)(GS_SK_NAME(key)((x), mask) - base) >> shift) & 0xFFu)
#define GS_SK_PUT(p, x, j)                                                              \
    do {                                                                                \
        if (has_dk)                                                                     \
            dk[p] = (x);                                                                \
        if (di_kind == 1)                                                               \
            ((GS_SK_IDX *)di)[p] = si_kind ? si[j] : (GS_SK_IDX)(ibase + (int64_t)(j)); \
        else if (di_kind == 2)                                                          \
            ((int64_t *)di)[p] = si_kind ? (int64_t)si[j] : ibase + (int64_t)(j);       \
    } while (0)
    int64_t j = 0;

    for (; j + 4 <= n; j += 4) {
        const GS_SK_T x0 = sk[j], x1 = sk[j + 1], x2 = sk[j + 2], x3 = sk[j + 3];
        const unsigned b0 = GS_SK_DIGIT(x0), b1 = GS_SK_DIGIT(x1), b2 = GS_SK_DIGIT(x2),
                       b3 = GS_SK_DIGIT(x3);
        const int64_t o0 = off[b0], o1 = off[b1], o2 = off[b2], o3 = off[b3];
        const int64_t p0 = o0, p1 = o1 + (b1 == b0), p2 = o2 + (b2 == b0) + (b2 == b1),
                      p3 = o3 + (b3 == b0) + (b3 == b1) + (b3 == b2);
        off[b0] = p0 + 1; /* stored in order: a digit's last store is its latest key's */
        off[b1] = p1 + 1;
        off[b2] = p2 + 1;
        off[b3] = p3 + 1;
        GS_SK_PUT(p0, x0, j);
        GS_SK_PUT(p1, x1, j + 1);
        GS_SK_PUT(p2, x2, j + 2);
        GS_SK_PUT(p3, x3, j + 3);
    }
    for (; j < n; j++) {
        const GS_SK_T x = sk[j];
        const int64_t p = off[GS_SK_DIGIT(x)]++;
        GS_SK_PUT(p, x, j);
    }
#undef GS_SK_DIGIT
#undef GS_SK_PUT
}

/* The scatter of one pass in the mode its arguments ask for: si NULL (the positions from
 * ibase), dk NULL (no keys), di NULL (no indices), di_final (di is int64). */
static void GS_SK_NAME(pass)(const void *sk, const void *sidx, int64_t ibase, void *dk, void *di,
                             int di_final, int64_t n, int shift, uint64_t mask, uint64_t base,
                             int64_t *off)
{
    const GS_SK_IDX *si = sidx;
    const GS_SK_T *s = sk;
    GS_SK_T *k = dk;
    const GS_SK_T m = (GS_SK_T)mask, b = (GS_SK_T)base;

    if (di == NULL)
        GS_SK_NAME(scatter)(s, NULL, 0, k, NULL, n, shift, m, b, off, 0, 0, 1);
    else if (!di_final && si == NULL)
        GS_SK_NAME(scatter)(s, NULL, ibase, k, di, n, shift, m, b, off, 0, 1, 1);
    else if (!di_final)
        GS_SK_NAME(scatter)(s, si, 0, k, di, n, shift, m, b, off, 1, 1, 1);
    else if (k == NULL && si == NULL)
        GS_SK_NAME(scatter)(s, NULL, ibase, NULL, di, n, shift, m, b, off, 0, 2, 0);
    else if (k == NULL)
        GS_SK_NAME(scatter)(s, si, 0, NULL, di, n, shift, m, b, off, 1, 2, 0);
    else if (si == NULL)
        GS_SK_NAME(scatter)(s, NULL, ibase, k, di, n, shift, m, b, off, 0, 2, 1);
    else
        GS_SK_NAME(scatter)(s, si, 0, k, di, n, shift, m, b, off, 1, 2, 1);
}

/* One element of the comparison sort: its radix key and where it was. */
typedef struct GS_SK_NAME(item) {
    GS_SK_T t;
    int32_t pos;
} GS_SK_NAME(item);

/* A stable sort of n <= GS_SORT_SMALL_MAX keys (and their indices: si NULL, the positions from
 * ibase) by comparisons: runs of GS_SORT_RUN sorted by insertion, then merged in pairs (ties
 * taken from the left run); the keys and the int64 indices then gathered into dk and di (each
 * NULL: not written).  dk may be sk itself (the keys are kept aside first); di never
 * overlaps si. */
static void GS_SK_NAME(small)(const void *sk, const void *sidx, int64_t ibase, void *dk,
                              int64_t *di, int64_t n, uint64_t mask)
{
    const GS_SK_IDX *si = sidx;
    GS_SK_NAME(item) buf[2][GS_SORT_SMALL_MAX];
    GS_SK_NAME(item) *a = buf[0], *b = buf[1];
    GS_SK_T s[GS_SORT_SMALL_MAX];
    GS_SK_T *k = dk;
    const GS_SK_T m = (GS_SK_T)mask;

    memcpy(s, sk, sizeof(GS_SK_T) * (size_t)n);
    for (int64_t j = 0; j < n; j++) {
        a[j].t = GS_SK_NAME(key)(s[j], m);
        a[j].pos = (int32_t)j;
    }
    /* ---- runs, by insertion ---- */
    for (int64_t r = 0; r < n; r += GS_SORT_RUN) {
        const int64_t end = r + GS_SORT_RUN < n ? r + GS_SORT_RUN : n;
        for (int64_t j = r + 1; j < end; j++) {
            const GS_SK_NAME(item) v = a[j];
            int64_t i = j;
            while (i > r && a[i - 1].t > v.t) {
                a[i] = a[i - 1];
                i--;
            }
            a[i] = v;
        }
    }
    /* ---- merges, bottom up ---- */
    for (int64_t w = GS_SORT_RUN; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                b[o++] = a[j].t < a[i].t ? a[j++] : a[i++];
            while (i < mid)
                b[o++] = a[i++];
            while (j < hi)
                b[o++] = a[j++];
        }
        GS_SK_NAME(item) *t = a;
        a = b;
        b = t;
    }
    /* ---- the gather ---- */
    for (int64_t j = 0; j < n; j++) {
        if (k != NULL)
            k[j] = s[a[j].pos];
        if (di != NULL)
            di[j] = si != NULL ? (int64_t)si[a[j].pos] : ibase + a[j].pos;
    }
}

#undef GS_SK_DIGITS
