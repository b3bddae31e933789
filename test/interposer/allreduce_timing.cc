// A plain MPI timing loop (mpi.h only), to run with and without the
// interposer preloaded: MPI_Allreduce of floats (SUM) at 4 B, 1 MiB, 16 MiB
// and 64 MiB. Prints, per size, the median over repetitions of the mean time
// per call on rank 0, and a checksum of the result so that runs can be
// compared. With `alloc`, the buffers come from MPI_Alloc_mem.
//
//   mpirun -np 2 allreduce_timing [reps [alloc]]
//   mpirun -np 2 -x LD_PRELOAD=.../libchorus_mpi.so allreduce_timing [reps [alloc]]
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
    const bool alloc = argc > 2 && std::strcmp(argv[2], "alloc") == 0;
    const struct {
        size_t bytes;
        int iters;
    } sizes[] = {{4, 2000}, {1 << 20, 100}, {16 << 20, 10}, {64 << 20, 4}};
    if (rank == 0) std::printf("%10s %12s %18s\n", "bytes", "median_us", "checksum");
    for (const auto& s : sizes) {
        const size_t n = s.bytes / sizeof(float);
        std::vector<float> in_v(alloc ? 0 : n), out_v(alloc ? 0 : n);
        float* in = in_v.data();
        float* out = out_v.data();
        if (alloc) {
            MPI_Alloc_mem(static_cast<MPI_Aint>(n * sizeof(float)), MPI_INFO_NULL, &in);
            MPI_Alloc_mem(static_cast<MPI_Aint>(n * sizeof(float)), MPI_INFO_NULL, &out);
        }
        // Small integers: every sum is exact, whatever the order.
        for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>((i * 7 + rank * 13) % 64) - 32.0f;
        for (int w = 0; w < 3; ++w) MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        std::vector<double> per_call;
        for (int r = 0; r < reps; ++r) {
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            for (int k = 0; k < s.iters; ++k)
                MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            per_call.push_back((MPI_Wtime() - t0) / s.iters * 1e6);
        }
        std::sort(per_call.begin(), per_call.end());
        uint64_t hash = 1469598103934665603ull;  // FNV-1a over the result's bytes
        const unsigned char* p = reinterpret_cast<const unsigned char*>(out);
        for (size_t i = 0; i < n * sizeof(float); ++i) hash = (hash ^ p[i]) * 1099511628211ull;
        if (rank == 0)
            std::printf("%10zu %12.2f %18llx\n", s.bytes, per_call[per_call.size() / 2], (unsigned long long)hash);
        if (alloc) {
            MPI_Free_mem(in);
            MPI_Free_mem(out);
        }
    }
    MPI_Finalize();
    return 0;
}
