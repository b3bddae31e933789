#include "core/stragglers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "net/transport.h"

namespace chorus {

std::map<uint64_t, double> Arrivals::held(const TickScale& scale, double offset_us) const {
    std::map<uint64_t, double> out;
    const uint64_t first = last_ >= kWindow ? last_ - kWindow + 1 : 1;
    for (uint64_t n = first; n <= last_; ++n) out[n] = scale.us(ticks_[n % kWindow]) - offset_us;
    return out;
}

// "S ENTRIES FIRST BASE d1 d2 ...": entry i is operation FIRST + i, at BASE
// + d_i / 10 microseconds.
std::vector<std::string> Arrivals::encode(const std::map<uint64_t, double>& all) {
    std::vector<std::string> out;
    auto it = all.begin();
    while (it != all.end()) {
        const double base = it->second;
        char head[96];
        std::snprintf(head, sizeof head, " %llu %.1f", static_cast<unsigned long long>(it->first), base);
        std::string body = head;
        while (it != all.end() && body.size() < net::kMaxNotice - 64) {
            body += cat(" ", std::llround((it->second - base) * 10));
            ++it;
        }
        out.push_back(body);
    }
    if (out.empty()) out.push_back(" 0 0");
    for (auto& n : out) n = cat("S ", all.size(), n);
    return out;
}

bool Arrivals::decode(const std::string& notice, std::map<uint64_t, double>* into, uint64_t* entries) {
    if (notice.compare(0, 2, "S ") != 0) return false;
    const char* p = notice.c_str() + 2;
    char* end = nullptr;
    *entries = std::strtoull(p, &end, 10);
    uint64_t number = std::strtoull(end, &end, 10);
    double base = std::strtod(end, &end);
    for (;;) {
        const char* at = end;
        long long d = std::strtoll(at, &end, 10);
        if (end == at) break;
        (*into)[number++] = base + static_cast<double>(d) / 10;
    }
    return true;
}

namespace {
std::string us_text(double us) {
    char b[32];
    if (us < 1000)
        std::snprintf(b, sizeof b, "%.1f us", us);
    else if (us < 1e6)
        std::snprintf(b, sizeof b, "%.2f ms", us / 1000);
    else
        std::snprintf(b, sizeof b, "%.2f s", us / 1e6);
    return b;
}
}  // namespace

std::string straggler_summary(const std::vector<std::map<uint64_t, double>>& arrivals, const std::string& comm) {
    const size_t n = arrivals.size();
    if (n < 2) return "";
    std::vector<uint64_t> common;
    for (const auto& [number, t] : arrivals[0]) {
        (void)t;
        bool everywhere = true;
        for (size_t r = 1; r < n && everywhere; ++r) everywhere = arrivals[r].count(number) > 0;
        if (everywhere) common.push_back(number);
    }
    if (common.empty()) return "";
    std::vector<std::vector<double>> late(n);
    std::vector<size_t> last(n, 0);
    // Lateness buckets: < 1 us, 1-10 us, ... >= 10 ms.
    static const char* kBuckets[] = {"<1us", "1-10us", "10-100us", "0.1-1ms", "1-10ms", ">=10ms"};
    size_t hist[6] = {0};
    for (uint64_t number : common) {
        double first = arrivals[0].at(number);
        size_t latest = 0;
        for (size_t r = 0; r < n; ++r) {
            double t = arrivals[r].at(number);
            first = std::min(first, t);
            if (t > arrivals[latest].at(number)) latest = r;
        }
        for (size_t r = 0; r < n; ++r) {
            double l = arrivals[r].at(number) - first;
            late[r].push_back(l);
            int b = l < 1 ? 0 : std::min(5, 1 + static_cast<int>(std::floor(std::log10(l))));
            ++hist[b];
        }
        ++last[latest];
    }
    std::vector<size_t> order(n);
    for (size_t r = 0; r < n; ++r) order[r] = r;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return last[a] > last[b]; });
    std::string out = cat("stragglers on ", comm, " over the last ", common.size(),
                          " operations (lateness: arrival after the first rank's, on rank 0's clock):");
    for (size_t i = 0; i < n && i < 5; ++i) {
        size_t r = order[i];
        std::vector<double> l = late[r];
        std::sort(l.begin(), l.end());
        out += cat("\n  rank ", r, ": last to arrive ", last[r], last[r] == 1 ? " time (" : " times (",
                   100 * last[r] / common.size(), "%), late by median ", us_text(l[l.size() / 2]), ", max ",
                   us_text(l.back()));
    }
    if (n > 5) out += cat("\n  (", n - 5, " more ranks)");
    out += "\n  histogram of lateness (operations x ranks):";
    for (int b = 0; b < 6; ++b) out += cat(" ", kBuckets[b], " ", hist[b]);
    return out;
}

}  // namespace chorus
