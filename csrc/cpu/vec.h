/*
 * cpu/vec.h - 32 bytes of one dtype as one vector: the operations the SIMD loops of the CPU
 * backend are written in.  Included by a body (cpu/scan_body.h, cpu/reduce_body.h) once per dtype
 * of 4 or 8 bytes and per instruction set (cpu/stamp_isa.h), after cpu/operators.h; no include
 * guard on purpose.
 *
 * Level: backend (CPU), the lowest: element-wise operations and fixed shuffles.
 * A vector holds GS_W = 32 / GS_SIZE values, as two 16-byte halves of GS_HW values each:
 *   GS_ISA_WIDE 1 (AVX2)  one 32-byte GCC/Clang vector: each operation one instruction or two;
 *   GS_ISA_WIDE 0 (base)  a pair of 16-byte vectors (SSE2, NEON): each operation done per half.
 * Both implement the same operations value for value, so a loop written over them gives the
 * same bits on every instruction set.  The shuffles that scan within a vector keep to the
 * halves (cheap on every set) except `cross`, which carries the lower half's last value up.
 *
 * The body defines GS_FN(name) (a name of its dtype and set); this file defines the type
 * GS_FN(vec) and the functions GS_V(name) below.
 */

#define GS_W (32 / GS_SIZE)  /* values per vector */
#define GS_VEC GS_FN(vec)    /* the vector type */
#define GS_MASK GS_FN(mask)  /* its mask type */
#define GS_VH GS_FN(vh)      /* a half */
#define GS_MH GS_FN(mh)      /* a half's mask type */
#define GS_HW (16 / GS_SIZE) /* values per 16-byte half */
#define GS_V(name) GS_FN(v_##name)

#ifdef __clang__
#define GS_SHUFFLE(mask_type, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define GS_SHUFFLE(mask_type, a, b, ...) __builtin_shuffle(a, b, (mask_type){ __VA_ARGS__ })
#endif

/* A half: GS_HW values; its mask type (comparisons give all ones or zero per value); the same
 * bits as unsigned values, in which integer add and mul wrap. */
typedef GS_T GS_FN(vh) __attribute__((vector_size(16)));
typedef GS_I GS_FN(mh) __attribute__((vector_size(16)));
typedef GS_U GS_FN(uh) __attribute__((vector_size(16)));

#if GS_ISA_WIDE
typedef GS_T GS_FN(vec) __attribute__((vector_size(32)));
typedef GS_I GS_FN(mask) __attribute__((vector_size(32)));
typedef GS_U GS_FN(uvec) __attribute__((vector_size(32)));
#else
typedef struct {
    GS_FN(vh) a, b;
} GS_FN(vec);
typedef struct {
    GS_FN(mh) a, b;
} GS_FN(mask);
#endif

/* ---- Memory -----------------------------------------------------------------------------------
 */

static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(load)(const GS_T *p)
{
    GS_VEC v;
    memcpy(&v, p, 32);
    return v;
}

static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_V(store)(GS_T *p, GS_VEC v)
{
    memcpy(p, &v, 32);
}

static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(splat)(GS_T x)
{
    GS_VEC v;
#if GS_ISA_WIDE
    for (int k = 0; k < GS_W; k++)
        v[k] = x;
#else
    for (int k = 0; k < GS_HW; k++)
        v.a[k] = v.b[k] = x;
#endif
    return v;
}

/* Value k (0 <= k < GS_W). */
static GS_ALWAYS_INLINE GS_ISA_ATTR GS_T GS_V(get)(GS_VEC v, int k)
{
#if GS_ISA_WIDE
    return v[k];
#else
    return k < GS_HW ? v.a[k] : v.b[k - GS_HW];
#endif
}

/* ---- Element-wise operations ------------------------------------------------------------------
 */

