// Communicators driven by different threads at once share nothing that is
// not synchronized: each thread runs its own group of loopback ranks through
// the collectives many times and checks the results (by hand: Catch2's
// assertions are not for threads). Run in the ThreadSanitizer build (CI),
// where a race between the threads is an error.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "loopback_driver.h"
#include "reference.h"

using chorus::coll::CollArgs;
using chorus::coll::Collective;

namespace {

// One collective on every rank of `group`; "" if every rank got the
// reference result, else what went wrong.
std::string run_one(test::LoopbackGroup& group, Collective coll, size_t count, int root, uint64_t seed) {
    const int p = group.size();
    const auto dt = CHORUS_INT32;
    const auto op = CHORUS_SUM;
    const size_t total = coll == Collective::ReduceScatter ? count * p : count;
    std::vector<std::vector<int32_t>> in(p), out(p);
    std::vector<const void*> send(p);
    std::vector<void*> recv(p);
    for (int r = 0; r < p; ++r) {
        in[r].resize(total);
        ref::fill_input(dt, op, r, p, seed, in[r].data(), total);
        out[r].assign(coll == Collective::Allgather       ? count * p
                      : coll == Collective::ReduceScatter ? count
                                                          : total,
                      -1);
        send[r] = coll == Collective::Broadcast && r != root ? out[r].data() : in[r].data();
        recv[r] = out[r].data();
    }
    std::vector<int32_t> want(coll == Collective::Allgather ? count * p : total);
    if (coll == Collective::Allgather)
        for (int k = 0; k < p; ++k) ref::fill_input(dt, op, k, p, seed, want.data() + k * count, count);
    else if (coll == Collective::Broadcast)
        ref::fill_input(dt, op, root, p, seed, want.data(), total);
    else
        ref::expected(dt, op, p, seed, want.data(), total);
    CollArgs args;
    args.coll = coll;
    args.count = count;
    args.dtype = dt;
    args.op = op;
    args.root = root;
    args.size = p;
    std::string error;
    auto rc = group.run(args, send, recv, &error);
    for (int r = 0; r < p; ++r) {
        if (rc[r] != CHORUS_SUCCESS) return chorus::cat("rank ", r, " failed: ", error);
        const int32_t* expect = coll == Collective::ReduceScatter ? want.data() + r * count : want.data();
        if (std::memcmp(out[r].data(), expect, out[r].size() * sizeof(int32_t)) != 0)
            return chorus::cat(chorus::coll::collective_name(coll), " count ", count, ": rank ", r, " wrong");
    }
    return "";
}

}  // namespace

TEST_CASE("groups of ranks on different threads run collectives at once", "[threads]") {
    const int threads = 3, rounds = 60;
    const Collective kinds[] = {Collective::Allreduce, Collective::Broadcast, Collective::ReduceScatter,
                                Collective::Allgather};
    std::vector<std::string> errors(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            test::LoopbackGroup group(3 + t, chorus::Config{});
            for (int k = 0; k < rounds && errors[t].empty(); ++k)
                errors[t] = run_one(group, kinds[k % 4], 1 + (k * 97 + t * 13) % 3000, k % (3 + t), 17 * t + k);
        });
    for (auto& th : pool) th.join();
    for (int t = 0; t < threads; ++t) {
        INFO("thread " << t << ": " << errors[t]);
        CHECK(errors[t].empty());
    }
}
