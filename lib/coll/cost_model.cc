#include "coll/cost_model.h"

#include <algorithm>
#include <memory>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/error.h"
#include "reduce/datatype.h"

namespace chorus::coll {

std::string CostParams::describe() const {
    return cat("alpha ", alpha_us, " us (+", rendezvous_us, " us above ", eager_bytes, " bytes), link ", bandwidth_gbs,
               " GB/s, reduce ", reduce_gbs, " GB/s, copy ", copy_gbs, " GB/s");
}

namespace {

constexpr int kAnyRank = -1;  // lockstep: the slot of whichever peer

struct Event {
    double time;
    int rank;
    StepId step;
    bool operator>(const Event& o) const { return time > o.time; }
};

struct MsgKey {
    int src, dst;
    uint32_t tag;
    bool operator==(const MsgKey& o) const { return src == o.src && dst == o.dst && tag == o.tag; }
};
struct MsgKeyHash {
    size_t operator()(const MsgKey& k) const {
        return std::hash<uint64_t>()((uint64_t(uint32_t(k.src)) << 32 | uint32_t(k.dst)) * 0x9e3779b97f4a7c15ull ^
                                     k.tag);
    }
};

// Simulates the schedules of `ranks` (a subset of the group when `lockstep`:
// then a receive's sender is assumed ready when the receiver is).
class Simulation {
public:
    Simulation(const CostParams& p, chorus_datatype_t dt) : p_(p), esize_(datatype_size(dt)) {}

    double run(std::vector<std::unique_ptr<Schedule>>& scheds, bool lockstep) {
        scheds_ = &scheds;
        lockstep_ = lockstep;
        size_t n = scheds.size();
        remaining_.resize(n);
        ready_.resize(n);
        cpu_.assign(n, 0);
        out_.assign(n, 0);
        in_.assign(n, 0);
        for (size_t r = 0; r < n; ++r) {
            const Schedule& s = *scheds[r];
            remaining_[r].resize(s.steps().size());
            ready_[r].assign(s.steps().size(), 0.0);
            for (StepId k = 0; k < s.steps().size(); ++k)
                if ((remaining_[r][k] = s.ndeps(k)) == 0) queue_.push({0.0, int(r), k});
        }
        for (;;) {
            while (!queue_.empty()) {
                Event e = queue_.top();
                queue_.pop();
                step(e);
            }
            if (waiting_.empty()) break;
            // Receives whose mirrored send depends on them: they arrive as
            // soon as they are ready (the optimistic case).
            auto first = waiting_.begin();
            for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
                if (it->second.time < first->second.time) first = it;
            Event e = first->second;
            waiting_.erase(first);
            finish_recv(e, e.time);
        }
        if (!sends_.empty() || !recvs_.empty() || !awaiting_.empty())
            fail(CHORUS_ERR_INTERNAL, "cost model: ", sends_.size() + recvs_.size(), " unmatched transfers, ",
                 awaiting_.size(), " awaits of a slot never published");
        return end_;
    }

private:
    double us(size_t bytes, double gbs) const { return static_cast<double>(bytes) / (gbs * 1e3); }

    void complete(int r, StepId k, double t) {
        end_ = std::max(end_, t);
        const Schedule& s = *(*scheds_)[r];
        const uint32_t* out = s.dependents_of(k);
        for (uint32_t i = 0, m = s.ndependents(k); i < m; ++i) {
            StepId d = out[i];
            ready_[r][d] = std::max(ready_[r][d], t);
            if (--remaining_[r][d] == 0) queue_.push({ready_[r][d], r, d});
        }
    }

    // Per-message cost: above the eager size, a rendezvous handshake too;
    // within one host's shared memory, less.
    double alpha(size_t bytes) const {
        if (bytes > p_.eager_bytes) return p_.alpha_us + p_.rendezvous_us;
        return p_.all_local ? p_.local_alpha_us : p_.alpha_us;
    }

