#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>

#include "base/error.h"
#include "coll/planner/simulation.h"
#include "coll/planner/simulation_parts.h"
#include "reduce/datatype.h"

namespace chorus::coll {

using namespace sim;

// A simulation as it runs: when each rank's CPU and ports and each host's
// link are busy until, the order of the ranks' turns, the steps ready in the
// order they run, and the steps parked.
struct SimGroup::Run {
    struct Event {
        double time;
        uint32_t local;  // step index in its rank's schedule
        uint32_t tie;    // its rank's turn among steps ready together
    };
    struct Later {
        bool operator()(const Event& x, const Event& y) const {
            return std::tie(x.time, x.local, x.tie) > std::tie(y.time, y.local, y.tie);
        }
    };

    // `lists`: room for the parked steps' lists (0: none can park).
    Run(const CostParams& params, const std::vector<int>& host_of, int ranks, int hosts, size_t lists)
        : p(params),
          host(host_of),
          cpu(ranks, 0.0),
          out(ranks, 0.0),
          in(ranks, 0.0),
          link_out(hosts, 0.0),
          link_in(link_out),
          who_of(ranks),
          tie(ranks),
          head(lists, kNone),
          next(lists, kNone) {}

    const CostParams& p;
    const std::vector<int>& host;  // simulated index -> host
    // Busy until: each rank's CPU and ports, each host's link.
    std::vector<double> cpu, out, in, link_out, link_in;
    // The ranks by turn (take_turns), and each rank's turn.
    std::vector<uint32_t> who_of, tie;
    std::priority_queue<Event, std::vector<Event>, Later> queue;
    // Steps parked until another step happens (a list per awaited step:
    // head, next): an await until the publish it waits for, and in
    // Lockstep a receive until its rank's own send with the tag starts.
    // Those that wait for their own rank (in `waited`) may wait for what
    // needs them first: when nothing else can run, the one ready first is
    // released as if the data had come when it was ready (`stuck` orders
    // them by time, filled from `waited` only then). A send that has
    // started, or a publish that is done, keeps its time in `ready`.
    std::vector<uint32_t> head, next, waited;
    std::priority_queue<std::pair<double, uint32_t>, std::vector<std::pair<double, uint32_t>>, std::greater<>> stuck;
    double end = 0;   // when the last step done so far ends
    size_t done = 0;  // steps done

