// Which ranks of a communicator share a host: an argument every rank agrees
// on (it comes from the bootstrap, the same exchange on every rank), like
// the rank count. The cost model prices a message by whether its two ends
// share a host; two-level algorithms are built from it.
#pragma once

#include <string>
#include <vector>

namespace chorus::coll {

class HostMap {
public:
    // One host (what a communicator assumes when nothing says otherwise).
    HostMap() = default;
    // From each rank's host label (any numbers; equal labels, one host).
    // Hosts are numbered in the order of their lowest rank.
    static HostMap from_labels(const std::vector<int>& label);
    // Consecutive ranks per host: sizes[h] ranks on host h (all > 0).
    static HostMap from_layout(const std::vector<int>& sizes);

    // Ranks and hosts; 0 ranks means one host of any size.
    int ranks() const { return static_cast<int>(host_of_.size()); }
    int hosts() const { return host_of_.empty() ? 1 : static_cast<int>(members_.size()); }
    int host_of(int rank) const { return host_of_.empty() ? 0 : host_of_[rank]; }
    bool same_host(int a, int b) const { return host_of(a) == host_of(b); }
    // The ranks of host h, in rank order, and rank r's index among them.
    const std::vector<int>& members(int h) const { return members_[h]; }
    int local_index(int rank) const { return host_of_.empty() ? rank : local_[rank]; }
    // One host, or each rank a host of its own: every pair of ranks is of
    // one link class.
    bool flat() const { return hosts() == 1 || hosts() == ranks(); }
    // n where host h holds ranks h*n to h*n + n - 1 for every h (hosts of n
    // consecutive ranks), else 0.
    int block() const;
    // "4 ranks on 2 hosts (2+2)"; long layouts summarised ("32768 ranks on
    // 4096 hosts (8 each)", "... (3 to 8 each)").
    std::string describe() const;
    bool operator==(const HostMap& o) const { return host_of_ == o.host_of_; }

private:
    std::vector<int> host_of_;
    std::vector<int> local_;
    std::vector<std::vector<int>> members_;
};

}  // namespace chorus::coll
