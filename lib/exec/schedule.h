// A schedule is one rank's part of a collective, as data: a list of steps
// (send, recv, reduce, copy, divide) over regions of three buffers (the
// user's send and receive buffers and a scratch buffer), each step with the
// steps it depends on. Algorithms in lib/coll build schedules; the Executor
// runs them; nothing in a schedule knows about UCX or CUDA.
//
// Vocabulary: a *block* is the part of the message a rank is responsible
// for in a phase; a *chunk* is the unit of pipelining (one transfer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "base/error.h"
#include "chorus.h"

namespace chorus {

// The user's send and receive buffers, scratch, and the publish slots of the
// communicator's ranks (Slot: rank `peer`'s slot for this operation's slot
// round `round`, in shared memory; see Transport's publish slots).
enum class Buf : uint8_t { Send, Recv, Scratch, Slot };

// A byte offset into one of the buffers.
struct Region {
    Region(Buf b = Buf::Send, size_t off = 0) : buf(b), offset(off) {}  // NOLINT: {buf, offset} on purpose
    static Region slot(int peer, size_t off, uint32_t round = 0) {
        Region r(Buf::Slot, off);
        r.peer = peer;
        r.round = round;
        return r;
    }
    Buf buf;
    int32_t peer = -1;   // Slot only
    uint32_t round = 0;  // Slot only
    size_t offset;
};

enum class StepKind : uint8_t {
    Send,     // send `bytes` from `src` to `peer`
    Recv,     // receive `bytes` from `peer` into `dst`
    Reduce,   // dst = src op src2, `count` elements (dst may alias src or src2 exactly)
    Copy,     // dst = src, `bytes`
    Divide,   // dst = dst / divisor, `count` elements (finishes AVG)
    Publish,  // copy `bytes` from `src` into this rank's slot at dst.offset (or, with `count`, the
              // schedule's slot pieces), then mark it published
    Await,    // `peer`'s slot holds its contribution to this operation
    Expose,   // offer `bytes` at `src` to `peer`'s get or put (tag `tag`); done once the peer is
    Get,      // read `bytes` of what `peer` exposed (tag `tag`) into `dst`; with `count`, reduce as read
    Put,      // write `bytes` of `src` into what `peer` exposed (tag `tag`)
    Claim,    // this rank's slot of `round` is free (every rank has released the round that used it
              // before): steps may write it
    Release   // this rank is done with `round`: it reads no rank's slot of it any more
};

using StepId = uint32_t;

// "send", "recv", "reduce", ...
const char* step_kind_name(StepKind k);

// A list of steps to depend on: a braced list (copied, up to 8) or a vector
// (referenced; it must outlive the call).
class Deps {
public:
    Deps() = default;
    Deps(std::initializer_list<StepId> list) : data_(inline_), size_(list.size()) {
        if (size_ > 8) fail(CHORUS_ERR_INTERNAL, "schedule: more than 8 dependencies in a braced list");
        for (size_t i = 0; i < size_; ++i) inline_[i] = list.begin()[i];
    }
    Deps(const std::vector<StepId>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT: implicit on purpose
    Deps(const Deps& o) : data_(o.data_ == o.inline_ ? inline_ : o.data_), size_(o.size_) {
        for (size_t i = 0; i < 8; ++i) inline_[i] = o.inline_[i];
    }
    Deps& operator=(const Deps&) = delete;
    const StepId* begin() const { return data_; }
    const StepId* end() const { return data_ + size_; }
    size_t size() const { return size_; }

private:
    StepId inline_[8] = {};
    const StepId* data_ = nullptr;
    size_t size_ = 0;
};

// The algorithm's tag of a message must fit in this many bits (the wire tag
// adds the source rank and the operation's sequence number).
constexpr int kStepTagBits = 28;
constexpr uint32_t kMaxStepTag = (1u << kStepTagBits) - 1;

struct Step {
    StepKind kind;
    int peer = -1;     // Send, Recv
    uint32_t tag = 0;  // Send, Recv: the algorithm's tag for this message
    Region src{Buf::Send, 0};
    Region src2{Buf::Send, 0};
    Region dst{Buf::Recv, 0};
    size_t bytes = 0;                     // Send, Recv, Copy
    size_t count = 0;                     // Reduce, Divide, Get (elements; Get: 0 unless it reduces)
    bool remote_first = false;            // Get that reduces: dst = remote op src2 (else src2 op remote)
    bool stream = false;                  // Copy, Get and Put through mappings: with non-temporal stores (a large result; a slot its peers read)
    uint32_t round = 0;                   // Publish, Await, Claim, Release: the slot round
    uint32_t dep_begin = 0, dep_end = 0;  // into Schedule::deps
};

class Schedule {
public:
    Schedule(chorus_datatype_t dtype, chorus_op_t op, int rank, int size);

