/*
 * tools/sort_check.cu - the CUDA sort's kernels (kernels/dispatch/sort.cu) checked on a GPU
 * without the Python package: each case runs gs_launch_sort on device memory and compares its
 * keys (bit for bit) and indices with tools/sort_model.c, the host model that
 * tests/test_sort_model.py checks against NumPy. It reaches every kernel: rows of at most 16
 * keys (a thread a row, each network size), of at most 32 (a group of lanes a row), the block
 * sort of each
 * key kind (short rows, a row filling the block, rows of one), the histogram and every pass
 * kernel (index payload of 0 and 4 bytes; 8 bytes only past 2^32 keys a row, the model's alone),
 * rows of several tiles, several histogram chunks, skipped digit positions, both orders.
 * Run it alone or under compute-sanitizer (memcheck, racecheck, synccheck):
 *
 *     nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels -Iinclude -DGS_HAVE_CUDA tools/sort_check.cu \
 *         kernels/dispatch/sort.cu kernels/dispatch/launch.cu tools/sort_model.c -o sort_check
 *     ./sort_check [--quick] [--dry]  (--quick: fewer cases, for racecheck; --dry: the model
 *                                      alone, no GPU)
 *     ./sort_check --bench [--only=a,b] [--reps=N] [log2n ...]  (timings beside
 *                                      benchmarks/cub_driver.cu's sort cases)
 *
 * Prints one line per failing case and a summary; exits 1 on any failure, 2 on a CUDA error.
 * Level: tool (host code; the kernels are the product's).
 */
#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuscan/launch.h"
#include "gpuscan/radix.h"

extern "C" int gs_model_sort(const void *keys, void *keys_out, int64_t *index_out, int64_t rows,
                             int64_t row_len, int dtype, int descending, int path, int nt, int vt,
                             int64_t hist_tiles, int wide, int block_nt, int block_vt, int idx8,
                             uint64_t seed);
extern "C" const char *gs_model_error(void);

#define CK(call)                                                                           \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "sort_check: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

static uint64_t state = 45;