    // A rank's slot is published: the peers awaiting it see it slot_us later.
    void published(int r, double t) {
        published_[r] = t;
        auto range = awaiting_.equal_range(r);
        std::vector<Event> woken;
        for (auto it = range.first; it != range.second; ++it) woken.push_back(it->second);
        awaiting_.erase(range.first, range.second);
        for (const Event& e : woken) complete(e.rank, e.step, std::max(e.time, t + p_.slot_us));
    }

    // A one-sided pair: the copy runs on the CPU of the rank that gets or
    // puts, once both sides are ready and the descriptor has arrived.
    double copy_us(const Step& st) const {
        if (st.kind == StepKind::Get && st.count) return us(st.count * esize_, p_.get_reduce_gbs);
        return us(st.bytes, p_.get_gbs);
    }
    void one_sided(int src, StepId ks, double ts, int dst, StepId kr, double tr) {
        const Step& st = (*scheds_)[dst]->steps()[kr];
        double start = std::max({ts + p_.local_alpha_us, tr, cpu_[dst]});
        cpu_[dst] = start + copy_us(st);
        complete(dst, kr, cpu_[dst]);
        complete(src, ks, cpu_[dst] + p_.local_alpha_us);
    }

    void transfer(int src, StepId ks, double ts, int dst, StepId kr, double tr, size_t bytes) {
        if ((*scheds_)[src]->steps()[ks].kind == StepKind::Expose) {
            one_sided(src, ks, ts, dst, kr, tr);
            return;
        }
        double start = std::max({ts, tr, out_[src], in_[dst]});
        double wire = us(bytes, p_.bandwidth_gbs);
        out_[src] = in_[dst] = start + wire;
        double end = start + alpha(bytes) + wire;
        complete(src, ks, end);
        complete(dst, kr, end);
    }

    void step(const Event& e) {
        const Step& st = (*scheds_)[e.rank]->steps()[e.step];
        switch (st.kind) {
            case StepKind::Reduce:
            case StepKind::Divide:
            case StepKind::Copy: {
                size_t bytes = st.kind == StepKind::Copy ? st.bytes : st.count * esize_;
                double rate = st.kind == StepKind::Copy ? p_.copy_gbs : p_.reduce_gbs;
                double start = std::max(e.time, cpu_[e.rank]);
                cpu_[e.rank] = start + us(bytes, rate);
                complete(e.rank, e.step, cpu_[e.rank]);
                return;
            }
            case StepKind::Publish: {
                double start = std::max(e.time, cpu_[e.rank]);
                cpu_[e.rank] = start + us(st.bytes, p_.copy_gbs);
                complete(e.rank, e.step, cpu_[e.rank]);
                // Lockstep: every rank publishes when rank 0 does.
                published(lockstep_ ? kAnyRank : e.rank, cpu_[e.rank]);
                return;
            }
            case StepKind::Await: {
                int peer = lockstep_ ? kAnyRank : st.peer;
                auto it = published_.find(peer);
                if (it != published_.end())
                    complete(e.rank, e.step, std::max(e.time, it->second + p_.slot_us));
                else if (lockstep_)
                    complete(e.rank, e.step, e.time + p_.slot_us);
                else
                    awaiting_.emplace(peer, e);
                return;
            }
            case StepKind::Send:
            case StepKind::Recv:
            case StepKind::Expose:
            case StepKind::Get:
            case StepKind::Put: break;
        }
        // An expose pairs like a send, a get or put like a receive.
        bool is_send = st.kind == StepKind::Send || st.kind == StepKind::Expose;
        if (lockstep_) {
            mirror_step(e, st, is_send);
            return;
        }
        MsgKey key = is_send ? MsgKey{e.rank, st.peer, st.tag} : MsgKey{st.peer, e.rank, st.tag};
        auto& mine = is_send ? sends_ : recvs_;
        auto& theirs = is_send ? recvs_ : sends_;
        auto it = theirs.find(key);
        if (it == theirs.end()) {
            mine.emplace(key, Event{e.time, e.rank, e.step});
            return;
        }
        Event other = it->second;
        theirs.erase(it);
        if (is_send)
            transfer(e.rank, e.step, e.time, other.rank, other.step, other.time, st.bytes);
        else
            transfer(other.rank, other.step, other.time, e.rank, e.step, e.time, st.bytes);
    }

