#include "bench_cold.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "chorus.h"

namespace bench {

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kMinTarget = 256 * kMiB;
constexpr size_t kMaxTarget = 1024 * kMiB;  // a machine with a huge cache still runs
constexpr size_t kMaxSets = 4096;           // small messages: sets at least target / kMaxSets apart
constexpr size_t kPage = 4096;

size_t round_up(size_t n, size_t to) {
    return (n + to - 1) / to * to;
}

// The largest cache of CPU 0 (the last level), from sysfs; 0 if unknown.
size_t last_level_cache_bytes() {
    size_t best = 0;
    for (int i = 0; i < 8; ++i) {
        std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
        size_t v = 0;
        char unit = 0;
        if (!(in >> v)) continue;
        in >> unit;
        if (unit == 'K') v <<= 10;
        if (unit == 'M') v <<= 20;
        best = std::max(best, v);
    }
    return best;
}

}  // namespace

size_t ColdRing::target_bytes() {
    return std::clamp(4 * last_level_cache_bytes(), kMinTarget, kMaxTarget);
}

size_t ColdRing::arena_bytes(size_t set_bytes) {
    // At least two sets, so that consecutive calls never share one.
    return std::max(target_bytes(), 2 * round_up(std::max<size_t>(set_bytes, 1), kPage));
}

ColdRing::~ColdRing() {
    if (mapped_)
        chorus_mem_free(arena_);
    else
        std::free(arena_);
}

bool ColdRing::allocate(size_t max_set_bytes, std::string& error, bool mapped) {
    arena_bytes_ = arena_bytes(max_set_bytes);
    void* p = nullptr;
    mapped_ = mapped;
    if (mapped ? chorus_mem_alloc(arena_bytes_, &p) != CHORUS_SUCCESS : posix_memalign(&p, kPage, arena_bytes_) != 0) {
        error = "--cold-cache: cannot allocate " + std::to_string(arena_bytes_ >> 20) + " MiB of buffers";
        return false;
    }
    arena_ = static_cast<char*>(p);
    std::memset(arena_, 0, arena_bytes_);  // every page faulted in before any timing
    return true;
}

void ColdRing::layout(size_t a_bytes, size_t b_bytes, const void* input) {
    a_bytes_ = a_bytes;
    b_bytes_ = b_bytes;
    input_ = input;
    b_offset_ = round_up(std::max<size_t>(a_bytes, 1), kPage);
    const size_t set = b_offset_ + round_up(b_bytes, kPage);
    stride_ = std::max(set, round_up(arena_bytes_ / kMaxSets, kPage));
    sets_ = std::max<size_t>(arena_bytes_ / stride_, 1);
    for (size_t s = 0; s < sets_; ++s) touch(s);
    turn_ = 0;
}

void ColdRing::touch(size_t set) {
    std::memcpy(a(set), input_, a_bytes_);
    if (b_bytes_) std::memset(b(set), 0, b_bytes_);
}

size_t ColdRing::next() {
    if (turn_ > 0) touch((turn_ - 1) % sets_);
    return turn_++ % sets_;
}

}  // namespace bench
