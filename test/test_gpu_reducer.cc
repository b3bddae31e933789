// The device reductions against the host reducer, bit for bit, on a GPU:
// every (datatype, op) pair host_reduce supports, AVG's division, counts
// 0 .. 1000003, every aliasing of dst with a and b, and pointers aligned,
// equally misaligned and unequally misaligned (down to odd byte offsets),
// on inputs full of NaNs (with payloads), infinities, signed zeros and
// subnormals. The bytes around each result must stay untouched. The one
// difference allowed: which payload wins when both operands are NaN (see
// run_reduce); nan_pairs counts those elements.
//
// Exits 77 (skipped) without a GPU. Prints one "RESULT" line per datatype.
//   test_gpu_reducer           the checks
//   test_gpu_reducer --bench   float32 SUM bandwidth at 256 MiB vs a D2D copy
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_runtime_api.h"
#include "reduce/host_reducer.h"
#include "base/error.h"

using namespace chorus;

namespace {

constexpr size_t kCounts[] = {0, 1, 7, 4097, 1000003};
constexpr size_t kPad = 64;  // bytes of guard before and after every region
constexpr unsigned char kPoison = 0xA5;

uint64_t splitmix(uint64_t& s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Element bit patterns for `dt`, mixing special values into random ones.
void fill(chorus_datatype_t dt, unsigned char* p, size_t n, uint64_t seed) {
    const size_t sz = datatype_size(dt);
    uint64_t s = seed;
    static const uint32_t f32_special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                           0xffc00000u, 0x7fc12345u, 0x7f812345u, 0xff800001u, 0x00000001u,
                                           0x807fffffu, 0x00800000u, 0x7f7fffffu, 0x3f800000u, 0xbf800000u};
    static const uint64_t f64_special[] = {0x0ull,
                                           0x8000000000000000ull,
                                           0x7ff0000000000000ull,
                                           0xfff0000000000000ull,
                                           0x7ff8000000000000ull,
                                           0xfff8000000000000ull,
                                           0x7ff8000000012345ull,
                                           0x7ff0000000012345ull,
                                           0x0000000000000001ull,
                                           0x800fffffffffffffull,
                                           0x7fefffffffffffffull,
                                           0x3ff0000000000000ull};
    static const uint16_t f16_special[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7d01,
                                           0x7e55, 0x0001, 0x83ff, 0x0400, 0x7bff, 0x3c00, 0xbc00};
    static const uint16_t bf16_special[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81,
                                            0x7fd5, 0x0001, 0x807f, 0x0080, 0x7f7f, 0x3f80, 0xbf80};
    for (size_t i = 0; i < n; ++i) {
        const uint64_t r = splitmix(s);
        const unsigned pick = static_cast<unsigned>(r >> 56);  // 0..255
        unsigned char* e = p + i * sz;
        uint64_t v = splitmix(s);
        switch (dt) {
            case CHORUS_FLOAT32: {
                uint32_t u;
                if (pick < 40)
                    u = f32_special[pick % (sizeof f32_special / sizeof *f32_special)];
                else if (pick < 60)
                    u = static_cast<uint32_t>(v) & 0x807fffffu;  // subnormal
                else  // exponents around 1, so sums and products stay mostly finite
                    u = (static_cast<uint32_t>(v) & 0x807fffffu) |
                        ((112u + static_cast<uint32_t>(v >> 40) % 32u) << 23);
                std::memcpy(e, &u, 4);
                break;
            }
            case CHORUS_FLOAT64: {
                uint64_t u;
                if (pick < 40)
                    u = f64_special[pick % (sizeof f64_special / sizeof *f64_special)];
                else if (pick < 60)
                    u = v & 0x800fffffffffffffull;
                else
                    u = (v & 0x800fffffffffffffull) | ((1008ull + (v >> 52) % 32u) << 52);
                std::memcpy(e, &u, 8);
                break;
            }
            case CHORUS_FLOAT16:
            case CHORUS_BFLOAT16: {
                // Random bit patterns already hold every class; add the specials.
                uint16_t u = static_cast<uint16_t>(v);
                if (pick < 40)
                    u = dt == CHORUS_FLOAT16 ? f16_special[pick % (sizeof f16_special / sizeof *f16_special)]
                                             : bf16_special[pick % (sizeof bf16_special / sizeof *bf16_special)];
                std::memcpy(e, &u, 2);
                break;
            }
            default: {
                // Integers: full-range bits (wraparound), with zeros and small
                // values for the logical operators and for division.
                if (pick < 32)
                    v = 0;
                else if (pick < 64)
                    v = v % 5;
                std::memcpy(e, &v, sz);
                break;
            }
        }
    }
}

std::string hex(const unsigned char* p, size_t sz) {
    std::string s;
    char buf[4];
    for (size_t i = sz; i-- > 0;) {
        std::snprintf(buf, sizeof buf, "%02x", p[i]);
        s += buf;
    }
    return s;
}

bool is_float(chorus_datatype_t dt) {
    return dt == CHORUS_FLOAT16 || dt == CHORUS_BFLOAT16 || dt == CHORUS_FLOAT32 || dt == CHORUS_FLOAT64;
}

// Whether the element at p (of a floating type) is a NaN.
bool is_nan(chorus_datatype_t dt, const unsigned char* p) {
    uint64_t u = 0;
    std::memcpy(&u, p, datatype_size(dt));
    switch (dt) {
        case CHORUS_FLOAT16: return (u & 0x7fffu) > 0x7c00u;
        case CHORUS_BFLOAT16: return (u & 0x7fffu) > 0x7f80u;
        case CHORUS_FLOAT32: return (u & 0x7fffffffu) > 0x7f800000u;
        case CHORUS_FLOAT64: return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
        default: return false;
    }
}

struct Tally {
    long cases = 0;
    long failures = 0;
};

enum Alias { kSeparate, kDstIsA, kDstIsB, kDstIsBoth };
const char* alias_name(int a) {
    static const char* names[] = {"separate", "dst=a", "dst=b", "dst=a=b"};
    return names[a];
}

// Byte offsets of (dst, a, b) from 256-byte-aligned bases: aligned, equally
// misaligned by whole elements, unequal, and (for wider types) odd bytes.
std::vector<std::array<size_t, 3>> offsets_for(size_t sz) {
    std::vector<std::array<size_t, 3>> v = {{0, 0, 0}, {sz, sz, sz}, {3 * sz, sz, 0}, {16 - sz, 16 - sz, 16 - sz}};
    if (sz > 1) v.push_back({1, 3, 5});
    return v;
}

class Checker {
public:
    Checker() : stream_(gpu::create_stream()) {}
    ~Checker() {
        gpu::free_device(dev_);
        gpu::destroy_stream(stream_);
    }

