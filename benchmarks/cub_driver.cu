// benchmarks/cub_driver.cu - CUB's times for the primitives gpuscan is measured against (issue 16).
//
// Level: benchmark tool, never part of the product (CUB is allowed here, not in gpuscan).
// bench_cub.py builds it with the toolkit's nvcc, runs it in the same job as gpuscan's timings
// and passes it harness.py's timing policy, so both sides are timed the same way:
//
//     nvcc -O3 -std=c++17 -arch=sm_90 benchmarks/cub_driver.cu -o /tmp/cub_driver
//     /tmp/cub_driver [--target-ms=20] [--samples=30] ... [--no-rows] [--only=sort,seg] [log2n ...]
//
// log2n defaults to 16 20 24 28 (at most 30: CUB is called with int sizes).  For each size and
// case: buffers of random inputs rotated over sets whose total exceeds rotate-l2 times the L2
// cache (so no call finds its input there), CUB's scratch allocated once per (case, size)
// outside the timed region, every call on the legacy default stream; warm-up, then an estimate
// of one call decides the repetitions, timed as CUDA-event-bracketed batches, median per call.
// At the smallest size each case is checked once against the host before it is timed.
//
// Cases (the names bench_cub.py maps to its own):
//   memcpy         cudaMemcpyAsync D2D of n 4-byte values: the reference
//   scan_i32/f32   cub::DeviceScan::InclusiveSum
//   segscan_i32    cub::DeviceScan::InclusiveSumByKey, int32 keys = segment ids, segments of 1000
//   reduce_f32/i32 cub::DeviceReduce::Sum
//   hist256_f32    cub::DeviceHistogram::HistogramEven, 256 bins over [0, 1), input in [0, 1)
//   hist4096_f32   the same with 4096 bins
//   split_i32      cub::DevicePartition::Flagged, int32 values, uint8 flags (half set), the count
//                  written to device memory.  CUB's partition puts the flagged values first in
//                  order and the others after them in *reverse* order; gpuscan.split keeps both
//                  groups in order.  The traffic is the same.
//   split_i32_host the same call, then its count copied to page-locked host memory
//                  (cudaMemcpyAsync) and waited for (cudaStreamSynchronize): the work of
//                  gpuscan.split, whose count is a Python int.  The next call is launched only
//                  after the wait, so the device idles in between, as it does between splits.
//   sortkeys_u32/i32/f32/i64/f64  cub::DeviceRadixSort::SortKeys, every key bit (integers of
//                  the whole range, floats uniform in [-1, 1): every digit position differs)
//   sortpairs_u32/f32  cub::DeviceRadixSort::SortPairs, the keys above with an int64 payload of
//                  0 .. n-1 (an argsort: gpuscan.argsort's work)
// Row cases, at fixed shapes (rows x length float32 keys in [-1, 1), sorted along the rows), run
// once after the sizes unless --no-rows; their log2n is log2 of the keys:
//   segsort_f32_RxL   cub::DeviceSegmentedSort::SortKeys, offsets i * L
//   segradix_f32_RxL  cub::DeviceSegmentedRadixSort::SortKeys, the same
//   (R x L: 16384 x 16384, 1048576 x 16, 65536 x 1024)
//
// Output, one line each (bench_cub.parse_driver reads it):
//   device sms=132 l2_bytes=62914560 cc=9.0 cub=300001 runtime=13000 driver=13000 name=NVIDIA H200
//   check case=scan_i32 log2n=16 ok
//   case=scan_i32 log2n=16 ms=0.012345 min_ms=0.012100 spread=0.0210 reps=1620 sets=480
// A failed CUDA call prints the call and its error to stderr; a wrong CUB result prints
// "FAIL case=... log2n=... what"; both exit with status 1.

