/*
 * agent/teach.cuh - a block's part in the teaching scans, written as the textbooks write them.
 * Included once per register type (stamp.cuh, after thread/thread_ops.cuh).
 *   hs_step        one Hillis-Steele step over the whole array: each thread makes one value of
 *                  the next array from two of the previous one (grid-stride, any n);
 *   tree_step      one up-sweep, down-sweep or inclusive step of Blelloch's tree over a working
 *                  array in global memory, plain or flagged (the step-by-step traces);
 *   blelloch_tile  a whole tile of GS_TEACH_TILE values scanned in shared memory by the
 *                  work-efficient up-sweep / down-sweep (plain or flagged), its root seeded with
 *                  the carry of the tiles before it; or, in reduce mode, the up-sweep alone,
 *                  which leaves the tile's total (and whether it holds a head) at the root.
 * Every combine takes the earlier operand first (float min/max keep np.minimum's first-operand
 * rule, so a tree returns the first NaN as a sequential scan does).  Operator applications are
 * counted per thread and added to `work` once per thread when it is given.
 */

#ifndef GS_AGENT_TEACH_ONCE
#define GS_AGENT_TEACH_ONCE

/* Kernel parameters of one Hillis-Steele step (passed by value). */
typedef struct gs_hs_kparams {
    const void *src; /* the previous array: the input on the first step, else out_type values */
    void *dst;       /* the next array (never src) */
    int64_t n;
    int64_t row_len; /* values per independent scan */
    int64_t s;       /* the window: 2^d at step d */
    int first;       /* src is the scan's input (in_type), else an out_type buffer */
    int shift;       /* exclusive, first step: src is read shifted right by one, identity first */
    unsigned long long *work;
} gs_hs_kparams;

/* Kernel parameters of one Blelloch tree step over a working array (gs_step_desc). */
typedef struct gs_tree_kparams {
    void *buf;
    const void *src;
    unsigned char *fup;
    const unsigned char *forig;
    int64_t rows, m, s, len;
    int kind; /* GS_STEP_UP, GS_STEP_DOWN or GS_STEP_INCL */
    int clear_root;
    unsigned long long *work;
} gs_tree_kparams;

/* Kernel parameters of one pass of the tiled Blelloch scan. */
typedef struct gs_tile_kparams {
    const void *in;
    void *out;
    const void *flags; /* segment heads (flag_type), or NULL */
    int64_t n;
    int64_t row_len;       /* values per independent scan (n when segmented) */
    int64_t tiles_per_row; /* tiles of one row */
    void *totals;          /* reduce mode: each tile's total (out_type) */
    unsigned char *tflags; /* reduce mode, segmented: whether each tile holds a head */
    const void *carries;   /* scan mode: inclusive scan of the totals (NULL: one tile per row) */
    gs_dtype flag_type;
    int exclusive;
    int reduce;
} gs_tile_kparams;

/* Blocks of a grid-stride launch over `units` units of work of one block each. */
static inline unsigned gs_teach_blocks(int64_t units)
{
    const int64_t cap = (int64_t)1 << 20; /* enough to fill any GPU; the rest loops */
    return (unsigned)(units < 1 ? 1 : (units < cap ? units : cap));
}

#endif /* GS_AGENT_TEACH_ONCE */

/* Value j of a Hillis-Steele source: the input (converted) or an out_type buffer; shifted by one
 * with the identity at each row's start when `shift` is set. */
static __device__ __forceinline__ GS_R GS_FN(hs_load)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                      const gs_hs_kparams *p, int64_t j)
{
    if (p->shift) {
        if (j % p->row_len == 0)
            return GS_FN(identity)(op, out_t);
        j -= 1;
    }
    if (p->first)
        return GS_FN(from_bits)(in_t, gs_load_bits(in_t, p->src, j));
    return GS_FN(from_bits)(out_t, gs_load_bits(out_t, p->src, j));
}

/* ==== Hillis-Steele: next[i] = prev[i - s] op prev[i] where i - s is in i's row ============= */
static __device__ __forceinline__ void GS_FN(hs_step)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                      const gs_hs_kparams *p)
{
    unsigned long long count = 0;
    const int64_t stride = (int64_t)gridDim.x * GS_TEACH_NT;
    for (int64_t i = (int64_t)blockIdx.x * GS_TEACH_NT + threadIdx.x; i < p->n; i += stride) {
        GS_R v = GS_FN(hs_load)(op, in_t, out_t, p, i);
        if (i % p->row_len >= p->s) {
            v = GS_FN(combine)(op, GS_FN(hs_load)(op, in_t, out_t, p, i - p->s), v);
            count++;
        }
        gs_store_bits(out_t, p->dst, i, GS_FN(to_bits)(out_t, v));
    }
    if (p->work != NULL && count > 0)
        atomicAdd(p->work, count);
}

