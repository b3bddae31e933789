// Every collective and every algorithm through the public C API over UCX,
// under mpirun, against references from per-rank seeds; plus MPI's own
// collectives as a second oracle where MPI's arithmetic is exact. Where the
// run's CHORUS_ALGO forces a collective, its sweep runs that algorithm
// alone (the virtual cluster forces the two-level ones).
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chorus.h"
#include "mpi_test_util.h"
#include "reference.h"

using mpitest::all_ranks;
using mpitest::world_rank;
using mpitest::world_size;

namespace {

// A communicator that forces `algo` for `coll`, with several pieces per
// message.
struct Comm : mpitest::ForcedComm {
    Comm(const std::string& coll, const std::string& algo) : ForcedComm(coll, algo, "16K") {
        REQUIRE(rc == CHORUS_SUCCESS);
    }
};

const chorus_datatype_t kTypes[] = {CHORUS_INT8,    CHORUS_UINT16,   CHORUS_INT32,   CHORUS_UINT64,
                                    CHORUS_FLOAT16, CHORUS_BFLOAT16, CHORUS_FLOAT32, CHORUS_FLOAT64};

std::vector<size_t> counts_for(int p) {
    return {0, 1, size_t(p - 1), size_t(p + 1), 30011};
}

}  // namespace

TEST_CASE("broadcast over UCX, every algorithm and root", "[mpi][bcast]") {
    const int p = world_size(), me = world_rank();
    for (const std::string& algo : mpitest::algorithms("bcast", {"binomial", "chain", "scatter_allgather"})) {
        Comm comm("bcast", algo);
        for (auto dt : kTypes)
            for (size_t count : counts_for(p))
                for (int root : {0, p / 2, p - 1})
                    for (bool in_place : {false, true}) {
                        size_t w = ref::esize(dt);
                        std::vector<char> in(count * w + 1), out(count * w + 1, '\x5a'), want(count * w + 1, '\x5a');
                        ref::fill_input(dt, CHORUS_SUM, root, p, 11, want.data(), count);
                        if (me == root) ref::fill_input(dt, CHORUS_SUM, root, p, 11, in.data(), count);
                        void* recv = in_place && me == root ? in.data() : out.data();
                        chorus_result_t rc =
                            chorus_broadcast(me == root ? in.data() : nullptr, recv, count, dt, root, comm.c, nullptr);
                        INFO(algo << " dt " << dt << " count " << count << " root " << root << ": "
                                  << chorus_comm_last_error(comm.c));
                        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(recv, want.data(), count * w) == 0 &&
                                          static_cast<char*>(recv)[count * w] ==
                                              (recv == out.data() ? '\x5a' : in[count * w])));
                    }
    }
}

TEST_CASE("reduce over UCX, every algorithm and root", "[mpi][reduce]") {
    const int p = world_size(), me = world_rank();
    for (const std::string& algo : mpitest::algorithms("reduce", {"binomial", "reduce_scatter_gather"})) {
        Comm comm("reduce", algo);
        for (auto dt : kTypes)
            for (auto op : ref::kAllOps)
                for (size_t count : counts_for(p))
                    for (int root : {0, p - 1}) {
                        size_t w = ref::esize(dt);
                        std::vector<char> in(count * w), out(count * w + 1, '\x5a'), want(count * w + 1);
                        ref::fill_input(dt, op, me, p, 12, in.data(), count);
                        ref::expected(dt, op, p, 12, want.data(), count);
                        chorus_result_t rc = chorus_reduce(in.data(), me == root ? out.data() : nullptr, count, dt, op,
                                                           root, comm.c, nullptr);
                        INFO(algo << " dt " << dt << " op " << op << " count " << count << " root " << root << ": "
                                  << chorus_comm_last_error(comm.c));
                        bool ok = rc == CHORUS_SUCCESS;
                        if (me == root) ok = ok && std::memcmp(out.data(), want.data(), count * w) == 0;
                        REQUIRE(all_ranks(ok && out[count * w] == '\x5a'));
                    }
    }
}

