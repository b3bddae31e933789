// The data-movement collectives through the public C API over UCX, under
// mpirun: all-gatherv, all-to-all(v), gather(v), scatter(v) and barrier,
// every algorithm, equal, irregular (zeros included) and skewed blocks at
// shuffled displacements with gaps, in and out of place. Each result is
// checked against references from per-rank seeds and, buffer for buffer
// (gaps and guard bytes included), against MPI's own collective on the same
// layout (MPI_Allgatherv, MPI_Alltoallv, MPI_Gatherv, ...) as a second oracle.
// Where the run's CHORUS_ALGO forces an algorithm (the virtual cluster's
// two-level runs), a sweep runs that one alone.
#include <mpi.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "block_layout.h"
#include "chorus.h"
#include "mpi_test_util.h"
#include "reference.h"

using layout::Shape;
using mpitest::all_ranks;
using mpitest::world_rank;
using mpitest::world_size;

namespace {

const chorus_datatype_t kTypes[] = {CHORUS_INT8, CHORUS_FLOAT16, CHORUS_FLOAT32, CHORUS_FLOAT64};
const Shape kShapes[] = {Shape::Even, Shape::Irregular, Shape::Skewed};
const char poison = '\x5a';

// MPI moves the same bytes as an unsigned type of the element's size.
MPI_Datatype mpi_type(chorus_datatype_t dt) {
    switch (ref::esize(dt)) {
        case 1: return MPI_UINT8_T;
        case 2: return MPI_UINT16_T;
        case 4: return MPI_UINT32_T;
        default: return MPI_UINT64_T;
    }
}

std::vector<int> ints(const std::vector<size_t>& v) {
    return std::vector<int>(v.begin(), v.end());
}

// One case: its datatype, block shape and seed; blocks are drawn from them.
struct Case {
    chorus_datatype_t dt;
    Shape shape;
    size_t count;
    uint64_t seed;
    int root = 0;
    size_t w() const { return ref::esize(dt); }
    size_t pair(int s, int d) const {
        const int p = world_size();
        return layout::pair_count(shape, count, seed, (root + 1) % p, p, s, d);
    }
    void fill(int s, int d, char* buf, size_t n) const {
        ref::fill_input(dt, CHORUS_SUM, s, world_size(), layout::block_seed(seed, d), buf, n);
    }
    // Whether the block at `at` is what rank s sent rank d.
    bool holds(const char* at, int s, int d, size_t n) const {
        std::vector<char> want(n * w() + 1);
        fill(s, d, want.data(), n);
        return ref::first_difference(at, want.data(), n, w()) == -1;
    }
};

// A side of p blocks: counts, shuffled displacements, and a poisoned buffer
// over their extent plus guard bytes.
struct Side {
    std::vector<size_t> counts, displs;
    std::vector<char> buf;
    Side(const Case& c, std::vector<size_t> n, uint64_t salt) : counts(std::move(n)) {
        size_t extent = 0;
        displs = layout::shuffled(counts, seeds::mix(c.seed + salt), &extent);
        buf.assign((extent + 1) * c.w() + 3, poison);
    }
    char* at(int i, size_t w) { return buf.data() + displs[i] * w; }
};

std::vector<size_t> counts_for(int p) {
    return {0, 1, size_t(p + 1), 1000, 20011};  // 1000: the flat algorithms' slots hold it at np=2
}

std::string what(const char* algo, const Case& c, bool in_place) {
    return std::string(algo) + " dt " + std::to_string(c.dt) + " shape " + std::to_string(int(c.shape)) + " count " +
           std::to_string(c.count) + " root " + std::to_string(c.root) + (in_place ? " in place" : "");
}

}  // namespace