    // Above the eager size a rendezvous too; within one host's shared
    // memory, less.
    double alpha(const Node& x) const {
        const double base = x.remote ? p.net_alpha_us : p.alpha_us;
        if (x.bytes > p.eager_bytes) return base + p.rendezvous_us;
        return p.all_local && !x.remote ? p.local_alpha_us : base;
    }
    // Within one host's shared memory, an eager message also goes through
    // the rings' cells: copied in by the sender and out by the receiver.
    double wire(const Node& x) const {
        if (x.remote) return us(x.bytes, p.net_gbs);
        const bool rings = p.all_local && x.bytes <= p.eager_bytes;
        return us(x.bytes, p.bandwidth_gbs) + (rings ? us(x.bytes, p.copy_gbs) : 0);
    }
    // The ports a message occupies at each end (a host's link too, between
    // hosts): when they are free, and taking them until its wire time ends
    // (`until`), the ports overhead_us longer (each end's CPU time for it).
    double free_out(const Node& x) const {
        return x.remote ? std::max(out[x.owner], link_out[host[x.owner]]) : out[x.owner];
    }
    double free_in(const Node& x) const {
        return x.remote ? std::max(in[x.owner], link_in[host[x.owner]]) : in[x.owner];
    }
    void take_out(const Node& x, double until) {
        out[x.owner] = until + p.overhead_us;
        if (x.remote) link_out[host[x.owner]] = until;
    }
    void take_in(const Node& x, double until) {
        in[x.owner] = until + p.overhead_us;
        if (x.remote) link_in[host[x.owner]] = until;
    }
    double copy_one_sided(const Node& x, double exposed);  // below
};

// A get or put: the copy on its own rank's CPU, once the descriptor of
// the expose (sent at `exposed`) has arrived; returns when it is done.
// Between hosts (UCX RMA through registration keys) the data crosses
// the links at net_rma_gbs (never, when 0: CostParams), a round trip
// after the descriptor arrives (the request, then the data), and a get
// that reduces lands it and then reduces it on the reader's CPU.
double SimGroup::Run::copy_one_sided(const Node& x, double exposed) {
    if (x.remote) {
        if (p.net_rma_gbs <= 0) return std::numeric_limits<double>::infinity();
        const bool puts = static_cast<StepKind>(x.kind) == StepKind::Put;
        const double start = std::max({exposed + p.net_alpha_us, x.ready, puts ? free_out(x) : free_in(x)});
        const double w = us(x.bytes, std::min(p.net_rma_gbs, p.net_gbs));
        if (puts)
            take_out(x, start + w);
        else
            take_in(x, start + w);
        double t = start + p.net_alpha_us + w;
        if (x.reduces) {
            t = std::max(t, cpu[x.owner]) + us(x.bytes, p.reduce_gbs);
            cpu[x.owner] = t;
        }
        return t;
    }
    const double start = std::max({exposed + p.local_alpha_us, x.ready, cpu[x.owner]});
    cpu[x.owner] = start + p.get_us + us(x.bytes, x.reduces ? p.get_reduce_gbs : p.get_gbs);
    return cpu[x.owner];
}

double SimGroup::simulate(const CostParams& p, Outside outside) {
    pair_for(outside);
    const uint32_t n = static_cast<uint32_t>(steps());
    const bool lockstep = outside == Outside::Lockstep;
    Run run(p, host_, ranks(), hosts_ ? hosts_->hosts() : 0, lockstep || has_slots_ ? n : 0);
    take_turns(run);
    first_steps(run);
    run_events(run);
    if (run.done != n)
        fail(CHORUS_ERR_INTERNAL, "cost model: ", n - run.done, " of ", n,
             " steps never ran (a cycle of dependencies)");
    return run.end;
}

// Every transfer paired with its other end and every await with its
// publish: here in Lockstep, by pair_images in Mirror.
void SimGroup::pair_for(Outside outside) {
    if (outside == Outside::Mirror && !paired_)
        fail(CHORUS_ERR_INTERNAL, "cost model: a mirrored simulation without its images paired");
    if (outside == Outside::Lockstep) {
        if (paired_) fail(CHORUS_ERR_INTERNAL, "cost model: a group simulated twice");
        pair_inside();
        for (int i = 0; i < ranks(); ++i) pair_lockstep(xfer_base_[i], xfer_base_[i + 1]);
        finish_pairing();
    }
}

// Steps ready at the same time run in order of their index in their
// rank's schedule, then of their rank's place on its host, then of the
// host: the ranks with one place on hosts of one size take their turns
// together, as their images do when one host stands for all (Mirror).
void SimGroup::take_turns(Run& run) const {
    for (int w = 0; w < ranks(); ++w) run.who_of[w] = static_cast<uint32_t>(w);
    auto place = [&](uint32_t w) {
        return hosts_ ? std::make_pair(hosts_->local_index(ranks_[w]), host_[w]) : std::make_pair(ranks_[w], 0);
    };
    std::sort(run.who_of.begin(), run.who_of.end(), [&](uint32_t x, uint32_t y) { return place(x) < place(y); });
    for (int t = 0; t < ranks(); ++t) run.tie[run.who_of[t]] = static_cast<uint32_t>(t);
}

// The steps ready from the start, in the queue's order (time 0, step
// index, turn) without the queue: a counting sort by step index, stable
// in turn. A step that takes no time (an empty publish, a copy skipped in
// place) makes its dependents ready at time 0 as well: they go through
// the queue after these, in the same order on every run.
void SimGroup::first_steps(Run& run) {
    const uint32_t n = static_cast<uint32_t>(steps());
    std::vector<uint32_t> at(1, 0), first;
    for (uint32_t s = 0; s < n; ++s) {
        if (nodes_[s].left) continue;
        const uint32_t local = s - base_[nodes_[s].owner];
        if (at.size() < local + 2) at.resize(local + 2, 0);
        ++at[local + 1];
    }
    for (size_t i = 1; i < at.size(); ++i) at[i] += at[i - 1];
    first.resize(at.back());
    for (uint32_t w : run.who_of) {
        const uint32_t b = base_[w], e = w + 1 < base_.size() ? base_[w + 1] : n;
        for (uint32_t s = b; s < e; ++s)
            if (!nodes_[s].left) first[at[s - b]++] = s;
    }
    for (uint32_t s : first) step(run, s);
}

// The steps in the queue's order as they become ready, and when the
// queue is empty, a step stuck waiting for its own rank, until none is
// left.
void SimGroup::run_events(Run& run) {
    do {
        while (!run.queue.empty()) {
            const Run::Event e = run.queue.top();
            run.queue.pop();
            step(run, base_[run.who_of[e.tie]] + e.local);
        }
    } while (release_stuck(run));
}

// Nothing else can run: the step parked for its own rank that was ready
// first arrives as if its data had come then. False when there is none.
bool SimGroup::release_stuck(Run& run) {
    for (uint32_t r : run.waited)
        if (nodes_[r].state != kFinished) run.stuck.emplace(nodes_[r].ready, r);
    run.waited.clear();
    while (!run.stuck.empty() && nodes_[run.stuck.top().second].state == kFinished) run.stuck.pop();
    if (run.stuck.empty()) return false;
    const auto [t, r] = run.stuck.top();
    run.stuck.pop();
    arrive(run, r, t);
    return true;
}

// Step s, whose dependencies are done: where it goes by its kind (and a
// transfer by where its other end is).
void SimGroup::step(Run& run, uint32_t s) {
    const Node& x = nodes_[s];
    const StepKind k = static_cast<StepKind>(x.kind);
    if (k == StepKind::Await) return wait_for(run, s);
    if (!is_transfer(k)) return local_step(run, s);
    if (x.lockstep == kWaitsForOwnSend) return wait_for(run, s);
    if (x.partner == kNone) return with_outside(run, s);
    meet(run, s);
}

// A copy, a reduction or a publish, on its rank's CPU once that is free; a
// publish that is done releases the awaits parked on it.
void SimGroup::local_step(Run& run, uint32_t s) {
    const Node& x = nodes_[s];
    const CostParams& p = run.p;
    const StepKind k = static_cast<StepKind>(x.kind);
    const double start = std::max(x.ready, run.cpu[x.owner]);
    const bool copies = k == StepKind::Copy || k == StepKind::Publish;
    run.cpu[x.owner] = start + us(x.bytes, x.streams ? p.stream_gbs : copies ? p.copy_gbs : p.reduce_gbs);
    const double t = run.cpu[x.owner];
    complete(run, s, t);
    if (k == StepKind::Publish) happened(run, s, t);
}

// An await, or in Lockstep a receive from a rank not simulated: it arrives
// once the step it waits for (the publish, its rank's own send with the
// tag) has happened, at once where there is none (a rank left out
// publishes at once), and is parked until then.
void SimGroup::wait_for(Run& run, uint32_t s) {
    const Node& x = nodes_[s];
    const uint32_t y = x.partner;
    if (y == kNone) return arrive(run, s, x.ready);
    if (nodes_[y].state == kFinished) return arrive(run, s, nodes_[y].ready);
    park(run, s, y);
}

// A transfer with a rank not simulated, which is ready for it: it gets or
// puts at once, or its receive is ready for the send.
void SimGroup::with_outside(Run& run, uint32_t s) {
    const Node& x = nodes_[s];
    const CostParams& p = run.p;
    if (one_sided(static_cast<StepKind>(x.kind))) {
        const double t =
            x.remote
                ? (p.net_rma_gbs <= 0 ? std::numeric_limits<double>::infinity()
                                      : x.ready + 3 * p.net_alpha_us + us(x.bytes, std::min(p.net_rma_gbs, p.net_gbs)))
                : x.ready + 2 * p.local_alpha_us + p.get_us + us(x.bytes, p.get_gbs);
        complete(run, s, t);
        if (x.lockstep == kAwaited) happened(run, s, x.ready);
        return;
    }
    const double start = std::max(x.ready, run.free_out(x)), w = run.wire(x);
    run.take_out(x, start + w);
    complete(run, s, start + run.alpha(x) + w);
    if (x.lockstep == kAwaited) happened(run, s, start);
}

// A transfer between simulated ranks: the end ready first is parked until
// the other is ready, then both run (a message through the ports of both
// ends, or a get or put copied by its reader or writer).
void SimGroup::meet(Run& run, uint32_t s) {
    const uint32_t y = nodes_[s].partner;
    if (nodes_[y].state != kParked) {
        nodes_[s].state = kParked;
        return;
    }
    const bool sends = is_send(static_cast<StepKind>(nodes_[s].kind));
    const uint32_t snd = sends ? s : y, rcv = sends ? y : s;
    const Node &a = nodes_[snd], &b = nodes_[rcv];
    if (one_sided(static_cast<StepKind>(a.kind))) {
        // The reader (or writer) copies; the expose is done a reply later.
        const double t = run.copy_one_sided(b, a.ready);
        complete(run, rcv, t);
        complete(run, snd, t + (b.remote ? run.p.net_alpha_us : run.p.local_alpha_us));
        if (a.lockstep == kAwaited) happened(run, snd, a.ready);
        return;
    }
    const double start = std::max({a.ready, b.ready, run.free_out(a), run.free_in(b)});
    const double w = run.wire(a), finish = start + run.alpha(a) + w;
    run.take_out(a, start + w);
    run.take_in(b, start + w);
    complete(run, snd, finish);
    complete(run, rcv, finish);
    if (a.lockstep == kAwaited) happened(run, snd, start);
}

// A receive whose data leaves its sender at `leaves`; an await whose
// slot was published at `leaves`.
void SimGroup::arrive(Run& run, uint32_t r, double leaves) {
    const Node& x = nodes_[r];
    const StepKind k = static_cast<StepKind>(x.kind);
    if (k == StepKind::Await) return complete(run, r, std::max(x.ready, leaves + run.p.slot_us));
    if (one_sided(k)) return complete(run, r, run.copy_one_sided(x, leaves));
    const double start = std::max({leaves, x.ready, run.free_in(x)}), w = run.wire(x);
    run.take_in(x, start + w);
    complete(run, r, start + run.alpha(x) + w);
}

// Step s is done at `t`: its dependents are ready no earlier, and those
// with no dependency left join the queue.
void SimGroup::complete(Run& run, uint32_t s, double t) {
    nodes_[s].state = kFinished;
    ++run.done;
    run.end = std::max(run.end, t);
    for (uint32_t i = nodes_[s].out_begin, e = nodes_[s + 1].out_begin; i < e; ++i) {
        Node& d = nodes_[out_[i]];
        d.ready = std::max(d.ready, t);
        if (--d.left == 0) run.queue.push({d.ready, out_[i] - base_[d.owner], run.tie[d.owner]});
    }
}

// Step s (a send that started, a publish that is done) happened at `t`:
// the steps parked on it arrive.
void SimGroup::happened(Run& run, uint32_t s, double t) {
    if (run.head.empty()) return;
    nodes_[s].ready = t;
    for (uint32_t r = run.head[s]; r != kNone; r = run.next[r])
        if (nodes_[r].state != kFinished) arrive(run, r, t);
    run.head[s] = kNone;
}

// Step s waits until step `on` happens.
void SimGroup::park(Run& run, uint32_t s, uint32_t on) {
    nodes_[s].state = kParked;
    run.next[s] = run.head[on];
    run.head[on] = s;
    if (nodes_[s].lockstep == kWaitsForOwnSend) run.waited.push_back(s);
}

}  // namespace chorus::coll