/* ==== One step of Blelloch's tree over a working array in global memory ====================== */
static __device__ __forceinline__ void GS_FN(tree_step)(gs_op op, gs_dtype t,
                                                        const gs_tree_kparams *p)
{
    unsigned long long count = 0;
    const int64_t stride = (int64_t)gridDim.x * GS_TEACH_NT;
    const GS_R id = GS_FN(identity)(op, t);
    const int64_t nodes = p->kind == GS_STEP_INCL ? p->rows * p->m : p->rows * (p->m / (2 * p->s));

    for (int64_t j = (int64_t)blockIdx.x * GS_TEACH_NT + threadIdx.x; j < nodes; j += stride) {
        if (p->kind == GS_STEP_INCL) {
            if (j % p->m < p->len) {
                GS_R x = GS_FN(from_bits)(t, gs_load_bits(t, p->buf, j));
                GS_R a = GS_FN(from_bits)(t, gs_load_bits(t, p->src, j));
                gs_store_bits(t, p->buf, j, GS_FN(to_bits)(t, GS_FN(combine)(op, x, a)));
                count++;
            }
            continue;
        }
        const int64_t per_row = p->m / (2 * p->s);
        const int64_t base = j / per_row * p->m + j % per_row * 2 * p->s;
        const int64_t ai = base + p->s - 1, bi = base + 2 * p->s - 1;
        GS_R left = GS_FN(from_bits)(t, gs_load_bits(t, p->buf, ai));
        GS_R right = GS_FN(from_bits)(t, gs_load_bits(t, p->buf, bi));
        if (p->kind == GS_STEP_UP) {
            if (p->fup == NULL || !p->fup[bi]) {
                right = GS_FN(combine)(op, left, right);
                count++;
            }
            if (p->fup != NULL)
                p->fup[bi] |= p->fup[ai];
        } else { /* GS_STEP_DOWN: the parent's value goes left, parent op left goes right */
            const GS_R parent = p->clear_root ? id : right;
            gs_store_bits(t, p->buf, ai, GS_FN(to_bits)(t, parent));
            if (p->fup != NULL && p->forig[base + p->s]) {
                right = id;
            } else if (p->fup != NULL && p->fup[ai]) {
                right = left;
            } else {
                right = GS_FN(combine)(op, parent, left);
                count++;
            }
            if (p->fup != NULL)
                p->fup[ai] = 0;
        }
        gs_store_bits(t, p->buf, bi, GS_FN(to_bits)(t, right));
    }
    if (p->work != NULL && count > 0)
        atomicAdd(p->work, count);
}

/* Up-sweep of a tile's tree in shared memory: each level combines pairs of nodes `offset`
 * apart, half as many; flagged, a node below a head keeps its own value.  Ends with a barrier. */
static __device__ __forceinline__ void GS_FN(tile_up_sweep)(gs_op op, GS_R *x, unsigned char *fup,
                                                            const int seg, const int padded)
{
    int offset = 1;
    for (int d = GS_TEACH_TILE >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (threadIdx.x < d) {
            const int ai = GS_TEACH_PAD(offset * (2 * threadIdx.x + 1) - 1, padded);
            const int bi = GS_TEACH_PAD(offset * (2 * threadIdx.x + 2) - 1, padded);
            if (!seg || !fup[bi])
                x[bi] = GS_FN(combine)(op, x[ai], x[bi]);
            if (seg)
                fup[bi] |= fup[ai];
        }
        offset <<= 1;
    }
    __syncthreads();
}

/* Down-sweep from the root to the leaves: the parent's value goes left, parent op left to the
 * right; flagged, the identity where the right child starts a segment and the left child's sum
 * where a head lies in it.  Ends with a barrier. */
