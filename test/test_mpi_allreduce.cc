// All-reduce through the public C API over UCX, under mpirun. Results are
// checked against references from per-rank seeds and against MPI's own
// MPI_Allreduce where MPI's arithmetic is exact.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "chorus.h"
#include "mpi_test_util.h"
#include "reference.h"

using mpitest::all_ranks;

namespace {

struct World {
    int rank = 0, size = 1;
    World() {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
};

struct Comm {
    chorus_comm_t c = nullptr;
    explicit Comm(MPI_Comm mpi = MPI_COMM_WORLD) { REQUIRE(chorus_comm_create(mpi, &c) == CHORUS_SUCCESS); }
    ~Comm() { chorus_comm_destroy(c); }
};

void check(chorus_comm_t comm, chorus_datatype_t dt, chorus_op_t op, size_t count, bool in_place, uint64_t seed) {
    World w;
    size_t es = ref::esize(dt);
    std::vector<char> in(count * es + 1), out(count * es + 1, '\x5a'), want(count * es + 1);
    ref::fill_input(dt, op, w.rank, w.size, seed, in.data(), count);
    ref::expected(dt, op, w.size, seed, want.data(), count);
    void* recv = in_place ? in.data() : out.data();
    chorus_result_t rc = chorus_allreduce(in.data(), recv, count, dt, op, comm, nullptr);
    INFO("rank " << w.rank << " dt " << dt << " op " << op << " count " << count << " in_place " << in_place << ": "
                 << chorus_comm_last_error(comm));
    long diff = rc == CHORUS_SUCCESS ? ref::first_difference(recv, want.data(), count, es) : -2;
    INFO("first wrong element " << diff);
    REQUIRE(all_ranks(rc == CHORUS_SUCCESS && diff == -1));
}

}  // namespace

TEST_CASE("allreduce over UCX is exact for every datatype, op and count", "[mpi][allreduce]") {
    World w;
    Comm comm;
    int rank = -1, size = -1;
    REQUIRE(chorus_comm_rank(comm.c, &rank) == CHORUS_SUCCESS);
    REQUIRE(chorus_comm_size(comm.c, &size) == CHORUS_SUCCESS);
    REQUIRE(rank == w.rank);
    REQUIRE(size == w.size);
    const size_t p = static_cast<size_t>(w.size);
    for (auto dt : ref::kAllTypes)
        for (auto op : ref::kAllOps)
            for (size_t count : {size_t(0), size_t(1), p - 1, p + 1, size_t(100003)})
                for (bool in_place : {false, true}) check(comm.c, dt, op, count, in_place, 17 + count);
}

TEST_CASE("allreduce of large messages pipelines correctly over UCX", "[mpi][allreduce]") {
    Comm comm;
    for (auto dt : {CHORUS_FLOAT32, CHORUS_INT64, CHORUS_BFLOAT16})
        for (bool in_place : {false, true}) check(comm.c, dt, CHORUS_SUM, 4000037, in_place, 3);
}

TEST_CASE("allreduce with tiny chunks and window exercises flow control over UCX", "[mpi][allreduce]") {
    setenv("CHORUS_CHUNK_BYTES", "4K", 1);
    setenv("CHORUS_WINDOW", "2", 1);
    Comm comm;
    unsetenv("CHORUS_CHUNK_BYTES");
    unsetenv("CHORUS_WINDOW");
    for (auto dt : {CHORUS_FLOAT16, CHORUS_FLOAT64, CHORUS_UINT8})
        for (auto op : {CHORUS_SUM, CHORUS_MAX, CHORUS_AVG}) check(comm.c, dt, op, 300001, false, 5);
}

TEST_CASE("allreduce matches MPI_Allreduce where MPI is exact", "[mpi][allreduce]") {
    World w;
    Comm comm;
    const size_t count = 65537;
    std::vector<int32_t> in(count), ours(count), theirs(count);
    ref::fill_input(CHORUS_INT32, CHORUS_MAX, w.rank, w.size, 77, in.data(), count);
    for (auto [cop, mop] : {std::pair{CHORUS_MAX, MPI_MAX}, {CHORUS_MIN, MPI_MIN}, {CHORUS_SUM, MPI_SUM}}) {
        REQUIRE(chorus_allreduce(in.data(), ours.data(), count, CHORUS_INT32, cop, comm.c, nullptr) == CHORUS_SUCCESS);
        MPI_Allreduce(in.data(), theirs.data(), static_cast<int>(count), MPI_INT32_T, mop, MPI_COMM_WORLD);
        REQUIRE(all_ranks(ours == theirs));
    }
    std::vector<double> din(count), dours(count), dtheirs(count);
    ref::fill_input(CHORUS_FLOAT64, CHORUS_SUM, w.rank, w.size, 78, din.data(), count);
    REQUIRE(chorus_allreduce(din.data(), dours.data(), count, CHORUS_FLOAT64, CHORUS_SUM, comm.c, nullptr) ==
            CHORUS_SUCCESS);
    MPI_Allreduce(din.data(), dtheirs.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    REQUIRE(all_ranks(std::memcmp(dours.data(), dtheirs.data(), count * sizeof(double)) == 0));
}

TEST_CASE("several nonblocking allreduces in flight complete in any order", "[mpi][allreduce]") {
    World w;
    Comm comm;
    const int nops = 6;
    const size_t count = 200003;
    std::vector<std::vector<float>> bufs(nops, std::vector<float>(count));
    std::vector<chorus_request_t> reqs(nops);
    for (int k = 0; k < nops; ++k) {
        ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, w.rank, w.size, 900 + k, bufs[k].data(), count);
        REQUIRE(chorus_iallreduce(bufs[k].data(), bufs[k].data(), count, CHORUS_FLOAT32, CHORUS_SUM, comm.c, nullptr,
                                  &reqs[k]) == CHORUS_SUCCESS);
    }
    // Poll the last one with chorus_test, wait for the others backwards.
    int done = 0;
    while (!done) REQUIRE(chorus_test(reqs[nops - 1], &done) == CHORUS_SUCCESS);
    for (int k = nops - 2; k >= 0; --k) REQUIRE(chorus_wait(reqs[k]) == CHORUS_SUCCESS);
    bool ok = true;
    for (int k = 0; k < nops; ++k) {
        std::vector<float> want(count);
        ref::expected(CHORUS_FLOAT32, CHORUS_SUM, w.size, 900 + k, want.data(), count);
        ok = ok && std::memcmp(want.data(), bufs[k].data(), count * sizeof(float)) == 0;
    }
    REQUIRE(all_ranks(ok));
    // A completed request is released: using it again is detected.
    REQUIRE(chorus_wait(reqs[0]) == CHORUS_ERR_INVALID_ARGUMENT);
}

// A rank whose operations have all completed may go into MPI (or anywhere)
// at once and stay there; a peer must never wait for it then. By Chorus's
// rendezvous inside a host the receiver owes nothing once its receive is
// complete (`mpi_settle_np3`). Through UCX a rendezvous send completes only
// when the receiver's acknowledgement arrives, and an acknowledgement that
// meets a full queue waits for the receiver's progress: an operation
// completes only once what it owes has left (Transport::settled), which does
// not cover every case (`mpi_settle_ucx_np3`, in the `stress` setup). Both
// with UCX's shared-memory queues two entries deep; hidden, run by those
// tests: see the README's "Known limits".
TEST_CASE("a rank that leaves for MPI right after its operations leaves no peer waiting", "[.][settle]") {
    World w;
    Comm comm;
    const int nops = 4;
    const size_t count = 100003;  // 400 KB: beyond the shared-memory cells (meson forces the ring)
    std::vector<std::vector<float>> bufs(nops, std::vector<float>(count));
    std::vector<chorus_request_t> reqs(nops);
    bool ok = true;
    for (int round = 0; round < 16; ++round) {
        for (int k = 0; k < nops; ++k) {
            ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, w.rank, w.size, 700 + k + round, bufs[k].data(), count);
            REQUIRE(chorus_iallreduce(bufs[k].data(), bufs[k].data(), count, CHORUS_FLOAT32, CHORUS_SUM, comm.c,
                                      nullptr, &reqs[k]) == CHORUS_SUCCESS);
        }
        // Each rank completes them in its own order, then leaves for MPI.
        for (int i = 0; i < nops; ++i) REQUIRE(chorus_wait(reqs[(i + w.rank + round) % nops]) == CHORUS_SUCCESS);
        for (int k = 0; k < nops; ++k) {
            std::vector<float> want(count);
            ref::expected(CHORUS_FLOAT32, CHORUS_SUM, w.size, 700 + k + round, want.data(), count);
            ok = ok && std::memcmp(want.data(), bufs[k].data(), count * sizeof(float)) == 0;
        }
        REQUIRE(all_ranks(ok));
    }
}

