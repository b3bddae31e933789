// The one-sided algorithms (single-copy reads and writes of peers' buffers
// over cross-memory attach) under mpirun, every collective that has one,
// against references from per-rank seeds; the trace shows they ran. Then
// buffers freed and mapped again at the same address with new contents
// between calls: nothing about a peer's memory may outlive the call that
// exposed it.
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chorus.h"
#include "mpi_test_util.h"
#include "reference.h"

using mpitest::all_ranks;
using mpitest::world_rank;
using mpitest::world_size;

namespace {

// A directory every rank agrees on, for CHORUS_TRACE.
std::string trace_dir(const char* what) {
    char job[32] = {0};
    if (world_rank() == 0) std::snprintf(job, sizeof job, "%d", static_cast<int>(getpid()));
    MPI_Bcast(job, sizeof job, MPI_CHAR, 0, MPI_COMM_WORLD);
    return std::string("/tmp/chorus-one-sided-") + job + "-" + what;
}

// CHORUS_TRACE=dir while the communicator of a TracedComm is created.
struct TraceDir {
    std::string dir;
    explicit TraceDir(const char* what) : dir(trace_dir(what)) { setenv("CHORUS_TRACE", dir.c_str(), 1); }
};

// A communicator that forces one_sided for `coll` (mpitest::ForcedComm) and
// writes a trace, so that the test can tell the algorithm ran and was not
// replaced.
struct TracedComm : TraceDir, mpitest::ForcedComm {
    TracedComm(const std::string& coll, const char* what) : TraceDir(what), ForcedComm(coll, "one_sided") {
        unsetenv("CHORUS_TRACE");
        REQUIRE(rc == CHORUS_SUCCESS);
    }
    // Destroys the communicator (which closes the trace) and counts the
    // operations the trace says ran one_sided.
    int finish() {
        REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
        c = nullptr;
        std::string text;
        for (int r = 0; r < 64 && text.empty(); ++r) {
            std::ifstream f(dir + "/chorus-comm" + std::to_string(r) + "-rank" + std::to_string(world_rank()) +
                            ".json");
            std::stringstream ss;
            ss << f.rdbuf();
            text = ss.str();
        }
        int n = 0;
        for (size_t at = text.find("\"algorithm\":\"one_sided\""); at != std::string::npos;
             at = text.find("\"algorithm\":\"one_sided\"", at + 1))
            ++n;
        MPI_Barrier(MPI_COMM_WORLD);
        if (world_rank() == 0) {
            std::string rm = "rm -rf '" + dir + "'";
            REQUIRE(std::system(rm.c_str()) == 0);
        }
        return n;
    }
};

const chorus_datatype_t kTypes[] = {CHORUS_INT8, CHORUS_UINT64, CHORUS_FLOAT16, CHORUS_FLOAT32, CHORUS_FLOAT64};

std::vector<size_t> counts_for(int p) {
    return {0, 1, size_t(p + 1), 30011, 300007};
}

}  // namespace

TEST_CASE("one-sided all-reduce, reduce and broadcast over cross-memory attach", "[mpi][one_sided]") {
    const int p = world_size(), me = world_rank();
    int calls = 0;
    {
        TracedComm comm("allreduce", "allreduce");
        for (auto dt : kTypes)
            for (auto op : {CHORUS_SUM, CHORUS_MAX, CHORUS_PROD})
                for (size_t count : counts_for(p))
                    for (bool in_place : {false, true}) {
                        size_t w = ref::esize(dt);
                        std::vector<char> in(count * w + 1), out(count * w + 1, '\x5a'), want(count * w + 1);
                        ref::fill_input(dt, op, me, p, 21, in.data(), count);
                        ref::expected(dt, op, p, 21, want.data(), count);
                        void* recv = in_place ? in.data() : out.data();
                        chorus_result_t rc = chorus_allreduce(in.data(), recv, count, dt, op, comm.c, nullptr);
                        ++calls;
                        INFO("dt " << dt << " op " << op << " count " << count << ": "
                                   << chorus_comm_last_error(comm.c));
                        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(recv, want.data(), count * w) == 0 &&
                                          (in_place || out[count * w] == '\x5a')));
                    }
        const int ran = comm.finish();
        // Every call with data takes the one-sided path wherever it can run.
        if (p > 1) CHECK(ran > 0);
    }
    {
        TracedComm comm("reduce", "reduce");
        for (auto dt : kTypes)
            for (size_t count : counts_for(p))
                for (int root : {0, p - 1}) {
                    size_t w = ref::esize(dt);
                    std::vector<char> in(count * w + 1), out(count * w + 1, '\x5a'), want(count * w + 1);
                    ref::fill_input(dt, CHORUS_SUM, me, p, 22, in.data(), count);
                    ref::expected(dt, CHORUS_SUM, p, 22, want.data(), count);
                    chorus_result_t rc = chorus_reduce(in.data(), me == root ? out.data() : nullptr, count, dt,
                                                       CHORUS_SUM, root, comm.c, nullptr);
                    INFO("dt " << dt << " count " << count << " root " << root << ": "
                               << chorus_comm_last_error(comm.c));
                    REQUIRE(all_ranks(rc == CHORUS_SUCCESS &&
                                      (me != root || (std::memcmp(out.data(), want.data(), count * w) == 0 &&
                                                      out[count * w] == '\x5a'))));
                }
        if (p > 1) CHECK(comm.finish() > 0);
    }
    {
        TracedComm comm("bcast", "bcast");
        for (auto dt : kTypes)
            for (size_t count : counts_for(p))
                for (int root : {0, p / 2}) {
                    size_t w = ref::esize(dt);
                    std::vector<char> buf(count * w + 1, '\x5a'), want(count * w + 1, '\x5a');
                    ref::fill_input(dt, CHORUS_SUM, root, p, 23, want.data(), count);
                    if (me == root) std::memcpy(buf.data(), want.data(), count * w);
                    chorus_result_t rc = chorus_broadcast(buf.data(), buf.data(), count, dt, root, comm.c, nullptr);
                    INFO("dt " << dt << " count " << count << " root " << root << ": "
                               << chorus_comm_last_error(comm.c));
                    REQUIRE(
                        all_ranks(rc == CHORUS_SUCCESS && std::memcmp(buf.data(), want.data(), count * w + 1) == 0));
                }
        if (p > 1) CHECK(comm.finish() > 0);
    }
    CHECK(calls > 0);
}

