// The host map (which ranks share a host) and the cost model's two link
// classes: messages between hosts pay the network's latency and share their
// host's link.
#include <catch2/catch.hpp>
#include <string>

#include "coll/planner/cost_model.h"
#include "coll/planner/selector.h"
#include "coll/planner/topology.h"
#include "core/config.h"

using namespace chorus;
using namespace chorus::coll;

TEST_CASE("a host map numbers hosts by their lowest rank and describes the layout", "[unit][topology]") {
    HostMap m = HostMap::from_labels({7, 3, 7, 3, 9});
    REQUIRE(m.ranks() == 5);
    REQUIRE(m.hosts() == 3);
    REQUIRE(m.host_of(0) == 0);
    REQUIRE(m.host_of(1) == 1);
    REQUIRE(m.host_of(2) == 0);
    REQUIRE(m.host_of(4) == 2);
    REQUIRE(m.members(0) == std::vector<int>{0, 2});
    REQUIRE(m.members(1) == std::vector<int>{1, 3});
    REQUIRE(m.local_index(3) == 1);
    REQUIRE(m.local_index(4) == 0);
    REQUIRE(m.same_host(1, 3));
    REQUIRE_FALSE(m.same_host(0, 1));
    REQUIRE_FALSE(m.flat());
    REQUIRE(m.describe() == "5 ranks on 3 hosts (2+2+1)");
    REQUIRE(HostMap::from_layout({2, 2}).describe() == "4 ranks on 2 hosts (2+2)");
    REQUIRE(HostMap::from_layout({2, 1, 1}) == HostMap::from_labels({0, 0, 1, 2}));
    REQUIRE(HostMap::from_layout(std::vector<int>(4096, 8)).describe() == "32768 ranks on 4096 hosts (8 each)");
    std::vector<int> uneven(10, 4);
    uneven[3] = 1;
    REQUIRE(HostMap::from_layout(uneven).describe() == "37 ranks on 10 hosts (1 to 4 each)");
    REQUIRE(HostMap().hosts() == 1);
    REQUIRE(HostMap().flat());
    REQUIRE(HostMap::from_layout({1, 1, 1}).flat());
    REQUIRE_THROWS_AS(HostMap::from_layout({2, 0}), Error);
}

namespace {
constexpr size_t kBytes = 4096;  // eager: no rendezvous

// Ranks 0 and 1 each send kBytes to the rank two above them.
std::unique_ptr<Schedule> two_across(const CollArgs& a) {
    auto s = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    if (a.rank < 2) s->send(a.rank + 2, 1, {Buf::Send, 0}, kBytes);
    if (a.rank >= 2) s->recv(a.rank - 2, 1, {Buf::Recv, 0}, kBytes);
    s->finalize();
    return s;
}

CollArgs four_ranks() {
    CollArgs a;
    a.coll = Collective::Broadcast;
    a.size = 4;
    a.count = kBytes / 4;
    return a;
}

CostParams on(const std::vector<int>& layout) {
    CostParams p;
    p.hosts = std::make_shared<const HostMap>(HostMap::from_layout(layout));
    return p;
}
}  // namespace

TEST_CASE("messages between hosts pay the network's latency and share their host's link", "[unit][costmodel]") {
    const Algorithm algo{Collective::Broadcast, "two_across", two_across, nullptr};
    const CollArgs a = four_ranks();
    CostParams local;  // one host
    const double within = local.alpha_us + kBytes / (local.bandwidth_gbs * 1e3);
    const double between = local.net_alpha_us + kBytes / (local.net_gbs * 1e3);
    const double wire = kBytes / (local.net_gbs * 1e3);
    REQUIRE(predict(algo, a, local).us == Approx(within));
    // 0 and 1 on one host, 2 and 3 on the other: the two messages take turns
    // on the link.
    REQUIRE(predict(algo, a, on({2, 2})).us == Approx(between + wire));
    // Every rank a host: each message has its links to itself.
    REQUIRE(predict(algo, a, on({1, 1, 1, 1})).us == Approx(between));
    // 0 and 2 on one host, 1 and 3 on another: both messages stay inside.
    CostParams mixed;
    mixed.hosts = std::make_shared<const HostMap>(HostMap::from_labels({0, 1, 0, 1}));
    REQUIRE(predict(algo, a, mixed).us == Approx(within));
    // 3 alone: one message crosses, on a link of its own.
    mixed.hosts = std::make_shared<const HostMap>(HostMap::from_labels({0, 0, 0, 1}));
    REQUIRE(predict(algo, a, mixed).us == Approx(between));
}