TEST_CASE("reduce-scatter over UCX, every algorithm, block and v forms", "[mpi][reduce_scatter]") {
    const int p = world_size(), me = world_rank();
    for (const std::string& algo : mpitest::algorithms("reduce_scatter", {"halving", "ring"})) {
        Comm comm("reduce_scatter", algo);
        for (auto dt : kTypes)
            for (auto op : ref::kAllOps)
                for (int form = 0; form < 3; ++form)
                    for (bool in_place : {false, true}) {
                        // form 0: blocks of 7001; 1: blocks of 1; 2: irregular with zeros
                        std::vector<size_t> counts(p);
                        for (int i = 0; i < p; ++i) counts[i] = form == 0 ? 7001 : form == 1 ? 1 : (i * 7) % 5 * 1000;
                        size_t total = 0, off = 0;
                        for (int i = 0; i < p; ++i) total += counts[i];
                        for (int i = 0; i < me; ++i) off += counts[i];
                        size_t w = ref::esize(dt), mine = counts[me];
                        std::vector<char> in(total * w + 1, '\x5a'), out(mine * w + 1, '\x5a'), want(total * w + 1);
                        ref::fill_input(dt, op, me, p, 13, in.data(), total);
                        ref::expected(dt, op, p, 13, want.data(), total);
                        void* recv = in_place ? in.data() : out.data();
                        chorus_result_t rc =
                            form == 2 ? chorus_reduce_scatterv(in.data(), recv, counts.data(), dt, op, comm.c, nullptr)
                                      : chorus_reduce_scatter(in.data(), recv, counts[0], dt, op, comm.c, nullptr);
                        INFO(algo << " dt " << dt << " op " << op << " form " << form << " in_place " << in_place
                                  << ": " << chorus_comm_last_error(comm.c));
                        REQUIRE(all_ranks(rc == CHORUS_SUCCESS &&
                                          std::memcmp(recv, want.data() + off * w, mine * w) == 0 &&
                                          (in_place || out[mine * w] == '\x5a')));
                    }
    }
}

TEST_CASE("all-gather over UCX, every algorithm", "[mpi][allgather]") {
    const int p = world_size(), me = world_rank();
    for (const std::string& algo : mpitest::algorithms("allgather", {"ring", "bruck", "shm_pipeline"})) {
        Comm comm("allgather", algo);
        for (auto dt : kTypes)
            for (size_t count : counts_for(p))
                for (bool in_place : {false, true}) {
                    size_t w = ref::esize(dt), blk = count * w;
                    std::vector<char> in(blk + 1), out(blk * p + 1, '\x5a'), want(blk * p + 1);
                    for (int k = 0; k < p; ++k) ref::fill_input(dt, CHORUS_SUM, k, p, 14, want.data() + k * blk, count);
                    ref::fill_input(dt, CHORUS_SUM, me, p, 14, in.data(), count);
                    const void* send = in.data();
                    if (in_place) {
                        std::memcpy(out.data() + me * blk, in.data(), blk);
                        send = out.data() + me * blk;
                    }
                    chorus_result_t rc = chorus_allgather(send, out.data(), count, dt, comm.c, nullptr);
                    INFO(algo << " dt " << dt << " count " << count << ": " << chorus_comm_last_error(comm.c));
                    REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(out.data(), want.data(), blk * p) == 0 &&
                                      out[blk * p] == '\x5a'));
                }
    }
}

TEST_CASE("allreduce over UCX, every algorithm", "[mpi][allreduce]") {
    const int p = world_size(), me = world_rank();
    for (const std::string& algo :
         mpitest::algorithms("allreduce", {"ring", "recursive_doubling", "rabenseifner", "shm_pipeline"})) {
        Comm comm("allreduce", algo);
        for (auto dt : kTypes)
            for (auto op : ref::kAllOps)
                for (size_t count : counts_for(p))
                    for (bool in_place : {false, true}) {
                        size_t w = ref::esize(dt);
                        std::vector<char> in(count * w + 1), out(count * w + 1, '\x5a'), want(count * w + 1);
                        ref::fill_input(dt, op, me, p, 15, in.data(), count);
                        ref::expected(dt, op, p, 15, want.data(), count);
                        void* recv = in_place ? in.data() : out.data();
                        chorus_result_t rc = chorus_allreduce(in.data(), recv, count, dt, op, comm.c, nullptr);
                        INFO(algo << " dt " << dt << " op " << op << " count " << count << ": "
                                  << chorus_comm_last_error(comm.c));
                        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(recv, want.data(), count * w) == 0));
                    }
    }
}