#include <cub/cub.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#define CHECK(call)                                                            \
    do {                                                                       \
        cudaError_t err_ = (call);                                             \
        if (err_ != cudaSuccess) {                                             \
            std::fprintf(stderr, "cub_driver: %s failed: %s (%s:%d)\n", #call, \
                         cudaGetErrorString(err_), __FILE__, __LINE__);        \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

// ---- timing policy (bench_cub.py passes harness.py's values; these defaults are the same) ----
struct Policy {
    double target_ms = 20.0; // device time per case
    long min_reps = 10;      // so one outlier cannot become the median
    long max_reps = 20000;   // launch-bound sizes: ~0.2 s of host time
    int samples = 30;        // event-bracketed batches; the median is over them
    double slow_ms = 50.0;   // calls slower than this get slow_reps timed calls
    long slow_reps = 3;
    double very_slow_ms = 1000.0; // a first call slower than this gets one timed call
    double rotate_l2 = 4.0;       // buffer sets total more than this many L2 caches
    int max_sets = 2048;          // tiny sizes are launch-bound: L2 residency cannot matter
};

// Segment length of the by-key scan, as gpuscan's segmented scan gets heads every 1000 values.
constexpr int kSegLen = 1000;

// ================================================================================================
// Device buffers and random inputs
// ================================================================================================
template <class T> class DeviceArray {
  public:
    DeviceArray() = default;
    explicit DeviceArray(size_t count) : count_(count)
    {
        CHECK(cudaMalloc(&p_, std::max<size_t>(count, 1) * sizeof(T)));
    }
    DeviceArray(const DeviceArray &) = delete;
    DeviceArray &operator=(const DeviceArray &) = delete;
    DeviceArray &operator=(DeviceArray &&o) noexcept
    {
        std::swap(p_, o.p_);
        std::swap(count_, o.count_);
        return *this;
    }
    ~DeviceArray()
    {
        // A failed free is worth a warning, not the run: the times already printed stand.
        if (p_ != nullptr && cudaFree(p_) != cudaSuccess)
            std::fprintf(stderr, "cub_driver: warning: cudaFree failed\n");
    }
    T *get() const
    {
        return p_;
    }
    T *set(int i, size_t n) const
    {
        return p_ + static_cast<size_t>(i) * n;
    }
    size_t bytes() const
    {
        return count_ * sizeof(T);
    }
    void poison() const
    {
        CHECK(cudaMemset(p_, 0xA5, bytes()));
    }
    std::vector<T> to_host(size_t count) const
    {
        std::vector<T> h(count);
        CHECK(cudaMemcpy(h.data(), p_, count * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }

  private:
    T *p_ = nullptr;
    size_t count_ = 0;
};

// splitmix64's finaliser: independent-looking 32-bit values from (seed, index), no cuRAND needed.
__host__ __device__ inline uint32_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return static_cast<uint32_t>((x ^ (x >> 31)) >> 32);
}

// Integers in [-1000, 1000), as harness.random_device gives gpuscan's int32 inputs.
struct IntGen {
    uint64_t seed;
    __device__ int operator()(size_t i) const
    {
        return static_cast<int>(mix(seed ^ (i * 0x100000001B3ull)) % 2000u) - 1000;
    }
};
// Multiples of 2^-24 in [0, 1): x * bins is exact for the power-of-two bin counts, so the
// host's floor(x * bins) is the bin whatever formula CUB uses.
struct UniformGen {
    uint64_t seed;
    __device__ float operator()(size_t i) const
    {
        return static_cast<float>(mix(seed ^ (i * 0x100000001B3ull)) >> 8) * (1.0f / 16777216.0f);
    }
};
// Coin flips: about half the flags set.
struct FlagGen {
    uint64_t seed;
    __device__ uint8_t operator()(size_t i) const
    {
        return static_cast<uint8_t>(mix(seed ^ (i * 0x100000001B3ull)) >> 31);
    }
};
// Segment ids restarting in every buffer set of n values: segments of exactly kSegLen.
struct KeyGen {
    size_t n;
    __device__ int operator()(size_t i) const
    {
        return static_cast<int>((i % n) / kSegLen);
    }
};

template <class T, class Gen> __global__ void fill_kernel(T *p, size_t count, Gen gen)
{
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        p[i] = gen(i);
}

template <class T, class Gen> void fill(const DeviceArray<T> &a, size_t count, Gen gen)
{
    const int threads = 256;
    // Enough blocks to fill the device many times over; the grid-stride loop does the rest.
    const size_t blocks = std::min<size_t>((count + threads - 1) / threads, 65536);
    fill_kernel<<<static_cast<unsigned>(std::max<size_t>(blocks, 1)), threads>>>(a.get(), count,
                                                                                 gen);
    CHECK(cudaPeekAtLastError());
}

// ================================================================================================
// Cases: setup allocates one (case, n); run(i) is one call on buffer set i; check() verifies
// run(0) against the host and returns what is wrong ("" when right).
// ================================================================================================
struct Case {
    virtual ~Case() = default;
    virtual const char *name() const = 0;
    virtual size_t set_bytes(size_t n) const = 0; // one buffer set: inputs + outputs
    virtual void setup(size_t n, int sets, uint64_t seed) = 0;
    virtual void run(int set) = 0;
    virtual std::string check() = 0;
    virtual void teardown() = 0;
};

// Host reference bound of a float sum: (log2 n + 2) eps times the sum of magnitudes, the
// bound gpuscan's own checks use.
bool float_sum_ok(double got, double exact, double magnitude, size_t n)
{
    const double eps = std::ldexp(1.0, -23);
    return std::fabs(got - exact) <= (std::log2(std::max<double>(n, 2)) + 2) * eps * magnitude;
}

std::string first_bad(const char *what, size_t i)
{
    return std::string(what) + " differs first at " + std::to_string(i);
}

class MemcpyCase : public Case {
  public:
    const char *name() const override
    {
        return "memcpy";
    }
    size_t set_bytes(size_t n) const override
    {
        return 2 * n * sizeof(int);
    }
    void setup(size_t n, int sets, uint64_t seed) override
    {
        n_ = n;
        in_ = DeviceArray<int>(n * sets);
        out_ = DeviceArray<int>(n * sets);
        fill(in_, n * sets, IntGen{ seed });
    }
    void run(int s) override
    {
        CHECK(cudaMemcpyAsync(out_.set(s, n_), in_.set(s, n_), n_ * sizeof(int),
                              cudaMemcpyDeviceToDevice, 0));
    }
    std::string check() override
    {
        out_.poison();
        run(0);
        const auto x = in_.to_host(n_), y = out_.to_host(n_);
        for (size_t i = 0; i < n_; ++i)
            if (x[i] != y[i])
                return first_bad("copy", i);
        return "";
    }
    void teardown() override
    {
        in_ = {};
        out_ = {};
    }

  private:
    size_t n_ = 0;
    DeviceArray<int> in_, out_;
};

template <class T> class ScanCase : public Case {
  public:
    const char *name() const override
    {
        return std::is_integral_v<T> ? "scan_i32" : "scan_f32";
    }
    size_t set_bytes(size_t n) const override
    {
        return 2 * n * sizeof(T);
    }
    void setup(size_t n, int sets, uint64_t seed) override
    {
        n_ = n;
        in_ = DeviceArray<T>(n * sets);
        out_ = DeviceArray<T>(n * sets);
        fill_input(seed, n * sets);
        size_t bytes = 0;
        CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, in_.get(), out_.get(), int(n)));
        temp_ = DeviceArray<char>(bytes);
        temp_bytes_ = bytes;
    }
    void run(int s) override
    {
        CHECK(cub::DeviceScan::InclusiveSum(temp_.get(), temp_bytes_, in_.set(s, n_),
                                            out_.set(s, n_), int(n_), 0));
    }
    std::string check() override
    {
        out_.poison();
        run(0);
        const auto x = in_.to_host(n_), y = out_.to_host(n_);
        if constexpr (std::is_integral_v<T>) {
            uint32_t acc = 0; // int32 addition wraps on the device: do it unsigned here
            for (size_t i = 0; i < n_; ++i) {
                acc += static_cast<uint32_t>(x[i]);
                if (static_cast<uint32_t>(y[i]) != acc)
                    return first_bad("inclusive sum", i);
            }
        } else {
            double acc = 0, mag = 0;
            for (size_t i = 0; i < n_; ++i) {
                acc += x[i];
                mag += std::fabs(x[i]);
                if (!float_sum_ok(y[i], acc, mag, n_))
                    return first_bad("inclusive sum", i);
            }
        }
        return "";
    }
    void teardown() override
    {
        in_ = {};
        out_ = {};
        temp_ = {};
    }

  private:
    void fill_input(uint64_t seed, size_t count)
    {
        if constexpr (std::is_integral_v<T>)
            fill(in_, count, IntGen{ seed });
        else
            fill(in_, count, UniformGen{ seed });
    }
    size_t n_ = 0, temp_bytes_ = 0;
    DeviceArray<T> in_, out_;
    DeviceArray<char> temp_;
};

class ScanByKeyCase : public Case {
  public:
    const char *name() const override
    {
        return "segscan_i32";
    }
    size_t set_bytes(size_t n) const override
    {
        return 3 * n * sizeof(int);
    }
    void setup(size_t n, int sets, uint64_t seed) override
    {
        n_ = n;
        keys_ = DeviceArray<int>(n * sets);
        in_ = DeviceArray<int>(n * sets);
        out_ = DeviceArray<int>(n * sets);
        fill(keys_, n * sets, KeyGen{ n });
        fill(in_, n * sets, IntGen{ seed });
        size_t bytes = 0;
        CHECK(cub::DeviceScan::InclusiveSumByKey(nullptr, bytes, keys_.get(), in_.get(), out_.get(),
                                                 int(n)));
        temp_ = DeviceArray<char>(bytes);
        temp_bytes_ = bytes;
    }
    void run(int s) override
    {
        CHECK(cub::DeviceScan::InclusiveSumByKey(temp_.get(), temp_bytes_, keys_.set(s, n_),
                                                 in_.set(s, n_), out_.set(s, n_), int(n_)));
    }
    std::string check() override
    {
        out_.poison();
        run(0);
        const auto k = keys_.to_host(n_), x = in_.to_host(n_), y = out_.to_host(n_);
        uint32_t acc = 0;
        for (size_t i = 0; i < n_; ++i) {
            if (k[i] != static_cast<int>(i / kSegLen))
                return first_bad("key", i);
            acc = (i % kSegLen == 0 ? 0u : acc) + static_cast<uint32_t>(x[i]);
            if (static_cast<uint32_t>(y[i]) != acc)
                return first_bad("sum by key", i);
        }
        return "";
    }
    void teardown() override
    {
        keys_ = {};
        in_ = {};
        out_ = {};
        temp_ = {};
    }

  private:
    size_t n_ = 0, temp_bytes_ = 0;
    DeviceArray<int> keys_, in_, out_;
    DeviceArray<char> temp_;
};

template <class T> class ReduceCase : public Case {
  public:
    const char *name() const override
    {
        return std::is_integral_v<T> ? "reduce_i32" : "reduce_f32";
    }
    size_t set_bytes(size_t n) const override
    {
        return n * sizeof(T);
    }
    void setup(size_t n, int sets, uint64_t seed) override
    {
        n_ = n;
        in_ = DeviceArray<T>(n * sets);
        out_ = DeviceArray<T>(1); // a few bytes, shared by the sets
        if constexpr (std::is_integral_v<T>)
            fill(in_, n * sets, IntGen{ seed });
        else
            fill(in_, n * sets, UniformGen{ seed });
        size_t bytes = 0;
        CHECK(cub::DeviceReduce::Sum(nullptr, bytes, in_.get(), out_.get(), int(n)));
        temp_ = DeviceArray<char>(bytes);
        temp_bytes_ = bytes;
    }
    void run(int s) override
    {
        CHECK(cub::DeviceReduce::Sum(temp_.get(), temp_bytes_, in_.set(s, n_), out_.get(), int(n_),
                                     0));
    }
    std::string check() override
    {
        out_.poison();
        run(0);
        const auto x = in_.to_host(n_);
        const T got = out_.to_host(1)[0];
        if constexpr (std::is_integral_v<T>) {
            uint32_t acc = 0;
            for (T v : x)
                acc += static_cast<uint32_t>(v);
            if (static_cast<uint32_t>(got) != acc)
                return "integer sum differs";
        } else {
            double acc = 0, mag = 0;
            for (T v : x)
                acc += v, mag += std::fabs(v);
            if (!float_sum_ok(got, acc, mag, n_))
                return "float sum outside the bound";
        }
        return "";
    }
    void teardown() override
    {
        in_ = {};
        out_ = {};
        temp_ = {};
    }

  private:
    size_t n_ = 0, temp_bytes_ = 0;
    DeviceArray<T> in_, out_;
    DeviceArray<char> temp_;
};

class HistogramCase : public Case {
  public:
    explicit HistogramCase(int bins) : bins_(bins), name_("hist" + std::to_string(bins) + "_f32")
    {}
    const char *name() const override
    {
        return name_.c_str();
    }
    size_t set_bytes(size_t n) const override
    {
        return n * sizeof(float);
    }
    void setup(size_t n, int sets, uint64_t seed) override
    {
        n_ = n;
        in_ = DeviceArray<float>(n * sets);
        hist_ = DeviceArray<int>(bins_); // a few kilobytes, shared by the sets
        fill(in_, n * sets, UniformGen{ seed });
        size_t bytes = 0;
        CHECK(cub::DeviceHistogram::HistogramEven(nullptr, bytes, in_.get(), hist_.get(), bins_ + 1,
                                                  0.0f, 1.0f, int(n)));
        temp_ = DeviceArray<char>(bytes);
        temp_bytes_ = bytes;
    }
    void run(int s) override
    {
        CHECK(cub::DeviceHistogram::HistogramEven(temp_.get(), temp_bytes_, in_.set(s, n_),
                                                  hist_.get(), bins_ + 1, 0.0f, 1.0f, int(n_), 0));
    }
    std::string check() override
    {
        hist_.poison();
        run(0);
        const auto x = in_.to_host(n_);
        const auto got = hist_.to_host(bins_);
        std::vector<int> want(bins_, 0);
        for (float v : x)
            ++want[static_cast<int>(v * bins_)]; // exact: see UniformGen
        for (int b = 0; b < bins_; ++b)
            if (got[b] != want[b])
                return first_bad("bin count", b);
        return "";
    }
    void teardown() override
    {
        in_ = {};
        hist_ = {};
        temp_ = {};
    }

  private:
    int bins_;
    std::string name_;
    size_t n_ = 0, temp_bytes_ = 0;
    DeviceArray<float> in_;
    DeviceArray<int> hist_;
    DeviceArray<char> temp_;
};

class PartitionCase : public Case {
  public:
    explicit PartitionCase(bool count_to_host) : to_host_(count_to_host)
    {}
    ~PartitionCase() override
    {
        if (host_count_ != nullptr && cudaFreeHost(host_count_) != cudaSuccess)
            std::fprintf(stderr, "cub_driver: warning: cudaFreeHost failed\n");
    }
    const char *name() const override
    {
        return to_host_ ? "split_i32_host" : "split_i32";
    }
    size_t set_bytes(size_t n) const override
    {
        return n * (2 * sizeof(int) + 1);
    }
    void setup(size_t n, int sets, uint64_t seed) override
    {
        n_ = n;
        in_ = DeviceArray<int>(n * sets);
        flags_ = DeviceArray<uint8_t>(n * sets);
        out_ = DeviceArray<int>(n * sets);
        count_ = DeviceArray<int>(1); // split_i32: stays on the device, where CUB leaves it
        if (to_host_ && host_count_ == nullptr)
            CHECK(cudaMallocHost(&host_count_, sizeof(int)));
        fill(in_, n * sets, IntGen{ seed });
        fill(flags_, n * sets, FlagGen{ seed + 1 });
        size_t bytes = 0;
        CHECK(cub::DevicePartition::Flagged(nullptr, bytes, in_.get(), flags_.get(), out_.get(),
                                            count_.get(), int(n)));
        temp_ = DeviceArray<char>(bytes);
        temp_bytes_ = bytes;
    }
    void run(int s) override
    {
        CHECK(cub::DevicePartition::Flagged(temp_.get(), temp_bytes_, in_.set(s, n_),
                                            flags_.set(s, n_), out_.set(s, n_), count_.get(),
                                            int(n_), 0));
        if (to_host_) {
            CHECK(
                cudaMemcpyAsync(host_count_, count_.get(), sizeof(int), cudaMemcpyDeviceToHost, 0));
            CHECK(cudaStreamSynchronize(0));
        }
    }
    std::string check() override
    {
        out_.poison();
        count_.poison();
        run(0);
        if (to_host_ && *host_count_ != count_.to_host(1)[0])
            return "the count copied to the host differs from the device's";
        const auto x = in_.to_host(n_), y = out_.to_host(n_);
        const auto f = flags_.to_host(n_);
        const int count = count_.to_host(1)[0];
        std::vector<int> want;
        want.reserve(n_);
        for (size_t i = 0; i < n_; ++i)
            if (f[i])
                want.push_back(x[i]);
        if (static_cast<size_t>(count) != want.size())
            return "count " + std::to_string(count) + ", expected " + std::to_string(want.size());
        for (size_t i = n_; i-- > 0;) // the unflagged values, last first: CUB's order
            if (!f[i])
                want.push_back(x[i]);
        for (size_t i = 0; i < n_; ++i)
            if (y[i] != want[i])
                return first_bad("partition", i);
        return "";
    }
    void teardown() override
    {
        in_ = {};
        flags_ = {};
        out_ = {};
        count_ = {};
        temp_ = {};
    }

  private:
    size_t n_ = 0, temp_bytes_ = 0;
    DeviceArray<int> in_;
    DeviceArray<uint8_t> flags_;
    DeviceArray<int> out_, count_;
    DeviceArray<char> temp_;
    bool to_host_;
    int *host_count_ = nullptr; // page-locked, allocated once (split_i32_host)
};

// ---- sorts ----------------------------------------------------------------------------------
// Keys of every bit pattern (integers) or uniform in [-1, 1) (floats: no NaN, every digit position
// differs): both sorts do every pass.
template <class K> struct SortKeyGen {
    uint64_t seed;
    __device__ K operator()(size_t i) const
    {
        const uint64_t a = mix(seed ^ (i * 0x100000001B3ull));
        const uint64_t b = mix((seed + 1) ^ (i * 0x100000001B3ull));
        if constexpr (std::is_same_v<K, float>)
            return static_cast<float>(a >> 8) * (1.0f / 8388608.0f) - 1.0f;
        else if constexpr (std::is_same_v<K, double>)
            return static_cast<double>(((a << 32) | b) >> 11) * (1.0 / 4503599627370496.0) - 1.0;
        else if constexpr (sizeof(K) == 8)
            return static_cast<K>((a << 32) | b);
        else
            return static_cast<K>(a);
    }
};
// 0 .. n-1 in every buffer set of n: an argsort's payload.
struct IotaGen {
    size_t n;
    __device__ long long operator()(size_t i) const
    {
        return static_cast<long long>(i % n);
    }
};
// Row starts i * len, i = 0 .. rows.
struct OffsetGen {
    int len;
    __device__ int operator()(size_t i) const
    {
        return static_cast<int>(i) * len;
    }
};

template <class K> const char *key_name()
{
    if constexpr (std::is_same_v<K, float>)
        return "f32";
    else if constexpr (std::is_same_v<K, double>)
        return "f64";
    else if constexpr (std::is_same_v<K, uint32_t>)
        return "u32";
    else if constexpr (std::is_same_v<K, int32_t>)
        return "i32";
    else
        return "i64";
}

// Whether y is x sorted (the same multiset, in order).
template <class K> bool sorted_of(std::vector<K> x, const std::vector<K> &y)
{
    std::sort(x.begin(), x.end());
    return x == y;
}

// cub::DeviceRadixSort::SortKeys (pairs = false) or SortPairs with an iota int64 payload.
template <class K> class RadixSortCase : public Case {
  public:
    explicit RadixSortCase(bool pairs)
        : pairs_(pairs), name_(std::string(pairs ? "sortpairs_" : "sortkeys_") + key_name<K>())
    {}
    const char *name() const override
    {
        return name_.c_str();
    }
    size_t set_bytes(size_t n) const override
    {
        return 2 * n * (sizeof(K) + (pairs_ ? sizeof(long long) : 0));
    }
    void setup(size_t n, int sets, uint64_t seed) override
    {
        n_ = n;
        in_ = DeviceArray<K>(n * sets);
        out_ = DeviceArray<K>(n * sets);
        fill(in_, n * sets, SortKeyGen<K>{ seed });
        size_t bytes = 0;
        if (pairs_) {
            vin_ = DeviceArray<long long>(n * sets);
            vout_ = DeviceArray<long long>(n * sets);
            fill(vin_, n * sets, IotaGen{ n });
            CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, in_.get(), out_.get(),
                                                  vin_.get(), vout_.get(), int(n)));
        } else {
            CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in_.get(), out_.get(), int(n)));
        }
        temp_ = DeviceArray<char>(bytes);
        temp_bytes_ = bytes;
    }
    void run(int s) override
    {
        size_t bytes = temp_bytes_;
        if (pairs_)
            CHECK(cub::DeviceRadixSort::SortPairs(temp_.get(), bytes, in_.set(s, n_),
                                                  out_.set(s, n_), vin_.set(s, n_),
                                                  vout_.set(s, n_), int(n_), 0, int(8 * sizeof(K)),
                                                  0));
        else
            CHECK(cub::DeviceRadixSort::SortKeys(temp_.get(), bytes, in_.set(s, n_),
                                                 out_.set(s, n_), int(n_), 0, int(8 * sizeof(K)),
                                                 0));
    }
    std::string check() override
    {
        out_.poison();
        if (pairs_)
            vout_.poison();
        run(0);
        const auto x = in_.to_host(n_), y = out_.to_host(n_);
        if (!sorted_of(x, y))
            return "keys not sorted";
        if (pairs_) {
            const auto v = vout_.to_host(n_);
            for (size_t i = 0; i < n_; ++i) {
                if (v[i] < 0 || size_t(v[i]) >= n_ || !(x[size_t(v[i])] == y[i]))
                    return first_bad("payload", i);
                if (i > 0 && y[i - 1] == y[i] && v[i - 1] >= v[i])
                    return first_bad("stability", i);
            }
        }
        return "";
    }
    void teardown() override
    {
        in_ = {};
        out_ = {};
        vin_ = {};
        vout_ = {};
        temp_ = {};
    }

  private:
    bool pairs_;
    std::string name_;
    size_t n_ = 0, temp_bytes_ = 0;
    DeviceArray<K> in_, out_;
    DeviceArray<long long> vin_, vout_;
    DeviceArray<char> temp_;
};

