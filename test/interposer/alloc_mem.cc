// MPI_Alloc_mem under the preload: an ordinary MPI program whose buffers
// come from MPI_Alloc_mem runs collectives of 4 KiB to 4 MiB on them
// (through Chorus's single-copy schedules when every rank's buffers are
// mapped memory), checked against references every rank computes; rank 0
// alone uses malloc in a second pass (ranks that mix mapped and plain
// buffers), and every buffer goes back through MPI_Free_mem.
//
// Usage: alloc_mem MODE, MODE `preload` (the library preloaded: the memory
// must be Chorus's mapped memory, chorus_mem_mapped, and the calls
// intercepted) or `control` (nothing preloaded: MPI's own memory).
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Mapped = int (*)(const void*, size_t);
using Counter = unsigned long long (*)(void);

int failures = 0;
void expect(bool ok, const std::string& what) {
    if (!ok) {
        ++failures;
        std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    }
}

// Element i of rank r's input: integers, so every order sums exactly.
int64_t input(int r, size_t i, int seed) {
    return static_cast<int64_t>((i * 7919 + static_cast<size_t>(r) * 104729 + static_cast<size_t>(seed)) % 1000003);
}

void run_calls(int me, int p, bool plain, int seed) {
    for (size_t count : {size_t(512), size_t(1) << 14, size_t(1) << 19}) {  // 4 KiB .. 4 MiB of int64
        const size_t bytes = count * sizeof(int64_t) * p;
        int64_t *in = nullptr, *out = nullptr;
        if (plain) {
            in = static_cast<int64_t*>(std::malloc(bytes));
            out = static_cast<int64_t*>(std::malloc(bytes));
        } else {
            expect(MPI_Alloc_mem(static_cast<MPI_Aint>(bytes), MPI_INFO_NULL, &in) == MPI_SUCCESS, "MPI_Alloc_mem");
            expect(MPI_Alloc_mem(static_cast<MPI_Aint>(bytes), MPI_INFO_NULL, &out) == MPI_SUCCESS, "MPI_Alloc_mem");
        }
        const std::string at = " at " + std::to_string(count) + (plain ? " (plain)" : "");
        for (size_t i = 0; i < count * p; ++i) in[i] = input(me, i, seed);
        MPI_Allreduce(in, out, static_cast<int>(count), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        bool ok = true;
        for (size_t i = 0; i < count; ++i) {
            int64_t want = 0;
            for (int r = 0; r < p; ++r) want += input(r, i, seed);
            ok = ok && out[i] == want;
        }
        expect(ok, "MPI_Allreduce" + at);
        std::memcpy(out, in, count * sizeof(int64_t));
        MPI_Bcast(out, static_cast<int>(count), MPI_INT64_T, p - 1, MPI_COMM_WORLD);
        ok = true;
        for (size_t i = 0; i < count; ++i) ok = ok && out[i] == input(p - 1, i, seed);
        expect(ok, "MPI_Bcast" + at);
        MPI_Reduce(in, out, static_cast<int>(count), MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
        ok = true;
        for (size_t i = 0; me == 0 && i < count; ++i) {
            int64_t want = input(0, i, seed);
            for (int r = 1; r < p; ++r) want = std::max(want, input(r, i, seed));
            ok = ok && out[i] == want;
        }
        expect(ok, "MPI_Reduce" + at);
        MPI_Allgather(in, static_cast<int>(count), MPI_INT64_T, out, static_cast<int>(count), MPI_INT64_T,
                      MPI_COMM_WORLD);
        ok = true;
        for (int r = 0; r < p; ++r)
            for (size_t i = 0; i < count; ++i) ok = ok && out[r * count + i] == input(r, i, seed);
        expect(ok, "MPI_Allgather" + at);
        if (plain) {
            std::free(in);
            std::free(out);
        } else {
            expect(MPI_Free_mem(in) == MPI_SUCCESS && MPI_Free_mem(out) == MPI_SUCCESS, "MPI_Free_mem" + at);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int me = 0, p = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const std::string mode = argc > 1 ? argv[1] : "";
    const bool preload = mode == "preload";
    // Where the memory comes from.
    auto mapped = reinterpret_cast<Mapped>(dlsym(RTLD_DEFAULT, "chorus_mem_mapped"));
    auto intercepted = reinterpret_cast<Counter>(dlsym(RTLD_DEFAULT, "chorus_mpi_intercepted_calls"));
    expect(preload == (intercepted != nullptr), "the library is preloaded exactly in mode preload");
    void* probe = nullptr;
    expect(MPI_Alloc_mem(1 << 20, MPI_INFO_NULL, &probe) == MPI_SUCCESS, "MPI_Alloc_mem");
    if (preload) expect(mapped && mapped(probe, 1 << 20) == 1, "MPI_Alloc_mem gives mapped memory");
    // MPI's own use of the memory: a message from it.
    static_cast<int*>(probe)[0] = me;
    int got = -1;
    MPI_Sendrecv(probe, 1, MPI_INT, (me + 1) % p, 0, &got, 1, MPI_INT, (me + p - 1) % p, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    expect(got == (me + p - 1) % p, "MPI_Sendrecv from MPI_Alloc_mem memory");
    expect(MPI_Free_mem(probe) == MPI_SUCCESS, "MPI_Free_mem");
    const unsigned long long before = intercepted ? intercepted() : 0;
    run_calls(me, p, false, 1);
    run_calls(me, p, me == 0, 2);  // rank 0 plain, the others mapped
    if (preload) expect(intercepted() > before, "the collectives ran through Chorus");
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) std::printf("%s: %d failure(s)\n", mode.c_str(), all);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
