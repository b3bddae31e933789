// What the parts of the interposer's nonblocking test share (mpi_icalls.cc,
// icall_modes.cc). Written against mpi.h only.
#pragma once

#include <mpi.h>

#include <atomic>
#include <string>
#include <vector>

#include "icall_cases.h"
#include "icall_complete.h"

namespace icalls {

extern int g_rank, g_size;
extern bool g_ours;                         // eligible calls return the interposer's requests
extern std::atomic<const char*> g_current;  // what runs now, for the watchdog's message

void fail(const std::string& what);

using Counter = unsigned long long (*)(void);
Counter counter(const char* name);
// chorus_mpi_tracked_requests(), or 0 without the library.
unsigned long long tracked();

// The calls made: `eligible` ones must run through Chorus, `other` ones be
// handed to MPI.
struct Tally {
    std::atomic<unsigned long long> eligible{0}, other{0};
    void count(bool e) { ++(e ? eligible : other); }
};

// MPI's own result of every case (PMPI_I* and PMPI_Wait), first.
void references(std::vector<Case>& cases);
// The call under test's output against MPI's, and its status (unless null).
void compare(const Case& c, const MPI_Status* got, Method m, const std::string& how);
// Each case alone, completed by each method in turn (mpi_icalls.cc).
void one_by_one(std::vector<Case> cases, Tally& t, int first_method = 0);

// The modes (icall_modes.cc).
void freeing(Tally& t);
void errors(Tally& t);
void threads(Tally& t);
void progress(Tally& t);
void failure();

}  // namespace icalls
