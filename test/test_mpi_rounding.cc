// Bit-identical results over UCX, under mpirun, with inputs whose reductions
// ROUND and with NaN payloads and infinities (test/rounding.h), for every
// algorithm of all-reduce, reduce and reduce-scatter forced with
// CHORUS_ALGO: each rank's all-reduce bytes are compared with rank 0's
// (broadcast by MPI); every result is checked against the algorithm's
// documented order (rounding inputs) or the NaN/infinity and fmin/fmax rules.
// Odd ranks run in place, even ranks out of place.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"  // cat (header only)
#include "chorus.h"
#include "mpi_test_util.h"
#include "rounding.h"

using mpitest::all_ranks;
using mpitest::world_rank;
using mpitest::world_size;

namespace {

struct Case {
    std::string coll, algo;
    chorus_datatype_t dt = CHORUS_FLOAT32;
    chorus_op_t op = CHORUS_SUM;
    bool special = false;        // NaN/inf inputs rather than rounding ones
    std::vector<size_t> counts;  // reduce_scatter: each rank's block; else {count}
    bool v_form = false;         // reduce_scatterv
    int root = 0;
    uint64_t seed = 1;

    size_t total() const {
        size_t t = 0;
        for (size_t n : counts) t += n;
        return t;
    }
};

std::string describe(const Case& c) {
    const char* types[] = {"float16", "bfloat16", "float32", "float64"};
    const char* ops[] = {"sum", "prod", "min", "max", "avg"};
    return chorus::cat(c.coll, " ", c.algo, " ", types[c.dt - CHORUS_FLOAT16], " ", ops[c.op],
                       c.special ? " NaN/inf" : " rounding", " total=", c.total(), c.v_form ? " (v form)" : "",
                       " root=", c.root);
}

// Runs `c` on this rank and returns what is wrong with its result ("" if
// nothing), after comparing all-reduce results with rank 0's.
std::string run(chorus_comm_t comm, const Case& c) {
    const int p = world_size(), me = world_rank();
    const size_t w = ref::esize(c.dt);
    const auto in = rounding::all_inputs(c.dt, c.op, c.special, p, c.seed, c.total());
    const bool mine = c.coll != "reduce" || me == c.root, in_place = me % 2 == 1 && mine;
    size_t offset = 0;  // where this rank's output starts in the whole result
    size_t n = c.total();
    if (c.coll == "reduce_scatter") {
        for (int r = 0; r < me; ++r) offset += c.counts[r];
        n = c.counts[me];
    }
    std::vector<char> send(in[me]), out(n * w + 1, '\x5a');
    void* recv = in_place ? send.data() : out.data();
    chorus_result_t rc;
    if (c.coll == "allreduce")
        rc = chorus_allreduce(send.data(), recv, c.total(), c.dt, c.op, comm, nullptr);
    else if (c.coll == "reduce")
        rc = chorus_reduce(send.data(), mine ? recv : nullptr, c.total(), c.dt, c.op, c.root, comm, nullptr);
    else if (c.v_form)
        rc = chorus_reduce_scatterv(send.data(), recv, c.counts.data(), c.dt, c.op, comm, nullptr);
    else
        rc = chorus_reduce_scatter(send.data(), recv, c.counts[0], c.dt, c.op, comm, nullptr);
    std::string bad = rc == CHORUS_SUCCESS ? "" : chorus::cat("failed: ", chorus_comm_last_error(comm));
    std::vector<char> got(static_cast<char*>(recv), static_cast<char*>(recv) + (mine ? n * w : 0));

    if (c.coll == "allreduce") {
        std::vector<char> zero(got);
        MPI_Bcast(zero.data(), static_cast<int>(zero.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
        long i = ref::first_difference(got.data(), zero.data(), n, w);
        if (bad.empty() && i >= 0) bad = chorus::cat("element ", i, " differs from rank 0's");
    }
    if (!bad.empty() || !mine) return bad;
    std::vector<char> want;
    if (!c.special) {
        want = rounding::in_documented_order(c.coll, c.algo, c.dt, c.op, c.root, c.counts, in, &bad);
        if (!bad.empty()) return bad;
    }
    std::vector<uint64_t> x(p);
    for (size_t i = 0; i < n; ++i) {
        const uint64_t v = rounding::load_bits(c.dt, got.data(), i);
        if (!c.special) {
            if (v != rounding::load_bits(c.dt, want.data(), offset + i))
                return chorus::cat("element ", offset + i, " differs from the documented order");
            continue;
        }
        for (int r = 0; r < p; ++r) x[r] = rounding::load_bits(c.dt, in[r].data(), offset + i);
        std::string why = rounding::special_violation(c.dt, c.op, x, v);
        if (!why.empty()) return chorus::cat("element ", offset + i, ": ", why);
    }
    return "";
}

void sweep(const std::string& coll, const std::vector<const char*>& algos) {
    const int p = world_size();
    const chorus_op_t all_ops[] = {CHORUS_SUM, CHORUS_PROD, CHORUS_MIN, CHORUS_MAX, CHORUS_AVG};
    for (const char* algo : algos) {
        mpitest::ForcedComm comm(coll, algo, "4K");  // several pieces per message
        REQUIRE(comm.rc == CHORUS_SUCCESS);
        uint64_t seed = 500;
        for (auto dt : rounding::kFloatTypes)
            for (bool special : {false, true})
                for (auto op : all_ops) {
                    if (!special && (op == CHORUS_MIN || op == CHORUS_MAX)) continue;  // exact in any order
                    Case c;
                    c.coll = coll;
                    c.algo = algo;
                    c.dt = dt;
                    c.op = op;
                    c.special = special;
                    c.counts = {20011};
                    c.seed = seed++;
                    c.root = static_cast<int>(seed % static_cast<uint64_t>(p));
                    std::vector<Case> cases;
                    if (coll != "reduce_scatter") {
                        cases.push_back(c);
                    } else {
                        c.counts.assign(p, 5003);
                        cases.push_back(c);
                        for (int i = 0; i < p; ++i) c.counts[i] = size_t(i) * 7 % 5 * 2001;  // uneven, some empty
                        c.v_form = true;
                        cases.push_back(c);
                    }
                    for (const Case& k : cases) {
                        std::string bad = run(comm.c, k);
                        INFO(describe(k) << ": rank " << world_rank() << ": " << bad);
                        REQUIRE(all_ranks(bad.empty()));
                    }
                }
    }
}

}  // namespace

TEST_CASE("allreduce over UCX: rounding and NaN inputs give every rank rank 0's bytes", "[mpi][allreduce]") {
    sweep("allreduce", {"ring", "recursive_doubling", "rabenseifner", "shm_pipeline"});
}

TEST_CASE("reduce over UCX: rounding and NaN inputs give the root the documented bytes", "[mpi][reduce]") {
    sweep("reduce", {"binomial", "reduce_scatter_gather", "shm_pipeline"});
}

TEST_CASE("reduce_scatter over UCX: rounding and NaN inputs give every block the documented bytes",
          "[mpi][reduce_scatter]") {
    sweep("reduce_scatter", {"halving", "ring"});
}
