/*
 * hist_check.cu - a standalone check of the histogram kernels, without Python: counts against
 * the host's own bins (gs_hist_bin of gpuscan/hist_bin.h, which the CPU backend uses) and device
 * times against cudaMemcpy device-to-device of the same bytes (% of memcpy: the histogram's bytes
 * read per second over the copy's bytes read + written per second), for the cases of issue 4's
 * goals. A tuning tool: the kernels' compile-time sizes (GS_HIST_NT, GS_HIST_UNROLL, ...) can be
 * set with -D to compare variants in one session.
 *
 * Build and run on a GPU machine:
 *   nvcc -O3 -std=c++17 -DGS_HAVE_CUDA -Ikernels -Iinclude -arch=sm_90 tools/hist_check.cu \
 *        kernels/dispatch/hist.cu kernels/dispatch/launch.cu -o /tmp/hist_check && /tmp/hist_check
 * [log2 n, default 28]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuscan/backend_api.h"
#include "gpuscan/config.h"
#include "check_common.h"
#include "gpuscan/hist_bin.h"

static int failures = 0;
/* The device word gs_launch_hist's block 0 flags its zeroed result in, and the last epoch. */
static unsigned long long *ready_word, epoch;

static cudaError_t launch(const gs_hist_desc *d)
{
    if (ready_word == NULL) {
        CHECK(cudaMalloc(&ready_word, sizeof(*ready_word)));
        CHECK(cudaMemset(ready_word, 0, sizeof(*ready_word)));
    }
    return gs_launch_hist(d, ready_word, ++epoch, 0);
}

/* Median device time (ms) of `reps` runs of the histogram, or of the copy when d is NULL. */
static float time_ms(const gs_hist_desc *d, void *dst, const void *src, size_t bytes)
{
    enum { REPS = 15 };
    float t[REPS];
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int r = -2; r < REPS; r++) {
        CHECK(cudaEventRecord(a, 0));
        if (d != NULL)
            CHECK(launch(d));
        else
            CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0));
        CHECK(cudaEventRecord(b, 0));
        CHECK(cudaEventSynchronize(b));
        if (r >= 0)
            CHECK(cudaEventElapsedTime(&t[r], a, b));
    }
    for (int i = 1; i < REPS; i++) /* insertion sort: the median */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            float s = t[j];
            t[j] = t[j - 1];
            t[j - 1] = s;
        }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return t[REPS / 2];
}

/* Equal-width float32 edges over [0, 1), with the fraction window gpuscan/hist_bin.h's setup gives
 * them and the float32 fields set as csrc/ops/hist.c sets them. */
static float *uniform_f32(gs_hist_desc *d, int64_t nb)
{
    float *e = (float *)malloc((size_t)(nb + 1) * sizeof(float));
    for (int64_t k = 0; k <= nb; k++)
        e[k] = (float)((double)k / (double)nb);
    d->mode = GS_HIST_UNIFORM;
    d->edge_type = GS_FLOAT32;
    gs_hist_uniform_setup_f32(e, nb, d);
    d->first = e[0];
    d->first_f = e[0];
    d->scale_f = (float)d->scale;
    d->fast_lo_f = (float)d->fast_lo;
    d->fast_hi_f = (float)d->fast_hi;
    d->lo.f = e[0];
    d->hi.f = e[nb];
    d->lo_f = e[0];
    d->hi_f = e[nb];
    return e;
}

