/*
 * kernel_check.cu - a standalone check of the scan kernels, without Python: results against a
 * sequential CPU reference (integers exactly, float add against the contract's bound) and
 * device timings against cudaMemcpy device-to-device of the same bytes.
 *
 * Build and run on a GPU machine:
 *   nvcc -O3 -std=c++17 -DGS_HAVE_CUDA -Ikernels -Iinclude -arch=sm_90 tools/kernel_check.cu \
 *        kernels/dispatch/scan.cu kernels/dispatch/instances/*.cu kernels/dispatch/reduce.cu \
 *        kernels/dispatch/copy.cu kernels/dispatch/launch.cu -o /tmp/kernel_check &&
 * /tmp/kernel_check
 * Arguments: [largest log2 n] [bench: timings only] [first log2 n timed].
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuscan/backend_api.h"
#include "gpuscan/config.h"
#include "check_common.h"

static int failures = 0;

static void *scratch;
static size_t scratch_cap;
static unsigned epoch;     /* the last epoch since the scratch was zeroed */
static int zero_each_scan; /* epoch 0: the launcher zeroes the scratch first */

/* One scan on the shared scratch, as the extension runs them: zeroed once, a new epoch per
 * scan (every check then also tests that no scan reads another's descriptors). */
static void run_scan(gs_scan_desc *d)
{
    size_t need = gs_scan_scratch_bytes(d->n);
    if (need > scratch_cap) {
        if (scratch)
            CHECK(cudaFree(scratch));
        CHECK(cudaMalloc(&scratch, need));
        CHECK(cudaMemset(scratch, 0, need));
        scratch_cap = need;
        epoch = 0;
    }
    d->epoch = zero_each_scan ? 0 : ++epoch;
    CHECK(gs_launch_scan(d, scratch, scratch_cap, 0));
}

/* int32 add/max, int32->int64 add, in the given mode; exact comparison. */
static void check_int(int64_t n, gs_op op, int exclusive, int64_t row_len, int flag_every,
                      int widen)
{
    int32_t *h_in = (int32_t *)malloc(n * 4);
    uint8_t *h_flags = (uint8_t *)malloc(n);
    int64_t *h_out = (int64_t *)malloc(n * 8);
    for (int64_t i = 0; i < n; ++i) {
        h_in[i] = (int32_t)rnd();
        h_flags[i] = flag_every ? (rnd() % flag_every) == 0 : 0;
    }
    void *d_in, *d_out, *d_flags;
    size_t osz = widen ? 8 : 4;
    CHECK(cudaMalloc(&d_in, n * 4));
    CHECK(cudaMalloc(&d_out, n * osz));
    CHECK(cudaMalloc(&d_flags, n));
    CHECK(cudaMemcpy(d_in, h_in, n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_flags, h_flags, n, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_out, 0xab, n * osz));
    gs_scan_desc d;
    memset(&d, 0, sizeof d);
    d.in = d_in;
    d.out = d_out;
    d.flags = flag_every ? d_flags : NULL;
    d.n = n;
    d.row_len = row_len;
    d.in_type = GS_INT32;
    d.out_type = widen ? GS_INT64 : GS_INT32;
    d.flag_type = GS_UINT8;
    d.op = op;
    d.exclusive = exclusive;
    run_scan(&d);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(h_out, d_out, n * osz, cudaMemcpyDeviceToHost));
    int64_t bad = -1;
    uint64_t acc = 0;
    int32_t accm = INT32_MIN;
    for (int64_t i = 0; i < n && bad < 0; ++i) {
        int head = (row_len && i % row_len == 0) || (flag_every && (i == 0 || h_flags[i]));
        if (head) {
            acc = 0;
            accm = INT32_MIN;
        }
        uint64_t before = acc;
        int32_t beforem = accm;
        if (widen)
            acc += (uint64_t)(int64_t)h_in[i];
        else
            acc = (uint32_t)(acc + (uint32_t)h_in[i]);
        accm = h_in[i] > accm ? h_in[i] : accm;
        int64_t want;
        if (op == GS_OP_MAX)
            want = exclusive ? beforem : accm;
        else
            want = (int64_t)(exclusive ? before : acc);
        int64_t got = widen ? h_out[i] : (int64_t)((uint32_t *)h_out)[i];
        if (!widen)
            want = (uint32_t)want;
        if (got != want)
            bad = i;
    }
    printf("%-5s n=%-10lld op=%s excl=%d row=%-6lld flags=1/%-5d widen=%d  %s",
           bad < 0 ? "ok" : "FAIL", (long long)n, op == GS_OP_MAX ? "max" : "add", exclusive,
           (long long)row_len, flag_every, widen, bad < 0 ? "\n" : "");
    if (bad >= 0) {
        printf(" first bad index %lld\n", (long long)bad);
        failures++;
    }
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_flags));
    free(h_in);
    free(h_flags);
    free(h_out);
}

