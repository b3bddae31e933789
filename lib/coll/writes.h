// Which steps wrote which elements of a region, so that a step reading part
// of it waits for exactly those (a forwarded piece for the pieces it is made
// of, not for the whole message): O(pieces) dependencies instead of
// O(pieces^2).
#pragma once

#include <algorithm>
#include <vector>

#include "coll/steps.h"

namespace chorus::coll {

class Writes {
public:
    // Step `s` wrote elements [begin, end).
    void add(size_t begin, size_t end, StepId s) { spans_.push_back({begin, end, s}); }
    // The pieces of a transfer of `count` elements at `elem` (as StepBuilder
    // cut them: one step per piece).
    void add_pieces(const StepBuilder& sb, size_t elem, size_t count, const std::vector<StepId>& steps) {
        for (size_t i = 0; i < steps.size(); ++i) {
            Range r = sb.piece(count, i);
            add(elem + r.begin, elem + r.end, steps[i]);
        }
    }
    // The steps that wrote any of [begin, end). The writes are disjoint, and
    // added in the order of the elements they wrote.
    std::vector<StepId> overlapping(size_t begin, size_t end) const {
        std::vector<StepId> out;
        auto it = std::partition_point(spans_.begin(), spans_.end(), [begin](const Span& w) { return w.end <= begin; });
        for (; it != spans_.end() && it->begin < end; ++it) out.push_back(it->step);
        return out;
    }
    // Send `count` elements of `buf` from `elem` in pieces, each after the
    // writes of the elements it carries.
    std::vector<StepId> send(Schedule& s, const StepBuilder& sb, int peer, uint32_t step, Buf buf, size_t elem,
                             size_t count) const {
        std::vector<StepId> out;
        for (size_t i = 0, n = sb.pieces(count); i < n; ++i) {
            Range r = sb.piece(count, i);
            if (!r.size()) continue;
            out.push_back(s.send(peer, tag_of(step, i), sb.at(buf, elem + r.begin), r.size() * sb.esize(),
                                 overlapping(elem + r.begin, elem + r.end)));
        }
        return out;
    }

private:
    struct Span {
        size_t begin, end;
        StepId step;
    };
    std::vector<Span> spans_;
};

}  // namespace chorus::coll
