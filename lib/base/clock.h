// The clocks of traces, records and straggler measurements. now_us():
// microseconds of the monotonic clock. ticks(): a cheaper stamp for the way
// of a call (the CPU's time-stamp counter on x86, which reads in a few
// nanoseconds where clock_gettime may take much longer on a virtual
// machine), turned into now_us() microseconds by a TickScale measured over
// the run. Callers read either only when timing was asked for.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace chorus {

inline double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Ticks to now_us() microseconds, from two readings of both clocks: one
// when timing starts, one when the stamps are converted (at least a
// millisecond later).
class TickScale {
public:
    void start() {
        tick0_ = ticks();
        us0_ = now_us();
    }
    void finish() {
        while (now_us() - us0_ < 1000) {
        }
        const uint64_t t1 = ticks();
        const double u1 = now_us();
        us_per_tick_ = (u1 - us0_) / static_cast<double>(t1 - tick0_);
    }
    double us(uint64_t t) const { return us0_ + static_cast<double>(static_cast<int64_t>(t - tick0_)) * us_per_tick_; }

private:
    uint64_t tick0_ = 0;
    double us0_ = 0;
    double us_per_tick_ = 0;
};

}  // namespace chorus