// rows x len float32 keys sorted along the rows: cub::DeviceSegmentedSort::SortKeys (radix =
// false) or cub::DeviceSegmentedRadixSort::SortKeys.  setup's n must be rows * len.
class SegmentedSortCase : public Case {
  public:
    SegmentedSortCase(bool radix, int rows, int len)
        : radix_(radix), rows_(rows), len_(len),
          name_(std::string(radix ? "segradix_f32_" : "segsort_f32_") + std::to_string(rows) +
                "x" + std::to_string(len))
    {}
    const char *name() const override
    {
        return name_.c_str();
    }
    size_t keys() const
    {
        return size_t(rows_) * size_t(len_);
    }
    size_t set_bytes(size_t n) const override
    {
        return 2 * n * sizeof(float);
    }
    void setup(size_t n, int sets, uint64_t seed) override
    {
        n_ = n;
        in_ = DeviceArray<float>(n * sets);
        out_ = DeviceArray<float>(n * sets);
        off_ = DeviceArray<int>(size_t(rows_) + 1);
        fill(in_, n * sets, SortKeyGen<float>{ seed });
        fill(off_, size_t(rows_) + 1, OffsetGen{ len_ });
        size_t bytes = 0;
        call(nullptr, bytes, 0);
        temp_ = DeviceArray<char>(bytes);
        temp_bytes_ = bytes;
    }
    void run(int s) override
    {
        size_t bytes = temp_bytes_;
        call(temp_.get(), bytes, s);
    }
    std::string check() override
    {
        out_.poison();
        run(0);
        // The first rows (at most 64 of them): each the sorted row of the input.
        const size_t rows = std::min(rows_, 64), len = size_t(len_);
        const auto x = in_.to_host(rows * len), y = out_.to_host(rows * len);
        for (size_t r = 0; r < rows; ++r) {
            std::vector<float> a(x.begin() + r * len, x.begin() + (r + 1) * len);
            std::vector<float> b(y.begin() + r * len, y.begin() + (r + 1) * len);
            if (!sorted_of(a, b))
                return first_bad("row", r);
        }
        return "";
    }
    void teardown() override
    {
        in_ = {};
        out_ = {};
        off_ = {};
        temp_ = {};
    }

