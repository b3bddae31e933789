#include "coll/planner/simulation.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>

#include "base/error.h"
#include "coll/planner/simulation_parts.h"
#include "reduce/datatype.h"

namespace chorus::coll {

using namespace sim;

SimGroup::SimGroup(int size, chorus_datatype_t dtype, const HostMap* hosts)
    : size_(size),
      esize_(datatype_size(dtype)),
      hosts_(hosts && hosts->hosts() > 1 ? hosts : nullptr),
      index_(static_cast<size_t>(size), -1) {
    if (hosts_ && hosts_->ranks() != size)
        fail(CHORUS_ERR_INTERNAL, "cost model: a host map of ", hosts_->ranks(), " ranks for ", size, " ranks");
}

void SimGroup::reserve(size_t steps) {
    nodes_.reserve(steps + 1);
    out_.reserve(2 * steps);
    xfers_.reserve(steps);
}

void SimGroup::add(int rank, const Schedule& s, bool send_is_recv) {
    if (index_[rank] >= 0) return;
    const uint64_t base = steps();
    if (base + s.num_steps() >= kNone) fail(CHORUS_ERR_INTERNAL, "cost model: too many steps to simulate");
    const uint32_t who = static_cast<uint32_t>(ranks_.size());
    index_[rank] = static_cast<int>(who);
    ranks_.push_back(rank);
    host_.push_back(hosts_ ? hosts_->host_of(rank) : 0);
    base_.push_back(static_cast<uint32_t>(base));
    xfer_base_.push_back(xfers_.size());
    publish_.emplace_back(s.uses_slots() ? s.slot_rounds() : 0, kNone);
    nodes_.pop_back();  // the end marker
    for (StepId k = 0; k < s.num_steps(); ++k) {
        const Step& st = s.steps()[k];
        const uint32_t id = static_cast<uint32_t>(base + k);
        const bool reduces = st.kind == StepKind::Get && st.count;
        const bool elementwise = st.kind == StepKind::Reduce || st.kind == StepKind::Divide || reduces;
        Node n{};
        n.bytes = elementwise ? st.count * esize_ : st.bytes;
        n.kind = static_cast<uint64_t>(st.kind);
        n.reduces = reduces;
        n.streams = st.kind == StepKind::Copy && st.stream;
        n.owner = who;
        n.left = s.ndeps(k);
        n.partner = kNone;
        n.out_begin = static_cast<uint32_t>(out_.size());
        n.remote = is_transfer(st.kind) && hosts_ && !hosts_->same_host(rank, st.peer);
        if (send_is_recv && st.kind == StepKind::Copy && st.src.buf == Buf::Send && st.dst.buf == Buf::Recv &&
            st.src.offset == st.dst.offset)
            n.bytes = 0;
        nodes_.push_back(n);
        const uint32_t* d = s.dependents_of(k);
        for (uint32_t i = 0; i < s.ndependents(k); ++i) out_.push_back(static_cast<uint32_t>(base + d[i]));
        if (is_transfer(st.kind)) xfers_.push_back({st.peer, st.tag, id, is_send(st.kind)});
        if (st.kind == StepKind::Publish) publish_[who][st.round] = id;
        if (st.kind == StepKind::Await) awaits_.push_back({id, st.peer, st.round});
        has_slots_ |= st.kind == StepKind::Publish || st.kind == StepKind::Await;
    }
    if (out_.size() >= kNone) fail(CHORUS_ERR_INTERNAL, "cost model: too many dependencies to simulate");
    Node end{};
    end.out_begin = static_cast<uint32_t>(out_.size());
    nodes_.push_back(end);
}

void SimGroup::pair_inside() {
    xfer_base_.push_back(xfers_.size());
    auto key = [](const Xfer& x) { return std::make_tuple(x.send, x.peer, x.tag, x.step); };
    auto before = [&](const Xfer& x, const Xfer& y) { return key(x) < key(y); };
    for (int i = 0; i < ranks(); ++i)
        std::sort(xfers_.begin() + xfer_base_[i], xfers_.begin() + xfer_base_[i + 1], before);

    // Between simulated ranks: a send to q meets q's receive from us with
    // the same tag and size.
    for (int i = 0; i < ranks(); ++i) {
        const int me = ranks_[i];
        for (size_t j = xfer_base_[i]; j < xfer_base_[i + 1]; ++j) {
            const Xfer& x = xfers_[j];
            if (!x.send || index_[x.peer] < 0) continue;
            const int q = index_[x.peer];
            auto b = xfers_.begin() + xfer_base_[q], e = xfers_.begin() + xfer_base_[q + 1];
            auto it = std::lower_bound(b, e, Xfer{me, x.tag, 0, false}, before);
            while (it != e && !it->send && it->peer == me && it->tag == x.tag && nodes_[it->step].partner != kNone)
                ++it;
            // A get or put may take part of what was exposed.
            const bool sized = static_cast<StepKind>(nodes_[x.step].kind) == StepKind::Send;
            if (it == e || it->send || it->peer != me || it->tag != x.tag ||
                (sized && nodes_[it->step].bytes != nodes_[x.step].bytes))
                fail(CHORUS_ERR_INTERNAL, "cost model: rank ", me, " sends ", uint64_t(nodes_[x.step].bytes),
                     " bytes with tag ", x.tag, " to rank ", x.peer, ", which receives no such message");
            nodes_[x.step].partner = it->step;
            nodes_[it->step].partner = x.step;
        }
    }
    for (int i = 0; i < ranks(); ++i)
        for (size_t j = xfer_base_[i]; j < xfer_base_[i + 1]; ++j) {
            const Xfer& x = xfers_[j];
            if (!x.send && index_[x.peer] >= 0 && nodes_[x.step].partner == kNone)
                fail(CHORUS_ERR_INTERNAL, "cost model: rank ", ranks_[i], " receives tag ", x.tag, " from rank ",
                     x.peer, ", which sends no such message");
        }
}

bool SimGroup::pair_images(const Relabelling& r) {
    if (paired_ || r.size != size_ || ranks() != r.block)
        fail(CHORUS_ERR_INTERNAL, "cost model: images of ", ranks(), " ranks by blocks of ", r.block);
    for (int i = 0; i < ranks(); ++i)
        if (ranks_[i] != i) fail(CHORUS_ERR_INTERNAL, "cost model: images of a group without rank ", i);
    for (const AwaitOf& a : awaits_)
        if (index_[a.peer] < 0) return false;  // slots are not mirrored
    pair_inside();
    // Each transfer with a rank q outside, by the counterpart it needs: a
    // send from i to q meets the image of a receive of rank q mod block from
    // i's image under the relabelling that takes q home, with its tag and
    // size; a receive is found by its own.
    struct End {
        int rank, peer;
        uint32_t tag;
        uint64_t bytes;
        uint32_t step;
        bool operator<(const End& o) const {
            return std::tie(rank, peer, tag, bytes, step) < std::tie(o.rank, o.peer, o.tag, o.bytes, o.step);
        }
    };
    std::vector<End> sends, recvs;
    for (int i = 0; i < ranks(); ++i)
        for (size_t j = xfer_base_[i]; j < xfer_base_[i + 1]; ++j) {
            const Xfer& x = xfers_[j];
            if (index_[x.peer] >= 0) continue;
            const StepKind k = static_cast<StepKind>(nodes_[x.step].kind);
            if (k != StepKind::Send && k != StepKind::Recv) return false;  // one-sided: not mirrored
            const uint64_t bytes = nodes_[x.step].bytes;
            if (x.send)
                sends.push_back({x.peer % r.block, r.image(i, r.home(x.peer / r.block)), x.tag, bytes, x.step});
            else
                recvs.push_back({i, x.peer, x.tag, bytes, x.step});
        }
    if (sends.size() != recvs.size()) return false;
    std::sort(sends.begin(), sends.end());
    std::sort(recvs.begin(), recvs.end());
    for (size_t j = 0; j < sends.size(); ++j) {
        const End &x = sends[j], &y = recvs[j];
        if (x.rank != y.rank || x.peer != y.peer || x.tag != y.tag || x.bytes != y.bytes) return false;
    }
    for (size_t j = 0; j < sends.size(); ++j) {
        nodes_[sends[j].step].partner = recvs[j].step;
        nodes_[recvs[j].step].partner = sends[j].step;
    }
    finish_pairing();
    return true;
}

void SimGroup::finish_pairing() {
    xfers_.clear();
    xfers_.shrink_to_fit();
    pair_awaits();
    paired_ = true;
}

void SimGroup::pair_awaits() {
    auto published = [&](int who, uint32_t round) {
        const auto& p = publish_[who];
        return round < p.size() ? p[round] : kNone;
    };
    for (auto [step, peer, round] : awaits_) {
        Node& a = nodes_[step];
        if (index_[peer] >= 0) {
            a.partner = published(index_[peer], round);
            if (a.partner == kNone)
                fail(CHORUS_ERR_INTERNAL, "cost model: rank ", ranks_[a.owner], " awaits the slot of rank ", peer,
                     ", which publishes none");
        } else {
            // A rank left out publishes when this one does (or at once).
            a.partner = published(a.owner, round);
            a.lockstep = kWaitsForOwnSend;
        }
    }
    awaits_.clear();
    awaits_.shrink_to_fit();
}

void SimGroup::pair_lockstep(size_t begin, size_t end) {
    // This rank's sends and its receives from ranks not simulated, by (tag,
    // step).
    std::vector<std::pair<uint32_t, uint32_t>> sends, recvs;
    for (size_t j = begin; j < end; ++j) {
        const Xfer& x = xfers_[j];
        if (x.send) sends.emplace_back(x.tag, x.step);
        if (!x.send && index_[x.peer] < 0) recvs.emplace_back(x.tag, x.step);
    }
    std::sort(sends.begin(), sends.end());
    std::sort(recvs.begin(), recvs.end());
    for (auto [tag, step] : recvs) {
        auto it = std::lower_bound(sends.begin(), sends.end(), std::make_pair(tag, uint32_t(0)));
        const uint32_t s = it != sends.end() && it->first == tag ? it->second : kNone;
        nodes_[step].lockstep = kWaitsForOwnSend;
        nodes_[step].partner = s;
        if (s != kNone) nodes_[s].lockstep = kAwaited;
    }
}

}  // namespace chorus::coll