TEST_CASE("allgatherv over UCX, every algorithm, against MPI_Allgatherv", "[mpi][allgatherv]") {
    const int p = world_size(), me = world_rank();
    for (const std::string& name : mpitest::algorithms("allgatherv", {"ring", "bcast", "shm_flat"})) {
        const char* algo = name.c_str();
        mpitest::ForcedComm comm("allgatherv", algo);
        REQUIRE(comm.rc == CHORUS_SUCCESS);
        for (auto dt : kTypes)
            for (Shape shape : kShapes)
                for (size_t count : counts_for(p))
                    for (bool in_place : {false, true}) {
                        Case c{dt, shape, count, 31 + count};
                        const size_t w = c.w();
                        std::vector<size_t> n(p);
                        for (int i = 0; i < p; ++i) n[i] = c.pair(i, -1);
                        Side ours(c, n, 2 * me), theirs(c, n, 2 * me);
                        std::vector<char> in(n[me] * w + 1);
                        c.fill(me, -1, in.data(), n[me]);
                        const void* send = in.data();
                        if (in_place) {
                            c.fill(me, -1, ours.at(me, w), n[me]);
                            c.fill(me, -1, theirs.at(me, w), n[me]);
                            send = ours.at(me, w);
                        }
                        chorus_result_t rc = chorus_allgatherv(send, n[me], ours.buf.data(), n.data(),
                                                               ours.displs.data(), dt, comm.c, nullptr);
                        MPI_Allgatherv(in_place ? MPI_IN_PLACE : in.data(), int(n[me]), mpi_type(dt), theirs.buf.data(),
                                       ints(n).data(), ints(theirs.displs).data(), mpi_type(dt), MPI_COMM_WORLD);
                        // MPICH 4.0 copies a one-rank MPI_Allgatherv to the start of
                        // recvbuf, not to its displacement: there the gaps are checked
                        // against the poison instead of against MPI's result.
                        const bool mpi_oracle = p > 1 || !mpitest::is_mpich();
                        bool ok = rc == CHORUS_SUCCESS && (!mpi_oracle || ours.buf == theirs.buf);
                        for (int i = 0; i < p; ++i) ok = ok && c.holds(ours.at(i, w), i, -1, n[i]);
                        if (!mpi_oracle) {
                            std::vector<bool> block(ours.buf.size());
                            for (int i = 0; i < p; ++i)
                                for (size_t b = 0; b < n[i] * w; ++b) block[ours.displs[i] * w + b] = true;
                            for (size_t b = 0; b < ours.buf.size(); ++b) ok = ok && (block[b] || ours.buf[b] == poison);
                        }
                        INFO(what(algo, c, in_place) << ": " << chorus_comm_last_error(comm.c));
                        REQUIRE(all_ranks(ok));
                    }
    }
}

