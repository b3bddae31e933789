// Shared pieces of the one-sided algorithms (every rank on one host, with
// single-copy access to each other's buffers: CollArgs::one_sided; or every
// rank reaching the others' registered memory: CollArgs::rma). A rank
// exposes a region, its peer gets (reads) or puts (writes) it directly, one
// copy between the two ranks' buffers, and a get that reduces touches each
// remote byte once.
//
// Tags: (phase, reader, piece). The two messages of a pair travel in both
// directions with one tag, so a tag must name one pair whichever rank
// exposes: the rank that gets or puts is part of it.
#pragma once

#include <algorithm>
#include <vector>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/planner/cost_model.h"
#include "reduce/datatype.h"

namespace chorus::coll {

constexpr uint32_t kOsPieceBits = 16;
constexpr uint32_t kOsRankBits = 10;
constexpr int kOsMaxRanks = 1 << kOsRankBits;
static_assert(2 + kOsRankBits + kOsPieceBits <= kStepTagBits, "one-sided tags fit a step tag");

// A piece (one pair of steps) is at most this many pipeline chunks: the
// pair costs two small messages, so pieces are larger than chunks.
constexpr size_t kOsChunksPerPiece = 4;

inline uint32_t os_tag(uint32_t phase, int reader, size_t piece) {
    return (phase << (kOsRankBits + kOsPieceBits)) | (static_cast<uint32_t>(reader) << kOsPieceBits) |
           static_cast<uint32_t>(piece);
}

// Whether the one-sided algorithms take these arguments.
inline bool os_supported(const CollArgs& a) {
    return (a.one_sided || a.rma) && a.size <= kOsMaxRanks;
}

class OsBuilder {
public:
    // Beyond the caches (as the cost model the schedule is built for sees
    // it), copies and reductions through mappings stream their results.
    OsBuilder(Schedule& s, const CollArgs& a)
        : s_(s), a_(a), esize_(datatype_size(a.dtype)), stream_(a.cost && beyond_caches(a, *a.cost)) {}
    size_t esize() const { return esize_; }
    Region at(Buf b, size_t elem) const { return {b, elem * esize_}; }

    // The pieces of a range of `count` elements.
    size_t pieces(size_t count) const {
        size_t per = std::max<size_t>(1, a_.chunk_bytes * kOsChunksPerPiece / esize_);
        size_t n = num_chunks(count, per);
        return std::min(n, size_t(1) << kOsPieceBits);
    }
    Range piece(size_t count, size_t k) const { return split(count, pieces(count), k); }

    // Expose `count` elements of `buf` from `elem` to `peer` (who reads or
    // writes them with tag (phase, reader, k)), piece k after after[k] if
    // given. Returns one step per non-empty piece, indexed by piece.
    std::vector<StepId> expose(int peer, uint32_t phase, int reader, Buf buf, size_t elem, size_t count,
                               const std::vector<StepId>& after = {}) {
        return each_piece(count, after, [&](size_t k, Range r, Deps d) {
            return s_.expose(peer, os_tag(phase, reader, k), at(buf, elem + r.begin), r.size() * esize_, d);
        });
    }
    // Get `count` elements from `peer` (which exposes them with tag
    // (phase, this rank, k)) into `buf` at `elem`, piece k after after[k].
    std::vector<StepId> get(int peer, uint32_t phase, Buf buf, size_t elem, size_t count,
                            const std::vector<StepId>& after = {}) {
        return each_piece(count, after, [&](size_t k, Range r, Deps d) {
            const StepId id = s_.get(peer, os_tag(phase, a_.rank, k), at(buf, elem + r.begin), r.size() * esize_, d);
            if (stream_) s_.stream(id);
            return id;
        });
    }
    // Put `count` elements of `buf` at `elem` into what `peer` exposes.
    std::vector<StepId> put(int peer, uint32_t phase, Buf buf, size_t elem, size_t count,
                            const std::vector<StepId>& after = {}) {
        return each_piece(count, after, [&](size_t k, Range r, Deps d) {
            return s_.put(peer, os_tag(phase, a_.rank, k), at(buf, elem + r.begin), r.size() * esize_, d);
        });
    }

    // This rank's block (`count` elements at `block_elem` of every rank's
    // Send) reduced over all ranks into `dst` at `dst_elem`, reading each
    // peer's piece as it reduces, in the order this rank, then rank + 1,
    // rank + 2, ... (fixed, so one rank computes each element, the same way
    // every time). `landing` (scratch elements, count of them) is where data
    // lands if it must be sent instead. Piece k starts after after[k] if
    // given (or after every step of after_all[k]); with `serial`, also after
    // piece k-1. Returns the last step of each piece (the AVG division
    // included).
    std::vector<StepId> reduce_block(uint32_t phase, size_t block_elem, size_t count, Buf dst, size_t dst_elem,
                                     size_t landing, const std::vector<StepId>& after = {},
                                     const std::vector<std::vector<StepId>>& after_all = {}, bool serial = false) {
        std::vector<StepId> out;
        const int p = a_.size, r = a_.rank;
        for (size_t k = 0, n = pieces(count); k < n; ++k) {
            Range pc = piece(count, k);
            if (!pc.size()) continue;
            Region d = at(dst, dst_elem + pc.begin), land = at(Buf::Scratch, landing + pc.begin);
            Region local = at(Buf::Send, block_elem + pc.begin);
            StepId last = 0;
            const size_t first = s_.num_steps();
            for (int i = 1; i < p; ++i) {
                const int q = mod(r + i, p);
                Deps deps = i > 1                ? Deps{last}
                            : !after_all.empty() ? Deps(after_all.at(out.size()))
                            : after.empty()      ? Deps{}
                                                 : Deps{after.at(out.size())};
                last = s_.get_reduce(q, os_tag(phase, r, k), d, i == 1 ? local : d, pc.size(), false, land, deps);
                if (stream_ && i == 1) s_.stream(last);  // out of place: into a result not read again soon
            }
            if (p == 1) last = s_.copy(d, local, pc.size() * esize_);
            if (serial && !out.empty()) s_.add_dep(first, out.back());
            if (a_.op == CHORUS_AVG && p > 1) last = s_.divide(d, pc.size(), p, {last});
            out.push_back(last);
        }
        return out;
    }

private:
    // add(k, range, deps) for every non-empty piece k of `count` elements,
    // after after[i] for the i-th of them (if given).
    template <typename Add>
    std::vector<StepId> each_piece(size_t count, const std::vector<StepId>& after, Add add) {
        std::vector<StepId> out;
        for (size_t k = 0, n = pieces(count); k < n; ++k) {
            Range r = piece(count, k);
            if (!r.size()) continue;
            out.push_back(add(k, r, after.empty() ? Deps{} : Deps{after.at(out.size())}));
        }
        return out;
    }

    Schedule& s_;
    const CollArgs& a_;
    size_t esize_;
    bool stream_;
};

}  // namespace chorus::coll
