#include "coll/planner/compose.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "reduce/datatype.h"

namespace chorus::coll {

long in_place_shift(const CollArgs& a) {
    const long es = static_cast<long>(datatype_size(a.dtype));
    switch (a.coll) {
        case Collective::Allgather:
        case Collective::Allgatherv: return static_cast<long>(a.block(Side::Recv, a.rank).offset) * es;
        case Collective::Gather:
        case Collective::Gatherv: return static_cast<long>(a.block(Side::Recv, a.root).offset) * es;
        case Collective::Scatter:
        case Collective::Scatterv: return -static_cast<long>(a.block(Side::Send, a.root).offset) * es;
        default: return 0;
    }
}

// What the earlier phases did to each byte range of the three buffers (0:
// Send, 1: Recv, 2: scratch): the steps that last wrote it and those that
// read it since. A phase's own accesses are noted aside and merged in when
// it ends (freeze), so a phase never waits for itself: its schedule already
// orders its own steps.
class Composer::Hazards {
public:
    void deps(const Span& sp, bool write, std::vector<StepId>& out) const {
        const auto& v = segs_[sp.store];
        auto it = std::partition_point(v.begin(), v.end(), [&](const Seg& s) { return s.hi <= sp.lo; });
        for (; it != v.end() && it->lo < sp.hi; ++it) {
            out.insert(out.end(), it->writers.begin(), it->writers.end());
            if (write) out.insert(out.end(), it->readers.begin(), it->readers.end());
        }
    }
    void note(const Span& sp, bool write, StepId id) {
        if (sp.lo < sp.hi) pending_[sp.store].push_back({sp.lo, sp.hi, id, write});
    }
    // The boundaries of what earlier phases left in [sp.lo, sp.hi).
    std::vector<size_t> cuts(const Span& sp) const {
        std::vector<size_t> out{sp.lo};
        for (const Seg& s : segs_[sp.store])
            for (size_t x : {s.lo, s.hi})
                if (x > sp.lo && x < sp.hi) out.push_back(x);
        out.push_back(sp.hi);
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    }
    void freeze() {
        for (int store = 0; store < 3; ++store)
            if (!pending_[store].empty()) merge(store);
    }

private:
    struct Seg {
        size_t lo, hi;
        std::vector<StepId> writers, readers;
    };
    struct Access {
        size_t lo, hi;
        StepId id;
        bool write;
    };

