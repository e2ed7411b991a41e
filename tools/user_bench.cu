/*
 * tools/user_bench.cu - the kernels of an operator you write (kernels/agent/user.cuh) timed and
 * checked alone, without the Python package, for one or more versions of user.cuh side by
 * side: each is compiled by NVRTC exactly as gpuscan compiles it (cuda/nvrtc_source.h's
 * prelude, options and layout; include/gpuscan/user_params.h as it is in the tree) and
 * launched as csrc/cuda/user.c launches the scan (a persistent grid of twice the resident
 * blocks, three tile buffers where they fit).  Five operators: float32 add, affine float32
 * pairs {a, b} and Kadane's record of four int64 as benchmarks/bench_operator.py has them, and,
 * for the other block scan widths, 2x2 uint32 matrix products (16 bytes) and a pair of Kadane
 * records (64).  Each
 * version's results are checked against a host loop (n and n - 5 values), then the kernel is
 * timed by CUDA events (median of 20-50 launches, two rounds, versions in turn) beside the same
 * job's cudaMemcpyAsync of the same bytes:
 *
 *     nvcc -O2 -std=c++17 -Iinclude -Icsrc tools/user_bench.cu -lnvrtc -o user_bench
 *     ./user_bench [options] A/user.cuh [B/user.cuh ...]     (from the repository's root)
 *       --cases=012    which operators (0 add, 1 affine, 2 Kadane, 3 2x2 matrices, 4 two
 *                      Kadane records; default 012)
 *       --sizes=24,28  log2 of n (at most 26 for 32 bytes a value and more)
 *       --check-only   no timing (compute-sanitizer runs)
 *       --compile-only NVRTC alone, no GPU
 *       --lineinfo     -lineinfo (ncu's source view)
 *       --nbuf=N --grid=G   tile buffers (3 or 2), grid as G x the resident blocks (2)
 *
 * Prints one line per check and per timing round; exits 1 if a check fails, 2 on an error.
 * Level: tool (host code; the kernels are the product's).
 */
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/nvrtc_source.h"
#include "gpuscan/user_params.h"

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

static struct {
    const char *cases = "012", *sizes = "24,28";
    int check_only = 0, compile_only = 0, lineinfo = 0, nbuf = 3, grid = 2;
} opt;

static std::string slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    std::string s;
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        s.append(buf, k);
    fclose(f);
    return s;
}

struct Case {
    const char *name, *decl, *combine;
    int size;
};