    // One region per operand, 256-byte aligned, each big enough for the
    // largest count plus padding and offsets.
    void reserve(size_t bytes) {
        region_ = (span_for(bytes) + 255) / 256 * 256;
        gpu::free_device(dev_);
        dev_ = static_cast<unsigned char*>(gpu::alloc_device(3 * region_));
        for (auto& h : host_) h.assign(region_, 0);
        for (auto& h : init_) h.assign(region_, 0);
    }

    // host_reduce and reduce_async on the same bytes; false on any mismatch.
    bool run_reduce(chorus_datatype_t dt, chorus_op_t op, size_t n, int alias, const std::array<size_t, 3>& off,
                    uint64_t seed) {
        const size_t sz = datatype_size(dt), bytes = n * sz;
        span_ = span_for(bytes);
        // Operand slots: 0 = dst, 1 = a, 2 = b; aliasing reuses a slot.
        const int slot_a = 1, slot_b = alias == kDstIsBoth ? 1 : 2;
        const int slot_d = alias == kDstIsA || alias == kDstIsBoth ? 1 : alias == kDstIsB ? 2 : 0;
        const size_t off_a = kPad + off[1], off_b = kPad + (alias == kDstIsBoth ? off[1] : off[2]);
        const size_t off_d = slot_d == 1 ? off_a : slot_d == 2 ? off_b : kPad + off[0];
        for (int s = 0; s < 3; ++s) std::memset(init_[s].data(), kPoison, span_);
        fill(dt, init_[1].data() + off_a, n, seed);
        if (slot_b == 2) fill(dt, init_[2].data() + off_b, n, seed ^ 0x5555);
        for (int s = 0; s < 3; ++s) {
            std::memcpy(host_[s].data(), init_[s].data(), span_);
            gpu::copy_async(dev_ + s * region_, init_[s].data(), span_, stream_);
        }
        unsigned char* hd = host_[slot_d].data() + off_d;
        host_reduce(dt, op, hd, host_[slot_a].data() + off_a, host_[slot_b].data() + off_b, n);
        gpu::reduce_async(dt, op, dev_ + slot_d * region_ + off_d, dev_ + slot_a * region_ + off_a,
                          dev_ + slot_b * region_ + off_b, n, stream_);
        const unsigned char* ia = init_[slot_a].data() + off_a;
        const unsigned char* ib = init_[slot_b].data() + off_b;
        auto describe = [&](size_t i) { return "a=" + hex(ia + i * sz, sz) + " b=" + hex(ib + i * sz, sz); };
        // With two NaN operands x86 returns the first source operand's NaN,
        // and which one that is follows the compiler's choice of operand
        // order (it varies between the host reducer's loops); the GPU takes
        // a's. Any other difference is a failure.
        const bool arithmetic = is_float(dt) && (op == CHORUS_SUM || op == CHORUS_PROD || op == CHORUS_AVG);
        auto nan_pair = [&](size_t i, const unsigned char* got, const unsigned char* want) {
            return arithmetic && is_nan(dt, ia + i * sz) && is_nan(dt, ib + i * sz) && is_nan(dt, got) &&
                   is_nan(dt, want);
        };
        return compare(dt, slot_d, off_d, bytes, describe, nan_pair,
                       std::string("op ") + op_name(op) + " " + alias_name(alias));
    }