    // The phase's accesses onto what was there: where it wrote, its writers
    // (and readers) replace the old ones; where it only read, its readers
    // join the old ones. Segments stay disjoint and in order, so their
    // boundaries come sorted; the accesses' are sorted and merged in, and
    // each interval's accesses are gathered in one array (offsets by
    // interval), not a vector each.
    void merge(int store) {
        std::vector<Seg>& old = segs_[store];
        std::vector<Access>& acc = pending_[store];
        std::vector<size_t> mine, theirs;
        mine.reserve(2 * acc.size());
        theirs.reserve(2 * old.size());
        for (const Access& x : acc) mine.insert(mine.end(), {x.lo, x.hi});
        for (const Seg& s : old) theirs.insert(theirs.end(), {s.lo, s.hi});
        std::sort(mine.begin(), mine.end());
        std::vector<size_t> cut(mine.size() + theirs.size());
        std::merge(mine.begin(), mine.end(), theirs.begin(), theirs.end(), cut.begin());
        cut.erase(std::unique(cut.begin(), cut.end()), cut.end());
        const size_t n = cut.size() - 1;
        // Where x is in `cut`, searched from `from` on (accesses come mostly
        // in order, so the search gallops forward from the last one found).
        auto index = [&](size_t x, size_t from) {
            if (from >= cut.size() || cut[from] > x) from = 0;
            size_t step = 1, hi = from;
            while (hi < cut.size() && cut[hi] < x) {
                from = hi;
                hi += step;
                step *= 2;
            }
            return static_cast<size_t>(std::lower_bound(cut.begin() + from, cut.begin() + std::min(hi, cut.size()), x) -
                                       cut.begin());
        };
        // Which old segment covers each interval, and whether it covers
        // that one only (its lists can then move instead of being copied).
        std::vector<int> was(n, -1);
        std::vector<char> alone(n, 0);
        size_t near = 0;  // where the last search ended
        for (size_t k = 0; k < old.size(); ++k) {
            const size_t b = index(old[k].lo, near), e = index(old[k].hi, b);
            near = e;
            for (size_t i = b; i < e; ++i) was[i] = static_cast<int>(k);
            if (e == b + 1) alone[b] = 1;
        }
        // The accesses by interval: writers at wv[wat[i]..wat[i+1]), readers
        // at rv[rat[i]..rat[i+1]).
        std::vector<size_t> first(acc.size()), last(acc.size());
        std::vector<uint32_t> wat(n + 1, 0), rat(n + 1, 0);
        near = 0;
        for (size_t j = 0; j < acc.size(); ++j) {
            first[j] = index(acc[j].lo, near);
            last[j] = index(acc[j].hi, first[j]);
            near = first[j];
            std::vector<uint32_t>& at = acc[j].write ? wat : rat;
            for (size_t i = first[j]; i < last[j]; ++i) ++at[i + 1];
        }
        for (size_t i = 0; i < n; ++i) {
            wat[i + 1] += wat[i];
            rat[i + 1] += rat[i];
        }
        std::vector<StepId> wv(wat[n]), rv(rat[n]);
        {
            std::vector<uint32_t> wnext(wat.begin(), wat.end() - 1), rnext(rat.begin(), rat.end() - 1);
            for (size_t j = 0; j < acc.size(); ++j)
                for (size_t i = first[j]; i < last[j]; ++i) {
                    if (acc[j].write)
                        wv[wnext[i]++] = acc[j].id;
                    else
                        rv[rnext[i]++] = acc[j].id;
                }
        }
        std::vector<Seg> out;
        out.reserve(n);
        for (size_t i = 0; i < n; ++i) {
            const bool wrote = wat[i] < wat[i + 1], read = rat[i] < rat[i + 1];
            Seg s{cut[i], cut[i + 1], {}, {}};
            if (wrote) {
                s.writers.assign(wv.begin() + wat[i], wv.begin() + wat[i + 1]);
                s.readers.assign(rv.begin() + rat[i], rv.begin() + rat[i + 1]);
            } else if (was[i] >= 0) {
                Seg& o = old[static_cast<size_t>(was[i])];
                if (alone[i]) {
                    s.writers = std::move(o.writers);
                    s.readers = std::move(o.readers);
                } else {
                    s.writers = o.writers;
                    s.readers = o.readers;
                }
                s.readers.insert(s.readers.end(), rv.begin() + rat[i], rv.begin() + rat[i + 1]);
            } else if (!read) {
                continue;  // untouched
            } else {
                s.readers.assign(rv.begin() + rat[i], rv.begin() + rat[i + 1]);
            }
            if (!out.empty() && out.back().hi == s.lo && out.back().writers == s.writers &&
                out.back().readers == s.readers)
                out.back().hi = s.hi;
            else
                out.push_back(std::move(s));
        }
        old = std::move(out);
        acc.clear();
    }

    std::vector<Seg> segs_[3];
    std::vector<Access> pending_[3];
};

Composer::Composer(const CollArgs& a)
    : a_(a),
      esize_(datatype_size(a.dtype)),
      s_(std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size)),
      hazards_(std::make_unique<Hazards>()) {
    // A broadcast's non-root reads Recv as Send, and its root may pass one
    // buffer for both.
    send_in_recv_ = a.coll == Collective::Broadcast || a.in_place;
    shift_ = a.in_place ? in_place_shift(a) : 0;
}

Composer::~Composer() = default;

size_t Composer::reserve(size_t bytes) {
    const size_t at = scratch_;
    scratch_ += (bytes + 63) / 64 * 64;
    return at;
}

CollArgs Composer::phase_args(Collective c, int rank, int size) const {
    if (a_.tag_bits < kPhaseTagBits) fail(CHORUS_ERR_INTERNAL, "composer: no tag bits left for phases");
    CollArgs s;
    s.coll = c;
    s.dtype = a_.dtype;
    s.op = a_.op == CHORUS_AVG ? CHORUS_SUM : a_.op;
    s.rank = rank;
    s.size = size;
    s.chunk_bytes = a_.chunk_bytes;
    s.depth = a_.depth;
    s.tag_bits = a_.tag_bits - kPhaseTagBits;
    s.phase = true;
    s.cost = a_.cost;
    return s;
}

