// Pieces of chorus-bench's run: the world, the device buffers of -d cuda,
// agreement across ranks, timing, and the OSU-style overlap measurement of
// the nonblocking mode.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <string>

#include "chorus.h"
#include "internal.h"

namespace bench {

struct World {
    int rank = 0;
    int size = 1;
};

// -d cuda: the device buffers, the benchmark's stream, and synchronous
// copies on that stream.
struct DeviceBuffers {
    void* a = nullptr;
    void* b = nullptr;
    void* copy = nullptr;  // 2 x the largest message: the copy ceiling's source and target
    void* stream = nullptr;
    DeviceBuffers() = default;
    DeviceBuffers(const DeviceBuffers&) = delete;
    DeviceBuffers& operator=(const DeviceBuffers&) = delete;
    ~DeviceBuffers() {
        chorus::gpu::free_device(a);
        chorus::gpu::free_device(b);
        chorus::gpu::free_device(copy);
        chorus::gpu::destroy_stream(stream);
    }
    void upload(void* dst, const void* src, size_t bytes) const {
        chorus::gpu::copy_async(dst, src, bytes, stream);
        chorus::gpu::synchronize_stream(stream);
    }
    void download(void* dst, const void* src, size_t bytes) const { upload(dst, src, bytes); }
};

// Whether `local` holds on any rank (collective).
bool any_rank(bool local);

// A failed Chorus call ends the whole run, saying why.
void check_chorus(chorus_result_t rc, const char* what, size_t bytes, chorus_comm_t comm, int rank);

// Sum over `iters` barrier-separated calls of each call's time, in seconds;
// `prepare` runs before each call, untimed.
template <typename Prepare, typename Fn>
double time_calls(int iters, Prepare prepare, Fn fn) {
    double total = 0;
    for (int i = 0; i < iters; ++i) {
        prepare();
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        fn();
        total += MPI_Wtime() - t0;
    }
    return total;
}

// /proc/meminfo's MemAvailable, or 0.
size_t mem_available_bytes();

// The OSU-style overlap of a nonblocking collective with computation (as
// osu_iallreduce): `comm_us`, the pure communication time (start, then
// wait); then, with a compute loop of about comm_us between start and wait,
// the overall time and the time spent computing; overlap =
// 100 * (1 - (overall - compute) / comm), clamped to 0..100.
struct Overlap {
    double comm_us = 0, overall_us = 0, compute_us = 0;
    double percent() const;
};

// Busy work on this CPU for about `us` microseconds, calling no library (as
// in OSU: a library without its own progress makes none meanwhile).
void compute_for(double us);

// `iters` barrier-separated rounds of start(), compute_for(comm_us), wait():
// the mean overall and compute times per round, in microseconds; `prepare`
// runs before each round, untimed.
template <typename Prepare, typename Start, typename Wait>
Overlap measure_overlap(int iters, double comm_us, Prepare prepare, Start start, Wait wait) {
    Overlap o;
    o.comm_us = comm_us;
    double overall = 0, compute = 0;
    for (int i = 0; i < iters; ++i) {
        prepare();
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        start();
        const double c0 = MPI_Wtime();
        compute_for(comm_us);
        compute += MPI_Wtime() - c0;
        wait();
        overall += MPI_Wtime() - t0;
    }
    o.overall_us = overall * 1e6 / iters;
    o.compute_us = compute * 1e6 / iters;
    return o;
}

}  // namespace bench
