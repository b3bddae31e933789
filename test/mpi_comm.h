// A Chorus communicator over MPI_COMM_WORLD that forces `algo` for the
// collective `coll` (CHORUS_ALGO is read at creation), with 16 KiB pipeline
// chunks so that messages travel in several pieces.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "chorus.h"

namespace mpitest {

struct ForcedComm {
    chorus_comm_t c = nullptr;
    ForcedComm(const std::string& coll, const std::string& algo) {
        setenv("CHORUS_ALGO", (coll + "=" + algo).c_str(), 1);
        setenv("CHORUS_CHUNK_BYTES", "16K", 1);
        chorus_result_t rc = chorus_comm_create(MPI_COMM_WORLD, &c);
        unsetenv("CHORUS_ALGO");
        unsetenv("CHORUS_CHUNK_BYTES");
        REQUIRE(rc == CHORUS_SUCCESS);
    }
    ~ForcedComm() { chorus_comm_destroy(c); }
    ForcedComm(const ForcedComm&) = delete;
    ForcedComm& operator=(const ForcedComm&) = delete;
};

}  // namespace mpitest