#if GS_ISA_WIDE
#define GS_VBIN(name, type, op)                                             \
    static GS_ALWAYS_INLINE GS_ISA_ATTR type GS_V(name)(GS_VEC x, GS_VEC y) \
    {                                                                       \
        return (type)(x op y);                                              \
    }
#define GS_VBIN_U(name, op)                                                   \
    static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(name)(GS_VEC x, GS_VEC y) \
    {                                                                         \
        return (GS_VEC)((GS_FN(uvec))x op(GS_FN(uvec)) y);                    \
    }
#else
#define GS_VBIN(name, type, op)                                             \
    static GS_ALWAYS_INLINE GS_ISA_ATTR type GS_V(name)(GS_VEC x, GS_VEC y) \
    {                                                                       \
        type r;                                                             \
        r.a = x.a op y.a;                                                   \
        r.b = x.b op y.b;                                                   \
        return r;                                                           \
    }
#define GS_VBIN_U(name, op)                                                   \
    static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(name)(GS_VEC x, GS_VEC y) \
    {                                                                         \
        GS_VEC r;                                                             \
        r.a = (GS_VH)((GS_FN(uh))x.a op(GS_FN(uh)) y.a);                      \
        r.b = (GS_VH)((GS_FN(uh))x.b op(GS_FN(uh)) y.b);                      \
        return r;                                                             \
    }
#endif

/* Arithmetic: IEEE for floats; integers wrap (computed as unsigned). */
GS_VBIN_U(add, +)
GS_VBIN_U(sub, -)
GS_VBIN_U(mul, *)
/* Comparisons, as C's operators on each value (false where a float is NaN, except ne). */
GS_VBIN(lt, GS_MASK, <)
GS_VBIN(le, GS_MASK, <=)
GS_VBIN(gt, GS_MASK, >)
GS_VBIN(ge, GS_MASK, >=)
GS_VBIN(eq, GS_MASK, ==)
GS_VBIN(ne, GS_MASK, !=)
#if GS_KIND != 'f'
GS_VBIN(and, GS_VEC, &)
GS_VBIN(or, GS_VEC, |)
GS_VBIN(xor, GS_VEC, ^)
#endif
#undef GS_VBIN
#undef GS_VBIN_U

/* Masks: and, or, and-not (m & ~n). */
static GS_ALWAYS_INLINE GS_ISA_ATTR GS_MASK GS_V(mand)(GS_MASK m, GS_MASK n)
{
#if GS_ISA_WIDE
    return m & n;
#else
    GS_MASK r = { m.a & n.a, m.b & n.b };
    return r;
#endif
}

static GS_ALWAYS_INLINE GS_ISA_ATTR GS_MASK GS_V(mor)(GS_MASK m, GS_MASK n)
{
#if GS_ISA_WIDE
    return m | n;
#else
    GS_MASK r = { m.a | n.a, m.b | n.b };
    return r;
#endif
}

/* Where m is set, x; elsewhere y (bit for bit). */
static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(sel)(GS_MASK m, GS_VEC x, GS_VEC y)
{
#if GS_ISA_WIDE
    return (GS_VEC)(((GS_MASK)x & m) | ((GS_MASK)y & ~m));
#else
    GS_VEC r;
    r.a = (GS_VH)(((GS_MH)x.a & m.a) | ((GS_MH)y.a & ~m.a));
    r.b = (GS_VH)(((GS_MH)x.b & m.b) | ((GS_MH)y.b & ~m.b));
    return r;
#endif
}

/* x > y ? x : y and x < y ? x : y value by value (y where either is NaN): MAXPS/MINPS (and the
 * PD ones), which compute exactly that, for floats on x86; compare and select elsewhere.  One
 * macro makes both, from the x86 instructions' names. */
#if GS_CPU_X86 && GS_KIND == 'f' && GS_ISA_WIDE
#define GS_VEXTREME(name, ps, pd, cmp)                                        \
    static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(name)(GS_VEC x, GS_VEC y) \
    {                                                                         \
        return GS_SIZE == 4 ? (GS_VEC)_mm256_##ps((__m256)x, (__m256)y)       \
                            : (GS_VEC)_mm256_##pd((__m256d)x, (__m256d)y);    \
    }
