/*
 * gs_xsum.cuh - exact sums of float32 values held across a warp: the carries of the float32
 * add scan, so that its look-back may combine from any published prefix and still give the
 * same bits on every run (gs_lookback.cuh, look_back_xsum).
 *
 * Level: device, below the look-back; type-independent (it works on float32 bits).  Included
 * once per translation unit, after gs_common.cuh.
 *
 * A finite float32 is m * 2^(b - 149) with |m| < 2^24 and b = max(biased exponent - 1, 0) in
 * [0, 253], so every sum of them is an integer in units of 2^-149.  A sum of up to 2^31 tile
 * aggregates needs 309 bits: it is held as GS_XSUM_DIGITS signed digits of radix 2^30, lane k
 * of a warp holding digit k (weight 2^(30k)), lanes from GS_XSUM_DIGITS on holding 0.  Integer
 * addition is associative, so every grouping of the same floats gives the same sum, and the
 * float carry made from it (gs_xsum_to_carry) depends on the sum only.
 *
 * - Adding: a float adds m * 2^(b % 30) (|.| < 2^53) to digit b / 30 (<= 8) as a 64-bit
 *   integer; a few dozen such terms fit a 64-bit digit before a carry step.
 * - A carry step (gs_xsum_carry) brings 64-bit digits back to 32 bits in one shuffle: each
 *   digit keeps its low 30 bits as a signed number and passes the rest up, so every digit ends
 *   in [-3 * 2^29, 3 * 2^29].  Such digits are redundant (several digit strings give one sum)
 *   but exact, which is all that adding and publishing need.
 * - gs_xsum_canonical makes them unique (digits in [0, 2^30), the top one signed), resolving
 *   the carries with ballots (carry look-ahead, one lane per digit), and gs_xsum_to_carry rounds
 *   the sum to a float32 double-word carry: hi to nearest, lo the rounded rest.
 * - Infinities and NaN are not numbers of this kind: a flags word collects them (any +inf, any
 *   -inf, any NaN); a carry with NaN, or with both infinities, is NaN, else an infinite one.
 *   A finite sum beyond the float32 range rounds to +-inf (the prefixes after it may come back
 *   into range: they are the exact sums rounded, as NumPy's float64 cumsum would give them).
 *
 * A tile's payload (GS_TILE_PAYLOAD_BYTES in the scan's scratch): its inclusive prefix as the
 * digits and the flags, 12 words.  It is written, fenced, and then the tile's status is set;
 * a reader that saw the status fences and reads it from L2 (gs_xsum_publish, gs_xsum_payload).
 */
#ifndef GS_XSUM_CUH
#define GS_XSUM_CUH

#define GS_XSUM_RADIX 30
#define GS_XSUM_MASK ((1u << GS_XSUM_RADIX) - 1u)
#define GS_XSUM_DIGITS 11
#define GS_XSUM_WORDS (GS_TILE_PAYLOAD_BYTES / 4) /* the digits, then the flags */
#define GS_XSUM_PINF 1u
#define GS_XSUM_NINF 2u
#define GS_XSUM_NAN 4u

#if GS_XSUM_WORDS != GS_XSUM_DIGITS + 1
#error "a tile's payload holds the digits and one flags word"
#endif

/* The place of float32 `bits` in a sum: its flags if it is not finite (and *term = 0), else 0,
 * with *term = +-m * 2^(b % 30) to add to digit *digit = b / 30. */
static __device__ __forceinline__ unsigned gs_xsum_split(unsigned bits, int *digit, long long *term)
{
    const unsigned e = (bits >> 23) & 0xffu, f = bits & 0x7fffffu;
    *digit = 0;
    *term = 0;
    if (e == 0xffu)
        return f ? GS_XSUM_NAN : (bits >> 31) ? GS_XSUM_NINF : GS_XSUM_PINF;
    const unsigned b = e ? e - 1u : 0u;
    const long long m = (long long)(f | (e ? 0x800000u : 0u)) << (b % GS_XSUM_RADIX);
    *digit = (int)(b / GS_XSUM_RADIX);
    *term = (bits >> 31) ? -m : m;
    return 0;
}