    // Lockstep: rank 0 only. A receive with tag T arrives after rank 0's own
    // send with tag T starts (the peer, being symmetric, sends it then).
    void mirror_step(const Event& e, const Step& st, bool is_send) {
        if (st.kind == StepKind::Expose) {
            // The symmetric peer copies out of it as this rank copies.
            sent_[st.tag] = e.time;
            complete(0, e.step, e.time + 2 * p_.local_alpha_us + copy_us(st));
            wake(st.tag, e.time);
            return;
        }
        if (is_send) {
            double& port = out_[0];
            double start = std::max(e.time, port);
            double wire = us(st.bytes, p_.bandwidth_gbs);
            port = start + wire;
            sent_[st.tag] = start;
            complete(0, e.step, start + alpha(st.bytes) + wire);
            wake(st.tag, start);
            return;
        }
        auto it = sent_.find(st.tag);
        if (it != sent_.end()) {
            finish_recv(e, it->second);
        } else if (has_send_tag(st.tag)) {
            waiting_.emplace(st.tag, e);
        } else {
            finish_recv(e, e.time);
        }
    }

    void wake(uint32_t tag, double start) {
        auto range = waiting_.equal_range(tag);
        std::vector<Event> ready;
        for (auto it = range.first; it != range.second; ++it) ready.push_back(it->second);
        waiting_.erase(range.first, range.second);
        for (const Event& r : ready) finish_recv(r, std::max(r.time, start));
    }

    void finish_recv(const Event& e, double data_ready) {
        const Step& st = (*scheds_)[0]->steps()[e.step];
        if (st.kind == StepKind::Get || st.kind == StepKind::Put) {
            double start = std::max(data_ready + p_.local_alpha_us, cpu_[0]);
            cpu_[0] = start + copy_us(st);
            complete(0, e.step, cpu_[0]);
            return;
        }
        double start = std::max(data_ready, in_[0]);
        double wire = us(st.bytes, p_.bandwidth_gbs);
        in_[0] = start + wire;
        complete(0, e.step, start + alpha(st.bytes) + wire);
    }

    bool has_send_tag(uint32_t tag) {
        if (send_tags_.empty())
            for (const Step& s : (*scheds_)[0]->steps())
                if (s.kind == StepKind::Send || s.kind == StepKind::Expose) send_tags_.insert(s.tag);
        return send_tags_.count(tag) != 0;
    }

    const CostParams& p_;
    size_t esize_;
    std::unordered_map<uint32_t, double> sent_;
    std::unordered_multimap<uint32_t, Event> waiting_;
    std::unordered_map<int, double> published_;     // when each rank published its slot
    std::unordered_multimap<int, Event> awaiting_;  // awaits of a slot not published yet
    std::unordered_set<uint32_t> send_tags_;
    std::vector<std::unique_ptr<Schedule>>* scheds_ = nullptr;
    bool lockstep_ = false;
    std::vector<std::vector<uint32_t>> remaining_;
    std::vector<std::vector<double>> ready_;
    std::vector<double> cpu_, out_, in_;
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
    std::unordered_map<MsgKey, Event, MsgKeyHash> sends_, recvs_;
    double end_ = 0;
};

}  // namespace

double predict_us(const Algorithm& algo, const CollArgs& args, const CostParams& params) {
    std::vector<std::unique_ptr<Schedule>> scheds;
    CollArgs a = args;
    a.rank = 0;
    scheds.push_back(algo.build(a));
    // Rank 0's step count times the ranks estimates the group's.
    bool lockstep = scheds[0]->steps().size() * static_cast<size_t>(args.size) > params.max_simulated_steps;
    for (int r = 1; !lockstep && r < args.size; ++r) {
        a.rank = r;
        scheds.push_back(algo.build(a));
    }
    Simulation sim(params, args.dtype);
    return sim.run(scheds, lockstep);
}

}  // namespace chorus::coll
