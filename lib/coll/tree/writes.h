// Which steps wrote which elements of a region, so that a step reading part
// of it waits for exactly those (a forwarded piece for the pieces it is made
// of, not for the whole message): O(pieces) dependencies instead of
// O(pieces^2).
#pragma once

#include <vector>

#include "coll/steps.h"

namespace chorus::coll {

class Writes {
public:
    // Step `s` wrote elements [begin, end).
    void add(size_t begin, size_t end, StepId s) { spans_.add(begin, end, s); }
    // The pieces of a transfer of `count` elements at `elem` (as StepBuilder
    // cut them: one step per non-empty piece).
    void add_pieces(const StepBuilder& sb, size_t elem, size_t count, const std::vector<StepId>& steps) {
        size_t k = 0;
        for_pieces(sb, elem, elem + count, [&](size_t, size_t e, size_t n) { add(e, e + n, steps.at(k++)); });
    }
    // The steps that wrote any of [begin, end).
    std::vector<StepId> overlapping(size_t begin, size_t end) { return spans_.overlapping(begin, end); }
    // Send `count` elements of `buf` from `elem` in pieces, each after the
    // writes of the elements it carries.
    std::vector<StepId> send(Schedule& s, const StepBuilder& sb, int peer, uint32_t step, Buf buf, size_t elem,
                             size_t count) {
        std::vector<StepId> out;
        for_pieces(sb, elem, elem + count, [&](size_t i, size_t e, size_t n) {
            out.push_back(s.send(peer, sb.tag_of(step, i), sb.at(buf, e), n * sb.esize(), overlapping(e, e + n)));
        });
        return out;
    }

private:
    RangeSteps spans_;
};

}  // namespace chorus::coll