static uint64_t next_random(void)
{
    uint64_t x = state += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* n keys of dtype t into h (bytes): ties, extremes, bools of bytes 0/1/2/255, floats with NaNs
 * of both signs and payloads, +-0, +-inf; mode 1 (`small`): values in [-100, 100) (skipped
 * passes); mode 2 (`plain`): floats without -0.0 and NaN (the passes between the first and the
 * last then move order keys). */
static void make_keys(gs_dtype t, int64_t n, int mode, unsigned char *h)
{
    const int b = (int)gs_dtype_size(t);
    for (int64_t i = 0; i < n; ++i) {
        uint64_t r = next_random(), v = r;
        const unsigned pick = (unsigned)(r >> 58) + (mode == 2 ? 3u : 0u); /* 2: no NaN, -0 */
        const int small = mode == 1;
        if (small) {
            v = (uint64_t)(int64_t)((int)(r % 200) - 100);
        } else if (t == GS_BOOL) {
            const unsigned char bytes[4] = { 0, 1, 2, 255 };
            v = bytes[r & 3];
        } else if (t == GS_FLOAT32) {
            const uint32_t special[8] = { 0x7fc00001u, 0xffc00000u, 0x80000000u, 0u,
                                          0x7f800000u, 0xff800000u, 0x3f800000u, 0xbf800000u };
            const float f = (float)((int)(r % 2001) - 1000) / 64.0f;
            uint32_t bits;
            memcpy(&bits, &f, 4);
            v = pick < 8 ? special[pick] : bits;
        } else if (t == GS_FLOAT64) {
            const uint64_t special[8] = { 0x7ff8000000000001ull, 0xfff8000000000000ull,
                                          0x8000000000000000ull, 0ull,
                                          0x7ff0000000000000ull, 0xfff0000000000000ull,
                                          0x3ff0000000000000ull, 0xbff0000000000000ull };
            const double f = (double)((int)(r % 2001) - 1000) / 64.0;
            uint64_t bits;
            memcpy(&bits, &f, 8);
            v = pick < 8 ? special[pick] : bits;
        } else if (pick < 12) {
            v = (uint64_t)(int64_t)((int)(r % 7) - 3); /* ties, around 0 and -1 */
        }
        memcpy(h + i * b, &v, (size_t)b); /* little-endian: the low bytes */
    }
}

static int failures = 0, cases = 0;
static int dry = 0; /* --dry: the model alone (no GPU): the cases and their inputs checked */

/* One case: the launcher against the model. */
static void run_case(gs_dtype t, int64_t rows, int64_t row_len, int descending, int want_keys,
                     int want_index, int mode)
{
    const int b = (int)gs_dtype_size(t);
    const int64_t n = rows * row_len;
    unsigned char *h = (unsigned char *)malloc((size_t)(n * b));
    unsigned char *want_k = (unsigned char *)malloc((size_t)(n * b));
    unsigned char *got_k = (unsigned char *)malloc((size_t)(n * b));
    int64_t *want_i = (int64_t *)malloc((size_t)(8 * n));
    int64_t *got_i = (int64_t *)malloc((size_t)(8 * n));
    void *d_keys, *d_out, *d_idx, *scratch = NULL;
    char what[160];

    ++cases;
    snprintf(what, sizeof what, "dtype %d rows %lld x %lld %s%s%s%s", (int)t, (long long)rows,
             (long long)row_len, descending ? "descending" : "ascending", want_keys ? " keys" : "",
             want_index ? " index" : "", mode == 1 ? " small" : mode == 2 ? " plain" : "");
    make_keys(t, n, mode, h);

    /* the model, with the kernels' geometry (path 0: the launcher's choice) */
    const int ib = gs_sort_index_bytes(row_len, want_index);
    if (gs_model_sort(h, want_keys ? want_k : NULL, want_index ? want_i : NULL, rows, row_len,
                      (int)t, descending, 0, GS_SORT_NT, GS_SORT_VT(b, ib, gs_dtype_is_float(t)),
                      GS_SORT_HIST_TILES, 0, GS_SORT_BLOCK_NT, GS_SORT_BLOCK_VT, 0, 1) != 0) {
        printf("FAIL %s: the model: %s\n", what, gs_model_error());
        ++failures;
        goto done;
    }

    /* the device, its outputs and scratch poisoned first */
    if (dry)
        goto done;
    {
        const size_t bytes =
            gs_sort_scratch_bytes(rows, row_len, b, gs_dtype_is_float(t), want_keys, want_index);
        CK(cudaMalloc(&d_keys, (size_t)(n * b)));
        CK(cudaMalloc(&d_out, (size_t)(n * b)));
        CK(cudaMalloc(&d_idx, (size_t)(8 * n)));
        if (bytes > 0) {
            CK(cudaMalloc(&scratch, bytes));
            CK(cudaMemset(scratch, 0xa5, bytes));
        }
        CK(cudaMemcpy(d_keys, h, (size_t)(n * b), cudaMemcpyHostToDevice));
        CK(cudaMemset(d_out, 0x5a, (size_t)(n * b)));
        CK(cudaMemset(d_idx, 0x5a, (size_t)(8 * n)));
        gs_sort_desc d;
        d.keys = d_keys;
        d.keys_out = want_keys ? d_out : NULL;
        d.index_out = want_index ? (int64_t *)d_idx : NULL;
        d.rows = rows;
        d.row_len = row_len;
        d.type = t;
        d.descending = descending;
        CK(gs_launch_sort(&d, scratch, bytes, 0));
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(got_k, d_out, (size_t)(n * b), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(got_i, d_idx, (size_t)(8 * n), cudaMemcpyDeviceToHost));
        CK(cudaFree(d_keys));
        CK(cudaFree(d_out));
        CK(cudaFree(d_idx));
        if (scratch != NULL)
            CK(cudaFree(scratch));
    }
    if (want_keys && memcmp(got_k, want_k, (size_t)(n * b)) != 0) {
        int64_t i = 0;
        while (memcmp(got_k + i * b, want_k + i * b, (size_t)b) == 0)
            ++i;
        printf("FAIL %s: keys differ first at %lld\n", what, (long long)i);
        ++failures;
    } else if (want_index && memcmp(got_i, want_i, (size_t)(8 * n)) != 0) {
        int64_t i = 0;
        while (got_i[i] == want_i[i])
            ++i;
        printf("FAIL %s: index differs first at %lld: %lld, expected %lld\n", what, (long long)i,
               (long long)got_i[i], (long long)want_i[i]);
        ++failures;
    }
done:
    free(h);
    free(want_k);
    free(got_k);
    free(want_i);
    free(got_i);
}

/* ---- --bench: gs_launch_sort timed on device data (CUDA events, median), the work of
 * benchmarks/cub_driver.cu's sort cases: keys of every bit pattern (integers) or uniform in
 * [-1, 1) (floats), so every digit position takes a pass. One line a case, the driver's format:
 *   case=gs_sortkeys_u32 log2n=20 ms=0.0712 min_ms=0.0700 reps=200 sets=16 ok
 * Buffer sets rotated so that they total more than 240 MB (4 x the H200's L2); each case's
 * first call is checked on the host (keys in order; argsort: a permutation, keys by it in
 * order, ties in input order). ---- */
static __global__ void bench_fill(unsigned char *k, int64_t n, int bytes, int is_float,
                                  uint64_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t x = seed + (uint64_t)i * 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        x ^= x >> 31;
        if (is_float && bytes == 4) {
            const float f = (float)(x >> 40) * (1.0f / 8388608.0f) - 1.0f;
            memcpy(k + i * 4, &f, 4);
        } else if (is_float) {
            const double f = (double)(x >> 11) * (1.0 / 4503599627370496.0) - 1.0;
            memcpy(k + i * 8, &f, 8);
        } else {
            memcpy(k + i * bytes, &x, (size_t)bytes);
        }
    }
}

