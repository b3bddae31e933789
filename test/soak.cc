// Soak: many mixed collectives with random sizes, datatypes, ops and roots,
// every result verified against references from per-rank seeds, and resident
// memory checked flat. All ranks draw the same random sequence, so they agree
// on every call's arguments.
//
//   soak [OPERATIONS]        (default 100000)
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "chorus.h"
#include "mpi_test_util.h"
#include "reference.h"

using mpitest::rss_kib;

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const long total = argc > 1 ? std::atol(argv[1]) : 100000;
    int me = 0, p = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    chorus_comm_t comm = nullptr;
    if (chorus_comm_create(MPI_COMM_WORLD, &comm) != CHORUS_SUCCESS) {
        std::fprintf(stderr, "create: %s\n", chorus_comm_last_error(nullptr));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::mt19937_64 rng(2026);
    const size_t kMax = 1 << 16;
    std::vector<char> in(kMax * 8 * p), out(kMax * 8 * p), want(kMax * 8 * p);
    long failures = 0, done = 0;
    size_t rss_start = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < total; ++i) {
        if (i == total / 10) rss_start = rss_kib();  // after warm-up
        int coll = static_cast<int>(rng() % 5);
        chorus_datatype_t dt = ref::kAllTypes[rng() % 12];
        chorus_op_t op = ref::kAllOps[rng() % 5];
        // Mostly small, sometimes large.
        size_t count = rng() % 8 == 0 ? rng() % kMax : rng() % 257;
        int root = static_cast<int>(rng() % p);
        bool in_place = rng() % 2;
        uint64_t seed = rng();
        size_t w = ref::esize(dt);
        chorus_result_t rc = CHORUS_SUCCESS;
        bool ok = true;
        switch (coll) {
            case 0: {  // allreduce
                ref::fill_input(dt, op, me, p, seed, in.data(), count);
                ref::expected(dt, op, p, seed, want.data(), count);
                void* r = in_place ? in.data() : out.data();
                rc = chorus_allreduce(in.data(), r, count, dt, op, comm, nullptr);
                ok = std::memcmp(r, want.data(), count * w) == 0;
                break;
            }
            case 1: {  // broadcast
                ref::fill_input(dt, op, root, p, seed, want.data(), count);
                if (me == root) ref::fill_input(dt, op, root, p, seed, in.data(), count);
                void* r = in_place && me == root ? in.data() : out.data();
                rc = chorus_broadcast(in.data(), r, count, dt, root, comm, nullptr);
                ok = std::memcmp(r, want.data(), count * w) == 0;
                break;
            }
            case 2: {  // reduce
                ref::fill_input(dt, op, me, p, seed, in.data(), count);
                ref::expected(dt, op, p, seed, want.data(), count);
                void* r = me == root ? (in_place ? in.data() : out.data()) : nullptr;
                rc = chorus_reduce(in.data(), r, count, dt, op, root, comm, nullptr);
                ok = me != root || std::memcmp(r, want.data(), count * w) == 0;
                break;
            }
            case 3: {  // reduce_scatter
                size_t n = count / p;
                ref::fill_input(dt, op, me, p, seed, in.data(), n * p);
                ref::expected(dt, op, p, seed, want.data(), n * p);
                void* r = in_place ? in.data() : out.data();
                rc = chorus_reduce_scatter(in.data(), r, n, dt, op, comm, nullptr);
                ok = std::memcmp(r, want.data() + me * n * w, n * w) == 0;
                break;
            }
            default: {  // allgather
                size_t n = count / p;
                for (int k = 0; k < p; ++k) ref::fill_input(dt, op, k, p, seed, want.data() + k * n * w, n);
                const void* s = in.data();
                if (in_place) {
                    std::memcpy(out.data() + me * n * w, want.data() + me * n * w, n * w);
                    s = out.data() + me * n * w;
                } else {
                    ref::fill_input(dt, op, me, p, seed, in.data(), n);
                }
                rc = chorus_allgather(s, out.data(), n, dt, comm, nullptr);
                ok = std::memcmp(out.data(), want.data(), n * p * w) == 0;
                break;
            }
        }
        if (rc != CHORUS_SUCCESS || !ok) {
            if (failures++ < 10)
                std::fprintf(stderr, "rank %d op %ld (collective %d, %zu x %s, op %d, root %d%s): %s %s\n", me, i, coll,
                             count, chorus_get_error_string(rc), static_cast<int>(op), root, in_place ? ", in place" : "",
                             rc ? chorus_comm_last_error(comm) : "", ok ? "" : "wrong result");
            if (rc != CHORUS_SUCCESS) break;
        }
        ++done;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    size_t rss_end = rss_kib();
    long all_failures = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    // Flat: the steady state allocates nothing per call.
    int flat = rss_end <= rss_start + 2048, all_flat = 0;
    MPI_Allreduce(&flat, &all_flat, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (me == 0)
        std::printf("soak: %ld operations on %d ranks in %.1f s, %ld failures; rank 0 RSS %zu KiB after warm-up, %zu KiB at the end\n",
                    done, p, seconds, all_failures, rss_start, rss_end);
    chorus_comm_destroy(comm);
    MPI_Finalize();
    return all_failures == 0 && all_flat ? 0 : 1;
}
