// Stragglers and drift: how late each rank arrives at each operation. With
// timing on (CHORUS_LOG=info or CHORUS_TRACE on some rank; agreed at
// creation, with the clock offsets), every rank keeps its arrival times, on
// rank 0's clock, for the last kWindow operations. At destroy the ranks
// send them to rank 0 over notices, and rank 0 (with CHORUS_LOG=info) prints
// which ranks were late most often, by how much, and a histogram.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"

namespace chorus {

class Arrivals {
public:
    static constexpr size_t kWindow = 1024;
    Arrivals() : ticks_(kWindow, 0) {}
    // Operation `number` (1, 2, ... as the flight recorder numbers them)
    // arrived at tick `t` (base/clock.h).
    void add(uint64_t number, uint64_t t) {
        ticks_[number % kWindow] = t;
        last_ = number;
    }
    uint64_t last() const { return last_; }
    // On rank 0's clock: microseconds of `scale` less this rank's offset.
    std::map<uint64_t, double> held(const TickScale& scale, double offset_us) const;
    // As notices (each under the notice limit), every one of them marked
    // with the number of entries in all.
    static std::vector<std::string> encode(const std::map<uint64_t, double>& held);
    // The entries a notice carries, by number (false if it is not one).
    static bool decode(const std::string& notice, std::map<uint64_t, double>* into, uint64_t* entries);

private:
    std::vector<uint64_t> ticks_;
    uint64_t last_ = 0;
};

// From every rank's arrivals (by operation number), over the operations
// every rank reported: "" when there are none.
std::string straggler_summary(const std::vector<std::map<uint64_t, double>>& arrivals, const std::string& comm);

}  // namespace chorus