TEST_CASE("communicators over split and duplicated MPI communicators are independent", "[mpi][allreduce]") {
    World w;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, w.rank % 2, w.rank, &half);
    {
        Comm a(half), b;       // b spans the world
        MPI_Comm_free(&half);  // Chorus holds its own duplicate
        int hs = 0;
        REQUIRE(chorus_comm_size(a.c, &hs) == CHORUS_SUCCESS);
        REQUIRE(hs == (w.size + 1 - w.rank % 2) / 2);
        int32_t one = 1, n = 0;
        REQUIRE(chorus_allreduce(&one, &n, 1, CHORUS_INT32, CHORUS_SUM, a.c, nullptr) == CHORUS_SUCCESS);
        REQUIRE(n == hs);
        REQUIRE(chorus_allreduce(&one, &n, 1, CHORUS_INT32, CHORUS_SUM, b.c, nullptr) == CHORUS_SUCCESS);
        REQUIRE(n == w.size);
    }
}

TEST_CASE("bad arguments are refused with a message naming them", "[mpi][allreduce][errors]") {
    Comm comm;
    float x = 1, y = 0;
    REQUIRE(chorus_allreduce(&x, &y, 1, CHORUS_FLOAT32, CHORUS_SUM, nullptr, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(std::string(chorus_comm_last_error(nullptr)).find("comm") != std::string::npos);
    REQUIRE(chorus_allreduce(&x, &y, 1, static_cast<chorus_datatype_t>(99), CHORUS_SUM, comm.c, nullptr) ==
            CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(std::string(chorus_comm_last_error(comm.c)).find("datatype") != std::string::npos);
    REQUIRE(chorus_allreduce(&x, &y, 1, CHORUS_FLOAT32, static_cast<chorus_op_t>(-1), comm.c, nullptr) ==
            CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_allreduce(nullptr, &y, 1, CHORUS_FLOAT32, CHORUS_SUM, comm.c, nullptr) ==
            CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(std::string(chorus_comm_last_error(comm.c)).find("sendbuf") != std::string::npos);
    float arr[4] = {};
    REQUIRE(chorus_allreduce(arr, arr + 1, 2, CHORUS_FLOAT32, CHORUS_SUM, comm.c, nullptr) ==
            CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_allreduce(&x, &y, SIZE_MAX / 2, CHORUS_FLOAT32, CHORUS_SUM, comm.c, nullptr) ==
            CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_iallreduce(&x, &y, 1, CHORUS_FLOAT32, CHORUS_SUM, comm.c, nullptr, nullptr) ==
            CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    chorus_comm_t other = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_NULL, &other) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(other == nullptr);
    // Zero count with NULL buffers is fine (and still collective).
    REQUIRE(chorus_allreduce(nullptr, nullptr, 0, CHORUS_FLOAT32, CHORUS_SUM, comm.c, nullptr) == CHORUS_SUCCESS);
}

TEST_CASE("a destroyed communicator is recognised, not dereferenced", "[mpi][allreduce][errors]") {
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
    float x = 1, y = 0;
    REQUIRE(chorus_allreduce(&x, &y, 1, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_comm_destroy(c) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(std::string(chorus_get_error_string(CHORUS_ERR_TIMEOUT)) == "timed out");
}

TEST_CASE("a bad CHORUS_ setting fails communicator creation on every rank", "[mpi][config]") {
    setenv("CHORUS_CHUNK_BYTES", "lots", 1);
    chorus_comm_t c = nullptr;
    chorus_result_t rc = chorus_comm_create(MPI_COMM_WORLD, &c);
    unsetenv("CHORUS_CHUNK_BYTES");
    REQUIRE(rc == CHORUS_ERR_CONFIG);
    REQUIRE(c == nullptr);
    REQUIRE(std::string(chorus_comm_last_error(nullptr)).find("CHORUS_CHUNK_BYTES") != std::string::npos);
}