TEST_CASE("schedules are simulated from one block of ranks only where relabellings keep the host map",
          "[unit][costmodel]") {
    CollArgs a = four_ranks();
    a.coll = Collective::Allreduce;
    a.size = 8;
    a.count = 1 << 16;
    const Algorithm& ring = find_algorithm(Collective::Allreduce, "ring");
    Prediction apart = predict(ring, a, on(std::vector<int>(8, 1)));
    REQUIRE(apart.mode == SimMode::Symmetric);
    REQUIRE(apart.ranks == 1);
    CostParams every = on(std::vector<int>(8, 1));
    every.use_symmetry = false;
    REQUIRE(predict(ring, a, every).us == apart.us);
    // Two hosts of four: host 0's ranks stand for host 1's.
    Prediction two = predict(ring, a, on({4, 4}));
    REQUIRE(two.mode == SimMode::Symmetric);
    REQUIRE(two.ranks == 4);
    every = on({4, 4});
    every.use_symmetry = false;
    REQUIRE(predict(ring, a, every).us == two.us);
    // Hosts of different sizes, or of ranks not consecutive: every rank.
    REQUIRE(predict(ring, a, on({5, 3})).mode == SimMode::Full);
    CostParams mixed;
    mixed.hosts = std::make_shared<const HostMap>(HostMap::from_labels({0, 1, 0, 1, 0, 1, 0, 1}));
    REQUIRE(predict(ring, a, mixed).mode == SimMode::Full);
    // Between the two: slower than one host, faster than eight hosts (six
    // of the ring's eight hops stay inside a host, so fewer of a chunk's
    // hops pay the network's latency).
    const double one_host = predict(ring, a, CostParams{}).us;
    REQUIRE(two.us > one_host);
    REQUIRE(two.us < apart.us);
}

TEST_CASE("simulating one host's ranks of symmetric schedules predicts what simulating every rank does",
          "[unit][costmodel][scale]") {
    size_t symmetric = 0, cases = 0, two_level = 0;
    for (const std::vector<int>& layout :
         {std::vector<int>{2, 2}, {2, 2, 2, 2}, {4, 4}, {3, 3, 3}, {2, 2, 2}, {4, 4, 4, 4}, {2, 2, 2, 2, 2, 2, 2, 2}}) {
        CostParams every = on(layout);
        every.use_symmetry = false;
        every.max_simulated_steps = size_t(1) << 30;
        CostParams shortcut = every;
        shortcut.use_symmetry = true;
        const int p = every.hosts->ranks();
        for (int c = 0; c < kNumCollectives; ++c)
            for (const Algorithm& algo : algorithms_for(Collective(c)))
                for (size_t bytes : {size_t(4) * p, size_t(12) * p + 4, size_t(4096) * p, size_t(1) << 20}) {
                    CollArgs a;
                    a.coll = Collective(c);
                    a.size = p;
                    a.dtype = CHORUS_FLOAT32;
                    a.count = a.coll == Collective::ReduceScatter ? bytes / 4 / p : bytes / 4;
                    a.chunk_bytes = 1024;
                    a.depth = 4;
                    a.hosts = every.hosts.get();
                    if (algo.supports && !algo.supports(a)) continue;
                    CAPTURE(algo.name, collective_name(algo.coll), every.hosts->describe(), bytes);
                    Prediction full = predict(algo, a, every), fast = predict(algo, a, shortcut);
                    REQUIRE(full.mode == SimMode::Full);
                    REQUIRE(fast.us == full.us);  // the same arithmetic, not merely close
                    if (fast.mode == SimMode::Symmetric) {
                        ++symmetric;
                        REQUIRE(fast.ranks == layout[0]);
                        if (std::string(algo.name).rfind("two_level", 0) == 0) ++two_level;
                    }
                    ++cases;
                }
    }
    // Rings, recursive doubling and halving, Bruck, the rails, and more.
    REQUIRE(symmetric > cases / 5);
    REQUIRE(two_level > 0);
}

TEST_CASE("a host map knows when its hosts are blocks of consecutive ranks", "[unit][topology]") {
    REQUIRE(HostMap::from_layout({4, 4, 4}).block() == 4);
    REQUIRE(HostMap::from_layout({1, 1}).block() == 1);
    REQUIRE(HostMap::from_layout({4, 4, 3}).block() == 0);
    REQUIRE(HostMap::from_layout({3, 4, 4}).block() == 0);
    REQUIRE(HostMap::from_labels({0, 1, 0, 1}).block() == 0);
    REQUIRE(HostMap().block() == 0);
}

TEST_CASE("the network's cost settings are read from CHORUS_COST_NET_*", "[unit][config]") {
    Config c = Config::from_strings({"CHORUS_COST_NET_ALPHA_US=12", "CHORUS_COST_NET_GBS=1.25"});
    REQUIRE(c.cost.net_alpha_us == 12);
    REQUIRE(c.cost.net_gbs == 1.25);
    REQUIRE_THROWS_AS(Config::from_strings({"CHORUS_COST_NET_GBS=0"}), Error);
    REQUIRE_THROWS_AS(Config::from_strings({"CHORUS_COST_NET_ALPHA_US=slow"}), Error);
}