/* One carry step, called by the whole warp: lane k holds digit k as a 64-bit integer of
 * magnitude below 2^60; returns the same sum in 32-bit digits (see the file's header). */
static __device__ __forceinline__ int gs_xsum_carry(long long digit)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const long long low =
        (long long)((unsigned long long)digit << (64 - GS_XSUM_RADIX)) >> (64 - GS_XSUM_RADIX);
    const int up = __shfl_up_sync(GS_FULL_MASK, (int)((digit - low) >> GS_XSUM_RADIX), 1);
    if (lane == 0)
        return (int)low;
    if (lane < GS_XSUM_DIGITS - 1)
        return (int)low + up;
    return lane == GS_XSUM_DIGITS - 1 ? (int)digit + up : 0; /* the top digit keeps it all */
}

/* Carry look-ahead over the warp: the carry into each lane (bit k for lane k) when lane k
 * generates one (g) or passes an incoming one on (p); g and p are never both set. */
static __device__ __forceinline__ unsigned gs_xsum_carries(int g, int p)
{
    const unsigned G = __ballot_sync(GS_FULL_MASK, g), A = G | __ballot_sync(GS_FULL_MASK, p);
    return (A + G) ^ A ^ G;
}

/* The digits d (32-bit, as gs_xsum_carry leaves them) made unique: lanes below the top in
 * [0, 2^30), the top lane signed.  Called by the whole warp. */
static __device__ __forceinline__ int gs_xsum_canonical(int d)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int top = lane == GS_XSUM_DIGITS - 1, low = lane < GS_XSUM_DIGITS - 1;
    /* ---- d = low 30 bits + c * 2^30 with c in [-2, 1]; c moves up one lane. ---- */
    int c = __shfl_up_sync(GS_FULL_MASK, low ? d >> GS_XSUM_RADIX : 0, 1);
    c = lane == 0 ? 0 : c;
    int s = low ? (int)((unsigned)d & GS_XSUM_MASK) : top ? d : 0;
    /* ---- Add the positive carries (0 or 1), then take the negative ones (0 to 2), each a
     * carry chain resolved at once. ---- */
    s += c > 0 ? c : 0;
    unsigned in = gs_xsum_carries(low && s == (int)GS_XSUM_MASK + 1, low && s == (int)GS_XSUM_MASK);
    s += (int)((in >> lane) & 1u);
    s = low ? (int)((unsigned)s & GS_XSUM_MASK) : s;
    s -= c < 0 ? -c : 0;
    in = gs_xsum_carries(low && s < 0, low && s == 0);
    s -= (int)((in >> lane) & 1u);
    return low ? (int)((unsigned)s & GS_XSUM_MASK) : s;
}

/* x * 2^k for k in [-212, 117]: x in [2^63, 2^64] is rounded once (the first step is exact);
 * so is a carry's lo part (x below 2^40), which is a multiple of 2^-149 wherever it falls
 * below 2^-126. */
static __device__ __forceinline__ float gs_xsum_scale(float x, int k)
{
    const int k1 = k / 2, k2 = k - k1;
    return __fmul_rn(__fmul_rn(x, __int_as_float((k1 + 127) << 23)),
                     __int_as_float((k2 + 127) << 23));
}

/*
 * The sum held in digits d (any 32-bit digits of gs_xsum_carry) and `flags`, as a float32
 * carry: *hi the sum rounded to nearest, *lo the rest (the sum's top 64 bits less hi) rounded
 * toward zero, so |hi + lo - sum| <= 2^-47 |sum| and hi + lo rounds back to hi (an element
 * that adds nothing to its carry gets the sum correctly rounded).  Called by the whole warp;
 * every lane gets the same carry.
 */
