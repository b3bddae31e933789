// Step-building helpers shared by the algorithms: the tag budget, moving a
// range of elements in pipeline pieces, and receiving-and-reducing piece by
// piece. A *piece* is one transfer of at most chunk_bytes (more only where the
// tag budget allows no more pieces); both sides cut a range into the same
// pieces because they compute them from the same count and settings.
#pragma once

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "coll/algorithm.h"
#include "coll/partition.h"
#include "reduce/datatype.h"

namespace chorus::coll {

// The tag budget. The algorithm's part of a wire tag (kStepTagBits = 28
// bits; the wire adds the source rank and the operation's sequence number)
// names a message by (step, piece), and needs to be unique only per source,
// destination and operation. Each schedule splits those bits itself, from a
// value every rank agrees on: `steps`, the number of step indices the
// algorithm uses (a function of the rank count), gets the bits its largest
// index needs, and the piece index the rest. A message travels in at most
// max_pieces() pieces: what the piece bits hold, and at most
// kPieceBudget / steps, so that a schedule's transfers stay bounded however
// many ranks and bytes it has (beyond, a message goes in fewer, larger
// pieces). Every tag an algorithm puts on a message comes from tag(), which
// checks both fields. A schedule may get fewer than kStepTagBits bits
// (CollArgs::tag_bits): a two-level algorithm gives each of its phases a
// part of the field (lib/coll/planner/compose.h).
constexpr size_t kPieceBudget = size_t(1) << 18;

// Bits needed to write n (0 for 0).
inline uint32_t bits_for(uint64_t n) {
    uint32_t b = 0;
    while (n >> b) ++b;
    return b;
}

class TagSpace {
public:
    explicit TagSpace(uint64_t steps, uint32_t bits = kStepTagBits) : steps_(steps ? steps : 1) {
        step_bits_ = bits_for(steps_ - 1);
        if (bits > static_cast<uint32_t>(kStepTagBits) || step_bits_ > bits)
            fail(CHORUS_ERR_UNSUPPORTED, "tag budget: ", steps_, " algorithm steps do not fit ", bits, " tag bits");
        piece_bits_ = bits - step_bits_;
        max_pieces_ = std::max<size_t>(1, std::min<size_t>(size_t(1) << piece_bits_, kPieceBudget / steps_));
    }
    uint64_t steps() const { return steps_; }
    uint32_t step_bits() const { return step_bits_; }
    uint32_t piece_bits() const { return piece_bits_; }
    size_t max_pieces() const { return max_pieces_; }
    uint32_t tag(uint64_t step, size_t piece) const {
        if (step >= steps_ || piece >= max_pieces_)
            fail(CHORUS_ERR_INTERNAL, "tag budget: step ", step, " of ", steps_, ", piece ", piece, " of ",
                 max_pieces_);
        return static_cast<uint32_t>(step << piece_bits_ | piece);
    }

private:
    uint64_t steps_;
    uint32_t step_bits_ = 0, piece_bits_ = 0;
    size_t max_pieces_ = 1;
};

class StepBuilder {
public:
    // `steps`: how many step indices (0 .. steps-1) the algorithm's messages
    // use, from values every rank agrees on (see TagSpace).
    StepBuilder(Schedule& s, const CollArgs& a, uint64_t steps)
        : s_(s),
          a_(a),
          esize_(datatype_size(a.dtype)),
          chunk_elems_(std::max<size_t>(1, a.chunk_bytes / datatype_size(a.dtype))),
          tags_(steps, a.tag_bits) {}

    size_t esize() const { return esize_; }
    Region at(Buf b, size_t elem) const { return {b, elem * esize_}; }

    // At two ranks, every range in one piece (of up to kWholeBytes): for a
    // schedule whose messages nothing forwards or reduces piece by piece
    // (the two ranks exchange blocks between user buffers), where a piece
    // buys no overlap and costs a handshake of its own. Measured at np=2 on
    // one host (all-gather in place, 4 MiB, three alternating runs): 712 us
    // in 64 KiB pieces, 489 in 256 KiB ones, 401 whole: about 5 us a piece
    // (the single-copy read's system call, its cell and its
    // acknowledgement). Not in a phase of a composed schedule
    // (CollArgs::phase), whose pieces the next phase may take as they land.
    // The cap bounds what device buffers through staging pin each way; a
    // handshake per 64 MiB costs nothing.
    void whole_between_two() {
        if (a_.size == 2 && !a_.phase) chunk_elems_ = std::max(chunk_elems_, kWholeBytes / esize_);
    }
    static constexpr size_t kWholeBytes = size_t(64) << 20;