  private:
    void call(void *temp, size_t &bytes, int s)
    {
        const float *in = temp ? in_.set(s, n_) : in_.get();
        float *out = temp ? out_.set(s, n_) : out_.get();
        if (radix_)
            CHECK(cub::DeviceSegmentedRadixSort::SortKeys(temp, bytes, in, out, int(n_), rows_,
                                                          off_.get(), off_.get() + 1, 0, 32, 0));
        else
            CHECK(cub::DeviceSegmentedSort::SortKeys(temp, bytes, in, out, int(n_), rows_,
                                                     off_.get(), off_.get() + 1, 0));
    }
    bool radix_;
    int rows_, len_;
    std::string name_;
    size_t n_ = 0, temp_bytes_ = 0;
    DeviceArray<float> in_, out_;
    DeviceArray<int> off_;
    DeviceArray<char> temp_;
};

// ================================================================================================
// Timing: harness.py's time_device, in C++
// ================================================================================================
struct Timing {
    double median_ms, min_ms, spread; // spread: (p90 - p10) / median, as harness._stats
    long reps;
};

double host_ms(const std::chrono::steady_clock::time_point &t0)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Timing time_case(Case &c, int sets, const Policy &p)
{
    int idx = 0;
    auto call = [&] { c.run(idx++ % sets); };

    // Warm-up: the first call loads modules; the second, host-timed, tells a slow case apart.
    auto t0 = std::chrono::steady_clock::now();
    call();
    CHECK(cudaDeviceSynchronize());
    const double first_ms = host_ms(t0);
    double second_ms = first_ms;
    if (first_ms <= p.very_slow_ms) {
        t0 = std::chrono::steady_clock::now();
        call();
        CHECK(cudaDeviceSynchronize());
        second_ms = host_ms(t0);
    }
    long reps, batch;
    if (first_ms > p.very_slow_ms) {
        reps = batch = 1;
    } else if (second_ms > p.slow_ms) {
        reps = p.slow_reps;
        batch = 1;
    } else {
        cudaEvent_t e0, e1;
        CHECK(cudaEventCreate(&e0));
        CHECK(cudaEventCreate(&e1));
        const int probe = 5;
        CHECK(cudaEventRecord(e0, 0));
        for (int i = 0; i < probe; ++i)
            call();
        CHECK(cudaEventRecord(e1, 0));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        CHECK(cudaEventDestroy(e0));
        CHECK(cudaEventDestroy(e1));
        const double est = std::max(double(ms) / probe, 1e-4);
        reps = est > p.slow_ms
                   ? p.slow_reps
                   : std::min(p.max_reps, std::max(p.min_reps, long(std::ceil(p.target_ms / est))));
        batch = std::max(1L, long(std::ceil(double(reps) / p.samples)));
    }
    const long samples = std::max(1L, long(std::ceil(double(reps) / batch)));
    std::vector<cudaEvent_t> starts(samples), ends(samples);
    for (long s = 0; s < samples; ++s) {
        CHECK(cudaEventCreate(&starts[s]));
        CHECK(cudaEventCreate(&ends[s]));
    }
    for (long s = 0; s < samples; ++s) {
        CHECK(cudaEventRecord(starts[s], 0));
        for (long b = 0; b < batch; ++b)
            call();
        CHECK(cudaEventRecord(ends[s], 0));
    }
    CHECK(cudaEventSynchronize(ends[samples - 1]));
    std::vector<double> per_call(samples);
    for (long s = 0; s < samples; ++s) {
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, starts[s], ends[s]));
        per_call[s] = double(ms) / batch;
        CHECK(cudaEventDestroy(starts[s]));
        CHECK(cudaEventDestroy(ends[s]));
    }
    std::sort(per_call.begin(), per_call.end());
    // statistics.median's: the mean of the middle two for an even count.
    const double median = samples % 2 ? per_call[samples / 2]
                                      : 0.5 * (per_call[samples / 2 - 1] + per_call[samples / 2]);
    const double p10 = per_call[size_t(0.1 * (samples - 1))];
    const double p90 = per_call[size_t(std::ceil(0.9 * (samples - 1)))];
    return { median, per_call[0], median > 0 ? (p90 - p10) / median : 0.0, samples * batch };
}

