// Bad input at every C entry point: each class of mistake gets its specific
// result code (never a crash, an abort or a hang), and the message names the
// argument. Prints the table of what each entry point returned.
#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "chorus.h"

namespace {

struct Probe {
    const char* klass;     // the kind of mistake
    chorus_result_t want;  // what every entry point must return
    const char* names;     // a word the message must contain
};

}  // namespace

TEST_CASE("every entry point refuses each class of bad input with its own code", "[mpi][errors]") {
    int me = 0, p = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    chorus_comm_t c = nullptr, dead = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &dead) == CHORUS_SUCCESS);
    REQUIRE(chorus_comm_destroy(dead) == CHORUS_SUCCESS);
    // Root-only arguments are checked on the root only: on a communicator of
    // one rank every rank is the root, so every rank refuses the call alike.
    chorus_comm_t self = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_SELF, &self) == CHORUS_SUCCESS);
    std::vector<float> x(64), y(64 * 8);
    chorus_request_t req = nullptr;
    const auto F = CHORUS_FLOAT32;
    const auto S = CHORUS_SUM;
    const auto bad_dt = static_cast<chorus_datatype_t>(99);
    const auto bad_op = static_cast<chorus_op_t>(-3);
    const size_t huge = SIZE_MAX / 2;
    size_t counts[64] = {};
    size_t ones[64], twos[64], displs[64], apart[64], zeros[64] = {}, big[64];
    for (int i = 0; i < 64; ++i) {
        ones[i] = 1;
        twos[i] = 2;
        displs[i] = static_cast<size_t>(i);
        apart[i] = 2 * static_cast<size_t>(i);
        big[i] = huge;
    }

    // One call per (entry point, class); a class an entry point has no such
    // argument for is left out.
    using Call = std::function<chorus_result_t()>;
    struct Row {
        const char* fn;
        std::map<std::string, Call> calls;
        bool on_self = false;  // some calls go to `self`: read the thread's message
    };
    std::vector<Row> rows = {
        {"chorus_allreduce",
         {{"NULL comm", [&] { return chorus_allreduce(x.data(), y.data(), 1, F, S, nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_allreduce(x.data(), y.data(), 1, F, S, dead, nullptr); }},
          {"NULL buffer", [&] { return chorus_allreduce(nullptr, y.data(), 1, F, S, c, nullptr); }},
          {"bad datatype", [&] { return chorus_allreduce(x.data(), y.data(), 1, bad_dt, S, c, nullptr); }},
          {"bad op", [&] { return chorus_allreduce(x.data(), y.data(), 1, F, bad_op, c, nullptr); }},
          {"datatype/op pair", [&] { return chorus_allreduce(x.data(), y.data(), 1, F, CHORUS_BXOR, c, nullptr); }},
          {"size overflow", [&] { return chorus_allreduce(x.data(), y.data(), huge, F, S, c, nullptr); }},
          {"overlap", [&] { return chorus_allreduce(x.data(), x.data() + 1, 4, F, S, c, nullptr); }}}},
        {"chorus_iallreduce",
         {{"NULL comm", [&] { return chorus_iallreduce(x.data(), y.data(), 1, F, S, nullptr, nullptr, &req); }},
          {"NULL output", [&] { return chorus_iallreduce(x.data(), y.data(), 1, F, S, c, nullptr, nullptr); }},
          {"bad op", [&] { return chorus_iallreduce(x.data(), y.data(), 1, F, bad_op, c, nullptr, &req); }}}},
        {"chorus_broadcast",
         {{"NULL comm", [&] { return chorus_broadcast(x.data(), y.data(), 1, F, 0, nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_broadcast(x.data(), y.data(), 1, F, 0, dead, nullptr); }},
          {"NULL buffer", [&] { return chorus_broadcast(x.data(), nullptr, 1, F, 0, c, nullptr); }},
          {"bad datatype", [&] { return chorus_broadcast(x.data(), y.data(), 1, bad_dt, 0, c, nullptr); }},
          {"root out of range", [&] { return chorus_broadcast(x.data(), y.data(), 1, F, p, c, nullptr); }},
          {"size overflow", [&] { return chorus_broadcast(x.data(), y.data(), huge, F, 0, c, nullptr); }},
          {"NULL output", [&] { return chorus_ibroadcast(x.data(), y.data(), 1, F, 0, c, nullptr, nullptr); }}}},
        {"chorus_reduce",
         {{"NULL comm", [&] { return chorus_reduce(x.data(), y.data(), 1, F, S, 0, nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_reduce(x.data(), y.data(), 1, F, S, 0, dead, nullptr); }},
          {"NULL buffer", [&] { return chorus_reduce(nullptr, y.data(), 1, F, S, 0, c, nullptr); }},
          {"bad datatype", [&] { return chorus_reduce(x.data(), y.data(), 1, bad_dt, S, 0, c, nullptr); }},
          {"bad op", [&] { return chorus_reduce(x.data(), y.data(), 1, F, bad_op, 0, c, nullptr); }},
          {"datatype/op pair", [&] { return chorus_reduce(x.data(), y.data(), 1, F, CHORUS_LAND, 0, c, nullptr); }},
          {"root out of range", [&] { return chorus_reduce(x.data(), y.data(), 1, F, S, -1, c, nullptr); }},
          {"size overflow", [&] { return chorus_reduce(x.data(), y.data(), huge, F, S, 0, c, nullptr); }},
          {"NULL output", [&] { return chorus_ireduce(x.data(), y.data(), 1, F, S, 0, c, nullptr, nullptr); }}}},
        {"chorus_reduce_scatter",
         {{"NULL comm", [&] { return chorus_reduce_scatter(x.data(), y.data(), 1, F, S, nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_reduce_scatter(x.data(), y.data(), 1, F, S, dead, nullptr); }},
          {"NULL buffer", [&] { return chorus_reduce_scatter(nullptr, y.data(), 1, F, S, c, nullptr); }},
          {"bad datatype", [&] { return chorus_reduce_scatter(x.data(), y.data(), 1, bad_dt, S, c, nullptr); }},
          {"bad op", [&] { return chorus_reduce_scatter(x.data(), y.data(), 1, F, bad_op, c, nullptr); }},
          {"datatype/op pair", [&] { return chorus_reduce_scatter(x.data(), y.data(), 1, F, CHORUS_BOR, c, nullptr); }},
          {"size overflow", [&] { return chorus_reduce_scatter(x.data(), y.data(), huge, F, S, c, nullptr); }},
          {"overlap", [&] { return chorus_reduce_scatter(y.data(), y.data() + 1, 2, F, S, c, nullptr); }},
          {"NULL output", [&] { return chorus_ireduce_scatter(x.data(), y.data(), 1, F, S, c, nullptr, nullptr); }}}},
        {"chorus_reduce_scatterv",
         {{"NULL comm", [&] { return chorus_reduce_scatterv(x.data(), y.data(), counts, F, S, nullptr, nullptr); }},
          {"NULL recvcounts", [&] { return chorus_reduce_scatterv(x.data(), y.data(), nullptr, F, S, c, nullptr); }},
          {"bad op", [&] { return chorus_reduce_scatterv(x.data(), y.data(), counts, F, bad_op, c, nullptr); }},
          {"NULL output",
           [&] { return chorus_ireduce_scatterv(x.data(), y.data(), counts, F, S, c, nullptr, nullptr); }}}},
        {"chorus_allgather",
         {{"NULL comm", [&] { return chorus_allgather(x.data(), y.data(), 1, F, nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_allgather(x.data(), y.data(), 1, F, dead, nullptr); }},
          {"NULL buffer", [&] { return chorus_allgather(x.data(), nullptr, 1, F, c, nullptr); }},
          {"bad datatype", [&] { return chorus_allgather(x.data(), y.data(), 1, bad_dt, c, nullptr); }},
          {"size overflow", [&] { return chorus_allgather(x.data(), y.data(), huge, F, c, nullptr); }},
          {"overlap", [&] { return chorus_allgather(y.data() + 1, y.data(), 4, F, c, nullptr); }},
          {"NULL output", [&] { return chorus_iallgather(x.data(), y.data(), 1, F, c, nullptr, nullptr); }}}},
        {"chorus_allgatherv",
         {{"NULL comm", [&] { return chorus_allgatherv(x.data(), 1, y.data(), ones, displs, F, nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_allgatherv(x.data(), 1, y.data(), ones, displs, F, dead, nullptr); }},
          {"NULL buffer", [&] { return chorus_allgatherv(x.data(), 1, nullptr, ones, displs, F, c, nullptr); }},
          {"bad datatype", [&] { return chorus_allgatherv(x.data(), 1, y.data(), ones, displs, bad_dt, c, nullptr); }},
          {"size overflow", [&] { return chorus_allgatherv(x.data(), huge, y.data(), big, displs, F, c, nullptr); }},
          {"overlap", [&] { return chorus_allgatherv(y.data() + 1, 2, y.data(), twos, apart, F, c, nullptr); }},
          {"blocks overlap", [&] { return chorus_allgatherv(x.data(), 2, y.data(), twos, displs, F, c, nullptr); }},
          {"NULL recvcounts", [&] { return chorus_allgatherv(x.data(), 1, y.data(), nullptr, displs, F, c, nullptr); }},
          {"NULL displs", [&] { return chorus_allgatherv(x.data(), 1, y.data(), ones, nullptr, F, c, nullptr); }},
          {"own block", [&] { return chorus_allgatherv(x.data(), 3, y.data(), ones, displs, F, c, nullptr); }},
          {"NULL output",
           [&] { return chorus_iallgatherv(x.data(), 1, y.data(), ones, displs, F, c, nullptr, nullptr); }}}},
        {"chorus_alltoall",
         {{"NULL comm", [&] { return chorus_alltoall(x.data(), y.data(), 1, F, nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_alltoall(x.data(), y.data(), 1, F, dead, nullptr); }},
          {"NULL buffer", [&] { return chorus_alltoall(nullptr, y.data(), 1, F, c, nullptr); }},
          {"bad datatype", [&] { return chorus_alltoall(x.data(), y.data(), 1, bad_dt, c, nullptr); }},
          {"size overflow", [&] { return chorus_alltoall(x.data(), y.data(), huge, F, c, nullptr); }},
          {"overlap", [&] { return chorus_alltoall(y.data() + 1, y.data(), 2, F, c, nullptr); }},
          {"NULL output", [&] { return chorus_ialltoall(x.data(), y.data(), 1, F, c, nullptr, nullptr); }}}},
        {"chorus_alltoallv",
         {{"NULL comm",
           [&] { return chorus_alltoallv(x.data(), ones, displs, y.data(), ones, displs, F, nullptr, nullptr); }},
          {"NULL buffer",
           [&] { return chorus_alltoallv(x.data(), ones, displs, nullptr, ones, displs, F, c, nullptr); }},
          {"size overflow",
           [&] { return chorus_alltoallv(x.data(), big, zeros, y.data(), big, zeros, F, c, nullptr); }},
          {"overlap",
           [&] { return chorus_alltoallv(y.data() + 1, ones, displs, y.data(), ones, displs, F, c, nullptr); }},
          {"blocks overlap",
           [&] { return chorus_alltoallv(x.data(), twos, zeros, y.data(), twos, displs, F, c, nullptr); }},
          {"NULL sendcounts",
           [&] { return chorus_alltoallv(x.data(), nullptr, displs, y.data(), ones, displs, F, c, nullptr); }},
          {"NULL recvcounts",
           [&] { return chorus_alltoallv(x.data(), ones, displs, y.data(), nullptr, displs, F, c, nullptr); }},
          {"NULL displs",
           [&] { return chorus_alltoallv(x.data(), ones, nullptr, y.data(), ones, displs, F, c, nullptr); }},
          {"own block",
           [&] { return chorus_alltoallv(x.data(), ones, displs, y.data(), zeros, displs, F, c, nullptr); }},
          {"NULL output",
           [&] { return chorus_ialltoallv(x.data(), ones, displs, y.data(), ones, displs, F, c, nullptr, nullptr); }}}},
        {"chorus_gather",
         {{"NULL comm", [&] { return chorus_gather(x.data(), y.data(), 1, F, 0, nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_gather(x.data(), y.data(), 1, F, 0, dead, nullptr); }},
          {"NULL buffer", [&] { return chorus_gather(nullptr, y.data(), 1, F, 0, c, nullptr); }},
          {"bad datatype", [&] { return chorus_gather(x.data(), y.data(), 1, bad_dt, 0, c, nullptr); }},
          {"root out of range", [&] { return chorus_gather(x.data(), y.data(), 1, F, p, c, nullptr); }},
          {"size overflow", [&] { return chorus_gather(x.data(), y.data(), huge, F, 0, c, nullptr); }},
          {"overlap", [&] { return chorus_gather(y.data() + 1, y.data(), 2, F, 0, self, nullptr); }},
          {"NULL output", [&] { return chorus_igather(x.data(), y.data(), 1, F, 0, c, nullptr, nullptr); }}},
         true},
        {"chorus_gatherv",
         {{"NULL comm", [&] { return chorus_gatherv(x.data(), 1, y.data(), ones, displs, F, 0, nullptr, nullptr); }},
          {"root out of range", [&] { return chorus_gatherv(x.data(), 1, y.data(), ones, displs, F, -2, c, nullptr); }},
          {"NULL buffer", [&] { return chorus_gatherv(nullptr, 1, y.data(), ones, displs, F, 0, c, nullptr); }},
          {"NULL recvcounts",
           [&] { return chorus_gatherv(x.data(), 1, y.data(), nullptr, displs, F, 0, self, nullptr); }},
          {"NULL displs", [&] { return chorus_gatherv(x.data(), 1, y.data(), ones, nullptr, F, 0, self, nullptr); }},
          {"own block", [&] { return chorus_gatherv(x.data(), 2, y.data(), ones, displs, F, 0, self, nullptr); }},
          {"size overflow", [&] { return chorus_gatherv(x.data(), huge, y.data(), ones, displs, F, 0, c, nullptr); }},
          {"NULL output",
           [&] { return chorus_igatherv(x.data(), 1, y.data(), ones, displs, F, 0, c, nullptr, nullptr); }}},
         true},
        {"chorus_scatter",
         {{"NULL comm", [&] { return chorus_scatter(x.data(), y.data(), 1, F, 0, nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_scatter(x.data(), y.data(), 1, F, 0, dead, nullptr); }},
          {"NULL buffer", [&] { return chorus_scatter(x.data(), nullptr, 1, F, 0, c, nullptr); }},
          {"bad datatype", [&] { return chorus_scatter(x.data(), y.data(), 1, bad_dt, 0, c, nullptr); }},
          {"root out of range", [&] { return chorus_scatter(x.data(), y.data(), 1, F, p, c, nullptr); }},
          {"size overflow", [&] { return chorus_scatter(x.data(), y.data(), huge, F, 0, c, nullptr); }},
          {"overlap", [&] { return chorus_scatter(y.data(), y.data() + 1, 2, F, 0, self, nullptr); }},
          {"NULL output", [&] { return chorus_iscatter(x.data(), y.data(), 1, F, 0, c, nullptr, nullptr); }}},
         true},
        {"chorus_scatterv",
         {{"NULL comm", [&] { return chorus_scatterv(x.data(), ones, displs, y.data(), 1, F, 0, nullptr, nullptr); }},
          {"root out of range", [&] { return chorus_scatterv(x.data(), ones, displs, y.data(), 1, F, p, c, nullptr); }},
          {"NULL buffer", [&] { return chorus_scatterv(x.data(), ones, displs, nullptr, 1, F, 0, c, nullptr); }},
          {"NULL sendcounts",
           [&] { return chorus_scatterv(x.data(), nullptr, displs, y.data(), 1, F, 0, self, nullptr); }},
          {"NULL displs", [&] { return chorus_scatterv(x.data(), ones, nullptr, y.data(), 1, F, 0, self, nullptr); }},
          {"own block", [&] { return chorus_scatterv(x.data(), ones, displs, y.data(), 2, F, 0, self, nullptr); }},
          {"size overflow", [&] { return chorus_scatterv(x.data(), ones, displs, y.data(), huge, F, 0, c, nullptr); }},
          {"NULL output",
           [&] { return chorus_iscatterv(x.data(), ones, displs, y.data(), 1, F, 0, c, nullptr, nullptr); }}},
         true},
        {"chorus_barrier",
         {{"NULL comm", [&] { return chorus_barrier(nullptr, nullptr); }},
          {"destroyed comm", [&] { return chorus_barrier(dead, nullptr); }},
          {"NULL output", [&] { return chorus_ibarrier(c, nullptr, nullptr); }}}},
        {"chorus_comm_create",
         {{"NULL output", [&] { return chorus_comm_create(MPI_COMM_WORLD, nullptr); }},
          {"MPI_COMM_NULL",
           [&] {
               chorus_comm_t t = nullptr;
               return chorus_comm_create(MPI_COMM_NULL, &t);
           }}}},
        {"chorus_comm_destroy",
         {{"NULL comm", [&] { return chorus_comm_destroy(nullptr); }},
          {"destroyed comm", [&] { return chorus_comm_destroy(dead); }}}},
        {"chorus_comm_rank/size",
         {{"NULL output", [&] { return chorus_comm_rank(c, nullptr); }},
          {"destroyed comm",
           [&] {
               int n;
               return chorus_comm_size(dead, &n);
           }}}},
        {"chorus_comm_abort", {{"destroyed comm", [&] { return chorus_comm_abort(dead); }}}},
        {"chorus_test/wait",
         {{"NULL request", [&] { return chorus_wait(nullptr); }},
          {"NULL output", [&] { return chorus_test(reinterpret_cast<chorus_request_t>(12345), nullptr); }},
          {"stale request",
           [&] {
               int done;
               return chorus_test(reinterpret_cast<chorus_request_t>(987654321), &done);
           }}}},
    };
    const std::map<std::string, Probe> expect = {
        {"NULL comm", {"NULL comm", CHORUS_ERR_INVALID_ARGUMENT, "comm"}},
        {"destroyed comm", {"destroyed comm", CHORUS_ERR_INVALID_ARGUMENT, "comm"}},
        {"NULL buffer", {"NULL buffer", CHORUS_ERR_INVALID_ARGUMENT, "buf"}},
        {"bad datatype", {"bad datatype", CHORUS_ERR_INVALID_ARGUMENT, "datatype"}},
        {"bad op", {"bad op", CHORUS_ERR_INVALID_ARGUMENT, "op"}},
        {"datatype/op pair", {"datatype/op pair", CHORUS_ERR_UNSUPPORTED, "float32"}},
        {"root out of range", {"root out of range", CHORUS_ERR_INVALID_ARGUMENT, "root"}},
        {"size overflow", {"size overflow", CHORUS_ERR_INVALID_ARGUMENT, "overflow"}},
        {"overlap", {"overlap", CHORUS_ERR_INVALID_ARGUMENT, "overlap"}},
        {"NULL output", {"NULL output", CHORUS_ERR_INVALID_ARGUMENT, "NULL"}},
        {"NULL recvcounts", {"NULL recvcounts", CHORUS_ERR_INVALID_ARGUMENT, "recvcounts"}},
        {"NULL sendcounts", {"NULL sendcounts", CHORUS_ERR_INVALID_ARGUMENT, "sendcounts"}},
        {"NULL displs", {"NULL displs", CHORUS_ERR_INVALID_ARGUMENT, "displs"}},
        {"blocks overlap", {"blocks overlap", CHORUS_ERR_INVALID_ARGUMENT, "overlap"}},
        {"own block", {"own block", CHORUS_ERR_INVALID_ARGUMENT, "own block"}},
        {"MPI_COMM_NULL", {"MPI_COMM_NULL", CHORUS_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL"}},
        {"NULL request", {"NULL request", CHORUS_ERR_INVALID_ARGUMENT, "request"}},
        {"stale request", {"stale request", CHORUS_ERR_INVALID_ARGUMENT, "request"}},
    };
    std::string table;
    for (auto& row : rows) {
        table += std::string("| ") + row.fn + " |";
        for (auto& [klass, call] : row.calls) {
            const Probe& probe = expect.at(klass);
            chorus_result_t rc = call();
            // Messages about a communicator that is not live are thread-wide.
            std::string msg = chorus_comm_last_error(row.on_self || klass == "destroyed comm" || klass == "NULL comm" ||
                                                             row.fn == std::string("chorus_test/wait") ||
                                                             row.fn == std::string("chorus_comm_create")
                                                         ? nullptr
                                                         : c);
            INFO(row.fn << " / " << klass << ": " << chorus_get_error_string(rc) << ": " << msg);
            CHECK(rc == probe.want);
            CHECK(msg.find(probe.names) != std::string::npos);
            table += " " + klass + ": " + chorus_get_error_string(rc) + ";";
        }
        table += "\n";
    }
    if (me == 0) std::printf("%s", table.c_str());
    // Nothing above started a collective: the communicator still works.
    float one = 1, sum = 0;
    REQUIRE(chorus_allreduce(&one, &sum, 1, F, S, c, nullptr) == CHORUS_SUCCESS);
    REQUIRE(sum == float(p));
    REQUIRE(chorus_barrier(c, nullptr) == CHORUS_SUCCESS);
    REQUIRE(chorus_comm_destroy(self) == CHORUS_SUCCESS);
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("a repeated call is checked again where its arrays or its communicator changed", "[mpi][errors]") {
    // The C API skips the checks of a call that repeats the last one on the
    // thread (same communicator, arguments and array contents): arrays
    // changed in place, or a communicator that failed meanwhile, must still
    // be refused.
    int me = 0, p = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    const auto F = CHORUS_FLOAT32;
    std::vector<size_t> counts(static_cast<size_t>(p), 1), displs(static_cast<size_t>(p));
    for (int i = 0; i < p; ++i) displs[static_cast<size_t>(i)] = static_cast<size_t>(i);
    std::vector<float> x(4, static_cast<float>(me + 1)), y(static_cast<size_t>(4 * p), -1.0f);
    auto gatherv = [&] {
        return chorus_allgatherv(x.data(), 1, y.data(), counts.data(), displs.data(), F, c, nullptr);
    };
    for (int round = 0; round < 3; ++round) REQUIRE(gatherv() == CHORUS_SUCCESS);
    for (int i = 0; i < p; ++i) CHECK(y[static_cast<size_t>(i)] == static_cast<float>(i + 1));

    // This rank's own block no longer matches its send count.
    for (auto& n : counts) n = 2;
    CHECK(gatherv() == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(std::string(chorus_comm_last_error(c)).find("recvcounts[") != std::string::npos);
    for (auto& n : counts) n = 1;
    REQUIRE(gatherv() == CHORUS_SUCCESS);
    REQUIRE(gatherv() == CHORUS_SUCCESS);
    if (p > 1) {  // two receive blocks at one place
        displs[1] = 0;
        CHECK(gatherv() == CHORUS_ERR_INVALID_ARGUMENT);
        CHECK(std::string(chorus_comm_last_error(c)).find("overlap") != std::string::npos);
        displs[1] = 1;
    }
    std::fill(y.begin(), y.end(), -1.0f);
    REQUIRE(gatherv() == CHORUS_SUCCESS);
    for (int i = 0; i < p; ++i) CHECK(y[static_cast<size_t>(i)] == static_cast<float>(i + 1));

    // The regular forms: a repeated all-reduce after the communicator failed.
    float v = 1.0f, out = 0.0f;
    auto allreduce = [&] { return chorus_allreduce(&v, &out, 1, F, CHORUS_SUM, c, nullptr); };
    REQUIRE(allreduce() == CHORUS_SUCCESS);
    REQUIRE(allreduce() == CHORUS_SUCCESS);
    CHECK(out == static_cast<float>(p));
    MPI_Barrier(MPI_COMM_WORLD);
    REQUIRE(chorus_comm_abort(c) == CHORUS_SUCCESS);
    CHECK(allreduce() == CHORUS_ERR_COMM_FAILED);
    CHECK(std::string(chorus_comm_last_error(c)).find("failed") != std::string::npos);
    CHECK(gatherv() == CHORUS_ERR_COMM_FAILED);
    MPI_Barrier(MPI_COMM_WORLD);
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}
