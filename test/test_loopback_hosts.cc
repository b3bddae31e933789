// Communicators whose ranks sit on several (emulated) hosts: they learn the
// host map from the transport, and every collective, chosen by the cost
// model with its two link classes, still matches the reference.
#include <catch2/catch.hpp>

#include "collective_check.h"

using chorus::coll::Collective;

TEST_CASE("a communicator learns which ranks share a host from its transport", "[hosts]") {
    test::LoopbackGroup apart(4, chorus::Config{}, false, nullptr, nullptr, {7, 7, 3, 3});
    for (const auto& c : apart.comms) {
        REQUIRE(c->hosts().describe() == "4 ranks on 2 hosts (2+2)");
        REQUIRE(c->hosts().same_host(2, 3));
        REQUIRE_FALSE(c->hosts().same_host(1, 2));
    }
    test::LoopbackGroup uneven(4, chorus::Config{}, false, nullptr, nullptr, {0, 0, 1, 2});
    REQUIRE(uneven.comms[3]->hosts().describe() == "4 ranks on 3 hosts (2+1+1)");
    test::LoopbackGroup together(3, chorus::Config{});
    REQUIRE(together.comms[0]->hosts().describe() == "3 ranks on 1 host (3)");
}

TEST_CASE("every collective chosen on several hosts matches the reference", "[hosts]") {
    const std::vector<std::vector<int>> layouts = {{0, 0, 1, 1}, {0, 0, 1, 2}, {0, 1, 0, 1, 2}, {0, 0, 0, 1}};
    for (const auto& hosts : layouts) {
        const int p = static_cast<int>(hosts.size());
        test::LoopbackGroup group(p, test::forced(Collective::Allreduce, ""), false, nullptr, nullptr, hosts);
        for (Collective coll : {Collective::Allreduce, Collective::Broadcast, Collective::Reduce,
                                Collective::ReduceScatter, Collective::Allgather})
            for (size_t count : {size_t(1), size_t(p + 1), size_t(5000), size_t(1) << 18}) {
                test::CollCase c;
                c.coll = coll;
                c.count = count;
                c.root = p - 1;
                c.seed = count + static_cast<uint64_t>(coll);
                INFO(group.comms[0]->hosts().describe());
                test::check_collective(group, c);
            }
    }
}