TEST_CASE("alltoall and alltoallv over UCX, every algorithm, against MPI_Alltoall(v)", "[mpi][alltoall]") {
    const int p = world_size(), me = world_rank();
    for (const std::string& s :
         mpitest::specs({"alltoall=pairwise", "alltoall=bruck", "alltoall=shm_flat", "alltoallv=pairwise"})) {
        const std::string coll = s.substr(0, s.find('=')), algo = s.substr(s.find('=') + 1);
        const bool v = coll == "alltoallv";
        mpitest::ForcedComm comm(coll, algo);
        REQUIRE(comm.rc == CHORUS_SUCCESS);
        for (auto dt : kTypes)
            for (Shape shape :
                 v ? std::vector<Shape>(std::begin(kShapes), std::end(kShapes)) : std::vector<Shape>{Shape::Even})
                for (size_t count : counts_for(p))
                    for (bool in_place : {false, true}) {
                        Case c{dt, shape, count, 47 + count};
                        const size_t w = c.w();
                        // In place the counts are symmetric, as the in-place form requires.
                        auto pair = [&](int a, int b) {
                            return in_place ? c.pair(std::min(a, b), std::max(a, b)) : c.pair(a, b);
                        };
                        std::vector<size_t> sn(p), rn(p);
                        for (int i = 0; i < p; ++i) {
                            sn[i] = pair(me, i);
                            rn[i] = pair(i, me);
                        }
                        Side in(c, sn, 2 * me + 1), ours(c, rn, 2 * me), theirs(c, rn, 2 * me);
                        if (!v) {  // the block form: blocks in rank order, no gaps
                            for (int i = 0; i < p; ++i) in.displs[i] = ours.displs[i] = theirs.displs[i] = i * count;
                        }
                        for (int i = 0; i < p; ++i) {
                            c.fill(me, i, in.at(i, w), sn[i]);
                            if (in_place) c.fill(me, i, ours.at(i, w), rn[i]);
                            if (in_place) c.fill(me, i, theirs.at(i, w), rn[i]);
                        }
                        const void* send = in_place ? ours.buf.data() : in.buf.data();
                        chorus_result_t rc =
                            v ? chorus_alltoallv(send, in_place ? nullptr : sn.data(),
                                                 in_place ? nullptr : in.displs.data(), ours.buf.data(), rn.data(),
                                                 ours.displs.data(), dt, comm.c, nullptr)
                              : chorus_alltoall(send, ours.buf.data(), count, dt, comm.c, nullptr);
                        const void* msend = in_place ? MPI_IN_PLACE : in.buf.data();
                        if (v)
                            MPI_Alltoallv(msend, ints(sn).data(), ints(in.displs).data(), mpi_type(dt),
                                          theirs.buf.data(), ints(rn).data(), ints(theirs.displs).data(), mpi_type(dt),
                                          MPI_COMM_WORLD);
                        else
                            MPI_Alltoall(msend, int(count), mpi_type(dt), theirs.buf.data(), int(count), mpi_type(dt),
                                         MPI_COMM_WORLD);
                        bool ok = rc == CHORUS_SUCCESS && ours.buf == theirs.buf;
                        for (int i = 0; i < p; ++i) ok = ok && c.holds(ours.at(i, w), i, me, rn[i]);
                        INFO(coll << " " << what(algo.c_str(), c, in_place) << ": " << chorus_comm_last_error(comm.c));
                        REQUIRE(all_ranks(ok));
                    }
    }
}