#elif GS_CPU_X86 && GS_KIND == 'f'
#define GS_VEXTREME(name, ps, pd, cmp)                                        \
    static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(name)(GS_VEC x, GS_VEC y) \
    {                                                                         \
        GS_VEC r;                                                             \
        r.a = GS_SIZE == 4 ? (GS_VH)_mm_##ps((__m128)x.a, (__m128)y.a)        \
                           : (GS_VH)_mm_##pd((__m128d)x.a, (__m128d)y.a);     \
        r.b = GS_SIZE == 4 ? (GS_VH)_mm_##ps((__m128)x.b, (__m128)y.b)        \
                           : (GS_VH)_mm_##pd((__m128d)x.b, (__m128d)y.b);     \
        return r;                                                             \
    }
#else
#define GS_VEXTREME(name, ps, pd, cmp)                                        \
    static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(name)(GS_VEC x, GS_VEC y) \
    {                                                                         \
        return GS_V(sel)(GS_V(cmp)(x, y), x, y);                              \
    }
#endif
GS_VEXTREME(max_gt, max_ps, max_pd, gt)
GS_VEXTREME(min_lt, min_ps, min_pd, lt)
#undef GS_VEXTREME

/* Where bit k of `bits` is set (k < GS_W; higher bits ignored), value k of x; elsewhere y's (bit
 * for bit): AVX-512VL blends under a mask register made from the bits; elsewhere the bits
 * against a vector of each value's own bit make sel()'s mask. */
static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(selb)(unsigned bits, GS_VEC x, GS_VEC y)
{
    if (__builtin_constant_p(bits) && bits == 0) /* the unsegmented loops: no blend at all */
        return y;
#if GS_CPU_X86 && GS_ISA_ZMM && GS_SIZE == 4
    return (GS_VEC)_mm256_mask_blend_epi32((__mmask8)bits, (__m256i)y, (__m256i)x);
#elif GS_CPU_X86 && GS_ISA_ZMM
    return (GS_VEC)_mm256_mask_blend_epi64((__mmask8)bits, (__m256i)y, (__m256i)x);
#elif GS_ISA_WIDE && GS_W == 8
    const GS_MASK p = { 1, 2, 4, 8, 16, 32, 64, 128 };
    return GS_V(sel)(((GS_I)bits & p) != 0, x, y);
#elif GS_ISA_WIDE
    const GS_MASK p = { 1, 2, 4, 8 };
    return GS_V(sel)(((GS_I)bits & p) != 0, x, y);
#else
#if GS_HW == 4
    const GS_MH pa = { 1, 2, 4, 8 }, pb = { 16, 32, 64, 128 };
#else
    const GS_MH pa = { 1, 2 }, pb = { 4, 8 };
#endif
    GS_MASK m = { ((GS_I)bits & pa) != 0, ((GS_I)bits & pb) != 0 };
    return GS_V(sel)(m, x, y);
#endif
}

/* Whether any value of the mask is set. */
static GS_ALWAYS_INLINE GS_ISA_ATTR int GS_V(any)(GS_MASK m)
{
    GS_I bits = 0;
#if GS_ISA_WIDE
    for (int k = 0; k < GS_W; k++)
        bits |= m[k];
#else
    for (int k = 0; k < GS_HW; k++)
        bits |= m.a[k] | m.b[k];
#endif
    return bits != 0;
}

/* ---- Shuffles ---------------------------------------------------------------------------------
 * Each takes `id`, a vector of one value (the operator's identity), to fill what it shifts in:
 *   lane1   each half shifted up by one value:    r[k] = v[k - 1], id where k is a half's first
 *   lane2   (4 values a half) shifted up by two:  r[k] = v[k - 2], id where k % 4 < 2
 *   cross   the lower half id, every value of the upper half the lower half's last value
 *   shift1  the vector shifted up by one:         r[0] = id, r[k] = v[k - 1]
 *   last    every value the vector's last one.
 * A scan within a vector is then v = op(lane1(v), v); [v = op(lane2(v), v);] v = op(cross(v), v):
 * each value the combination of those before it, in a fixed tree of depth log2(GS_W). */

