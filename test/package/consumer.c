/* A program that uses an installed Chorus as a user's would, built through
 * pkg-config and through CMake's find_package(chorus) (check_package.sh):
 * an all-reduce on MPI_COMM_WORLD, checked. */
#include <chorus.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    chorus_comm_t comm;
    int ok = chorus_comm_create(MPI_COMM_WORLD, &comm) == CHORUS_SUCCESS;
    double x[4] = {rank + 1.0, 2.0, 3.0, 4.0}, y[4] = {0};
    ok = ok && chorus_allreduce(x, y, 4, CHORUS_FLOAT64, CHORUS_SUM, comm, NULL) == CHORUS_SUCCESS;
    ok = ok && y[0] == size * (size + 1) / 2.0 && y[3] == 4.0 * size;
    if (ok) ok = chorus_comm_destroy(comm) == CHORUS_SUCCESS;
    if (!ok) fprintf(stderr, "rank %d: FAIL: %s\n", rank, chorus_comm_last_error(NULL));
    if (rank == 0 && ok) printf("consumer: the all-reduce of %d ranks is right\n", size);
    MPI_Finalize();
    return ok ? 0 : 1;
}