/* An inclusive float32 scan of n host values under op into out (and again into out2 unless
 * NULL, for the determinism check). */
static void scan_f32(gs_op op, const float *h_in, int64_t n, float *out, float *out2)
{
    void *d_in, *d_out;
    CHECK(cudaMalloc(&d_in, n * 4));
    CHECK(cudaMalloc(&d_out, n * 4));
    CHECK(cudaMemcpy(d_in, h_in, n * 4, cudaMemcpyHostToDevice));
    gs_scan_desc d;
    memset(&d, 0, sizeof d);
    d.in = d_in;
    d.out = d_out;
    d.n = n;
    d.in_type = d.out_type = GS_FLOAT32;
    d.op = op;
    run_scan(&d);
    CHECK(cudaMemcpy(out, d_out, n * 4, cudaMemcpyDeviceToHost));
    if (out2 != NULL) { /* again, through the zeroing path */
        zero_each_scan = 1;
        run_scan(&d);
        zero_each_scan = 0;
        CHECK(cudaMemcpy(out2, d_out, n * 4, cudaMemcpyDeviceToHost));
    }
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
}

/* float32 add: max |err| / (eps * cumsum|x|) against a long double reference, and the bound. */
static void check_float(int64_t n, int signed_values)
{
    float *h_in = (float *)malloc(n * 4), *h_out = (float *)malloc(n * 4),
          *h_out2 = (float *)malloc(n * 4);
    for (int64_t i = 0; i < n; ++i) {
        float u = (float)((rnd() >> 11) * (1.0 / 9007199254740992.0));
        h_in[i] = signed_values ? 2.0f * u - 1.0f : u;
    }
    scan_f32(GS_OP_ADD, h_in, n, h_out, h_out2);
    long double exact = 0, absum = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
        exact += h_in[i];
        absum += fabsl((long double)h_in[i]);
        double r = (double)(fabsl((long double)h_out[i] - exact) / (absum * 1.1920929e-07L));
        if (r > worst)
            worst = r;
    }
    double bound = log2((double)n) + 2;
    int same = memcmp(h_out, h_out2, n * 4) == 0;
    printf("%-5s float32 add n=%-10lld %s  max err = %.2f eps*sum|x| (bound %.0f)  "
           "deterministic=%d\n",
           worst <= bound && same ? "ok" : "FAIL", (long long)n,
           signed_values ? "[-1,1)" : "[0,1) ", worst, bound, same);
    if (!(worst <= bound && same))
        failures++;
    free(h_in);
    free(h_out);
    free(h_out2);
}

/* float32 mul of factors near 1 (1 +- 5e-4): the relative error against a long double
 * product, within the contract's (i+1) eps at every i; the largest is printed.  It drifts by
 * about 0.02 eps per factor (benchmarks/NOTES.md: products near 1 in a tree round with a bias,
 * which a sequential product, wandering away from 1, escapes). */
static void check_float_mul(int64_t n)
{
    float *h_in = (float *)malloc(n * 4), *h_out = (float *)malloc(n * 4);
    for (int64_t i = 0; i < n; ++i)
        h_in[i] = (float)(1.0 + ((rnd() >> 11) * (1.0 / 9007199254740992.0) - 0.5) * 1e-3);
    scan_f32(GS_OP_MUL, h_in, n, h_out, NULL);
    long double exact = 1;
    double worst = 0;
    int64_t first = -1;
    for (int64_t i = 0; i < n; ++i) {
        exact *= h_in[i];
        double r = (double)(fabsl((long double)h_out[i] - exact) / (exact * 1.1920929e-07L));
        if (r > (double)(i + 1) && first < 0)
            first = i;
        if (r > worst)
            worst = r;
    }
    printf("%-5s float32 mul n=%-10lld max rel err = %.2f eps", first < 0 ? "ok" : "FAIL",
           (long long)n, worst);
    if (first >= 0)
        printf("  first past (i+1) eps: index %lld (tile %lld, offset %lld)", (long long)first,
               (long long)(first / GS_NV), (long long)(first % GS_NV));
    printf("\n");
    failures += first >= 0;
    free(h_in);
    free(h_out);
}