// ================================================================================================
// Command line and main
// ================================================================================================
[[noreturn]] void usage(const char *why)
{
    std::fprintf(stderr,
                 "cub_driver: %s\nusage: cub_driver [--target-ms=X] [--min-reps=N] [--max-reps=N] "
                 "[--samples=N] [--slow-ms=X] [--slow-reps=N] [--very-slow-ms=X] [--rotate-l2=X] "
                 "[--max-sets=N] [--no-rows] [--only=PREFIX,...] [log2n ...]  (log2n in 1..30; "
                 "default 16 20 24 28; --only: the cases whose names start so)\n",
                 why);
    std::exit(2);
}

Policy parse_args(int argc, char **argv, std::vector<int> &logs, bool &rows,
                  std::vector<std::string> &only)
{
    Policy p;
    rows = true;
    struct Opt {
        const char *name;
        double *d;
        long *l;
        int *i;
    } opts[] = { { "--target-ms", &p.target_ms, nullptr, nullptr },
                 { "--min-reps", nullptr, &p.min_reps, nullptr },
                 { "--max-reps", nullptr, &p.max_reps, nullptr },
                 { "--samples", nullptr, nullptr, &p.samples },
                 { "--slow-ms", &p.slow_ms, nullptr, nullptr },
                 { "--slow-reps", nullptr, &p.slow_reps, nullptr },
                 { "--very-slow-ms", &p.very_slow_ms, nullptr, nullptr },
                 { "--rotate-l2", &p.rotate_l2, nullptr, nullptr },
                 { "--max-sets", nullptr, nullptr, &p.max_sets } };
    for (int a = 1; a < argc; ++a) {
        const std::string arg = argv[a];
        if (arg == "--no-rows") {
            rows = false;
        } else if (arg.rfind("--only=", 0) == 0) {
            std::string rest = arg.substr(7);
            for (size_t at; (at = rest.find(',')) != std::string::npos; rest.erase(0, at + 1))
                only.push_back(rest.substr(0, at));
            only.push_back(rest);
        } else if (arg.rfind("--", 0) == 0) {
            const size_t eq = arg.find('=');
            if (eq == std::string::npos)
                usage(("option without =value: " + arg).c_str());
            const std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
            Opt *hit = nullptr;
            for (Opt &o : opts)
                if (key == o.name)
                    hit = &o;
            if (hit == nullptr)
                usage(("unknown option " + key).c_str());
            char *end = nullptr;
            const double v = std::strtod(value.c_str(), &end);
            if (value.empty() || *end != '\0' || !(v > 0))
                usage(("bad value in " + arg).c_str());
            if (hit->d)
                *hit->d = v;
            if (hit->l)
                *hit->l = long(v);
            if (hit->i)
                *hit->i = int(v);
        } else {
            char *end = nullptr;
            const long k = std::strtol(arg.c_str(), &end, 10);
            if (arg.empty() || *end != '\0' || k < 1 || k > 30)
                usage(("bad log2n " + arg).c_str());
            logs.push_back(int(k));
        }
    }
    if (logs.empty())
        logs = { 16, 20, 24, 28 };
    return p;
}

