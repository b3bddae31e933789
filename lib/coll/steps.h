// Step-building helpers shared by the algorithms: moving a range of elements
// in pipeline pieces, and receiving-and-reducing piece by piece. A *piece* is
// one transfer of at most chunk_bytes; both sides cut a range into the same
// pieces because they compute them from the same count and settings.
#pragma once

#include <algorithm>
#include <vector>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "reduce/datatype.h"

namespace chorus::coll {

// A message's tag is (algorithm step, piece): 13 + 15 bits.
constexpr uint32_t kPieceBits = 15;
constexpr size_t kMaxPieces = size_t(1) << kPieceBits;
constexpr uint32_t kMaxSteps = 1u << (kStepTagBits - kPieceBits);

inline uint32_t tag_of(uint32_t step, size_t piece) {
    return (step << kPieceBits) | static_cast<uint32_t>(piece);
}

class StepBuilder {
public:
    StepBuilder(Schedule& s, const CollArgs& a)
        : s_(s), a_(a), esize_(datatype_size(a.dtype)),
          chunk_elems_(std::max<size_t>(1, a.chunk_bytes / datatype_size(a.dtype))) {}

    size_t esize() const { return esize_; }
    Region at(Buf b, size_t elem) const { return {b, elem * esize_}; }

    // How many pieces a range of `count` elements travels in.
    size_t pieces(size_t count) const {
        return std::min(kMaxPieces, num_chunks(count, chunk_elems_));
    }
    Range piece(size_t count, size_t i) const { return split(count, pieces(count), i); }

    // Send `count` elements of `buf` from element `elem` to `peer`, in
    // pieces, each after `deps`. Returns one step per non-empty piece.
    std::vector<StepId> send(int peer, uint32_t step, Buf buf, size_t elem, size_t count, Deps deps = {}) {
        return transfer(true, peer, step, buf, elem, count, deps);
    }
    std::vector<StepId> recv(int peer, uint32_t step, Buf buf, size_t elem, size_t count, Deps deps = {}) {
        return transfer(false, peer, step, buf, elem, count, deps);
    }
    // Like send(), but piece i waits only for after[i] (same count, so the
    // same pieces as the steps that produced `after`).
    std::vector<StepId> send_each_after(int peer, uint32_t step, Buf buf, size_t elem, size_t count,
                                        const std::vector<StepId>& after) {
        std::vector<StepId> out;
        for (size_t i = 0, n = pieces(count); i < n; ++i) {
            Range r = piece(count, i);
            if (!r.size()) continue;
            out.push_back(s_.send(peer, tag_of(step, i), at(buf, elem + r.begin), r.size() * esize_,
                                  {after.at(out.size())}));
        }
        return out;
    }

    // Receive `count` elements from `peer` piece by piece into `tmp` (scratch
    // elements) and reduce each piece as it arrives:
    //   dst = peer_first ? (received op mine) : (mine op received).
    // Operand order is fixed by rank, never by arrival, so results are
    // reproducible bit for bit. Returns the reduction steps, one per piece.
    std::vector<StepId> recv_reduce(int peer, uint32_t step, size_t tmp_elem, Buf dst, size_t dst_elem, Buf mine,
                                    size_t mine_elem, size_t count, bool peer_first, Deps recv_deps = {},
                                    Deps reduce_deps = {}) {
        std::vector<StepId> out;
        for (size_t i = 0, n = pieces(count); i < n; ++i) {
            Range r = piece(count, i);
            if (!r.size()) continue;
            Region tmp = at(Buf::Scratch, tmp_elem + r.begin);
            StepId rv = s_.recv(peer, tag_of(step, i), tmp, r.size() * esize_, recv_deps);
            Region m = at(mine, mine_elem + r.begin), d = at(dst, dst_elem + r.begin);
            StepId red = peer_first ? s_.reduce(d, tmp, m, r.size(), {rv}) : s_.reduce(d, m, tmp, r.size(), {rv});
            for (StepId x : reduce_deps) s_.add_dep(red, x);
            out.push_back(red);
        }
        return out;
    }

    // Copy `count` elements (one step; none if empty or the same place).
    std::vector<StepId> copy(Buf dst, size_t dst_elem, Buf src, size_t src_elem, size_t count, Deps deps = {}) {
        if (!count) return {};
        return {s_.copy(at(dst, dst_elem), at(src, src_elem), count * esize_, deps)};
    }

    // Copy `count` elements in pieces that trail the transfers in `after`:
    // piece i of n waits for after[i * after.size() / n]. A rank's copy of
    // its own data (a root's output, an all-gather's own block) then runs
    // while its sends are in flight instead of before them (the executor runs
    // ready local steps before it posts transfers). With `after` empty, one
    // copy that waits for nothing.
    std::vector<StepId> copy_behind(Buf dst, size_t dst_elem, Buf src, size_t src_elem, size_t count,
                                    const std::vector<StepId>& after) {
        if (after.empty()) return copy(dst, dst_elem, src, src_elem, count);
        std::vector<StepId> out;
        for (size_t i = 0, n = pieces(count); i < n; ++i) {
            Range r = piece(count, i);
            if (!r.size()) continue;
            out.push_back(s_.copy(at(dst, dst_elem + r.begin), at(src, src_elem + r.begin), r.size() * esize_,
                                  {after[i * after.size() / n]}));
        }
        return out;
    }

private:
    std::vector<StepId> transfer(bool is_send, int peer, uint32_t step, Buf buf, size_t elem, size_t count,
                                 Deps deps) {
        std::vector<StepId> out;
        for (size_t i = 0, n = pieces(count); i < n; ++i) {
            Range r = piece(count, i);
            if (!r.size()) continue;
            Region reg = at(buf, elem + r.begin);
            out.push_back(is_send ? s_.send(peer, tag_of(step, i), reg, r.size() * esize_, deps)
                                  : s_.recv(peer, tag_of(step, i), reg, r.size() * esize_, deps));
        }
        return out;
    }

    Schedule& s_;
    const CollArgs& a_;
    size_t esize_;
    size_t chunk_elems_;
};

inline void append(std::vector<StepId>& to, const std::vector<StepId>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

// Largest power of two <= n (n >= 1).
inline int pow2_floor(int n) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

// Binomial tree rooted at `root` over `size` ranks, in relative ranks
// (rel = (rank - root) mod size): the parent of rel is rel minus its lowest
// set bit; the children are rel + 2^k for 2^k below that bit, while < size.
inline int binomial_parent(int rel) { return rel == 0 ? -1 : rel & (rel - 1); }
inline std::vector<int> binomial_children(int rel, int size) {
    std::vector<int> kids;
    int low = rel == 0 ? pow2_floor(size) * 2 : (rel & -rel);
    for (int m = 1; m < low && rel + m < size; m <<= 1) kids.push_back(rel + m);
    return kids;
}

}  // namespace chorus::coll
