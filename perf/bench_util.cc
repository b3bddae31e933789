#include "bench_util.h"

#include <algorithm>
#include <fstream>

namespace bench {

bool any_rank(bool local) {
    int in = local ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return out != 0;
}

void check_chorus(chorus_result_t rc, const char* what, size_t bytes, chorus_comm_t comm, int rank) {
    if (rc == CHORUS_SUCCESS) return;
    std::fprintf(stderr, "chorus-bench: rank %d: %s failed at %zu bytes: %s: %s\n", rank, what, bytes,
                 chorus_get_error_string(rc), chorus_comm_last_error(comm));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

size_t mem_available_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    size_t kb = 0;
    std::string unit;
    while (in >> key >> kb) {
        std::getline(in, unit);
        if (key == "MemAvailable:") return kb * 1024;
    }
    return 0;
}

double Overlap::percent() const {
    if (comm_us <= 0) return 0;
    return std::clamp(100.0 * (1.0 - (overall_us - compute_us) / comm_us), 0.0, 100.0);
}

void compute_for(double us) {
    const double end = MPI_Wtime() + us * 1e-6;
    volatile double x = 1.0;
    do {
        for (int i = 0; i < 64; ++i) x = x * 1.0000001 + 1e-9;
    } while (MPI_Wtime() < end);
}

}  // namespace bench