    bool run_divide(chorus_datatype_t dt, size_t n, int divisor, size_t off, uint64_t seed) {
        const size_t sz = datatype_size(dt);
        span_ = span_for(n * sz);
        std::memset(init_[0].data(), kPoison, span_);
        fill(dt, init_[0].data() + kPad + off, n, seed);
        std::memcpy(host_[0].data(), init_[0].data(), span_);
        gpu::copy_async(dev_, init_[0].data(), span_, stream_);
        host_divide(dt, host_[0].data() + kPad + off, n, divisor);
        gpu::divide_async(dt, dev_ + kPad + off, n, divisor, stream_);
        auto describe = [&](size_t i) { return "x=" + hex(init_[0].data() + kPad + off + i * sz, sz); };
        auto exact = [](size_t, const unsigned char*, const unsigned char*) { return false; };
        return compare(dt, 0, kPad + off, n * sz, describe, exact, "divide by " + std::to_string(divisor));
    }

    void* stream() const { return stream_; }
    // Elements that differed only in which of two NaN operands' payload won.
    long tolerated() const { return tolerated_; }

private:
    // Bytes of a slot a case uses: guard, offset, data, guard.
    static size_t span_for(size_t bytes) { return kPad + 32 + bytes + kPad; }

    // Compares the device slot (result and guard bytes) with the host's. An
    // element may differ only where `allowed` says so; those are counted.
    template <typename Describe, typename Allowed>
    bool compare(chorus_datatype_t dt, int slot, size_t off, size_t bytes, Describe describe, Allowed allowed,
                 const std::string& what) {
        got_.resize(region_);
        gpu::copy_async(got_.data(), dev_ + slot * region_, span_, stream_);
        gpu::synchronize_stream(stream_);
        const std::vector<unsigned char>& want = host_[slot];
        if (std::memcmp(got_.data(), want.data(), span_) == 0) return true;
        const size_t sz = datatype_size(dt);
        int shown = 0;
        bool ok = true;
        for (size_t b = 0; b < span_; ++b) {
            if (got_[b] == want[b]) continue;
            if (b < off || b >= off + bytes) {
                ok = false;
                if (shown++ < 5)
                    std::printf("  %s %s: guard byte %td changed\n", datatype_name(dt), what.c_str(),
                                static_cast<std::ptrdiff_t>(b) - static_cast<std::ptrdiff_t>(off));
                continue;
            }
            const size_t i = (b - off) / sz;
            b = off + (i + 1) * sz - 1;
            if (allowed(i, got_.data() + off + i * sz, want.data() + off + i * sz)) {
                ++tolerated_;
                continue;
            }
            ok = false;
            if (shown++ < 5)
                std::printf("  %s %s: element %zu of %zu: %s host=%s gpu=%s\n", datatype_name(dt), what.c_str(), i,
                            bytes / sz, describe(i).c_str(), hex(want.data() + off + i * sz, sz).c_str(),
                            hex(got_.data() + off + i * sz, sz).c_str());
        }
        return ok;
    }

