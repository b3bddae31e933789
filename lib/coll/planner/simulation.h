// The cost model's engine (cost_model.h has the machine model): the steps of
// the simulated ranks in a compact form, and the event-driven simulation of
// them. Each schedule is copied in as it is built and can be dropped at
// once, so a simulation holds about 32 bytes a step and 4 a dependency,
// not the schedules.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "coll/planner/cost_model.h"
#include "exec/schedule.h"

namespace chorus::coll {

// A relabelling of the ranks that keeps a host map whose hosts are blocks
// of `block` consecutive ranks (block 1: a map where every pair of ranks is
// of one link class), one of a family indexed by k < blocks(): Shift moves
// a rank k blocks on (mod size), Xor takes it to the same place in block
// (its block xor k), for a power-of-two number of blocks.
struct Relabelling {
    enum class How { Shift, Xor } how = How::Shift;
    int block = 1, size = 1;
    int blocks() const { return size / block; }
    int image(int rank, int k) const {
        return how == How::Shift ? static_cast<int>((static_cast<long>(rank) + static_cast<long>(k) * block) % size)
                                 : rank % block + block * ((rank / block) ^ k);
    }
    // The k whose relabelling takes block b to block 0.
    int home(int b) const { return how == How::Shift ? (blocks() - b) % blocks() : b; }
};

class SimGroup {
public:
    // How a transfer with a rank that is not simulated is taken:
    //   Mirror    the simulated ranks are one block (pair_images) and the
    //             peer is the image of one of them (symmetric schedules):
    //             a transfer with a rank outside is the image of one of the
    //             block's own, in and out of its ports;
    //   Lockstep  the peer is as far along as this rank (SimMode::Sampled):
    //             its message leaves when this rank's own send with the same
    //             tag starts, its slot is published when this rank's is.
    enum class Outside { Mirror, Lockstep };

    // `hosts`: which ranks share a host (null: one host); kept by pointer.
    SimGroup(int size, chorus_datatype_t dtype, const HostMap* hosts = nullptr);
    // Room for about this many steps (memory is only reserved, not touched).
    void reserve(size_t steps);
    // Add `rank`'s schedule (finalized); the schedule may be dropped after.
    // `send_is_recv`: its Send and Recv buffers are one (a broadcast's root
    // in place), so a copy from one to the same offset of the other is
    // skipped, as the executor does.
    void add(int rank, const Schedule& s, bool send_is_recv = false);
    bool has(int rank) const { return index_[rank] >= 0; }
    int ranks() const { return static_cast<int>(ranks_.size()); }
    size_t steps() const { return nodes_.size() - 1; }
    // For Outside::Mirror, where ranks 0 to r.block - 1 were added and
    // every other rank's schedule is the image of one of theirs under r:
    // pair every transfer. Rank i's transfer with a rank q outside the
    // block stands for q's transfer with i, which is the image of one of
    // rank (q mod block)'s own, with i's image under the relabelling that
    // takes q home: the other way, with the same tag and size. False where
    // some transfer has no such counterpart.
    bool pair_images(const Relabelling& r);
    // Pair every transfer with its counterpart and every await with the
    // publish it waits for (throws Error naming the first one without;
    // Mirror: pair_images did), then run. Returns the time the last step
    // ends.
    double simulate(const CostParams& p, Outside outside);

private:
    struct Xfer {
        int peer;
        uint32_t tag;
        uint32_t step;  // global step index
        bool send;
    };
    void pair_inside();
    void pair_lockstep(size_t begin, size_t end);
    void pair_awaits();
    // The pairs made: drop the transfers' lists, pair the awaits.
    void finish_pairing();

    // One step, in the 32 bytes the simulation reads when it runs it (its
    // dependents are out_[out_begin, next step's out_begin)).
    struct Node {
        double ready;           // when its dependencies are done
        uint64_t bytes : 46;    // moved, copied, or written by a reduction
        uint64_t kind : 4;      // StepKind
        uint64_t reduces : 1;   // a get that reduces as it reads
        uint64_t streams : 1;   // a copy with non-temporal stores
        uint64_t state : 2;     // 0 waits for dependencies, 1 for its partner, 2 done
        uint64_t lockstep : 2;  // kWaitsForOwnSend, kAwaited (simulation.cc)
        uint64_t remote : 1;    // a message between two hosts
        uint32_t owner;         // simulated index of its rank
        uint32_t left;          // dependencies not done
        uint32_t partner;       // the other end of its transfer, the publish an await waits for, or none
        uint32_t out_begin;
    };
    static_assert(sizeof(Node) == 32, "a step is half a cache line");

    // The parts of simulate (simulation.cc says more of each): the pairs it
    // needs, its state as it runs (Run), the order of the ranks' turns, the
    // steps ready from the start, then the events as they come, and when
    // none is left, a step parked for its own rank released.
    struct Run;
    void pair_for(Outside outside);
    void take_turns(Run& run) const;
    void first_steps(Run& run);
    void run_events(Run& run);
    bool release_stuck(Run& run);
    // Step s, whose dependencies are done, by its kind: on its rank's CPU,
    // waiting for another step, or a transfer with a rank not simulated or
    // with a simulated one.
    void step(Run& run, uint32_t s);
    void local_step(Run& run, uint32_t s);
    void wait_for(Run& run, uint32_t s);
    void with_outside(Run& run, uint32_t s);
    void meet(Run& run, uint32_t s);
    // What follows a step: a receive's data (an await's slot) arriving, a
    // step done, a step that others are parked on happening, parking one.
    void arrive(Run& run, uint32_t s, double leaves);
    void complete(Run& run, uint32_t s, double t);
    void happened(Run& run, uint32_t s, double t);
    void park(Run& run, uint32_t s, uint32_t on);

    int size_;
    size_t esize_;
    const HostMap* hosts_;
    std::vector<int> host_;   // simulated index -> host
    std::vector<int> index_;  // rank -> simulated index, or -1
    std::vector<int> ranks_;  // simulated index -> rank
    std::vector<uint32_t> base_;
    std::vector<Node> nodes_{Node{}};  // and one past the last, for its out_begin
    std::vector<uint32_t> out_;
    // Per rank: its transfers (until paired).
    std::vector<Xfer> xfers_;
    std::vector<size_t> xfer_base_;
    // Publish slots: each simulated rank's publish step by slot round (or
    // none), and every await with the rank whose slot it waits for and the
    // round (until paired).
    struct AwaitOf {
        uint32_t step;
        int peer;
        uint32_t round;
    };
    std::vector<std::vector<uint32_t>> publish_;
    std::vector<AwaitOf> awaits_;
    bool has_slots_ = false;
    bool paired_ = false;
};

}  // namespace chorus::coll