static __device__ __forceinline__ void gs_xsum_to_carry(int d, unsigned flags, float *hi, float *lo)
{
    int c = gs_xsum_canonical(d);
    const int neg = __shfl_sync(GS_FULL_MASK, c, GS_XSUM_DIGITS - 1) < 0;
    if (neg) /* the magnitude: the same digits negated (warp-uniform) */
        c = gs_xsum_canonical(-d);
    const unsigned nz = __ballot_sync(GS_FULL_MASK, c != 0);
    float h = 0.0f, l = 0.0f;
    if (nz != 0) {
        /* ---- The top three digits (t the leading one) and whether anything lies below. ---- */
        const int t = 31 - __clz((int)nz);
        const unsigned long long dt = (unsigned)__shfl_sync(GS_FULL_MASK, c, t);
        /* (digits below digit 0 are read from lane 31, which holds 0) */
        const unsigned long long d1 = (unsigned)__shfl_sync(GS_FULL_MASK, c, t >= 1 ? t - 1 : 31);
        const unsigned long long d2 = (unsigned)__shfl_sync(GS_FULL_MASK, c, t >= 2 ? t - 2 : 31);
        const unsigned long long a = (dt << GS_XSUM_RADIX) | d1; /* in [2^30, 2^60) */
        const int sh = __clzll((long long)a);
        const unsigned long long bs = d2 << sh;
        const unsigned long long u = (a << sh) | (bs >> GS_XSUM_RADIX);
        const int sticky = (bs & GS_XSUM_MASK) != 0 || (t >= 3 && (nz & ((1u << (t - 2)) - 1u)));
        /* ---- sum = (u + a fraction) * 2^k: round once, then the rest. ---- */
        const int k = GS_XSUM_RADIX * (t - 1) - sh - 149;
        const float f = __ull2float_rn(u | (unsigned long long)sticky);
        h = gs_xsum_scale(f, k);
        if (!isinf(h)) { /* the rest, u - f plus the bits below u, toward zero */
            const unsigned long long fi = f >= 0x1p64f ? 0ull : __float2ull_rn(f);
            const long long rest = (long long)(u - fi);
            l = gs_xsum_scale(__ll2float_rz(rest + (rest < 0 && sticky)), k);
        }
        if (neg) {
            h = -h;
            l = -l;
        }
    }
    if ((flags & GS_XSUM_NAN) ||
        (flags & (GS_XSUM_PINF | GS_XSUM_NINF)) == (GS_XSUM_PINF | GS_XSUM_NINF)) {
        h = __int_as_float(0x7fffffff);
        l = 0.0f;
    } else if (flags) {
        h = __int_as_float((flags & GS_XSUM_PINF) ? 0x7f800000 : (int)0xff800000u);
        l = 0.0f;
    }
    *hi = h;
    *lo = l;
}

/*
 * Publish the inclusive prefix of `tile`: digits d (lane k: digit k) and flags into its
 * payload, a fence, then its descriptor: PREFIX, its head bit, and its own aggregate (the
 * float bits agg: what a reader takes when the tile is a head).  Called by the whole warp.
 */
static __device__ __forceinline__ void gs_xsum_publish(gs_tile_state ts, int64_t tile, int head,
                                                       unsigned agg, int d, unsigned flags)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    if (lane < GS_XSUM_WORDS)
        __stcg(ts.payload + tile * GS_XSUM_WORDS + lane,
               lane < GS_XSUM_DIGITS ? (unsigned)d : flags);
    __syncwarp();
    __threadfence();
    if (lane == 0)
        gs_tile_store(ts.words + 2 * tile, GS_ST_PREFIX | (head ? GS_ST_HEAD : 0u), agg);
}

/* The payload of `tile`, whose PREFIX status some lane of this warp has seen: lane k gets
 * digit k (0 from lane GS_XSUM_DIGITS on), every lane the flags.  Called by the whole warp. */
static __device__ __forceinline__ int gs_xsum_payload(gs_tile_state ts, int64_t tile,
                                                      unsigned *flags)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    __syncwarp();
    __threadfence();
    const unsigned w = lane < GS_XSUM_WORDS ? __ldcg(ts.payload + tile * GS_XSUM_WORDS + lane) : 0u;
    *flags = __shfl_sync(GS_FULL_MASK, w, GS_XSUM_DIGITS);
    return lane < GS_XSUM_DIGITS ? (int)w : 0;
}

#endif /* GS_XSUM_CUH */