static __device__ __forceinline__ void GS_FN(tile_down_sweep)(gs_op op, GS_R *x, unsigned char *fup,
                                                              const unsigned char *forig,
                                                              const int seg, const int padded,
                                                              const GS_R id)
{
    int offset = GS_TEACH_TILE;
    for (int d = 1; d < GS_TEACH_TILE; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (threadIdx.x < d) {
            const int l = offset * (2 * threadIdx.x + 1) - 1; /* the left child's last leaf */
            const int ai = GS_TEACH_PAD(l, padded);
            const int bi = GS_TEACH_PAD(l + offset, padded);
            const GS_R t = x[ai], parent = x[bi];
            x[ai] = parent;
            if (seg && forig[GS_TEACH_PAD(l + 1, padded)])
                x[bi] = id; /* the right child starts a segment */
            else if (seg && fup[ai])
                x[bi] = t; /* a head in the left child: its sum since that head */
            else
                x[bi] = GS_FN(combine)(op, parent, t);
            if (seg)
                fup[ai] = 0;
        }
    }
    __syncthreads();
}

/* ==== A tile scanned in shared memory (GS_TEACH_PAD against bank conflicts when `padded`) ===== */
static __device__ __forceinline__ void GS_FN(blelloch_tile)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                            const gs_tile_kparams *p,
                                                            const int padded)
{
    __shared__ GS_R x[GS_TEACH_SMEM_SLOTS];
    __shared__ unsigned char fup[GS_TEACH_SMEM_SLOTS];   /* up-swept: a head below this node */
    __shared__ unsigned char forig[GS_TEACH_SMEM_SLOTS]; /* the original heads */
    const GS_R id = GS_FN(identity)(op, out_t);
    const int seg = p->flags != NULL;
    const int64_t nblk = p->n / p->row_len * p->tiles_per_row;
    const int a = threadIdx.x, b = threadIdx.x + GS_TEACH_NT; /* this thread's two leaves */
    const int pa = GS_TEACH_PAD(a, padded), pb = GS_TEACH_PAD(b, padded);

    for (int64_t blk = blockIdx.x; blk < nblk; blk += gridDim.x) {
        const int64_t row = blk / p->tiles_per_row, k = blk % p->tiles_per_row;
        const int64_t base = row * p->row_len + k * GS_TEACH_TILE;
        const int64_t rest = p->row_len - k * GS_TEACH_TILE;
        const int len = rest < GS_TEACH_TILE ? (int)rest : GS_TEACH_TILE;

        /* ---- Load: two leaves per thread, the identity past the end (a complete tree). ---- */
        const GS_R va = a < len ? GS_FN(from_bits)(in_t, gs_load_bits(in_t, p->in, base + a)) : id;
        const GS_R vb = b < len ? GS_FN(from_bits)(in_t, gs_load_bits(in_t, p->in, base + b)) : id;
        x[pa] = va;
        x[pb] = vb;
        if (seg) {
            fup[pa] = forig[pa] =
                a < len &&
                gs_flag_set(p->flag_type, gs_load_bits(p->flag_type, p->flags, base + a));
            fup[pb] = forig[pb] =
                b < len &&
                gs_flag_set(p->flag_type, gs_load_bits(p->flag_type, p->flags, base + b));
        }

        GS_FN(tile_up_sweep)(op, x, fup, seg, padded);

        const int root = GS_TEACH_PAD(GS_TEACH_TILE - 1, padded);
        if (p->reduce) {
            /* ---- Reduce mode: the root holds the tile's total after its last head. ---- */
            if (threadIdx.x == 0) {
                gs_store_bits(out_t, p->totals, blk, GS_FN(to_bits)(out_t, x[root]));
                if (seg)
                    p->tflags[blk] = fup[root];
            }
            __syncthreads(); /* the next tile's loads overwrite the root */
            continue;
        }

        /* ---- The root: the carry of the tiles before (identity for a row's first tile or
         * when the tile starts a segment), then the down-sweep pushes it to every leaf. ---- */
        if (threadIdx.x == 0) {
            GS_R carry = id;
            if (p->carries != NULL && k > 0 && !(seg && forig[GS_TEACH_PAD(0, padded)]))
                carry = GS_FN(from_bits)(out_t, gs_load_bits(out_t, p->carries, blk - 1));
            x[root] = carry;
        }
        GS_FN(tile_down_sweep)(op, x, fup, forig, seg, padded, id);

        /* ---- Store: exclusive as swept, inclusive with the leaf's own value combined in. ---- */
        if (a < len)
            gs_store_bits(
                out_t, p->out, base + a,
                GS_FN(to_bits)(out_t, p->exclusive ? x[pa] : GS_FN(combine)(op, x[pa], va)));
        if (b < len)
            gs_store_bits(
                out_t, p->out, base + b,
                GS_FN(to_bits)(out_t, p->exclusive ? x[pb] : GS_FN(combine)(op, x[pb], vb)));
        __syncthreads(); /* the next tile's loads overwrite x */
    }
}
