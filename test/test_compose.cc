// The composer of two-level schedules (lib/coll/planner/compose.h), on hand-made
// phases: a phase waits for the earlier phases' steps on the bytes it
// touches (writers before it reads, readers and writers before it writes),
// its tags carry its number, a copy onto itself is left out without losing
// the order it gave, and buffers that overlap must be the phase's own
// in-place overlap.
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "coll/algorithm.h"
#include "coll/planner/compose.h"

using namespace chorus;
using namespace chorus::coll;

namespace {
// A hand-made phase of rank 0 of two: `make` adds its steps.
template <class F>
std::unique_ptr<Schedule> phase(F make) {
    auto s = std::make_unique<Schedule>(CHORUS_FLOAT32, CHORUS_SUM, 0, 2);
    make(*s);
    s->finalize();
    return s;
}
// An all-reduce of 8 floats, as rank 0 of two composes it.
CollArgs rank_0_of_2() {
    CollArgs a;
    a.coll = Collective::Allreduce;
    a.size = 2;
    a.count = 8;
    return a;
}
std::vector<StepId> deps(const Schedule& s, StepId k) {
    return std::vector<StepId>(s.deps_of(k), s.deps_of(k) + s.ndeps(k));
}
}  // namespace

TEST_CASE("a composed phase waits for the earlier phases' steps on the bytes it touches", "[unit][compose]") {
    const CollArgs a = rank_0_of_2();
    Composer c(a);
    const CollArgs sa = c.phase_args(Collective::Allreduce, 0, 2);
    const std::vector<int> group = {0, 1};
    const Place send = Place::at(Buf::Send, 0), recv = Place::at(Buf::Recv, 0);
    // Phase 0 writes Recv bytes 0-15; phase 1 reads 0-15 and 16-31; phase 2
    // writes 8-15.
    c.add(0, *phase([](Schedule& s) { s.recv(1, 5, {Buf::Recv, 0}, 16); }), sa, group, send, recv);
    c.add(1, *phase([](Schedule& s) {
              s.send(1, 5, {Buf::Recv, 0}, 16);
              s.send(1, 6, {Buf::Recv, 16}, 16);
          }),
          sa, group, send, recv);
    c.add(2, *phase([](Schedule& s) { s.copy({Buf::Recv, 8}, {Buf::Send, 8}, 8); }), sa, group, send, recv);
    auto s = c.finish();
    REQUIRE(s->num_steps() == 4);
    REQUIRE(deps(*s, 1) == std::vector<StepId>{0});     // reads what phase 0 wrote
    REQUIRE(deps(*s, 2).empty());                       // bytes no phase wrote
    REQUIRE(deps(*s, 3) == std::vector<StepId>{0, 1});  // after their writer and reader
    // Each phase's tags carry its number.
    const uint32_t bits = kStepTagBits - kPhaseTagBits;
    REQUIRE(s->steps()[0].tag == 5);
    REQUIRE(s->steps()[1].tag == (1u << bits | 5));
    REQUIRE(s->steps()[2].tag == (1u << bits | 6));
}

TEST_CASE("a composed phase copying onto itself is left out, its dependents keep their order", "[unit][compose]") {
    const CollArgs a = rank_0_of_2();
    Composer c(a);
    CollArgs sa = c.phase_args(Collective::Allreduce, 0, 2);
    sa.count = 4;
    sa.in_place = true;
    const std::vector<int> group = {0, 1};
    c.add(0, *phase([](Schedule& s) {
              s.recv(1, 1, {Buf::Recv, 0}, 16);
          }),
          sa, group, Place::at(Buf::Send, 0), Place::at(Buf::Recv, 0));
    // Send and Recv both at Recv 0: the copy goes, the send waits for what
    // it waited for (phase 0's receive, through the hazards).
    c.add(1, *phase([](Schedule& s) {
              StepId cp = s.copy({Buf::Recv, 0}, {Buf::Send, 0}, 16);
              s.send(1, 1, {Buf::Recv, 0}, 16, {cp});
          }),
          sa, group, Place::at(Buf::Recv, 0), Place::at(Buf::Recv, 0));
    auto s = c.finish();
    REQUIRE(s->num_steps() == 2);
    REQUIRE(s->steps()[1].kind == StepKind::Send);
    REQUIRE(deps(*s, 1) == std::vector<StepId>{0});
}

TEST_CASE("a composed phase on overlapping buffers must be built in place there", "[unit][compose]") {
    const CollArgs a = rank_0_of_2();
    Composer c(a);
    CollArgs sa = c.phase_args(Collective::Allreduce, 0, 2);
    sa.count = 4;
    auto sub = phase([](Schedule& s) { s.send(1, 1, {Buf::Send, 0}, 16); });
    const std::vector<int> group = {0, 1};
    REQUIRE_THROWS_AS(c.add(0, *sub, sa, group, Place::at(Buf::Recv, 0), Place::at(Buf::Recv, 0)), Error);
    REQUIRE_THROWS_AS(c.add(0, *sub, sa, group, Place::at(Buf::Recv, 4), Place::at(Buf::Recv, 0)), Error);
    sa.in_place = true;
    REQUIRE_THROWS_AS(c.add(0, *sub, sa, group, Place::at(Buf::Recv, 4), Place::at(Buf::Recv, 0)), Error);
    c.add(0, *sub, sa, group, Place::at(Buf::Recv, 0), Place::at(Buf::Recv, 0));
    // And a phase that names another rank, or a buffer placed nowhere.
    REQUIRE_THROWS_AS(c.add(1, *sub, sa, {1, 0}, Place::at(Buf::Send, 0), Place::at(Buf::Recv, 0)), Error);
    REQUIRE_THROWS_AS(c.add(1, *sub, sa, group, Place::none(), Place::at(Buf::Recv, 0)), Error);
}