Composer::Span Composer::span(Region r, size_t bytes) const {
    switch (r.buf) {
        case Buf::Send:
            if (send_in_recv_) {
                // One store for both, from whichever starts first (a
                // scatter's Recv lies inside its Send).
                const size_t lo = static_cast<size_t>(static_cast<long>(r.offset) + std::max(shift_, 0L));
                return {1, lo, lo + bytes};
            }
            return {0, r.offset, r.offset + bytes};
        case Buf::Recv: {
            const size_t lo = r.offset + static_cast<size_t>(send_in_recv_ ? std::max(-shift_, 0L) : 0L);
            return {1, lo, lo + bytes};
        }
        case Buf::Scratch: return {2, r.offset, r.offset + bytes};
        default: fail(CHORUS_ERR_INTERNAL, "composer: a phase uses publish slots");
    }
}

void Composer::order(StepId id, const Step& st, std::vector<StepId>& deps, bool note) {
    const size_t elems = st.count * esize_;
    auto touch = [&](Region r, size_t bytes, bool write) {
        const Span sp = span(r, bytes);
        if (note)
            hazards_->note(sp, write, id);
        else
            hazards_->deps(sp, write, deps);
    };
    switch (st.kind) {
        case StepKind::Send: touch(st.src, st.bytes, false); break;
        case StepKind::Recv: touch(st.dst, st.bytes, true); break;
        case StepKind::Reduce:
            touch(st.src, elems, false);
            touch(st.src2, elems, false);
            touch(st.dst, elems, true);
            break;
        case StepKind::Copy:
            touch(st.src, st.bytes, false);
            touch(st.dst, st.bytes, true);
            break;
        case StepKind::Divide:
            touch(st.dst, elems, false);
            touch(st.dst, elems, true);
            break;
        default: fail(CHORUS_ERR_INTERNAL, "composer: a phase with a ", step_kind_name(st.kind), " step");
    }
}

void Composer::add(uint32_t tag_phase, const Schedule& sub, const CollArgs& sa, const std::vector<int>& group,
                   Place send, Place recv) {
    if (tag_phase >= (1u << kPhaseTagBits) || sa.tag_bits + kPhaseTagBits > static_cast<uint32_t>(kStepTagBits))
        fail(CHORUS_ERR_INTERNAL, "composer: phase ", tag_phase, " with ", sa.tag_bits, " tag bits");
    if (static_cast<int>(group.size()) != sub.size() || sub.rank() < 0 || sub.rank() >= sub.size() ||
        group[sub.rank()] != a_.rank)
        fail(CHORUS_ERR_INTERNAL, "composer: a phase of rank ", sub.rank(), " of ", sub.size(), " is not rank ",
             a_.rank);
    const bool bound =
        (sa.coll == Collective::Broadcast || sa.coll == Collective::Scatter || sa.coll == Collective::Scatterv) &&
        sa.rank != sa.root;
    if (bound) send = recv;
    // Overlapping buffers must be the phase's own in-place overlap.
    size_t send_n = 0, recv_n = 0;
    if (!bound && !send.nowhere && !recv.nowhere && sa.extent(Side::Send, &send_n) && sa.extent(Side::Recv, &recv_n) &&
        send_n && recv_n) {
        const Span x = span({send.buf, send.offset}, send_n * esize_),
                   y = span({recv.buf, recv.offset}, recv_n * esize_);
        const long shift = static_cast<long>(x.lo) - static_cast<long>(y.lo);
        if (x.store == y.store && x.lo < y.hi && y.lo < x.hi && (!sa.in_place || shift != in_place_shift(sa)))
            fail(CHORUS_ERR_INTERNAL, "composer: a ", collective_name(sa.coll), " phase's Send lies ", shift,
                 " bytes into its Recv, not built in place there");
    }
    const size_t base = reserve(sub.scratch_bytes());
    // Where a region of the phase lies here; `gone` when its buffer is
    // placed nowhere.
    auto map = [&](Region r, bool* gone) -> Region {
        const Place* pl = r.buf == Buf::Send ? &send : r.buf == Buf::Recv ? &recv : nullptr;
        if (r.buf == Buf::Scratch) return {Buf::Scratch, base + r.offset};
        if (!pl) fail(CHORUS_ERR_INTERNAL, "composer: a phase uses publish slots");
        *gone = pl->nowhere;
        return {pl->buf, pl->offset + r.offset};
    };
    constexpr StepId kDropped = ~StepId(0);
    std::vector<StepId> id(sub.num_steps(), kDropped);
    std::unordered_map<StepId, std::vector<StepId>> forwarded;  // a dropped step: what it waited for
    std::vector<StepId> deps;
    for (StepId k = 0; k < sub.num_steps(); ++k) {
        Step st = sub.steps()[k];
        deps.clear();
        for (uint32_t i = 0; i < sub.ndeps(k); ++i) {
            const StepId d = sub.deps_of(k)[i];
            if (id[d] != kDropped)
                deps.push_back(id[d]);
            else
                deps.insert(deps.end(), forwarded[d].begin(), forwarded[d].end());
        }
        // (A dropped step passes the fence on to what waits for it.)
        if (sub.ndeps(k) == 0) deps.insert(deps.end(), fence_.begin(), fence_.end());
        bool src_gone = false, src2_gone = false, dst_gone = false;
        const bool reads = st.kind == StepKind::Send || st.kind == StepKind::Reduce || st.kind == StepKind::Copy;
        const bool writes = st.kind != StepKind::Send;
        if (reads) st.src = map(st.src, &src_gone);
        if (st.kind == StepKind::Reduce) st.src2 = map(st.src2, &src2_gone);
        if (writes) st.dst = map(st.dst, &dst_gone);
        const bool self_copy = st.kind == StepKind::Copy && st.src.buf == st.dst.buf && st.src.offset == st.dst.offset;
        if ((st.kind == StepKind::Copy && dst_gone) || self_copy) {
            forwarded[k] = deps;
            continue;
        }
        if (src_gone || src2_gone || dst_gone)
            fail(CHORUS_ERR_INTERNAL, "composer: a ", collective_name(sa.coll), " phase's ", step_kind_name(st.kind),
                 " touches a buffer placed nowhere");
        if (st.kind == StepKind::Send || st.kind == StepKind::Recv) {
            if (st.tag >> sa.tag_bits)
                fail(CHORUS_ERR_INTERNAL, "composer: tag ", st.tag, " past ", sa.tag_bits, " bits");
            st.tag |= tag_phase << sa.tag_bits;
            st.peer = group.at(static_cast<size_t>(st.peer));
        }
        order(0, st, deps, false);
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        Schedule& s = *s_;
        switch (st.kind) {
            case StepKind::Send: id[k] = s.send(st.peer, st.tag, st.src, st.bytes, deps); break;
            case StepKind::Recv: id[k] = s.recv(st.peer, st.tag, st.dst, st.bytes, deps); break;
            case StepKind::Reduce: id[k] = s.reduce(st.dst, st.src, st.src2, st.count, deps); break;
            case StepKind::Copy: id[k] = s.copy(st.dst, st.src, st.bytes, deps); break;
            default: fail(CHORUS_ERR_INTERNAL, "composer: a phase with a ", step_kind_name(st.kind), " step");
        }
        order(id[k], st, deps, true);
    }
    hazards_->freeze();
    fence_.clear();
}