static const Case cases[] = {
    {"add f32", "typedef float T;\n", "x + y", 4},
    {"affine f32", "typedef struct {\n float a;\n float b;\n} T;\n",
     "T r; r.a = x.a * y.a; r.b = y.a * x.b + y.b; return r;", 8},
    {"kadane i64x4", "typedef struct {\n int64_t t;\n int64_t p;\n int64_t s;\n int64_t b;\n} T;\n",
     "T r;\nr.t = x.t + y.t;\nr.p = x.p > x.t + y.p ? x.p : x.t + y.p;\nr.s = y.s > x.s + y.t ? "
     "y.s : x.s + y.t;\nr.b = x.b > y.b ? x.b : y.b;\nif (x.s + y.p > r.b) r.b = x.s + y.p;\nreturn r;",
     32},
    {"mat2 u32", "typedef struct {\n uint32_t a;\n uint32_t b;\n uint32_t c;\n uint32_t d;\n} T;\n",
     "T r;\nr.a = x.a * y.a + x.b * y.c;\nr.b = x.a * y.b + x.b * y.d;\nr.c = x.c * y.a + x.d * y.c;\n"
     "r.d = x.c * y.b + x.d * y.d;\nreturn r;",
     16},
    {"kadane2 i64x8", "typedef struct {\n int64_t t;\n int64_t p;\n int64_t s;\n int64_t b;\n} K;\n"
     "typedef struct {\n K u;\n K v;\n} T;\n",
     "#define GS_KADANE(o, a, c) \\\n"
     "    o.t = a.t + c.t; \\\n"
     "    o.p = a.p > a.t + c.p ? a.p : a.t + c.p; \\\n"
     "    o.s = c.s > a.s + c.t ? c.s : a.s + c.t; \\\n"
     "    o.b = a.b > c.b ? a.b : c.b; \\\n"
     "    if (a.s + c.p > o.b) o.b = a.s + c.p;\n"
     "T r;\nGS_KADANE(r.u, x.u, y.u)\nGS_KADANE(r.v, x.v, y.v)\nreturn r;",
     64},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

/* The cubin of case c's scan kernel from the agent's text, as cuda/nvrtc.c compiles it. */
static std::vector<char> compile(const std::string &agent, const std::string &params,
                                 const Case &c, int sm)
{
    const int expression = strstr(c.combine, "return") == NULL;
    char *src;
    if (asprintf(&src, GS_NVRTC_SOURCE, gs_nvrtc_prelude, GS_USER_SCAN, c.decl,
                 expression ? "    return (" : "", c.name, c.combine, expression ? ");" : "") < 0)
        exit(2);
    const char *hs[2] = {agent.c_str(), params.c_str()};
    const char *hn[2] = {"agent/user.cuh", "gpuscan/user_params.h"};
    nvrtcProgram p;
    nvrtcCreateProgram(&p, src, "operator.cu", 2, hs, hn);
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d", sm);
    const char *opts[GS_NVRTC_NOPTIONS + 2];
    int no = 0;
    for (; no < GS_NVRTC_NOPTIONS; no++)
        opts[no] = gs_nvrtc_options[no];
    opts[no++] = arch;
    if (opt.lineinfo)
        opts[no++] = "-lineinfo";
    const nvrtcResult r = nvrtcCompileProgram(p, no, opts);
    if (r != NVRTC_SUCCESS) {
        size_t ls;
        nvrtcGetProgramLogSize(p, &ls);
        std::string log(ls, 0);
        nvrtcGetProgramLog(p, &log[0]);
        fprintf(stderr, "%s did not compile:\n%s\n", c.name, log.c_str());
        exit(2);
    }
    size_t cs;
    nvrtcGetCUBINSize(p, &cs);
    std::vector<char> cubin(cs);
    nvrtcGetCUBIN(p, cubin.data());
    nvrtcDestroyProgram(&p);
    free(src);
    return cubin;
}

struct Prog {
    cudaKernel_t k;
    int smem, resident;
};

/* Loaded and fitted as cuda/nvrtc.c's nvrtc_fit does (opt.nbuf tile buffers at most). */
static Prog build(const std::string &agent, const std::string &params, const Case &c, int sm)
{
    std::vector<char> cubin = compile(agent, params, c, sm);
    cudaLibrary_t lib;
    Prog g;
    CK(cudaLibraryLoadData(&lib, cubin.data(), NULL, NULL, 0, NULL, NULL, 0));
    CK(cudaLibraryGetKernel(&g.k, lib, "gs_user_scan"));
    int optin, sms, per;
    cudaFuncAttributes fa;
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaFuncGetAttributes(&fa, (const void *)g.k));
    const int tile = GS_USER_TILE_BYTES(c.size);
    g.smem = 0;
    for (int nb = opt.nbuf; nb >= 2 && g.smem == 0; nb--)
        if ((size_t)nb * tile + fa.sharedSizeBytes <= (size_t)optin)
            g.smem = nb * tile;
    CK(cudaFuncSetAttribute((const void *)g.k, cudaFuncAttributeMaxDynamicSharedMemorySize, g.smem));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, (const void *)g.k, GS_USER_NT, g.smem));
    g.resident = per * sms;
    printf("  %s: %d registers, %zu + %d bytes of shared memory, %d blocks an SM\n", c.name,
           fa.numRegs, fa.sharedSizeBytes, g.smem, per);
    return g;
}

static void *scratch; /* zeroed once: the counter; the slots are tagged with each launch's epoch */
static unsigned epoch = 1;

static void run(const Prog &g, const Case &c, const void *in, void *out, int64_t n)
{
    const int64_t nv = (int64_t)GS_USER_NT * GS_USER_VT(c.size);
    const int64_t tiles = (n + nv - 1) / nv;
    gs_user_scan_params p;
    memset(&p, 0, sizeof p);
    p.in = in;
    p.out = out;
    p.n = n;
    p.counter = (unsigned *)scratch;
    p.aggregates = (char *)scratch + 128;
    p.prefixes = (char *)p.aggregates + (size_t)tiles * GS_USER_SLOT(c.size);
    p.epoch = epoch++;
    p.nbuf = g.smem / GS_USER_TILE_BYTES(c.size);
    const int64_t most = (int64_t)opt.grid * g.resident;
    void *args[1] = {&p};
    CK(cudaLaunchKernel((const void *)g.k, dim3((unsigned)(tiles < most ? tiles : most)),
                        dim3(GS_USER_NT), args, (size_t)g.smem, 0));
}