static void *rscratch;
static size_t rscratch_cap;

static void run_reduce(gs_reduce_desc *d)
{
    size_t need = gs_reduce_scratch_bytes(d->rows, d->row_len);
    if (need > rscratch_cap) {
        if (rscratch)
            CHECK(cudaFree(rscratch));
        CHECK(cudaMalloc(&rscratch, need));
        rscratch_cap = need;
    }
    if (need > 0) /* the counters zero (an earlier reduction's partials may lie there) */
        CHECK(cudaMemset(rscratch, 0, (size_t)gs_round_up(4 * d->rows, GS_SCRATCH_ALIGN)));
    CHECK(gs_launch_reduce(d, rscratch, rscratch_cap, 0));
}

/* int32 sums (wrapping, exact) and float32 sums (against the bound) of rows x row_len. */
static void check_reduce(int64_t rows, int64_t row_len, int offset)
{
    int64_t n = rows * row_len;
    int32_t *hi = (int32_t *)malloc((n + offset) * 4);
    float *hf = (float *)malloc((n + offset) * 4);
    for (int64_t i = 0; i < n + offset; ++i) {
        hi[i] = (int32_t)rnd();
        hf[i] = (float)((rnd() >> 11) * (1.0 / 9007199254740992.0));
    }
    void *di, *df, *oi, *of;
    CHECK(cudaMalloc(&di, (n + offset) * 4));
    CHECK(cudaMalloc(&df, (n + offset) * 4));
    CHECK(cudaMalloc(&oi, rows * 4));
    CHECK(cudaMalloc(&of, rows * 4));
    CHECK(cudaMemcpy(di, hi, (n + offset) * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(df, hf, (n + offset) * 4, cudaMemcpyHostToDevice));
    gs_reduce_desc d;
    d.in = (int32_t *)di + offset;
    d.out = oi;
    d.rows = rows;
    d.row_len = row_len;
    d.in_type = d.out_type = GS_INT32;
    d.op = GS_OP_ADD;
    run_reduce(&d);
    d.in = (float *)df + offset;
    d.out = of;
    d.in_type = d.out_type = GS_FLOAT32;
    run_reduce(&d);
    uint32_t *ri = (uint32_t *)malloc(rows * 4);
    float *rf = (float *)malloc(rows * 4);
    CHECK(cudaMemcpy(ri, oi, rows * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(rf, of, rows * 4, cudaMemcpyDeviceToHost));
    int bad = 0;
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
        uint32_t si = 0;
        long double sf = 0, sa = 0;
        for (int64_t j = 0; j < row_len; ++j) {
            si += (uint32_t)hi[offset + r * row_len + j];
            sf += hf[offset + r * row_len + j];
            sa += fabsl((long double)hf[offset + r * row_len + j]);
        }
        bad += si != ri[r];
        double e = (double)(fabsl((long double)rf[r] - sf) / (sa * 1.1920929e-07L));
        if (e > worst)
            worst = e;
    }
    double bound = log2((double)row_len) + 2;
    int ok = !bad && worst <= bound;
    printf("%-5s reduce rows=%-6lld row_len=%-9lld offset=%d  int32 mismatches %d, float32 max err "
           "%.2f eps*sum|x| (bound %.0f)\n",
           ok ? "ok" : "FAIL", (long long)rows, (long long)row_len, offset, bad, worst, bound);
    failures += !ok;
    CHECK(cudaFree(di));
    CHECK(cudaFree(df));
    CHECK(cudaFree(oi));
    CHECK(cudaFree(of));
    free(hi);
    free(hf);
    free(ri);
    free(rf);
}

static float time_reduce(gs_reduce_desc *d, int reps)
{
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int r = 0; r < 3; ++r)
        run_reduce(d);
    float best = 1e30f, t;
    float *ts = (float *)malloc(reps * sizeof(float));
    for (int r = 0; r < reps; ++r) {
        CHECK(cudaEventRecord(a, 0));
        run_reduce(d);
        CHECK(cudaEventRecord(b, 0));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaEventElapsedTime(&t, a, b));
        ts[r] = t;
        best = t < best ? t : best;
    }
    for (int i = 1; i < reps; ++i)
        for (int j = i; j > 0 && ts[j] < ts[j - 1]; --j) {
            float x = ts[j];
            ts[j] = ts[j - 1];
            ts[j - 1] = x;
        }
    float med = ts[reps / 2];
    free(ts);
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return med;
}