void Composer::fence() {
    std::vector<bool> waited(s_->num_steps(), false);
    for (StepId k = 0; k < s_->num_steps(); ++k)
        for (uint32_t i = 0; i < s_->ndeps(k); ++i) waited[s_->deps_of(k)[i]] = true;
    fence_.clear();
    for (StepId k = 0; k < s_->num_steps(); ++k)
        if (!waited[k]) fence_.push_back(k);
}

void Composer::copies(const std::vector<Move>& moves) {
    std::vector<StepId> deps;
    for (const Move& m : moves) {
        if (!m.bytes) continue;
        Step st{StepKind::Copy};
        st.dst = m.dst;
        st.src = m.src;
        st.bytes = m.bytes;
        deps.clear();
        order(0, st, deps, false);
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        order(s_->copy(m.dst, m.src, m.bytes, deps), st, deps, true);
    }
    hazards_->freeze();
}

void Composer::divide(Region at, size_t count) {
    if (!count) return;
    const Span whole = span(at, count * esize_);
    const std::vector<size_t> cuts = hazards_->cuts(whole);
    std::vector<StepId> deps;
    size_t done = 0;  // elements divided so far
    for (size_t i = 1; i < cuts.size(); ++i) {
        // Cut on whole elements.
        const size_t upto = i + 1 == cuts.size() ? count : (cuts[i] - whole.lo) / esize_;
        if (upto <= done) continue;
        Step st{StepKind::Divide};
        st.dst = {at.buf, at.offset + done * esize_};
        st.count = upto - done;
        deps.clear();
        order(0, st, deps, false);
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        order(s_->divide(st.dst, st.count, a_.size, deps), st, deps, true);
        done = upto;
    }
    hazards_->freeze();
}

std::unique_ptr<Schedule> Composer::finish() {
    s_->need_scratch(scratch_);
    s_->finalize();
    return std::move(s_);
}

}  // namespace chorus::coll