TEST_CASE("gather(v) and scatter(v) over UCX, every algorithm and root, against MPI's", "[mpi][gather][scatter]") {
    const int p = world_size(), me = world_rank();
    for (const std::string& s :
         mpitest::specs({"gather=binomial", "gather=linear", "gather=shm_flat", "gatherv=linear", "scatter=binomial",
                         "scatter=linear", "scatter=shm_flat", "scatterv=linear"})) {
        const std::string coll = s.substr(0, s.find('=')), algo = s.substr(s.find('=') + 1);
        const bool v = coll.back() == 'v', gather = coll[0] == 'g';
        mpitest::ForcedComm comm(coll, algo);
        REQUIRE(comm.rc == CHORUS_SUCCESS);
        for (auto dt : kTypes)
            for (Shape shape :
                 v ? std::vector<Shape>(std::begin(kShapes), std::end(kShapes)) : std::vector<Shape>{Shape::Even})
                for (size_t count : counts_for(p))
                    for (int root : {0, p - 1})
                        for (bool in_place : {false, true}) {
                            Case c{dt, shape, count, 53 + count, root};
                            const size_t w = c.w();
                            const bool at_root = me == root;
                            // The root's side of p blocks; this rank's block.
                            std::vector<size_t> n(p);
                            for (int i = 0; i < p; ++i) n[i] = gather ? c.pair(i, -1) : c.pair(root, i);
                            Side many(c, n, 2 * me), theirs(c, n, 2 * me);
                            if (!v)
                                for (int i = 0; i < p; ++i) many.displs[i] = theirs.displs[i] = i * count;
                            std::vector<char> one(n[me] * w + 3, poison), their_one(one);
                            const bool ip = in_place && at_root;
                            chorus_result_t rc;
                            if (gather) {
                                c.fill(me, -1, one.data(), n[me]);
                                their_one = one;
                                if (ip) c.fill(me, -1, many.at(me, w), n[me]);
                                if (ip) c.fill(me, -1, theirs.at(me, w), n[me]);
                                const void* send = ip ? many.at(me, w) : one.data();
                                void* recv = at_root ? many.buf.data() : nullptr;
                                rc = v ? chorus_gatherv(send, n[me], recv, at_root ? n.data() : nullptr,
                                                        at_root ? many.displs.data() : nullptr, dt, root, comm.c,
                                                        nullptr)
                                       : chorus_gather(send, recv, count, dt, root, comm.c, nullptr);
                                const void* msend = ip ? MPI_IN_PLACE : one.data();
                                if (v)
                                    MPI_Gatherv(msend, int(n[me]), mpi_type(dt), theirs.buf.data(), ints(n).data(),
                                                ints(theirs.displs).data(), mpi_type(dt), root, MPI_COMM_WORLD);
                                else
                                    MPI_Gather(msend, int(count), mpi_type(dt), theirs.buf.data(), int(count),
                                               mpi_type(dt), root, MPI_COMM_WORLD);
                            } else {
                                for (int i = 0; at_root && i < p; ++i) {
                                    c.fill(root, i, many.at(i, w), n[i]);
                                    c.fill(root, i, theirs.at(i, w), n[i]);
                                }
                                void* recv = ip ? many.at(me, w) : one.data();
                                const void* send = at_root ? many.buf.data() : nullptr;
                                rc = v ? chorus_scatterv(send, at_root ? n.data() : nullptr,
                                                         at_root ? many.displs.data() : nullptr, recv, n[me], dt, root,
                                                         comm.c, nullptr)
                                       : chorus_scatter(send, recv, count, dt, root, comm.c, nullptr);
                                void* mrecv = ip ? MPI_IN_PLACE : their_one.data();
                                if (v)
                                    MPI_Scatterv(theirs.buf.data(), ints(n).data(), ints(theirs.displs).data(),
                                                 mpi_type(dt), mrecv, int(n[me]), mpi_type(dt), root, MPI_COMM_WORLD);
                                else
                                    MPI_Scatter(theirs.buf.data(), int(count), mpi_type(dt), mrecv, int(count),
                                                mpi_type(dt), root, MPI_COMM_WORLD);
                            }
                            bool ok = rc == CHORUS_SUCCESS && one == their_one && (!at_root || many.buf == theirs.buf);
                            if (gather)
                                for (int i = 0; at_root && i < p; ++i) ok = ok && c.holds(many.at(i, w), i, -1, n[i]);
                            else
                                ok = ok && c.holds(ip ? many.at(me, w) : one.data(), root, me, n[me]);
                            INFO(coll << " " << what(algo.c_str(), c, in_place) << ": "
                                      << chorus_comm_last_error(comm.c));
                            REQUIRE(all_ranks(ok));
                        }
    }
}

TEST_CASE("the barrier holds every rank until the last one has entered", "[mpi][barrier]") {
    const int p = world_size(), me = world_rank();
    for (const std::string& algo : mpitest::algorithms("barrier", {"dissemination", "shm_flat"})) {
        INFO(algo);
        mpitest::ForcedComm comm("barrier", algo);
        REQUIRE(comm.rc == CHORUS_SUCCESS);
        // The ranks share the host's monotonic clock (mpirun on one host).
        auto now = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()); };
        for (int late : {0, p - 1}) {
            MPI_Barrier(MPI_COMM_WORLD);
            double entered = 0;
            if (me == late) {
                usleep(100000);
                entered = now().count();
            }
            REQUIRE(chorus_barrier(comm.c, nullptr) == CHORUS_SUCCESS);
            const double left = now().count();
            MPI_Bcast(&entered, 1, MPI_DOUBLE, late, MPI_COMM_WORLD);
            // Nobody is out before the late rank went in, 100 ms after it left
            // MPI_Barrier (where the others may have left it later).
            REQUIRE(all_ranks(left >= entered));
        }
        // The nonblocking twin stays open while a rank is missing.
        chorus_request_t req = nullptr;
        if (me != 0) REQUIRE(chorus_ibarrier(comm.c, nullptr, &req) == CHORUS_SUCCESS);
        int done = 0;
        for (int i = 0; me != 0 && i < 100; ++i) REQUIRE(chorus_test(req, &done) == CHORUS_SUCCESS);
        REQUIRE(all_ranks(p == 1 || !done));
        if (me == 0) REQUIRE(chorus_ibarrier(comm.c, nullptr, &req) == CHORUS_SUCCESS);
        REQUIRE(chorus_wait(req) == CHORUS_SUCCESS);
    }
}