int main(int argc, char **argv)
{
    std::vector<int> logs;
    bool with_rows = true;
    std::vector<std::string> only;
    const Policy policy = parse_args(argc, argv, logs, with_rows, only);
    // --only: a case runs when its name starts with one of the prefixes (all without the option).
    const auto chosen = [&only](const char *name) {
        for (const std::string &o : only)
            if (std::string(name).rfind(o, 0) == 0)
                return true;
        return only.empty();
    };

    int dev = 0, sms = 0, l2 = 0, runtime = 0, driver = 0;
    CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, dev));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    CHECK(cudaRuntimeGetVersion(&runtime));
    CHECK(cudaDriverGetVersion(&driver));
    // The name last: it holds spaces, the parser takes the rest of the line.
    std::printf("device sms=%d l2_bytes=%d cc=%d.%d cub=%d runtime=%d driver=%d name=%s\n", sms, l2,
                prop.major, prop.minor, CUB_VERSION, runtime, driver, prop.name);
    std::fflush(stdout);

    std::vector<std::unique_ptr<Case>> cases;
    cases.push_back(std::make_unique<MemcpyCase>());
    cases.push_back(std::make_unique<ScanCase<int>>());
    cases.push_back(std::make_unique<ScanCase<float>>());
    cases.push_back(std::make_unique<ScanByKeyCase>());
    cases.push_back(std::make_unique<ReduceCase<float>>());
    cases.push_back(std::make_unique<ReduceCase<int>>());
    cases.push_back(std::make_unique<HistogramCase>(256));
    cases.push_back(std::make_unique<HistogramCase>(4096));
    cases.push_back(std::make_unique<PartitionCase>(false));
    cases.push_back(std::make_unique<PartitionCase>(true));
    cases.push_back(std::make_unique<RadixSortCase<uint32_t>>(false));
    cases.push_back(std::make_unique<RadixSortCase<int32_t>>(false));
    cases.push_back(std::make_unique<RadixSortCase<float>>(false));
    cases.push_back(std::make_unique<RadixSortCase<long long>>(false));
    cases.push_back(std::make_unique<RadixSortCase<double>>(false));
    cases.push_back(std::make_unique<RadixSortCase<uint32_t>>(true));
    cases.push_back(std::make_unique<RadixSortCase<float>>(true));
    std::vector<std::unique_ptr<SegmentedSortCase>> row_cases;
    if (with_rows) {
        const int shapes[3][2] = { { 1 << 14, 1 << 14 }, { 1 << 20, 16 }, { 1 << 16, 1 << 10 } };
        for (const auto &sh : shapes)
            for (bool radix : { false, true })
                row_cases.push_back(std::make_unique<SegmentedSortCase>(radix, sh[0], sh[1]));
    }

    const int check_log2 = *std::min_element(logs.begin(), logs.end());
    uint64_t seed = 12345;
    for (int k : logs) {
        const size_t n = size_t(1) << k;
        for (auto &c : cases) {
            if (!chosen(c->name()))
                continue;
            const double want = policy.rotate_l2 * (l2 > 0 ? l2 : 60 << 20);
            const int sets =
                int(std::clamp<double>(std::ceil(want / c->set_bytes(n)), 1, policy.max_sets));
            c->setup(n, sets, ++seed);
            CHECK(cudaDeviceSynchronize());
            if (k == check_log2) {
                const std::string problem = c->check();
                if (!problem.empty()) {
                    std::printf("FAIL case=%s log2n=%d %s\n", c->name(), k, problem.c_str());
                    return 1;
                }
                std::printf("check case=%s log2n=%d ok\n", c->name(), k);
            }
            const Timing t = time_case(*c, sets, policy);
            CHECK(cudaGetLastError());
            std::printf("case=%s log2n=%d ms=%.6f min_ms=%.6f spread=%.4f reps=%ld sets=%d\n",
                        c->name(), k, t.median_ms, t.min_ms, t.spread, t.reps, sets);
            std::fflush(stdout);
            c->teardown();
        }
    }
    // The row cases: one fixed shape each, checked (their first rows) before they are timed.
    for (auto &c : row_cases) {
        if (!chosen(c->name()))
            continue;
        const size_t n = c->keys();
        int k = 0;
        while ((size_t(1) << (k + 1)) <= n)
            ++k;
        const double want = policy.rotate_l2 * (l2 > 0 ? l2 : 60 << 20);
        const int sets =
            int(std::clamp<double>(std::ceil(want / c->set_bytes(n)), 1, policy.max_sets));
        c->setup(n, sets, ++seed);
        CHECK(cudaDeviceSynchronize());
        const std::string problem = c->check();
        if (!problem.empty()) {
            std::printf("FAIL case=%s log2n=%d %s\n", c->name(), k, problem.c_str());
            return 1;
        }
        std::printf("check case=%s log2n=%d ok\n", c->name(), k);
        const Timing t = time_case(*c, sets, policy);
        CHECK(cudaGetLastError());
        std::printf("case=%s log2n=%d ms=%.6f min_ms=%.6f spread=%.4f reps=%ld sets=%d\n",
                    c->name(), k, t.median_ms, t.min_ms, t.spread, t.reps, sets);
        std::fflush(stdout);
        c->teardown();
    }
    return 0;
}
