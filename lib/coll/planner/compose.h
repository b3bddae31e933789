// A schedule of schedules: the two-level algorithms (two_level_*.cc) are
// phases, each an existing algorithm's schedule built for a group of ranks
// (the ranks of a host, a rail of equal local indices, the hosts' leaders)
// and appended to this rank's schedule by a Composer, which
//
//   - renames the phase's ranks (its rank i is group[i]) and puts its buffers
//     where the caller says (a byte offset of Send, Recv or scratch; each
//     phase's own scratch in an area of its own);
//   - tags its messages apart: a phase's schedule gets kStepTagBits -
//     kPhaseTagBits bits of tag, and the phase number the top bits, so that
//     two phases between the same two ranks never share a tag;
//   - orders it after the earlier phases by what they touch, byte range by
//     byte range: a step that reads a range waits for the earlier phases'
//     last writers of it, a step that writes one also for their readers
//     since. Steps wait only for earlier phases, whose steps wait for
//     nothing later, so phase after phase completes on every rank; a piece
//     of the next phase starts as soon as the bytes it needs are final.
//     Where the user's Send and Recv may be one buffer (in place; a
//     broadcast's always), a range of Send counts as that range of Recv.
//
// A phase whose Send and Recv land on overlapping bytes must have been built
// in place, on exactly its collective's in-place overlap (checked). A copy
// onto itself, or into a buffer placed nowhere (a reduce's Recv off its
// root), is left out; any other step on a buffer placed nowhere is an
// internal error, as are slots, one-sided steps and divisions in a phase
// (the composed schedule divides AVG once, by the whole rank count).
#pragma once

#include <memory>
#include <vector>

#include "coll/algorithm.h"
#include "exec/schedule.h"

namespace chorus::coll {

// Bits of a message's tag that number the phase (up to four with messages).
constexpr uint32_t kPhaseTagBits = 2;

// Where a phase's buffer lies: `offset` bytes into `buf`, or nowhere.
struct Place {
    Buf buf = Buf::Scratch;
    size_t offset = 0;
    bool nowhere = false;
    static Place at(Buf b, size_t offset) { return {b, offset, false}; }
    static Place none() { return {Buf::Scratch, 0, true}; }
};

// Send byte x of a collective run in place is Recv byte x + this (what its
// convention in algorithm.h says: the root's Recv block for gather, minus the
// root's Send block for scatter, 0 for the others).
long in_place_shift(const CollArgs& a);

class Composer {
public:
    // `a` is referred to, not copied: it outlives the composer (a builder's
    // own arguments).
    explicit Composer(const CollArgs& a);
    explicit Composer(CollArgs&&) = delete;
    ~Composer();
    Composer(const Composer&) = delete;
    Composer& operator=(const Composer&) = delete;

    const CollArgs& args() const { return a_; }
    size_t esize() const { return esize_; }
    // A scratch area of its own for `bytes`; returns its byte offset.
    size_t reserve(size_t bytes);
    // The arguments of a phase: collective `c` among `size` ranks, this one
    // the `rank`th; the rest as the composed schedule's (chunk, window,
    // datatype, cost parameters), with AVG as SUM, fewer tag bits, no
    // slots, no one-sided steps and no host map.
    CollArgs phase_args(Collective c, int rank, int size) const;
    // Append the phase `sub`, built from `sa` for `group`, its Send at `send`
    // and its Recv at `recv` (a broadcast's or scatter's non-root reads Recv
    // as its Send, as the executor binds them). `tag_phase` < 4 numbers its
    // messages, alike on every rank of the group.
    void add(uint32_t tag_phase, const Schedule& sub, const CollArgs& sa, const std::vector<int>& group, Place send,
             Place recv);
    // A local phase of copies (packing blocks into scratch, unpacking them).
    struct Move {
        Region dst, src;
        size_t bytes;
    };
    void copies(const std::vector<Move>& moves);
    // A local phase dividing `count` elements at `at` by the rank count
    // (AVG), one step per range its last writers left.
    void divide(Region at, size_t count);
    // What follows waits for everything before: the next phase's steps that
    // wait for nothing in their own schedule wait for every step so far that
    // no other waits for. For phases ordered by no data (a barrier's tokens
    // live in each phase's own scratch).
    void fence();
    // The composed schedule (finalized).
    std::unique_ptr<Schedule> finish();

private:
    class Hazards;
    struct Span {
        int store;
        size_t lo, hi;
    };
    Span span(Region r, size_t bytes) const;
    // The earlier phases' steps that `st` must wait for, appended to deps,
    // and its accesses noted for this phase.
    void order(StepId id, const Step& st, std::vector<StepId>& deps, bool note);

    const CollArgs& a_;
    size_t esize_;
    std::unique_ptr<Schedule> s_;
    std::unique_ptr<Hazards> hazards_;
    size_t scratch_ = 0;
    std::vector<StepId> fence_;  // what the next phase's first steps wait for
    bool send_in_recv_ = false;  // whether Send may be Recv
    long shift_ = 0;             // Send byte x is Recv byte x + shift_
};

}  // namespace chorus::coll