TEST_CASE("one-sided reduce-scatter and all-gather over cross-memory attach", "[mpi][one_sided]") {
    const int p = world_size(), me = world_rank();
    {
        TracedComm comm("reduce_scatter", "reduce_scatter");
        for (auto dt : kTypes)
            for (int form = 0; form < 2; ++form) {
                // form 0: blocks of 70001; 1: irregular, with empty blocks
                std::vector<size_t> counts(p);
                for (int i = 0; i < p; ++i) counts[i] = form == 0 ? 70001 : (i * 7) % 5 * 1000;
                size_t total = 0, off = 0;
                for (int i = 0; i < p; ++i) total += counts[i];
                for (int i = 0; i < me; ++i) off += counts[i];
                size_t w = ref::esize(dt), mine = counts[me];
                std::vector<char> in(total * w + 1), out(mine * w + 1, '\x5a'), want(total * w + 1);
                ref::fill_input(dt, CHORUS_SUM, me, p, 24, in.data(), total);
                ref::expected(dt, CHORUS_SUM, p, 24, want.data(), total);
                chorus_result_t rc =
                    form == 1
                        ? chorus_reduce_scatterv(in.data(), out.data(), counts.data(), dt, CHORUS_SUM, comm.c, nullptr)
                        : chorus_reduce_scatter(in.data(), out.data(), counts[0], dt, CHORUS_SUM, comm.c, nullptr);
                INFO("dt " << dt << " form " << form << ": " << chorus_comm_last_error(comm.c));
                REQUIRE(all_ranks(rc == CHORUS_SUCCESS &&
                                  std::memcmp(out.data(), want.data() + off * w, mine * w) == 0 &&
                                  out[mine * w] == '\x5a'));
            }
        if (p > 1) CHECK(comm.finish() > 0);
    }
    {
        TracedComm comm("allgather", "allgather");
        for (auto dt : kTypes)
            for (size_t count : counts_for(p))
                for (bool in_place : {false, true}) {
                    size_t w = ref::esize(dt), blk = count * w;
                    std::vector<char> in(blk + 1), out(blk * p + 1, '\x5a'), want(blk * p + 1);
                    for (int k = 0; k < p; ++k) ref::fill_input(dt, CHORUS_SUM, k, p, 25, want.data() + k * blk, count);
                    ref::fill_input(dt, CHORUS_SUM, me, p, 25, in.data(), count);
                    const void* send = in.data();
                    if (in_place) {
                        std::memcpy(out.data() + me * blk, in.data(), blk);
                        send = out.data() + me * blk;
                    }
                    chorus_result_t rc = chorus_allgather(send, out.data(), count, dt, comm.c, nullptr);
                    INFO("dt " << dt << " count " << count << ": " << chorus_comm_last_error(comm.c));
                    REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(out.data(), want.data(), blk * p) == 0 &&
                                      out[blk * p] == '\x5a'));
                }
        if (p > 1) CHECK(comm.finish() > 0);
    }
}