template <class F> static double median_ms(F f, int reps)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int i = 0; i < 3; i++)
        f();
    for (int i = 0; i < reps; i++) {
        float ms;
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

struct Kad {
    long long t, p, s, b;
};

static Kad kadane(Kad x, Kad y)
{
    return Kad{x.t + y.t, std::max(x.p, x.t + y.p), std::max(y.s, x.s + y.t),
               std::max(std::max(x.b, y.b), x.s + y.p)};
}

/* n values of case ci: add's in [0, 1); affine's a in (0.9, 1) and b in [0, 1) (as
 * bench_apps'); Kadane's one value in [-1000, 1000] a record; the matrices' random words. */
static void fill(int ci, int64_t n, std::vector<char> &h)
{
    std::mt19937_64 rng(42 + ci);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    h.resize((size_t)n * cases[ci].size);
    float *x = (float *)h.data();
    Kad *k = (Kad *)h.data();
    uint32_t *w = (uint32_t *)h.data();
    for (int64_t i = 0; i < n; i++) {
        if (ci == 3) {
            for (int j = 0; j < 4; j++)
                w[4 * i + j] = (uint32_t)rng();
        } else if (ci == 4) {
            for (int j = 0; j < 2; j++) {
                const long long v = (long long)(rng() % 2001) - 1000;
                k[2 * i + j] = Kad{v, v, v, v};
            }
        } else if (ci == 0) {
            x[i] = u(rng);
        } else if (ci == 1) {
            x[2 * i] = 0.9f + 0.1f * u(rng);
            x[2 * i + 1] = u(rng);
        } else {
            const long long v = (long long)(rng() % 2001) - 1000;
            k[i] = Kad{v, v, v, v};
        }
    }
}

/* Whether o holds the scan of h's first n values: add within the float bound of SPEC.md,
 * affine within 1e-3 of a double loop, the others exactly. */
static bool check(int ci, int64_t n, const std::vector<char> &h, const std::vector<char> &o)
{
    int64_t bad = 0;
    const double bound = (std::log2((double)n) + 2) * 1.19e-7; /* float32 eps */
    const float *x = (const float *)h.data(), *y = (const float *)o.data();
    double s = 0;
    Kad r = *(const Kad *)h.data(), r2 = ((const Kad *)h.data())[1];
    const uint32_t *mw = (const uint32_t *)h.data();
    uint32_t m[4] = {mw[0], mw[1], mw[2], mw[3]};
    for (int64_t i = 0; i < n && bad < 3; i++) {
        bool ok;
        if (ci == 3) {
            if (i > 0) {
                const uint32_t *q = mw + 4 * i;
                const uint32_t t[4] = {m[0] * q[0] + m[1] * q[2], m[0] * q[1] + m[1] * q[3],
                                       m[2] * q[0] + m[3] * q[2], m[2] * q[1] + m[3] * q[3]};
                memcpy(m, t, sizeof m);
            }
            ok = memcmp(m, (const uint32_t *)o.data() + 4 * i, sizeof m) == 0;
        } else if (ci == 4) {
            if (i > 0) {
                r = kadane(r, ((const Kad *)h.data())[2 * i]);
                r2 = kadane(r2, ((const Kad *)h.data())[2 * i + 1]);
            }
            ok = memcmp(&r, (const Kad *)o.data() + 2 * i, sizeof r) == 0 &&
                 memcmp(&r2, (const Kad *)o.data() + 2 * i + 1, sizeof r2) == 0;
        } else if (ci == 0) {
            s += x[i];
            ok = std::fabs(y[i] - s) <= bound * s;
        } else if (ci == 1) {
            s = x[2 * i] * s + x[2 * i + 1];
            ok = std::fabs(y[2 * i + 1] - s) <= 1e-3 * (1 + s);
        } else {
            if (i > 0)
                r = kadane(r, ((const Kad *)h.data())[i]);
            ok = memcmp(&r, (const Kad *)o.data() + i, sizeof r) == 0;
        }
        if (!ok && bad++ < 3)
            printf("    %s differs at %lld\n", cases[ci].name, (long long)i);
    }
    return bad == 0;
}

int main(int argc, char **argv)
{
    std::vector<const char *> files;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--cases=", 8))
            opt.cases = a + 8;
        else if (!strncmp(a, "--sizes=", 8))
            opt.sizes = a + 8;
        else if (!strcmp(a, "--check-only"))
            opt.check_only = 1;
        else if (!strcmp(a, "--compile-only"))
            opt.compile_only = 1;
        else if (!strcmp(a, "--lineinfo"))
            opt.lineinfo = 1;
        else if (!strncmp(a, "--nbuf=", 7))
            opt.nbuf = atoi(a + 7);
        else if (!strncmp(a, "--grid=", 7))
            opt.grid = atoi(a + 7);
        else if (a[0] == '-') {
            fprintf(stderr, "unknown option %s (the file's header lists them)\n", a);
            return 2;
        } else
            files.push_back(a);
    }
    if (files.empty() || opt.nbuf < 2 || opt.nbuf > 3 || opt.grid < 1) {
        fprintf(stderr, "usage: user_bench [options] user.cuh [user.cuh ...]\n");
        return 2;
    }
    const std::string params = slurp("include/gpuscan/user_params.h");
    std::vector<std::string> agents;
    for (const char *f : files)
        agents.push_back(slurp(f));
    if (opt.compile_only) {
        for (size_t v = 0; v < agents.size(); v++)
            for (int ci = 0; ci < NCASES; ci++)
                if (strchr(opt.cases, '0' + ci)) {
                    compile(agents[v], params, cases[ci], 90);
                    printf("compiled %s: %s\n", files[v], cases[ci].name);
                }
        return 0;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaMalloc(&scratch, (size_t)1 << 30));
    CK(cudaMemset(scratch, 0, (size_t)1 << 30));
    printf("%s, versions:", prop.name);
    for (size_t v = 0; v < files.size(); v++)
        printf(" v%zu %s", v, files[v]);
    printf("\n");
    int failed = 0;
    for (int ci = 0; ci < NCASES; ci++) {
        if (!strchr(opt.cases, '0' + ci))
            continue;
        std::vector<Prog> progs;
        for (const std::string &a : agents)
            progs.push_back(build(a, params, cases[ci], prop.major * 10 + prop.minor));
        for (int lg = 10; lg <= 30; lg++) {
            const std::string l = std::to_string(lg);
            const char *at = strstr(opt.sizes, l.c_str());
            if (!at || (at[l.size()] != ',' && at[l.size()] != '\0') || (cases[ci].size >= 32 && lg > 26))
                continue;
            const int64_t n = (int64_t)1 << lg;
            const size_t bytes = (size_t)n * cases[ci].size;
            std::vector<char> h, o(bytes);
            fill(ci, n, h);
            void *din, *dout;
            CK(cudaMalloc(&din, bytes));
            CK(cudaMalloc(&dout, bytes));
            CK(cudaMemcpy(din, h.data(), bytes, cudaMemcpyHostToDevice));
            for (size_t v = 0; v < progs.size(); v++) {
                for (int64_t m : {n, n - 5}) {
                    CK(cudaMemset(dout, 0, bytes));
                    run(progs[v], cases[ci], din, dout, m);
                    CK(cudaDeviceSynchronize());
                    CK(cudaMemcpy(o.data(), dout, bytes, cudaMemcpyDeviceToHost));
                    const bool ok = check(ci, m, h, o);
                    failed |= !ok;
                    printf("  check %s n = 2^%d%s v%zu: %s\n", cases[ci].name, lg,
                           m < n ? " - 5" : "", v, ok ? "ok" : "WRONG");
                }
            }
            const int reps = lg >= 28 ? 20 : 50;
            for (int round = 0; round < (opt.check_only ? 0 : 2); round++) {
                const double mc = median_ms(
                    [&] { CK(cudaMemcpyAsync(dout, din, bytes, cudaMemcpyDeviceToDevice, 0)); },
                    reps);
                printf("  %-13s 2^%d round %d: memcpy %.4f ms", cases[ci].name, lg, round, mc);
                for (size_t v = 0; v < progs.size(); v++) {
                    const double t = median_ms([&] { run(progs[v], cases[ci], din, dout, n); }, reps);
                    printf(" | v%zu %.4f ms %.1f%%", v, t, 100 * mc / t);
                }
                printf("\n");
            }
            CK(cudaFree(din));
            CK(cudaFree(dout));
        }
    }
    return failed;
}