/* Whether host keys h (n of dtype t, rows of row_len) sorted into k (and idx) are in order. */
static const char *bench_verify(gs_dtype t, const unsigned char *h, const unsigned char *k,
                                const int64_t *idx, int64_t rows, int64_t row_len)
{
    const int b = (int)gs_dtype_size(t);
    const uint64_t flip = gs_sort_flip(t, 0);
    for (int64_t r = 0; r < rows; ++r) {
        uint64_t prev = 0;
        int64_t prev_i = -1;
        for (int64_t j = 0; j < row_len; ++j) {
            const int64_t at = r * row_len + j;
            uint64_t bits = 0;
            if (idx != NULL) {
                if (idx[at] < 0 || idx[at] >= row_len)
                    return "index out of its row";
                memcpy(&bits, h + (r * row_len + idx[at]) * b, (size_t)b);
            } else {
                memcpy(&bits, k + at * b, (size_t)b);
            }
            const uint64_t o = b == 8 ? gs_sort_key64(t, bits, flip)
                                      : gs_sort_key32(t, (uint32_t)bits, (uint32_t)flip);
            if (j > 0 && (o < prev || (idx != NULL && o == prev && idx[at] <= prev_i)))
                return "out of order";
            prev = o;
            prev_i = idx != NULL ? idx[at] : 0;
        }
    }
    return NULL;
}