TEST_CASE("one-sided gather over cross-memory attach: every root, in and out of place", "[mpi][one_sided]") {
    const int p = world_size(), me = world_rank();
    TracedComm comm("gather", "gather");
    for (auto dt : kTypes)
        for (size_t count : counts_for(p))
            for (int root = 0; root < p; ++root)
                for (bool in_place : {false, true}) {
                    const size_t w = ref::esize(dt), blk = count * w;
                    std::vector<char> in(blk + 1), out(blk * p + 1, '\x5a'), want(blk * p + 1);
                    for (int k = 0; k < p; ++k) ref::fill_input(dt, CHORUS_SUM, k, p, 26, want.data() + k * blk, count);
                    ref::fill_input(dt, CHORUS_SUM, me, p, 26, in.data(), count);
                    const void* send = in.data();
                    if (in_place && me == root) {
                        std::memcpy(out.data() + me * blk, in.data(), blk);
                        send = out.data() + me * blk;
                    }
                    chorus_result_t rc = chorus_gather(send, out.data(), count, dt, root, comm.c, nullptr);
                    INFO("dt " << dt << " count " << count << " root " << root << ": "
                               << chorus_comm_last_error(comm.c));
                    // The root holds every block; the others' buffers are untouched.
                    const bool ok =
                        me == root ? std::memcmp(out.data(), want.data(), blk * p) == 0 : out[0] == '\x5a' || blk == 0;
                    REQUIRE(all_ranks(rc == CHORUS_SUCCESS && ok && out[blk * p] == '\x5a'));
                }
    if (p > 1) CHECK(comm.finish() > 0);
}

TEST_CASE("one-sided scatter over cross-memory attach: every root, in and out of place", "[mpi][one_sided]") {
    const int p = world_size(), me = world_rank();
    TracedComm comm("scatter", "scatter");
    for (auto dt : kTypes)
        for (size_t count : counts_for(p))
            for (int root = 0; root < p; ++root)
                for (bool in_place : {false, true}) {
                    const size_t w = ref::esize(dt), blk = count * w;
                    // The root's buffer holds every rank's block; each rank
                    // gets its own.
                    std::vector<char> all(blk * p + 1, '\x5a'), out(blk + 1, '\x5a'), want(blk + 1, '\x5a');
                    for (int k = 0; k < p; ++k) ref::fill_input(dt, CHORUS_SUM, k, p, 27, all.data() + k * blk, count);
                    std::memcpy(want.data(), all.data() + me * blk, blk);
                    void* recv = out.data();
                    if (in_place && me == root) recv = all.data() + me * blk;
                    chorus_result_t rc = chorus_scatter(all.data(), recv, count, dt, root, comm.c, nullptr);
                    INFO("dt " << dt << " count " << count << " root " << root << ": "
                               << chorus_comm_last_error(comm.c));
                    const char* got = static_cast<const char*>(recv);
                    REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(got, want.data(), blk) == 0 &&
                                      out[blk] == '\x5a'));
                }
    if (p > 1) CHECK(comm.finish() > 0);
}

TEST_CASE("one-sided: buffers freed and mapped again at the same address between calls", "[mpi][one_sided]") {
    const int p = world_size(), me = world_rank();
    TracedComm comm("allreduce", "reuse");
    const size_t count = 1 << 20;  // 4 MiB of int32: many pieces
    const size_t bytes = count * sizeof(int32_t);
    void* at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(at != MAP_FAILED);
    int reused = 0;
    for (int round = 0; round < 6; ++round) {
        auto* buf = static_cast<int32_t*>(at);
        // New contents each round: whatever a peer kept of the last round's
        // pages would give the last round's sums.
        for (size_t i = 0; i < count; ++i) buf[i] = static_cast<int32_t>((i * 7 + me * 131 + round * 1009) % 65521);
        REQUIRE(chorus_allreduce(buf, buf, count, CHORUS_INT32, CHORUS_SUM, comm.c, nullptr) == CHORUS_SUCCESS);
        bool ok = true;
        for (size_t i = 0; i < count && ok; ++i) {
            int64_t want = 0;
            for (int r = 0; r < p; ++r) want += static_cast<int64_t>((i * 7 + r * 131 + round * 1009) % 65521);
            ok = buf[i] == static_cast<int32_t>(want);
        }
        INFO("round " << round << ": " << chorus_comm_last_error(comm.c));
        REQUIRE(all_ranks(ok));
        // Freed, then the same address again: fresh zero pages, other
        // physical memory.
        REQUIRE(munmap(at, bytes) == 0);
        void* again = mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (again == MAP_FAILED)
            again = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(again != MAP_FAILED);
        if (again == at) ++reused;
        at = again;
    }
    munmap(at, bytes);
    // The address came back (it does unless another thread took it).
    CHECK(reused > 0);
    if (p > 1) CHECK(comm.finish() == 6);
}
