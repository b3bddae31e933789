#include "coll/planner/topology.h"

#include <algorithm>
#include <map>

#include "base/error.h"

namespace chorus::coll {

HostMap HostMap::from_labels(const std::vector<int>& label) {
    HostMap m;
    std::map<int, int> number;
    m.host_of_.resize(label.size());
    m.local_.resize(label.size());
    for (size_t r = 0; r < label.size(); ++r) {
        auto it = number.emplace(label[r], static_cast<int>(number.size())).first;
        const int h = it->second;
        if (h == static_cast<int>(m.members_.size())) m.members_.emplace_back();
        m.host_of_[r] = h;
        m.local_[r] = static_cast<int>(m.members_[h].size());
        m.members_[h].push_back(static_cast<int>(r));
    }
    return m;
}

HostMap HostMap::from_layout(const std::vector<int>& sizes) {
    std::vector<int> label;
    for (size_t h = 0; h < sizes.size(); ++h) {
        if (sizes[h] <= 0) fail(CHORUS_ERR_INVALID_ARGUMENT, "host layout: host ", h, " has ", sizes[h], " ranks");
        label.insert(label.end(), static_cast<size_t>(sizes[h]), static_cast<int>(h));
    }
    return from_labels(label);
}

int HostMap::block() const {
    if (host_of_.empty()) return 0;
    const int n = static_cast<int>(members_[0].size());
    if (ranks() % n) return 0;
    for (int r = 0; r < ranks(); ++r)
        if (host_of_[r] != r / n) return 0;
    return n;
}

std::string HostMap::describe() const {
    if (host_of_.empty()) return "one host";
    std::string out =
        cat(ranks(), ranks() == 1 ? " rank on " : " ranks on ", hosts(), hosts() == 1 ? " host" : " hosts");
    size_t lo = members_[0].size(), hi = lo;
    for (const auto& m : members_) {
        lo = std::min(lo, m.size());
        hi = std::max(hi, m.size());
    }
    if (hosts() <= 8) {
        out += " (";
        for (int h = 0; h < hosts(); ++h) out += cat(h ? "+" : "", members_[h].size());
        return out + ")";
    }
    return lo == hi ? cat(out, " (", lo, " each)") : cat(out, " (", lo, " to ", hi, " each)");
}

}  // namespace chorus::coll