static double bench_median(double *v, int n)
{
    for (int i = 1; i < n; ++i)
        for (int j = i; j > 0 && v[j] < v[j - 1]; --j) {
            const double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One timed case: rows x row_len keys of t, keys (argsort = 0) or int64 indices alone. */
static int bench_reps = 64;           /* --reps=N: timed calls at most */
static const char *bench_only = NULL; /* --only=a,b: the cases whose names hold a or b */

static int bench_chosen(const char *name)
{
    if (bench_only == NULL)
        return 1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", bench_only);
    for (char *tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ","))
        if (strstr(name, tok) != NULL)
            return 1;
    return 0;
}

static void bench_case(const char *name, gs_dtype t, int64_t rows, int64_t row_len, int argsort,
                       int log2n, int float_bits)
{
    if (!bench_chosen(name))
        return;
    const int b = (int)gs_dtype_size(t);
    const int64_t n = rows * row_len;
    const size_t set_bytes = (size_t)n * (2 * b + (argsort ? 8 : 0));
    const int sets = (int)(set_bytes >= (240u << 20) ? 1 : ((240u << 20) + set_bytes - 1) / set_bytes);
    const size_t scratch_bytes =
        gs_sort_scratch_bytes(rows, row_len, b, gs_dtype_is_float(t), !argsort, argsort);
    unsigned char *keys, *out;
    int64_t *idx = NULL;
    void *scratch = NULL;
    cudaEvent_t e0, e1;
    double ms[64];

    CK(cudaMalloc(&keys, (size_t)n * b * sets));
    CK(cudaMalloc(&out, (size_t)n * b * (argsort ? 1 : sets)));
    if (argsort)
        CK(cudaMalloc(&idx, (size_t)n * 8 * sets));
    if (scratch_bytes)
        CK(cudaMalloc(&scratch, scratch_bytes));
    bench_fill<<<1024, 256>>>(keys, n * sets, b, float_bits || gs_dtype_is_float(t),
                              45u + (uint64_t)log2n);
    CK(cudaGetLastError());
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    gs_sort_desc d;
    memset(&d, 0, sizeof d);
    d.rows = rows;
    d.row_len = row_len;
    d.type = t;
    int calls = 0, reps = 0;
    float total = 0.0f;
    for (int it = -2; it < bench_reps && it < 64; ++it) {
        const int s = (calls++) % sets;
        d.keys = keys + (size_t)s * n * b;
        d.keys_out = argsort ? NULL : out + (size_t)s * n * b;
        d.index_out = argsort ? idx + (size_t)s * n : NULL;
        CK(cudaEventRecord(e0, 0));
        CK(gs_launch_sort(&d, scratch, scratch_bytes, 0));
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        float t_ms;
        CK(cudaEventElapsedTime(&t_ms, e0, e1));
        if (it == -2) { /* the first call checked */
            unsigned char *h = (unsigned char *)malloc((size_t)n * b);
            unsigned char *k = (unsigned char *)malloc((size_t)n * (argsort ? 8 : b));
            CK(cudaMemcpy(h, d.keys, (size_t)n * b, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(k, argsort ? (void *)d.index_out : d.keys_out,
                          (size_t)n * (argsort ? 8 : b), cudaMemcpyDeviceToHost));
            const char *bad = bench_verify(t, h, k, argsort ? (const int64_t *)k : NULL, rows,
                                           row_len);
            free(h);
            free(k);
            if (bad != NULL) {
                printf("FAIL case=%s log2n=%d %s\n", name, log2n, bad);
                ++failures;
                break;
            }
        }
        if (it >= 0) {
            ms[reps++] = t_ms;
            total += t_ms;
            if (reps >= 10 && total > 100.0f)
                break;
        }
    }
    if (reps > 0) {
        double mn = ms[0];
        for (int i = 1; i < reps; ++i)
            mn = ms[i] < mn ? ms[i] : mn;
        printf("case=%s log2n=%d ms=%.6f min_ms=%.6f reps=%d sets=%d\n", name, log2n,
               bench_median(ms, reps), mn, reps, sets);
        fflush(stdout);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(keys));
    CK(cudaFree(out));
    if (idx != NULL)
        CK(cudaFree(idx));
    if (scratch != NULL)
        CK(cudaFree(scratch));
}

static int bench_main(int argc, char **argv)
{
    struct {
        const char *name;
        gs_dtype t;
        int argsort;
        int float_bits; /* the keys a float's bits: a skewed top digit */
    } flat[] = { { "sortkeys_u32", GS_UINT32, 0 }, { "sortkeys_i32", GS_INT32, 0 },
                 { "sortkeys_f32", GS_FLOAT32, 0 }, { "sortkeys_i64", GS_INT64, 0 },
                 { "sortkeys_f64", GS_FLOAT64, 0 }, { "sortpairs_u32", GS_UINT32, 1 },
                 { "sortpairs_f32", GS_FLOAT32, 1 }, { "sortkeys_u32fbits", GS_UINT32, 0, 1 } };
    const int64_t shapes[][2] = { { 16384, 16384 }, { 1048576, 16 }, { 65536, 1024 } };
    int sizes[8], nsizes = 0;
    for (int a = 2; a < argc && nsizes < 8; ++a) {
        if (strncmp(argv[a], "--only=", 7) == 0)
            bench_only = argv[a] + 7;
        else if (strncmp(argv[a], "--reps=", 7) == 0)
            bench_reps = atoi(argv[a] + 7);
        else
            sizes[nsizes++] = atoi(argv[a]);
    }
    if (nsizes == 0) {
        const int def[] = { 16, 20, 24, 28 };
        for (nsizes = 0; nsizes < 4; ++nsizes)
            sizes[nsizes] = def[nsizes];
    }
    for (int si = 0; si < nsizes; ++si)
        for (int c = 0; c < (int)(sizeof flat / sizeof flat[0]); ++c) {
            char name[64];
            snprintf(name, sizeof name, "gs_%s", flat[c].name);
            bench_case(name, flat[c].t, 1, (int64_t)1 << sizes[si], flat[c].argsort, sizes[si],
                       flat[c].float_bits);
        }
    for (int r = 0; r < 3; ++r) {
        char name[64];
        int lg = 0;
        while (((int64_t)1 << lg) < shapes[r][0] * shapes[r][1])
            ++lg;
        snprintf(name, sizeof name, "gs_segsort_f32_%lldx%lld", (long long)shapes[r][0],
                 (long long)shapes[r][1]);
        bench_case(name, GS_FLOAT32, shapes[r][0], shapes[r][1], 0, lg, 0);
        snprintf(name, sizeof name, "gs_segargsort_f32_%lldx%lld", (long long)shapes[r][0],
                 (long long)shapes[r][1]);
        bench_case(name, GS_FLOAT32, shapes[r][0], shapes[r][1], 1, lg, 0);
    }
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    int quick = 0;
    if (argc > 1 && strcmp(argv[1], "--bench") == 0)
        return bench_main(argc, argv);
    for (int a = 1; a < argc; ++a) {
        if (strcmp(argv[a], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[a], "--dry") == 0)
            dry = 1;
        else {
            fprintf(stderr, "usage: sort_check [--quick] [--dry] | --bench [--only=a,b] [--reps=N] [log2n ...]\n");
            return 2;
        }
    }
    const gs_dtype all[] = { GS_BOOL,   GS_INT8,   GS_INT16,  GS_INT32,   GS_INT64,  GS_UINT8,
                             GS_UINT16, GS_UINT32, GS_UINT64, GS_FLOAT32, GS_FLOAT64 };
    const gs_dtype few[] = { GS_INT8, GS_FLOAT32, GS_INT64, GS_FLOAT64 };
    const gs_dtype *types = quick ? few : all;
    const int ntypes = quick ? 4 : 11;
    const int64_t block = GS_SORT_BLOCK_NV;

    for (int ti = 0; ti < ntypes; ++ti) {
        const gs_dtype t = types[ti];
        const int b = (int)gs_dtype_size(t);
        const int fl = gs_dtype_is_float(t);
        const int64_t nv = gs_sort_nv(b, fl, 4), nvk = gs_sort_nv(b, fl, 0);
        /* (rows, row_len): the block sort, then the device-wide sort */
        const int64_t shapes[][2] = {
            { 1, 1 },          { 1, 33 },         { 1, block },         { 1000, 1 },
            { 333, 32 },       { 1000, 7 },       { 9, 31 },
            { 300, 16 },       { 5, 1024 },       { 3, block / 2 + 1 }, { 1, block + 1 },
            { 777, 2 },        { 513, 3 },        { 100, 4 },           { 257, 5 },
            { 70, 8 },         { 45, 9 },         { 33, 12 },           { 4103, 15 },
            { 1, 16 },         { 31, 17 },
            { 1, nv - 1 },     { 1, nv },         { 1, nv + 1 },        { 1, nvk + 1 },
            { 3, 2 * nv + 5 }, { 1, 9 * nv + 1 }, { 2, 9 * nvk + 3 },
        };
        const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
        for (int si = 0; si < nshapes; ++si) {
            if (quick && si % 3 != 0)
                continue;
            for (int desc = 0; desc < 2; ++desc) {
                if (quick && desc)
                    continue;
                run_case(t, shapes[si][0], shapes[si][1], desc, 1, 1, 0);
                if (!quick && si % 4 == 1) { /* one output alone */
                    run_case(t, shapes[si][0], shapes[si][1], desc, 1, 0, 0);
                    run_case(t, shapes[si][0], shapes[si][1], desc, 0, 1, 0);
                }
            }
        }
        if (gs_dtype_is_float(t)) { /* no lossy key: order keys between the passes */
            const int64_t plain[][2] = { { 1, nv + 1 }, { 3, 2 * nv + 5 }, { 1, 9 * nv + 1 } };
            for (int si = 0; si < 3; ++si)
                for (int desc = 0; desc < 2; ++desc) {
                    if (quick && (desc || si == 2))
                        continue;
                    run_case(t, plain[si][0], plain[si][1], desc, 1, 1, 2);
                    if (!quick) {
                        run_case(t, plain[si][0], plain[si][1], desc, 1, 0, 2);
                        run_case(t, plain[si][0], plain[si][1], desc, 0, 1, 2);
                    }
                }
        }
        if (b >= 2) { /* skipped digit positions, in both paths */
            run_case(t, 1, 3 * nv + 7, 0, 1, 1, 1);
            run_case(t, 7, 100, 1, 1, 1, 1);
            if (!quick)
                run_case(t, 1, 3 * nv + 7, 0, 0, 1, 1);
        }
    }
    if (!quick) { /* hundreds of tiles in flight: long look-backs */
        run_case(GS_UINT32, 1, (1 << 22) + 1, 0, 1, 1, 0);
        run_case(GS_FLOAT64, 1, (1 << 21) + 3, 1, 1, 1, 0);
        run_case(GS_FLOAT32, 64, 16384, 0, 1, 0, 0);
    }
    printf("sort_check: %d of %d cases %s\n", cases - failures, cases,
           failures ? "match the model (FAILURES above)" : "match the model");
    return failures ? 1 : 0;
}
