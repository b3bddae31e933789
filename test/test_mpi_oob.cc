// chorus_comm_create_oob under mpirun, with the exchange done by
// MPI_Allgather: a communicator that works; callbacks that fail on one rank
// or on all (every call goes through one MPI_Allgather that carries each
// rank's verdict, so the others fail in the same call instead of waiting);
// settings that differ; ranks whose rank does not fit their place.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chorus.h"
#include "mpi_test_util.h"

using mpitest::all_ranks;
using mpitest::world_rank;
using mpitest::world_size;

namespace {

// The exchange: one MPI_Allgather of (verdict, bytes). The callback fails
// (-1) on the ranks that `fail` says at the call `fail_at`, and (-2) on
// the others in that call, as a store's timeout would.
struct MpiOob {
    int calls = 0, fail_at = 0;
    bool fail = false;
};

int mpi_allgather(const void* send, void* recv, size_t bytes, void* arg) {
    auto* o = static_cast<MpiOob*>(arg);
    const int call = ++o->calls;
    const bool mine_fails = call == o->fail_at && o->fail;
    const int p = world_size();
    std::vector<char> out(bytes + 1), in((bytes + 1) * static_cast<size_t>(p));
    out[0] = mine_fails ? 0 : 1;
    if (bytes) std::memcpy(out.data() + 1, send, bytes);
    MPI_Allgather(out.data(), static_cast<int>(bytes + 1), MPI_BYTE, in.data(), static_cast<int>(bytes + 1), MPI_BYTE,
                  MPI_COMM_WORLD);
    if (mine_fails) return -1;
    for (int r = 0; r < p; ++r) {
        if (in[r * (bytes + 1)] == 0) return -2;
        if (bytes) std::memcpy(static_cast<char*>(recv) + r * bytes, &in[r * (bytes + 1) + 1], bytes);
    }
    return 0;
}

chorus_result_t create(MpiOob& o, chorus_comm_t* comm, int rank = world_rank()) {
    chorus_oob_t oob{rank, world_size(), mpi_allgather, &o};
    return chorus_comm_create_oob(&oob, comm);
}

}  // namespace

TEST_CASE("a communicator created through an MPI_Allgather callback runs collectives", "[mpi][oob]") {
    MpiOob o;
    chorus_comm_t comm = nullptr;
    REQUIRE(all_ranks(create(o, &comm) == CHORUS_SUCCESS));
    REQUIRE(o.calls > 0);
    const int me = world_rank(), p = world_size();
    int rank = -1, size = -1;
    chorus_comm_rank(comm, &rank);
    chorus_comm_size(comm, &size);
    CHECK(rank == me);
    CHECK(size == p);
    for (size_t n : {size_t(1), size_t(1000), size_t(300001)}) {
        std::vector<double> in(n), out(n), ref(n);
        for (size_t i = 0; i < n; ++i) in[i] = (me + 1) * 0.1 + static_cast<double>(i % 97) / 7.0;
        REQUIRE(chorus_allreduce(in.data(), out.data(), n, CHORUS_FLOAT64, CHORUS_MAX, comm, nullptr) ==
                CHORUS_SUCCESS);
        MPI_Allreduce(in.data(), ref.data(), static_cast<int>(n), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        CHECK(all_ranks(std::memcmp(out.data(), ref.data(), n * sizeof(double)) == 0));
    }
    // The calls the creation made are the same number on every rank.
    int calls_max = 0, calls_min = 0;
    MPI_Allreduce(&o.calls, &calls_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&o.calls, &calls_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    CHECK(calls_max == calls_min);
    CHECK(chorus_comm_destroy(comm) == CHORUS_SUCCESS);
}

TEST_CASE("a callback that fails on one rank fails the creation on every rank", "[mpi][oob]") {
    const int me = world_rank(), p = world_size();
    for (int at : {1, 2, 5}) {
        MpiOob o;
        o.fail_at = at;
        o.fail = me == p - 1;
        chorus_comm_t comm = reinterpret_cast<chorus_comm_t>(1);
        const chorus_result_t rc = create(o, &comm);
        const std::string msg = chorus_comm_last_error(nullptr);
        INFO("call " << at << ": " << msg);
        CHECK(all_ranks(rc == CHORUS_ERR_TRANSPORT));
        CHECK(comm == nullptr);
        CHECK(msg.find("out-of-band allgather") != std::string::npos);
        CHECK(msg.find(me == p - 1 ? "returned -1" : "returned -2") != std::string::npos);
        CHECK(o.calls == at);
    }
    // And the next creation works.
    MpiOob o;
    chorus_comm_t comm = nullptr;
    REQUIRE(all_ranks(create(o, &comm) == CHORUS_SUCCESS));
    int one = 1, sum = 0;
    CHECK(chorus_allreduce(&one, &sum, 1, CHORUS_INT32, CHORUS_SUM, comm, nullptr) == CHORUS_SUCCESS);
    CHECK(sum == p);
    CHECK(chorus_comm_destroy(comm) == CHORUS_SUCCESS);
}

TEST_CASE("a callback that fails on every rank fails the creation on every rank", "[mpi][oob]") {
    MpiOob o;
    o.fail_at = 3;
    o.fail = true;
    chorus_comm_t comm = nullptr;
    const chorus_result_t rc = create(o, &comm);
    INFO(chorus_comm_last_error(nullptr));
    CHECK(all_ranks(rc == CHORUS_ERR_TRANSPORT));
    CHECK(std::string(chorus_comm_last_error(nullptr)).find("returned -1") != std::string::npos);
    CHECK(o.calls == 3);
}

TEST_CASE("a protocol setting that differs fails an out-of-band creation everywhere", "[mpi][oob]") {
    if (world_rank() == 0) setenv("CHORUS_WINDOW", "3", 1);
    MpiOob o;
    chorus_comm_t comm = nullptr;
    const chorus_result_t rc = create(o, &comm);
    unsetenv("CHORUS_WINDOW");
    const std::string msg = chorus_comm_last_error(nullptr);
    INFO(msg);
    CHECK(all_ranks(rc == CHORUS_ERR_CONFIG));
    CHECK(msg.find("CHORUS_WINDOW") != std::string::npos);
}

TEST_CASE("ranks whose oob rank is not their place in the exchange fail everywhere", "[mpi][oob]") {
    MpiOob o;
    chorus_comm_t comm = nullptr;
    const chorus_result_t rc = create(o, &comm, (world_rank() + 1) % world_size());
    INFO(chorus_comm_last_error(nullptr));
    CHECK(all_ranks(rc == CHORUS_ERR_INVALID_ARGUMENT));
    CHECK(o.calls == 1);
}