static float time_ms(gs_scan_desc *d, void *src, void *dst, size_t bytes, int reps)
{
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int r = 0; r < 3; ++r) {
        if (d)
            run_scan(d);
        else
            CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0));
    }
    float *t = (float *)malloc(reps * sizeof(float));
    for (int r = 0; r < reps; ++r) {
        CHECK(cudaEventRecord(a, 0));
        if (d)
            run_scan(d);
        else
            CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0));
        CHECK(cudaEventRecord(b, 0));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaEventElapsedTime(&t[r], a, b));
    }
    for (int i = 1; i < reps; ++i) /* insertion sort for the median */
        for (int j = i; j > 0 && t[j] < t[j - 1]; --j) {
            float x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    float med = t[reps / 2];
    free(t);
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return med;
}

static void bench(int lg)
{
    int64_t n = (int64_t)1 << lg;
    void *in, *out;
    CHECK(cudaMalloc(&in, n * 8));
    CHECK(cudaMalloc(&out, n * 8));
    CHECK(cudaMemset(in, 1, n * 8));
    int reps = lg >= 26 ? 20 : 100;
    float mc4 = time_ms(NULL, in, out, n * 4, reps);
    float mc8 = time_ms(NULL, in, out, n * 8, reps);
    struct {
        const char *name;
        gs_dtype in, out;
        gs_op op;
        int excl;
    } cases[] = {
        { "add i32", GS_INT32, GS_INT32, GS_OP_ADD, 0 },
        { "add f32", GS_FLOAT32, GS_FLOAT32, GS_OP_ADD, 0 },
        { "max i32", GS_INT32, GS_INT32, GS_OP_MAX, 0 },
        { "min f32", GS_FLOAT32, GS_FLOAT32, GS_OP_MIN, 0 },
        { "excl i32", GS_INT32, GS_INT32, GS_OP_ADD, 1 },
        { "add i32->i64", GS_INT32, GS_INT64, GS_OP_ADD, 0 },
        { "add i64", GS_INT64, GS_INT64, GS_OP_ADD, 0 },
    };
    printf("n=2^%d memcpy4 %.4f ms %.0f GB/s | memcpy8 %.4f ms %.0f GB/s\n", lg, mc4,
           2.0 * n * 4 / mc4 / 1e6, mc8, 2.0 * n * 8 / mc8 / 1e6);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        gs_scan_desc d;
        memset(&d, 0, sizeof d);
        d.in = in;
        d.out = out;
        d.n = n;
        d.in_type = cases[c].in;
        d.out_type = cases[c].out;
        d.op = cases[c].op;
        d.exclusive = cases[c].excl;
        float ms = time_ms(&d, NULL, NULL, 0, reps);
        double bytes = (double)n * (gs_dtype_size(d.in_type) + gs_dtype_size(d.out_type));
        double gbs = bytes / ms / 1e6, ref = 2.0 * n * 4 / mc4 / 1e6;
        printf("   %-14s %.4f ms %7.0f GB/s  %5.1f%% of memcpy\n", cases[c].name, ms, gbs,
               100.0 * gbs / ref);
    }
    if (lg >= 24) {
        /* Issue 3: segmented scan with uint8 flags (one head per ~1000) beside the plain scan;
         * reductions against memcpy counted as bytes read. */
        uint8_t *hflags = (uint8_t *)malloc(n);
        for (int64_t i = 0; i < n; ++i)
            hflags[i] = (rnd() % 1000) == 0;
        void *dflags;
        CHECK(cudaMalloc(&dflags, n));
        CHECK(cudaMemcpy(dflags, hflags, n, cudaMemcpyHostToDevice));
        gs_scan_desc d;
        memset(&d, 0, sizeof d);
        d.in = in;
        d.out = out;
        d.n = n;
        d.in_type = d.out_type = GS_INT32;
        d.op = GS_OP_ADD;
        float plain = time_ms(&d, NULL, NULL, 0, reps);
        d.flags = dflags;
        d.flag_type = GS_UINT8;
        float seg = time_ms(&d, NULL, NULL, 0, reps);
        printf("   segscan i32 u8 flags %.4f ms  (plain scan %.4f ms, ratio %.2f)\n", seg, plain,
               seg / plain);
        gs_reduce_desc r;
        r.in = in;
        r.out = out;
        r.rows = 1;
        r.row_len = n;
        r.op = GS_OP_ADD;
        const char *names[2] = { "reduce f32", "reduce i32" };
        gs_dtype types[2] = { GS_FLOAT32, GS_INT32 };
        for (int k = 0; k < 2; ++k) {
            r.in_type = r.out_type = types[k];
            float ms = time_reduce(&r, reps);
            double gbs = 4.0 * n / ms / 1e6, ref = 2.0 * n * 4 / mc4 / 1e6;
            printf("   %-14s %.4f ms %7.0f GB/s  %5.1f%% of memcpy (bytes read)\n", names[k], ms,
                   gbs, 100.0 * gbs / ref);
        }
        if (lg == 28) {
            r.rows = 4096;
            r.row_len = n / 4096;
            r.in_type = r.out_type = GS_FLOAT32;
            float ms = time_reduce(&r, reps);
            double gbs = 4.0 * n / ms / 1e6, ref = 2.0 * n * 4 / mc4 / 1e6;
            printf("   %-14s %.4f ms %7.0f GB/s  %5.1f%% of memcpy (bytes read)\n",
                   "rowsum f32 4096x65536", ms, gbs, 100.0 * gbs / ref);
        }
        CHECK(cudaFree(dflags));
        free(hflags);
    }
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
}

