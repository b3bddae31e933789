// What ranks must agree on, and the message when they do not. With
// CHORUS_CHECK=1 every call's fingerprint (collective, count, datatype, op,
// root, sequence number) is exchanged before it runs; the ranks are then
// grouped by what they passed, so the error names each group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coll/algorithm.h"

namespace chorus {

struct Fingerprint {
    uint32_t coll, dtype, op;
    int32_t root;
    uint64_t count, counts_hash, seq;
    bool operator==(const Fingerprint& o) const {
        return coll == o.coll && dtype == o.dtype && op == o.op && root == o.root && count == o.count &&
               counts_hash == o.counts_hash && seq == o.seq;
    }
};

// Ranks as text, consecutive runs shortened: {0, 2, 3, 4, 7} -> "0,2-4,7".
std::string rank_list(const std::vector<int>& ranks);

// Only what the collective uses: a broadcast's op does not have to agree.
Fingerprint fingerprint(const coll::CollArgs& args, uint64_t seq);

// "" when every rank passed the same; otherwise the groups of ranks and what
// each group passed.
std::string disagreement(const std::vector<Fingerprint>& all);

// "" when every rank's protocol settings (Config::protocol_settings, one
// blob per rank) are the same; otherwise, for each setting that differs,
// its value on each group of ranks.
std::string settings_disagreement(const std::vector<std::string>& settings);

// Ranks grouped by equal values: each group's first rank and its ranks as
// text ("0,2", "1,3-7"). `same(a, b)` compares the values of ranks a and b.
template <typename Same>
std::vector<std::pair<int, std::string>> group_ranks(int size, Same&& same) {
    std::vector<std::pair<int, std::vector<int>>> groups;
    for (int r = 0; r < size; ++r) {
        bool placed = false;
        for (auto& g : groups)
            if (same(g.first, r)) {
                g.second.push_back(r);
                placed = true;
                break;
            }
        if (!placed) groups.push_back({r, {r}});
    }
    std::vector<std::pair<int, std::string>> out;
    for (const auto& g : groups) out.emplace_back(g.first, rank_list(g.second));
    return out;
}

}  // namespace chorus