TEST_CASE("nonblocking data movement of every kind overlaps on one communicator", "[mpi][nonblocking]") {
    const int p = world_size(), me = world_rank();
    chorus_comm_t comm = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &comm) == CHORUS_SUCCESS);
    const size_t n = 10007, up = size_t(p);
    const Case c{CHORUS_INT32, Shape::Even, n, 61};
    std::vector<int32_t> mine(n), a2a_in(n * up), a2a(n * up), a2av(n * up), agv(n * up), g(n * up), sc(n);
    std::vector<size_t> counts(up, n), displs(up), in_order(up);
    for (int i = 0; i < p; ++i) {
        displs[i] = (p - 1 - i) * n;  // reversed
        in_order[i] = i * n;
    }
    c.fill(me, -1, reinterpret_cast<char*>(mine.data()), n);
    for (int i = 0; i < p; ++i) c.fill(me, i, reinterpret_cast<char*>(a2a_in.data() + i * n), n);
    chorus_request_t q[6];
    REQUIRE(chorus_ialltoall(a2a_in.data(), a2a.data(), n, CHORUS_INT32, comm, nullptr, &q[0]) == CHORUS_SUCCESS);
    REQUIRE(chorus_ialltoallv(a2a_in.data(), counts.data(), in_order.data(), a2av.data(), counts.data(), displs.data(),
                              CHORUS_INT32, comm, nullptr, &q[1]) == CHORUS_SUCCESS);
    REQUIRE(chorus_iallgatherv(mine.data(), n, agv.data(), counts.data(), displs.data(), CHORUS_INT32, comm, nullptr,
                               &q[2]) == CHORUS_SUCCESS);
    REQUIRE(chorus_igather(mine.data(), g.data(), n, CHORUS_INT32, p - 1, comm, nullptr, &q[3]) == CHORUS_SUCCESS);
    REQUIRE(chorus_iscatter(a2a_in.data(), sc.data(), n, CHORUS_INT32, 0, comm, nullptr, &q[4]) == CHORUS_SUCCESS);
    REQUIRE(chorus_ibarrier(comm, nullptr, &q[5]) == CHORUS_SUCCESS);
    // The arrays were copied: changing them now changes nothing.
    std::fill(counts.begin(), counts.end(), 0);
    std::fill(displs.begin(), displs.end(), 0);
    std::fill(in_order.begin(), in_order.end(), 0);
    for (int k = 5; k >= 0; --k) REQUIRE(chorus_wait(q[k]) == CHORUS_SUCCESS);
    bool ok = true;
    for (int i = 0; i < p; ++i) {
        const char* at = reinterpret_cast<const char*>(a2a.data() + i * n);
        ok = ok && c.holds(at, i, me, n) &&
             c.holds(reinterpret_cast<const char*>(a2av.data() + (p - 1 - i) * n), i, me, n);
        ok = ok && c.holds(reinterpret_cast<const char*>(agv.data() + (p - 1 - i) * n), i, -1, n);
        if (me == p - 1) ok = ok && c.holds(reinterpret_cast<const char*>(g.data() + i * n), i, -1, n);
    }
    ok = ok && c.holds(reinterpret_cast<const char*>(sc.data()), 0, me, n);
    REQUIRE(all_ranks(ok));
    REQUIRE(chorus_comm_destroy(comm) == CHORUS_SUCCESS);
}