int main(int argc, char **argv)
{
    int max_lg = argc > 1 ? atoi(argv[1]) : 28;
    int bench_only = argc > 2;
    int min_lg = argc > 3 ? atoi(argv[3]) : 20; /* first size timed with "bench" (profiling) */
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs, NT=%d VT=%d NV=%d\n", prop.name, prop.multiProcessorCount, GS_NT, GS_VT,
           GS_NV);
    int64_t sizes[] = {
        1, 31, 33, GS_NV - 1, GS_NV, GS_NV + 1, 37 * GS_NV + 5, (1 << 20) + 17, (int64_t)1 << 24
    };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && !bench_only; ++s) {
        int64_t n = sizes[s];
        check_int(n, GS_OP_ADD, 0, 0, 0, 0);
        check_int(n, GS_OP_ADD, 1, 0, 0, 0);
        check_int(n, GS_OP_MAX, 0, 0, 0, 0);
        check_int(n, GS_OP_MAX, 1, 0, 0, 1 - 1);
        check_int(n, GS_OP_ADD, 0, 0, 0, 1);
        check_int(n, GS_OP_ADD, 1, 0, 0, 1);
        if (n > 100) {
            check_int(n, GS_OP_ADD, 0, 1000, 0, 0);
            check_int(n, GS_OP_ADD, 1, 7, 0, 1);
            check_int(n, GS_OP_ADD, 0, GS_NV, 0, 0);
            check_int(n, GS_OP_ADD, 1, 0, 1000, 0);
            check_int(n, GS_OP_MAX, 0, 0, 3, 0);
            check_int(n, GS_OP_ADD, 0, 0, 1000000, 1);
        }
    }
    if (!bench_only) {
        check_reduce(1, 1, 0);
        check_reduce(1, 65535, 1);
        check_reduce(1, 65536, 0);
        check_reduce(1, 65537, 0);
        check_reduce(1, 3 * 65536 + 5, 3);
        check_reduce(1000, 7, 0);
        check_reduce(64, 70000, 0);
        check_reduce(3, 1 << 22, 0);
        check_reduce(1, 1 << 26, 0);
        check_float((int64_t)3 << 20, 0);
        check_float((int64_t)1 << 24, 0);
        check_float((int64_t)1 << 24, 1);
        check_float_mul(3 * GS_NV + 5);
        check_float_mul(40 * GS_NV + 5);
        check_float_mul(300 * GS_NV + 5);
        check_float_mul((int64_t)1 << 24);
        if (max_lg >= 28)
            check_float((int64_t)1 << 28, 0);
    }
    for (int lg = bench_only ? min_lg : 16; lg <= max_lg; lg += bench_only ? 4 : 2)
        bench(lg);
    printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
    return failures != 0;
}
