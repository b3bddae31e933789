// A rank that is busy for longer than CHORUS_HANG_WARN_S before a
// collective: the others wait (no timeout by default), warn once each, and
// the collective completes. test/count_lines.sh counts the warnings.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>

#include "chorus.h"

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    chorus_comm_t c = nullptr;
    if (chorus_comm_create(MPI_COMM_WORLD, &c) != CHORUS_SUCCESS) {
        std::fprintf(stderr, "create: %s\n", chorus_comm_last_error(nullptr));
        return 1;
    }
    double v = me == 0 ? 42.0 : 0.0;
    if (me == 0) sleep(3);
    chorus_result_t rc = chorus_broadcast(&v, &v, 1, CHORUS_FLOAT64, 0, c, nullptr);
    int ok = rc == CHORUS_SUCCESS && v == 42.0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) std::fprintf(stderr, "rank %d: %s %s\n", me, chorus_get_error_string(rc), chorus_comm_last_error(c));
    chorus_comm_destroy(c);
    MPI_Finalize();
    return all ? 0 : 1;
}