static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(lane1)(GS_VEC v, GS_VEC id)
{
#if GS_ISA_WIDE && GS_SIZE == 4
    return GS_SHUFFLE(GS_MASK, v, id, 8, 0, 1, 2, 8, 4, 5, 6);
#elif GS_ISA_WIDE
    return GS_SHUFFLE(GS_MASK, v, id, 4, 0, 4, 2);
#elif GS_SIZE == 4
    GS_VEC
    r = { GS_SHUFFLE(GS_MH, v.a, id.a, 4, 0, 1, 2), GS_SHUFFLE(GS_MH, v.b, id.b, 4, 0, 1, 2) };
    return r;
#else
    GS_VEC
    r = { GS_SHUFFLE(GS_MH, v.a, id.a, 2, 0), GS_SHUFFLE(GS_MH, v.b, id.b, 2, 0) };
    return r;
#endif
}

#if GS_SIZE == 4
static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(lane2)(GS_VEC v, GS_VEC id)
{
#if GS_ISA_WIDE
    return GS_SHUFFLE(GS_MASK, v, id, 8, 8, 0, 1, 8, 8, 4, 5);
#else
    GS_VEC
    r = { GS_SHUFFLE(GS_MH, v.a, id.a, 4, 4, 0, 1), GS_SHUFFLE(GS_MH, v.b, id.b, 4, 4, 0, 1) };
    return r;
#endif
}
#endif

static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(cross)(GS_VEC v, GS_VEC id)
{
#if GS_ISA_WIDE && GS_SIZE == 4
    return GS_SHUFFLE(GS_MASK, v, id, 8, 8, 8, 8, 3, 3, 3, 3);
#elif GS_ISA_WIDE
    return GS_SHUFFLE(GS_MASK, v, id, 4, 4, 1, 1);
#elif GS_SIZE == 4
    GS_VEC r = { id.a, GS_SHUFFLE(GS_MH, v.a, v.a, 3, 3, 3, 3) };
    return r;
#else
    GS_VEC r = { id.a, GS_SHUFFLE(GS_MH, v.a, v.a, 1, 1) };
    return r;
#endif
}

static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(shift1)(GS_VEC v, GS_VEC id)
{
#if GS_ISA_WIDE && GS_SIZE == 4
    return GS_SHUFFLE(GS_MASK, v, id, 8, 0, 1, 2, 3, 4, 5, 6);
#elif GS_ISA_WIDE
    return GS_SHUFFLE(GS_MASK, v, id, 4, 0, 1, 2);
#elif GS_SIZE == 4
    GS_VEC
    r = { GS_SHUFFLE(GS_MH, v.a, id.a, 4, 0, 1, 2), GS_SHUFFLE(GS_MH, v.b, v.a, 7, 0, 1, 2) };
    return r;
#else
    GS_VEC
    r = { GS_SHUFFLE(GS_MH, v.a, id.a, 2, 0), GS_SHUFFLE(GS_MH, v.b, v.a, 3, 0) };
    return r;
#endif
}

static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(last)(GS_VEC v)
{
#if GS_ISA_WIDE && GS_SIZE == 4
    return GS_SHUFFLE(GS_MASK, v, v, 7, 7, 7, 7, 7, 7, 7, 7);
#elif GS_ISA_WIDE
    return GS_SHUFFLE(GS_MASK, v, v, 3, 3, 3, 3);
#elif GS_SIZE == 4
    GS_VH h = GS_SHUFFLE(GS_MH, v.b, v.b, 3, 3, 3, 3);
    GS_VEC r = { h, h };
    return r;
#else
    GS_VH h = GS_SHUFFLE(GS_MH, v.b, v.b, 1, 1);
    GS_VEC r = { h, h };
    return r;
#endif
}

