// A rank that fails tells its peers at once (a notice), and the notice says
// from which operation on: the operations the failed rank finished still
// finish everywhere, the one it failed in fails everywhere with its error,
// and later ones say the communicator failed.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "collective_check.h"
#include "core/communicator.h"
#include "support/loopback_transport.h"

using chorus::coll::CollArgs;
using chorus::coll::Collective;

namespace {

struct Outcome {
    chorus_result_t rc = CHORUS_SUCCESS;
    std::string message;
};

Outcome run(chorus::Communicator& comm, const CollArgs& args, const void* send, void* recv) {
    Outcome o;
    try {
        o.rc = comm.run(args, send, recv);
        if (o.rc != CHORUS_SUCCESS) o.message = comm.last_error();
    } catch (const chorus::Error& e) {
        o.rc = e.code();
        o.message = e.what();
    }
    return o;
}

}  // namespace

TEST_CASE("a peer's failure at operation n fails n and later here, not the operations before it", "[threads]") {
    // Reduce to rank 0 over a binomial tree at p=3: rank 1 is a leaf, done
    // once its message is sent; it then fails to start operation #1.
    const int p = 3;
    auto hub = std::make_shared<chorus::net::LoopbackHub>(p, false);
    std::vector<std::unique_ptr<chorus::Communicator>> comms;
    for (int r = 0; r < p; ++r) {
        chorus::Config cfg = test::forced(Collective::Reduce, "binomial");
        if (r == 1) cfg.inject = "start:1";
        comms.push_back(
            std::make_unique<chorus::Communicator>(std::make_unique<chorus::net::LoopbackTransport>(hub, r), cfg));
    }
    CollArgs args;
    args.coll = Collective::Reduce;
    args.dtype = CHORUS_INT32;
    args.op = CHORUS_SUM;
    args.count = 4;
    args.root = 0;
    std::vector<std::vector<int32_t>> in(p, std::vector<int32_t>(4)), out(p, std::vector<int32_t>(4, -1));
    for (int r = 0; r < p; ++r)
        for (int i = 0; i < 4; ++i) in[r][i] = 10 * r + i;

    // Rank 1 finishes #0, then fails #1: its notice is waiting for the others.
    REQUIRE(run(*comms[1], args, in[1].data(), out[1].data()).rc == CHORUS_SUCCESS);
    Outcome failed = run(*comms[1], args, in[1].data(), out[1].data());
    REQUIRE(failed.rc == CHORUS_ERR_OUT_OF_MEMORY);

    // Rank 0 waits in #0 for rank 2, which comes late: rank 0 reads the
    // notice meanwhile, and #0 must still finish, with the right sum.
    Outcome zero, two;
    std::thread root([&] { zero = run(*comms[0], args, in[0].data(), out[0].data()); });
    std::thread late([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        two = run(*comms[2], args, in[2].data(), out[2].data());
    });
    root.join();
    late.join();
    INFO(zero.message << " | " << two.message);
    REQUIRE(zero.rc == CHORUS_SUCCESS);
    REQUIRE(two.rc == CHORUS_SUCCESS);
    for (int i = 0; i < 4; ++i) REQUIRE(out[0][i] == in[0][i] + in[1][i] + in[2][i]);
    REQUIRE(comms[0]->failed());

    // #1 fails at the root with rank 1's error; the next says the
    // communicator failed. (Rank 2, a leaf, needs nothing of rank 1 in #1.)
    Outcome o = run(*comms[0], args, in[0].data(), out[0].data());
    INFO("rank 0: " << o.message);
    REQUIRE(o.rc == CHORUS_ERR_OUT_OF_MEMORY);
    REQUIRE(o.message.find("rank 1 failed") != std::string::npos);
    REQUIRE(o.message.find("#1") != std::string::npos);
    REQUIRE(run(*comms[0], args, in[0].data(), out[0].data()).rc == CHORUS_ERR_COMM_FAILED);
}