    // Builders. Each returns the new step's id; `deps` are earlier steps that
    // must complete first. Zero-sized transfers and copies must not be added
    // (callers skip them identically on both sides).
    StepId send(int peer, uint32_t tag, Region src, size_t bytes, Deps deps = {});
    StepId recv(int peer, uint32_t tag, Region dst, size_t bytes, Deps deps = {});
    StepId reduce(Region dst, Region a, Region b, size_t count, Deps deps = {});
    StepId copy(Region dst, Region src, size_t bytes, Deps deps = {});
    StepId divide(Region dst, size_t count, int divisor, Deps deps = {});
    // The publish slots (at most one publish per schedule, of at most the
    // slot's room; bytes may be 0): put `bytes` of `src` at `offset` in this
    // rank's slot and mark it published; wait until `peer`'s is.
    StepId publish(Region src, size_t bytes, size_t offset, Deps deps = {});
    // A publish gathered from several regions: piece i's `bytes` of `src`
    // go to `offset` in the slot (the step's `bytes` is their sum, its
    // `count` the number of pieces; none is an empty publish).
    struct SlotPiece {
        Region src;
        size_t bytes;
        size_t offset;
    };
    StepId publish_pieces(const std::vector<SlotPiece>& pieces, Deps deps = {});
    const std::vector<SlotPiece>& slot_pieces() const { return pieces_; }
    StepId await(int peer, Deps deps = {});
    // Slot rounds: a schedule that pipelines through the slots uses rounds
    // 0 .. slot_rounds() - 1, one slot operation each (Region::slot's
    // `round`). In each round every rank claims its slot, may write it
    // (copies and reductions into Region::slot(rank, off, round)), publishes
    // it, and releases the round once it reads no slot of it any more (the
    // release after its own publish, so that a rank is never more than the
    // slot count of rounds ahead of any other). Such a schedule releases
    // every round itself; one without Release steps is one round, released
    // when it finishes.
    StepId claim(uint32_t round, Deps deps = {});
    StepId publish_round(uint32_t round, Deps deps = {});  // marks the round's slot published
    StepId await_round(int peer, uint32_t round, Deps deps = {});
    StepId release(uint32_t round, Deps deps = {});
    // A copy whose result is large: written with non-temporal stores on
    // the host.
    void stream(StepId step) { steps_[step].stream = true; }
    // One-sided steps (when the transport reads and writes peers' memory,
    // Transport::one_sided()). An expose offers `bytes` of `src` to `peer`,
    // whose get (reads) or put (writes) of the same tag and size pairs with
    // it; the expose completes once the peer is done with the region (until
    // then this rank must neither change nor read it). Each pair exchanges
    // two small messages with the tag, one in each direction, so a tag names
    // one pair of a schedule whichever rank exposes. A get with a reduction
    // computes dst = local op remote (remote op local with `remote_first`)
    // block by block as it reads (dst may alias local exactly); where the
    // region cannot be read in place (device memory) the data is sent
    // instead, into `landing` (`bytes` of scratch), and reduced from there.
    StepId expose(int peer, uint32_t tag, Region src, size_t bytes, Deps deps = {});
    StepId get(int peer, uint32_t tag, Region dst, size_t bytes, Deps deps = {});
    StepId get_reduce(int peer, uint32_t tag, Region dst, Region local, size_t count, bool remote_first, Region landing,
                      Deps deps = {});
    StepId put(int peer, uint32_t tag, Region src, size_t bytes, Deps deps = {});
    // Add a dependency after the fact (e.g. a scratch slot's next user).
    void add_dep(StepId step, StepId dep);
    // Every step added so far (for a final step that must come after all).
    std::vector<StepId> all_steps() const;
    StepId num_steps() const { return static_cast<StepId>(steps_.size()); }

    void need_scratch(size_t bytes) { scratch_bytes_ = bytes > scratch_bytes_ ? bytes : scratch_bytes_; }

    // Compute the reverse edges the executor walks. Called once after building.
    void finalize();
    bool finalized() const { return finalized_; }

    const std::vector<Step>& steps() const { return steps_; }
    const uint32_t* deps_of(StepId s) const { return deps_.data() + steps_[s].dep_begin; }
    uint32_t ndeps(StepId s) const { return steps_[s].dep_end - steps_[s].dep_begin; }
    const uint32_t* dependents_of(StepId s) const { return out_.data() + out_begin_[s]; }
    uint32_t ndependents(StepId s) const { return out_begin_[s + 1] - out_begin_[s]; }

    chorus_datatype_t dtype() const { return dtype_; }
    chorus_op_t op() const { return op_; }
    int rank() const { return rank_; }
    int size() const { return size_; }
    int divisor() const { return divisor_; }
    size_t scratch_bytes() const { return scratch_bytes_; }
    // Whether the schedule reads or writes publish slots (it is then one
    // slot operation) and how much of a slot it writes.
    bool uses_slots() const { return uses_slots_; }
    // The slot operations it takes (1 unless it has rounds), and whether it
    // releases them itself (Release steps).
    uint32_t slot_rounds() const { return uses_slots_ ? slot_rounds_ : 0; }
    bool releases_rounds() const { return releases_; }
    // Whether any step is a send or a receive (or a one-sided step).
    bool has_transfers() const { return has_transfers_; }
    bool has_one_sided() const { return has_one_sided_; }
    size_t slot_bytes() const { return slot_bytes_; }
    size_t num_transfers() const;
    // Throws Error(CHORUS_ERR_INTERNAL) unless every message is told apart on
    // the wire: no two sends to one peer, and no two receives from one peer,
    // share a tag. Costs a sort of the transfers; for tests and tools (a
    // builder already checks each transfer's peer, tag range and size).
    void check_tags() const;
    // Multi-line listing of the steps, for debugging and tests.
    std::string dump() const;

private:
    StepId add(Step step, Deps deps);

    chorus_datatype_t dtype_;
    chorus_op_t op_;
    int rank_, size_;
    int divisor_ = 1;
    size_t scratch_bytes_ = 0;
    bool uses_slots_ = false;
    bool has_transfers_ = false;
    bool has_one_sided_ = false;
    size_t slot_bytes_ = 0;
    bool published_ = false;
    uint32_t slot_rounds_ = 1;
    bool releases_ = false;
    std::vector<SlotPiece> pieces_;  // of a gathered publish
    std::vector<Step> steps_;
    std::vector<uint32_t> deps_;
    // Steps added with add_dep after their creation, merged by finalize().
    std::vector<std::pair<StepId, StepId>> late_deps_;
    std::vector<uint32_t> out_begin_, out_;
    bool finalized_ = false;
};

}  // namespace chorus