#if GS_KIND != 'f'
/* b < a ? b : a and b > a ? b : a value by value, for integers: VPMINSD/VPMAXSD and the unsigned
 * ones where AVX2 has them (32-bit values), compare and select elsewhere. */
static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(min_int)(GS_VEC a, GS_VEC b)
{
#if GS_CPU_X86 && GS_ISA_WIDE && GS_SIZE == 4
    return GS_KIND == 'i' ? (GS_VEC)_mm256_min_epi32((__m256i)a, (__m256i)b)
                          : (GS_VEC)_mm256_min_epu32((__m256i)a, (__m256i)b);
#else
    return GS_V(sel)(GS_V(lt)(b, a), b, a);
#endif
}

static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(max_int)(GS_VEC a, GS_VEC b)
{
#if GS_CPU_X86 && GS_ISA_WIDE && GS_SIZE == 4
    return GS_KIND == 'i' ? (GS_VEC)_mm256_max_epi32((__m256i)a, (__m256i)b)
                          : (GS_VEC)_mm256_max_epu32((__m256i)a, (__m256i)b);
#else
    return GS_V(sel)(GS_V(gt)(b, a), b, a);
#endif
}
#endif

/* ---- The contract's operators on vectors ------------------------------------------------------
 * vop(op, a, b) = a op b value by value, `a` holding the earlier values: cpu/operators.h's
 * operator on every value (float min/max: a NaN `a` is kept, a NaN `b` wins over a number, ties
 * keep `a`; fmin/fmax: a NaN loses to a number; integers wrap).  Bitwise operators only for
 * integers. */
static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(op)(const gs_op op, GS_VEC a, GS_VEC b)
{
    switch (op) {
    case GS_OP_ADD:
        return GS_V(add)(a, b);
    case GS_OP_MUL:
        return GS_V(mul)(a, b);
#if GS_KIND == 'f'
    case GS_OP_MIN:
        return GS_V(sel)(GS_V(mor)(GS_V(le)(a, b), GS_V(ne)(a, a)), a, b);
    case GS_OP_MAX:
        return GS_V(sel)(GS_V(mor)(GS_V(ge)(a, b), GS_V(ne)(a, a)), a, b);
    case GS_OP_FMIN:
        return GS_V(sel)(GS_V(mor)(GS_V(le)(a, b), GS_V(ne)(b, b)), a, b);
    case GS_OP_FMAX:
        return GS_V(sel)(GS_V(mor)(GS_V(ge)(a, b), GS_V(ne)(b, b)), a, b);
    default: { /* the logaddexps: no vector exp and log1p, value by value */
        GS_T x[GS_W], y[GS_W];
        GS_V(store)(x, a);
        GS_V(store)(y, b);
        for (int k = 0; k < GS_W; k++)
            x[k] = GS_FN(op)(op, x[k], y[k]);
        return GS_V(load)(x);
    }
#else
    case GS_OP_MIN:
        return GS_V(min_int)(a, b);
    case GS_OP_MAX:
        return GS_V(max_int)(a, b);
    case GS_OP_AND:
        return GS_V(and)(a, b);
    case GS_OP_OR:
        return GS_V(or)(a, b);
    default:
        return GS_V(xor)(a, b);
#endif
    }
}

/* The inclusive scan of one vector under op, `id` holding op's identity: value k combines
 * values 0..k in a fixed tree (within halves first, then across). */
static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(scan)(const gs_op op, GS_VEC v, GS_VEC id)
{
    v = GS_V(op)(op, GS_V(lane1)(v, id), v);
#if GS_SIZE == 4
    v = GS_V(op)(op, GS_V(lane2)(v, id), v);
#endif
    return GS_V(op)(op, GS_V(cross)(v, id), v);
}