TEST_CASE("automatic selection agrees with MPI's own collectives", "[mpi][selection]") {
    const int p = world_size(), me = world_rank();
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    for (size_t count : {size_t(1), size_t(1000), size_t(300000)}) {
        std::vector<int32_t> in(count), ours(count * p), theirs(count * p);
        ref::fill_input(CHORUS_INT32, CHORUS_MAX, me, p, 16, in.data(), count);
        REQUIRE(chorus_allgather(in.data(), ours.data(), count, CHORUS_INT32, c, nullptr) == CHORUS_SUCCESS);
        MPI_Allgather(in.data(), int(count), MPI_INT32_T, theirs.data(), int(count), MPI_INT32_T, MPI_COMM_WORLD);
        REQUIRE(all_ranks(ours == theirs));
        std::vector<int32_t> big(count * p), rs_ours(count), rs_theirs(count);
        ref::fill_input(CHORUS_INT32, CHORUS_MAX, me, p, 17, big.data(), count * p);
        REQUIRE(chorus_reduce_scatter(big.data(), rs_ours.data(), count, CHORUS_INT32, CHORUS_MAX, c, nullptr) ==
                CHORUS_SUCCESS);
        MPI_Reduce_scatter_block(big.data(), rs_theirs.data(), int(count), MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD);
        REQUIRE(all_ranks(rs_ours == rs_theirs));
        std::vector<int32_t> b_ours(in), b_theirs(in);
        REQUIRE(chorus_broadcast(b_ours.data(), b_ours.data(), count, CHORUS_INT32, p - 1, c, nullptr) ==
                CHORUS_SUCCESS);
        MPI_Bcast(b_theirs.data(), int(count), MPI_INT32_T, p - 1, MPI_COMM_WORLD);
        REQUIRE(all_ranks(b_ours == b_theirs));
        std::vector<int32_t> r_ours(count), r_theirs(count);
        REQUIRE(chorus_reduce(in.data(), r_ours.data(), count, CHORUS_INT32, CHORUS_MIN, 0, c, nullptr) ==
                CHORUS_SUCCESS);
        MPI_Reduce(in.data(), r_theirs.data(), int(count), MPI_INT32_T, MPI_MIN, 0, MPI_COMM_WORLD);
        REQUIRE(all_ranks(me != 0 || r_ours == r_theirs));
    }
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("reduce-scatter whose total lies just past a size class's first message", "[mpi][selection]") {
    // The size class of 16 KiB totals: a rank count that does not divide
    // its first message used to price a model just under 16 KiB, which fits
    // a shared-memory slot, and then ran that schedule on totals that do not.
    const int me = world_rank(), p = world_size();
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    // Totals (int32) from just under 16 and 64 KiB to the top of the class
    // that starts there (a quarter octave).
    for (size_t first : {size_t(4096), size_t(16384)}) {
        const size_t lo = first / size_t(p);
        for (size_t count : {lo - 1, lo, lo + 1, lo + 2, lo * 9 / 8, lo * 5 / 4 - 1}) {
            std::vector<int32_t> big(count * p), ours(count), theirs(count);
            ref::fill_input(CHORUS_INT32, CHORUS_MAX, me, p, 18, big.data(), count * p);
            REQUIRE(chorus_reduce_scatter(big.data(), ours.data(), count, CHORUS_INT32, CHORUS_MAX, c, nullptr) ==
                    CHORUS_SUCCESS);
            MPI_Reduce_scatter_block(big.data(), theirs.data(), int(count), MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD);
            REQUIRE(all_ranks(ours == theirs));
        }
    }
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("nonblocking collectives of different kinds overlap on one communicator", "[mpi][nonblocking]") {
    const int p = world_size(), me = world_rank();
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    const size_t n = 50001;
    std::vector<float> ar(n), bc(n), ag_in(n), ag(n * p), rs_in(n * p), rs(n), rd_in(n), rd(n);
    ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, me, p, 21, ar.data(), n);
    if (me == 0) ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, 0, p, 22, bc.data(), n);
    ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, me, p, 23, ag_in.data(), n);
    ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, me, p, 24, rs_in.data(), n * p);
    ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, me, p, 25, rd_in.data(), n);
    chorus_request_t q[5];
    REQUIRE(chorus_iallreduce(ar.data(), ar.data(), n, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr, &q[0]) ==
            CHORUS_SUCCESS);
    REQUIRE(chorus_ibroadcast(bc.data(), bc.data(), n, CHORUS_FLOAT32, 0, c, nullptr, &q[1]) == CHORUS_SUCCESS);
    REQUIRE(chorus_iallgather(ag_in.data(), ag.data(), n, CHORUS_FLOAT32, c, nullptr, &q[2]) == CHORUS_SUCCESS);
    REQUIRE(chorus_ireduce_scatter(rs_in.data(), rs.data(), n, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr, &q[3]) ==
            CHORUS_SUCCESS);
    REQUIRE(chorus_ireduce(rd_in.data(), rd.data(), n, CHORUS_FLOAT32, CHORUS_SUM, p - 1, c, nullptr, &q[4]) ==
            CHORUS_SUCCESS);
    for (int k = 4; k >= 0; --k) REQUIRE(chorus_wait(q[k]) == CHORUS_SUCCESS);
    std::vector<float> want(n * p);
    bool ok = true;
    ref::expected(CHORUS_FLOAT32, CHORUS_SUM, p, 21, want.data(), n);
    ok = ok && std::memcmp(ar.data(), want.data(), n * 4) == 0;
    ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, 0, p, 22, want.data(), n);
    ok = ok && std::memcmp(bc.data(), want.data(), n * 4) == 0;
    for (int k = 0; k < p; ++k) ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, k, p, 23, want.data() + k * n, n);
    ok = ok && std::memcmp(ag.data(), want.data(), n * p * 4) == 0;
    ref::expected(CHORUS_FLOAT32, CHORUS_SUM, p, 24, want.data(), n * p);
    ok = ok && std::memcmp(rs.data(), want.data() + me * n, n * 4) == 0;
    ref::expected(CHORUS_FLOAT32, CHORUS_SUM, p, 25, want.data(), n);
    ok = ok && (me != p - 1 || std::memcmp(rd.data(), want.data(), n * 4) == 0);
    REQUIRE(all_ranks(ok));
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("collective arguments are validated", "[mpi][errors]") {
    const int p = world_size();
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    float x[4] = {}, y[4] = {};
    REQUIRE(chorus_broadcast(x, y, 1, CHORUS_FLOAT32, p, c, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(std::string(chorus_comm_last_error(c)).find("root") != std::string::npos);
    REQUIRE(chorus_reduce(x, y, 1, CHORUS_FLOAT32, CHORUS_SUM, -1, c, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_reduce_scatterv(x, y, nullptr, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) ==
            CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(std::string(chorus_comm_last_error(c)).find("recvcounts") != std::string::npos);
    REQUIRE(chorus_reduce_scatter(x, y, SIZE_MAX / 2, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) ==
            CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_allgather(x, nullptr, 1, CHORUS_FLOAT32, c, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_allgather(x, y, SIZE_MAX / 3, CHORUS_FLOAT32, c, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_iallgather(x, y, 1, CHORUS_FLOAT32, c, nullptr, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_ibroadcast(x, y, 1, CHORUS_FLOAT32, 0, c, nullptr, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_broadcast(x, y, 1, static_cast<chorus_datatype_t>(42), 0, c, nullptr) ==
            CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}
