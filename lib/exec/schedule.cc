#include "exec/schedule.h"

#include <algorithm>

#include "base/error.h"
#include "reduce/datatype.h"

namespace chorus {

const char* step_kind_name(StepKind k) {
    switch (k) {
        case StepKind::Send: return "send";
        case StepKind::Recv: return "recv";
        case StepKind::Reduce: return "reduce";
        case StepKind::Copy: return "copy";
        case StepKind::Divide: return "divide";
        case StepKind::Publish: return "publish";
        case StepKind::Await: return "await";
        case StepKind::Expose: return "expose";
        case StepKind::Get: return "get";
        case StepKind::Put: return "put";
        case StepKind::Claim: return "claim";
        case StepKind::Release: return "release";
    }
    return "?";
}

Schedule::Schedule(chorus_datatype_t dtype, chorus_op_t op, int rank, int size)
    : dtype_(dtype), op_(op), rank_(rank), size_(size) {}

StepId Schedule::add(Step step, Deps deps) {
    StepId id = static_cast<StepId>(steps_.size());
    step.dep_begin = static_cast<uint32_t>(deps_.size());
    for (StepId d : deps) {
        if (d >= id) fail(CHORUS_ERR_INTERNAL, "schedule: step ", id, " depends on later step ", d);
        deps_.push_back(d);
    }
    step.dep_end = static_cast<uint32_t>(deps_.size());
    if (step.dst.buf == Buf::Slot && step.kind != StepKind::Publish) {
        // A step that writes this rank's slot (of a round it claims).
        if (step.dst.peer != rank_)
            fail(CHORUS_ERR_INTERNAL, "schedule: a step writes rank ", step.dst.peer, "'s slot");
        const size_t n = step.kind == StepKind::Copy ? step.bytes : step.count * datatype_size(dtype_);
        slot_bytes_ = std::max(slot_bytes_, step.dst.offset + n);
    }
    steps_.push_back(step);
    return id;
}

static void check_transfer(int peer, int size, uint32_t tag, size_t bytes) {
    if (peer < 0 || peer >= size || tag > kMaxStepTag || bytes == 0)
        fail(CHORUS_ERR_INTERNAL, "schedule: bad transfer (peer ", peer, ", tag ", tag, ", ", bytes, " bytes)");
}

StepId Schedule::send(int peer, uint32_t tag, Region src, size_t bytes, Deps deps) {
    check_transfer(peer, size_, tag, bytes);
    has_transfers_ = true;
    Step s{StepKind::Send};
    s.peer = peer;
    s.tag = tag;
    s.src = src;
    s.bytes = bytes;
    return add(s, deps);
}

StepId Schedule::recv(int peer, uint32_t tag, Region dst, size_t bytes, Deps deps) {
    check_transfer(peer, size_, tag, bytes);
    has_transfers_ = true;
    Step s{StepKind::Recv};
    s.peer = peer;
    s.tag = tag;
    s.dst = dst;
    s.bytes = bytes;
    return add(s, deps);
}

StepId Schedule::reduce(Region dst, Region a, Region b, size_t count, Deps deps) {
    Step s{StepKind::Reduce};
    s.dst = dst;
    s.src = a;
    s.src2 = b;
    s.count = count;
    return add(s, deps);
}

StepId Schedule::copy(Region dst, Region src, size_t bytes, Deps deps) {
    Step s{StepKind::Copy};
    s.dst = dst;
    s.src = src;
    s.bytes = bytes;
    return add(s, deps);
}

StepId Schedule::divide(Region dst, size_t count, int divisor, Deps deps) {
    Step s{StepKind::Divide};
    s.dst = dst;
    s.count = count;
    divisor_ = divisor;
    return add(s, deps);
}

StepId Schedule::publish(Region src, size_t bytes, size_t offset, Deps deps) {
    if (published_) fail(CHORUS_ERR_INTERNAL, "schedule: a second publish");
    published_ = uses_slots_ = true;
    slot_bytes_ = offset + bytes;
    Step s{StepKind::Publish};
    s.src = src;
    s.dst = Region::slot(rank_, offset);
    s.bytes = bytes;
    return add(s, deps);
}

StepId Schedule::publish_pieces(const std::vector<SlotPiece>& pieces, Deps deps) {
    size_t total = 0, end = 0;
    for (const SlotPiece& p : pieces) {
        if (p.bytes == 0 || p.src.buf == Buf::Slot) fail(CHORUS_ERR_INTERNAL, "schedule: a bad slot piece");
        total += p.bytes;
        end = std::max(end, p.offset + p.bytes);
    }
    StepId id = publish(Region(Buf::Send, 0), total, 0, deps);
    pieces_ = pieces;
    slot_bytes_ = end;
    steps_[id].count = pieces.size();
    return id;
}

StepId Schedule::await(int peer, Deps deps) {
    if (peer < 0 || peer >= size_) fail(CHORUS_ERR_INTERNAL, "schedule: await of rank ", peer);
    uses_slots_ = true;
    Step s{StepKind::Await};
    s.peer = peer;
    return add(s, deps);
}

StepId Schedule::claim(uint32_t round, Deps deps) {
    uses_slots_ = true;
    slot_rounds_ = std::max(slot_rounds_, round + 1);
    Step s{StepKind::Claim};
    s.round = round;
    return add(s, deps);
}

StepId Schedule::publish_round(uint32_t round, Deps deps) {
    uses_slots_ = true;
    slot_rounds_ = std::max(slot_rounds_, round + 1);
    Step s{StepKind::Publish};
    s.dst = Region::slot(rank_, 0, round);
    s.round = round;
    return add(s, deps);
}

StepId Schedule::await_round(int peer, uint32_t round, Deps deps) {
    StepId id = await(peer, deps);
    slot_rounds_ = std::max(slot_rounds_, round + 1);
    steps_[id].round = round;
    return id;
}

StepId Schedule::release(uint32_t round, Deps deps) {
    uses_slots_ = releases_ = true;
    slot_rounds_ = std::max(slot_rounds_, round + 1);
    Step s{StepKind::Release};
    s.round = round;
    return add(s, deps);
}

StepId Schedule::expose(int peer, uint32_t tag, Region src, size_t bytes, Deps deps) {
    check_transfer(peer, size_, tag, bytes);
    has_transfers_ = has_one_sided_ = true;
    Step s{StepKind::Expose};
    s.peer = peer;
    s.tag = tag;
    s.src = src;
    s.bytes = bytes;
    return add(s, deps);
}

StepId Schedule::get(int peer, uint32_t tag, Region dst, size_t bytes, Deps deps) {
    check_transfer(peer, size_, tag, bytes);
    has_transfers_ = has_one_sided_ = true;
    Step s{StepKind::Get};
    s.peer = peer;
    s.tag = tag;
    s.dst = dst;
    s.bytes = bytes;
    return add(s, deps);
}

StepId Schedule::get_reduce(int peer, uint32_t tag, Region dst, Region local, size_t count, bool remote_first,
                            Region landing, Deps deps) {
    if (landing.buf != Buf::Scratch) fail(CHORUS_ERR_INTERNAL, "schedule: a get's landing region is not scratch");
    StepId id = get(peer, tag, dst, count * datatype_size(dtype_), deps);
    Step& s = steps_[id];
    s.count = count;
    s.src = landing;
    s.src2 = local;
    s.remote_first = remote_first;
    return id;
}

StepId Schedule::put(int peer, uint32_t tag, Region src, size_t bytes, Deps deps) {
    check_transfer(peer, size_, tag, bytes);
    has_transfers_ = has_one_sided_ = true;
    Step s{StepKind::Put};
    s.peer = peer;
    s.tag = tag;
    s.src = src;
    s.bytes = bytes;
    return add(s, deps);
}

void Schedule::add_dep(StepId step, StepId dep) {
    if (dep >= step) fail(CHORUS_ERR_INTERNAL, "schedule: step ", step, " depends on later step ", dep);
    late_deps_.emplace_back(step, dep);
}

std::vector<StepId> Schedule::all_steps() const {
    std::vector<StepId> all(steps_.size());
    for (StepId s = 0; s < all.size(); ++s) all[s] = s;
    return all;
}

void Schedule::finalize() {
    if (finalized_) return;
    finalized_ = true;
    if (releases_ || slot_rounds_ > 1) {
        // Every round released once, and a schedule of rounds publishes
        // with publish_round only.
        std::vector<uint8_t> released(slot_rounds_, 0);
        for (const Step& st : steps_) {
            if (st.kind == StepKind::Release) ++released[st.round];
            if (st.kind == StepKind::Publish && (st.bytes || st.count))
                fail(CHORUS_ERR_INTERNAL, "schedule: a publish with data in a schedule of slot rounds");
        }
        for (uint32_t r = 0; r < slot_rounds_; ++r)
            if (released[r] != 1)
                fail(CHORUS_ERR_INTERNAL, "schedule: slot round ", r, " released ", released[r], " times");
    }
    if (!late_deps_.empty()) {
        // Rebuild the dependency lists with the late edges merged in.
        std::vector<std::vector<uint32_t>> lists(steps_.size());
        for (StepId s = 0; s < steps_.size(); ++s) lists[s].assign(deps_of(s), deps_of(s) + ndeps(s));
        for (auto [step, dep] : late_deps_) lists[step].push_back(dep);
        deps_.clear();
        for (StepId s = 0; s < steps_.size(); ++s) {
            steps_[s].dep_begin = static_cast<uint32_t>(deps_.size());
            deps_.insert(deps_.end(), lists[s].begin(), lists[s].end());
            steps_[s].dep_end = static_cast<uint32_t>(deps_.size());
        }
        late_deps_.clear();
    }
    out_begin_.assign(steps_.size() + 1, 0);
    for (uint32_t d : deps_) out_begin_[d + 1]++;
    for (size_t i = 0; i < steps_.size(); ++i) out_begin_[i + 1] += out_begin_[i];
    out_.assign(deps_.size(), 0);
    std::vector<uint32_t> fill(out_begin_.begin(), out_begin_.end() - 1);
    for (StepId s = 0; s < steps_.size(); ++s)
        for (uint32_t i = 0; i < ndeps(s); ++i) out_[fill[deps_of(s)[i]]++] = s;
}

size_t Schedule::num_transfers() const {
    return std::count_if(steps_.begin(), steps_.end(),
                         [](const Step& s) { return s.kind == StepKind::Send || s.kind == StepKind::Recv; });
}

void Schedule::check_tags() const {
    // (direction, peer, tag) in one word: 1 + 31 + 32 bits.
    std::vector<uint64_t> keys;
    keys.reserve(num_transfers());
    for (const Step& st : steps_)
        if (st.kind == StepKind::Send || st.kind == StepKind::Recv)
            keys.push_back(uint64_t(st.kind == StepKind::Send) << 63 | uint64_t(uint32_t(st.peer)) << 32 | st.tag);
    std::sort(keys.begin(), keys.end());
    auto dup = std::adjacent_find(keys.begin(), keys.end());
    if (dup != keys.end())
        fail(CHORUS_ERR_INTERNAL, "schedule: two ", *dup >> 63 ? "sends to" : "receives from", " peer ",
             (*dup >> 32) & 0x7fffffff, " with tag ", uint32_t(*dup), " (rank ", rank_, " of ", size_, ")");
}

std::string Schedule::dump() const {
    static const char* kinds[] = {"send",  "recv",   "reduce", "copy", "divide", "publish",
                                  "await", "expose", "get",    "put",  "claim",  "release"};
    static const char* bufs[] = {"send", "recv", "scratch", "slot"};
    auto reg = [](const Region& r) {
        return r.buf == Buf::Slot
                   ? cat("slot[", r.peer, "]", r.round ? cat("@", r.round) : std::string(), "+", r.offset)
                   : cat(bufs[static_cast<int>(r.buf)], "+", r.offset);
    };
    std::string out;
    for (StepId s = 0; s < steps_.size(); ++s) {
        const Step& st = steps_[s];
        out += cat(s, ": ", kinds[static_cast<int>(st.kind)]);
        if (st.peer >= 0) out += cat(" peer=", st.peer, " tag=", st.tag);
        if (st.kind == StepKind::Await && !st.round) {
            out += "\n";
            continue;
        }
        if (st.kind == StepKind::Await || st.kind == StepKind::Claim || st.kind == StepKind::Release) {
            out += cat(" round=", st.round);
        } else {
            if (st.kind == StepKind::Publish && st.count) {
                out += " pieces";
                for (const SlotPiece& p : pieces_) out += cat(" ", reg(p.src), ":", p.bytes, "@", p.offset);
            }
            const bool reads = st.kind == StepKind::Get && st.count;  // a get that reduces
            if (st.kind == StepKind::Send || st.kind == StepKind::Copy || st.kind == StepKind::Reduce ||
                st.kind == StepKind::Publish || st.kind == StepKind::Expose || st.kind == StepKind::Put)
                out += cat(" src=", reg(st.src));
            if (st.kind == StepKind::Reduce || reads) out += cat(" src2=", reg(st.src2));
            if (reads) out += cat(st.remote_first ? " remote-first" : "", " landing=", reg(st.src));
            if (st.kind != StepKind::Send && st.kind != StepKind::Expose && st.kind != StepKind::Put)
                out += cat(" dst=", reg(st.dst));
            out += st.count ? cat(" count=", st.count) : cat(" bytes=", st.bytes);
        }
        if (ndeps(s)) {
            out += " after";
            for (uint32_t i = 0; i < ndeps(s); ++i) out += cat(" ", deps_of(s)[i]);
        }
        out += "\n";
    }
    return out;
}

}  // namespace chorus