    void* stream_;
    unsigned char* dev_ = nullptr;
    size_t region_ = 0;
    size_t span_ = 0;
    long tolerated_ = 0;
    std::vector<unsigned char> host_[3], init_[3], got_;
};

int run_checks() {
    Checker ck;
    ck.reserve(kCounts[4] * 8 + 64);
    bool all_ok = true;
    uint64_t seed = 1;
    for (int d = 0; d < CHORUS_NUM_DATATYPES; ++d) {
        const auto dt = static_cast<chorus_datatype_t>(d);
        const size_t sz = datatype_size(dt);
        const long tolerated_before = ck.tolerated();
        Tally t;
        for (int o = 0; o < CHORUS_NUM_OPS; ++o) {
            const auto op = static_cast<chorus_op_t>(o);
            if (!op_supported(dt, op)) {
                bool rejected = false;
                try {
                    gpu::reduce_async(dt, op, nullptr, nullptr, nullptr, 1, ck.stream());
                } catch (const Error& e) {
                    rejected = e.code() == CHORUS_ERR_UNSUPPORTED;
                }
                ++t.cases;
                if (!rejected) {
                    std::printf("  %s op %s: not rejected as unsupported\n", datatype_name(dt), op_name(op));
                    ++t.failures;
                }
                continue;
            }
            for (size_t n : kCounts)
                for (int alias = 0; alias < 4; ++alias)
                    for (const auto& off : offsets_for(sz)) {
                        // The largest count: aligned and one misaligned placement suffice.
                        if (n == kCounts[4] && off != offsets_for(sz)[0] && off != offsets_for(sz)[2]) continue;
                        ++t.cases;
                        if (!ck.run_reduce(dt, op, n, alias, off, ++seed)) ++t.failures;
                    }
        }
        for (size_t n : kCounts)
            for (int divisor : {1, 2, 3, 7, 1000})
                for (size_t off : {size_t{0}, sz, 16 - sz}) {
                    ++t.cases;
                    if (!ck.run_divide(dt, n, divisor, off, ++seed)) ++t.failures;
                }
        if (sz > 1) {
            ++t.cases;
            if (!ck.run_divide(dt, 4097, 3, 1, ++seed)) ++t.failures;
        }
        std::printf("RESULT %-9s %s  cases=%ld failures=%ld nan_pairs=%ld\n", datatype_name(dt),
                    t.failures ? "FAIL" : "pass", t.cases, t.failures, ck.tolerated() - tolerated_before);
        std::fflush(stdout);
        all_ok = all_ok && t.failures == 0;
    }
    return all_ok ? 0 : 1;
}

// Median seconds per call of f, over `reps` batches of `inner` calls.
template <typename F>
double time_median(void* stream, int reps, int inner, F f) {
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
        gpu::synchronize_stream(stream);
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < inner; ++i) f();
        gpu::synchronize_stream(stream);
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / inner);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int run_bench() {
    const size_t bytes = size_t{256} << 20, n = bytes / sizeof(float);
    void* s = gpu::create_stream();
    float* a = static_cast<float*>(gpu::alloc_device(bytes));
    float* b = static_cast<float*>(gpu::alloc_device(bytes));
    float* d = static_cast<float*>(gpu::alloc_device(bytes));
    std::vector<float> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = static_cast<float>(i % 4099) * 0.25f;
    gpu::copy_async(a, h.data(), bytes, s);
    gpu::copy_async(b, h.data(), bytes, s);
    auto reduce = [&] { gpu::reduce_async(CHORUS_FLOAT32, CHORUS_SUM, d, a, b, n, s); };
    auto copy = [&] { gpu::copy_async(d, a, bytes, s); };
    reduce();
    copy();  // warm up
    const double tr = time_median(s, 9, 20, reduce);
    const double tc = time_median(s, 9, 20, copy);
    const double gbr = 3.0 * bytes / tr / 1e9, gbc = 2.0 * bytes / tc / 1e9;
    std::printf("BENCH reduce_f32_sum_256MiB  %.3f ms  %.0f GB/s (2 reads + 1 write)\n", tr * 1e3, gbr);
    std::printf("BENCH memcpy_d2d_256MiB      %.3f ms  %.0f GB/s (1 read + 1 write)\n", tc * 1e3, gbc);
    std::printf("BENCH reduce/copy bandwidth ratio %.2f\n", gbr / gbc);
    gpu::free_device(a);
    gpu::free_device(b);
    gpu::free_device(d);
    gpu::destroy_stream(s);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string why;
    if (!gpu::available(&why)) {
        std::printf("SKIP: no usable GPU: %s\n", why.c_str());
        return 77;
    }
    const bool bench = argc > 1 && std::string(argv[1]) == "--bench";
    try {
        return bench ? run_bench() : run_checks();
    } catch (const Error& e) {
        std::printf("FAILED: %s\n", e.what());
        return 1;
    }
}