/* One case: `bytes` of random input of type t on the device, bins per d's mode. */
static void run_case(const char *name, gs_dtype t, int64_t n, int64_t nb, gs_hist_mode mode,
                     gs_hist_method method, void *copy_dst)
{
    const size_t size = gs_dtype_size(t), bytes = (size_t)n * size;
    unsigned char *h_in = (unsigned char *)malloc(bytes);
    for (int64_t i = 0; i < n; i++) {
        const uint64_t r = rnd();
        if (t == GS_FLOAT32) {
            float f = (float)(r >> 40) / 16777216.0f; /* [0, 1) */
            memcpy(h_in + i * 4, &f, 4);
        } else if (t == GS_INT32) {
            int32_t v = (int32_t)(r % (uint64_t)nb);
            memcpy(h_in + i * 4, &v, 4);
        } else {
            h_in[i] = (unsigned char)r;
        }
    }
    gs_hist_desc d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.in_type = t;
    d.nbins = nb;
    d.method = method;
    float *edges = NULL;
    int32_t table[256];
    void *d_edges = NULL;
    size_t edge_bytes = 0;
    if (mode == GS_HIST_UNIFORM) {
        edges = uniform_f32(&d, nb);
        edge_bytes = (size_t)(nb + 1) * 4;
    } else if (mode == GS_HIST_TABLE) {
        for (int k = 0; k < 256; k++)
            table[k] = k % (int)nb;
        d.mode = GS_HIST_TABLE;
        edge_bytes = sizeof table;
    } else {
        d.mode = GS_HIST_INDEX;
    }
    void *d_in, *d_out;
    CHECK(cudaMalloc(&d_in, bytes));
    CHECK(cudaMalloc(&d_out, (size_t)nb * 8));
    CHECK(cudaMemcpy(d_in, h_in, bytes, cudaMemcpyHostToDevice));
    if (edge_bytes) {
        CHECK(cudaMalloc(&d_edges, edge_bytes));
        CHECK(cudaMemcpy(d_edges, edges != NULL ? (void *)edges : (void *)table, edge_bytes,
                         cudaMemcpyHostToDevice));
    }
    d.in = d_in;
    d.out = d_out;
    d.edges = d_edges;

    /* ---- Counts against the host's bins (gs_hist_bin, the CPU backend's function). ---- */
    CHECK(launch(&d));
    CHECK(cudaDeviceSynchronize());
    uint64_t *got = (uint64_t *)malloc((size_t)nb * 8), *want = (uint64_t *)calloc(nb, 8);
    CHECK(cudaMemcpy(got, d_out, (size_t)nb * 8, cudaMemcpyDeviceToHost));
    gs_hist_desc hd = d;
    hd.edges = edges != NULL ? (const void *)edges : (const void *)table;
    for (int64_t i = 0; i < n; i++) {
        int64_t bin;
        if (t == GS_FLOAT32) {
            float f;
            memcpy(&f, h_in + i * 4, 4);
            bin = gs_hist_bin(&hd, 'f', mode, GS_FLOAT32, 0, 0, (double)f);
        } else if (t == GS_INT32) {
            int32_t v;
            memcpy(&v, h_in + i * 4, 4);
            bin = gs_hist_bin(&hd, 'i', mode, GS_INT64, v, 0, 0.0);
        } else {
            bin = gs_hist_bin(&hd, 'u', mode, GS_INT32, 0, h_in[i], 0.0);
        }
        if (bin >= 0)
            want[bin]++;
    }
    const int ok = memcmp(got, want, (size_t)nb * 8) == 0;
    failures += !ok;

    gs_hist_launch last;
    gs_launch_hist_last(&last);
    const float ms = time_ms(&d, NULL, NULL, 0);
    const float mc = time_ms(NULL, copy_dst, d_in, bytes);
    printf("%-28s n=2^%-3d %8.4f ms  %7.1f GB/s  %5.1f%% memcpy  (memcpy %.4f ms)  shared=%d "
           "slices=%lld replicas=%d blocks=%lld smem=%lld  %s\n",
           name, (int)log2((double)n), ms, bytes / ms / 1e6,
           100.0 * (bytes / ms) / (2.0 * bytes / mc), mc, last.shared, (long long)last.slices,
           last.replicas, (long long)last.blocks, (long long)last.smem_bytes,
           ok ? "ok" : "FAIL (counts differ)");
    fflush(stdout);
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    if (d_edges)
        CHECK(cudaFree(d_edges));
    free(h_in);
    free(got);
    free(want);
    free(edges);
}

int main(int argc, char **argv)
{
    const int lg = argc > 1 ? atoi(argv[1]) : 28;
    const int64_t n = (int64_t)1 << lg;
    void *copy_dst;
    CHECK(cudaMalloc(&copy_dst, (size_t)n * 4));
    printf("hist_check: GS_HIST_NT %d, GS_HIST_UNROLL %d, GS_HIST_MIN_BLOCKS %d\n", GS_HIST_NT,
           GS_HIST_UNROLL, GS_HIST_MIN_BLOCKS);
    run_case("f32 256 bins", GS_FLOAT32, n, 256, GS_HIST_UNIFORM, GS_HIST_AUTO, copy_dst);
    run_case("f32 4096 bins", GS_FLOAT32, n, 4096, GS_HIST_UNIFORM, GS_HIST_AUTO, copy_dst);
    run_case("f32 65536 bins", GS_FLOAT32, n, 65536, GS_HIST_UNIFORM, GS_HIST_AUTO, copy_dst);
    run_case("f32 65536 bins global", GS_FLOAT32, n, 65536, GS_HIST_UNIFORM, GS_HIST_GLOBAL,
             copy_dst);
    run_case("u8 256 bins (table)", GS_UINT8, n, 256, GS_HIST_TABLE, GS_HIST_AUTO, copy_dst);
    run_case("i32 bincount 1000", GS_INT32, n, 1000, GS_HIST_INDEX, GS_HIST_AUTO, copy_dst);
    CHECK(cudaFree(copy_dst));
    printf("%s\n", failures ? "FAILURES" : "all counts ok");
    return failures != 0;
}