    const TagSpace& tags() const { return tags_; }
    // The tag of piece `piece` of a message of step `step`.
    uint32_t tag_of(uint64_t step, size_t piece) const { return tags_.tag(step, piece); }

    // How many pieces a range of `count` elements travels in.
    size_t pieces(size_t count) const { return std::min(tags_.max_pieces(), num_chunks(count, chunk_elems_)); }
    Range piece(size_t count, size_t i) const { return split(count, pieces(count), i); }
    // The largest piece of any range of at most `count` elements (to size a
    // slot that any of them fits).
    size_t largest_piece(size_t count) const {
        return std::min(count, std::max(chunk_elems_, ceil_div(count, tags_.max_pieces())));
    }

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
            out.push_back(
                s_.send(peer, tag_of(step, i), at(buf, elem + r.begin), r.size() * esize_, {after.at(out.size())}));
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
    std::vector<StepId> transfer(bool is_send, int peer, uint32_t step, Buf buf, size_t elem, size_t count, Deps deps) {
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
    TagSpace tags_;
};

// Steps that touched disjoint element ranges of one buffer. A later step on
// a range depends on the steps whose ranges overlap it.
class RangeSteps {
public:
    void add(size_t begin, size_t end, StepId step) {
        if (begin == end) return;
        items_.push_back({begin, end, step});
        sorted_ = items_.size() < 2 || items_[items_.size() - 2].begin < begin ? sorted_ : false;
    }
    std::vector<StepId> overlapping(size_t begin, size_t end) {
        if (!sorted_) {
            std::sort(items_.begin(), items_.end(), [](const Item& x, const Item& y) { return x.begin < y.begin; });
            sorted_ = true;
        }
        std::vector<StepId> out;
        auto it = std::partition_point(items_.begin(), items_.end(), [&](const Item& x) { return x.end <= begin; });
        for (; it != items_.end() && it->begin < end; ++it) out.push_back(it->step);
        return out;
    }
    template <class F>
    void for_each(F f) const {
        for (const Item& x : items_) f(x.begin, x.end, x.step);
    }

private:
    struct Item {
        size_t begin, end;
        StepId step;
    };
    std::vector<Item> items_;
    bool sorted_ = true;
};

// Calls f(piece index, first element, elements) for each non-empty piece of
// the element range [begin, end). Pieces depend only on the range's length,
// so sender and receiver cut the same range the same way.
template <class F>
void for_pieces(const StepBuilder& b, size_t begin, size_t end, F f) {
    const size_t n = end - begin;
    for (size_t i = 0, k = b.pieces(n); i < k; ++i) {
        Range r = b.piece(n, i);
        if (r.size()) f(i, begin + r.begin, r.size());
    }
}

inline void append(std::vector<StepId>& to, const std::vector<StepId>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

// Largest power of two <= n (n >= 1).
inline int pow2_floor(int n) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

// Smallest k with 2^k >= n (n >= 1).
inline uint32_t ceil_log2(uint64_t n) {
    return n <= 1 ? 0 : bits_for(n - 1);
}

// Binomial tree rooted at `root` over `size` ranks, in relative ranks
// (rel = (rank - root) mod size): the parent of rel is rel minus its lowest
// set bit; the children are rel + 2^k for 2^k below that bit, while < size.
inline int binomial_parent(int rel) {
    return rel == 0 ? -1 : rel & (rel - 1);
}
inline std::vector<int> binomial_children(int rel, int size) {
    std::vector<int> kids;
    int low = rel == 0 ? pow2_floor(size) * 2 : (rel & -rel);
    for (int m = 1; m < low && rel + m < size; m <<= 1) kids.push_back(rel + m);
    return kids;
}
// The subtree of rel: relative ranks rel .. rel + binomial_subtree(rel) - 1.
inline int binomial_subtree(int rel, int size) {
    return rel == 0 ? size : std::min(rel & -rel, size - rel);
}

// Relative ranks first .. first + n - 1 of a tree rooted at `root`, as at
// most two runs of consecutive absolute ranks (cut where absolute rank 0
// falls): a tree's message of several ranks' blocks, cut the same way by its
// sender and its receiver.
struct RankRun {
    int first, n;  // relative ranks
};
inline std::vector<RankRun> absolute_runs(int first, int n, int root, int size) {
    const int cut = mod(-root, size);  // the relative rank of absolute rank 0
    if (cut > first && cut < first + n) return {{first, cut - first}, {cut, first + n - cut}};
    return {{first, n}};
}

}  // namespace chorus::coll
