// The one main of every test program. Under mpirun it initializes MPI and
// makes a failure on any rank fail the program on every rank (Catch2 alone
// would let rank 0 report success while rank 1 failed). Outside mpirun it
// runs without MPI. MPI is initialized with MPI_THREAD_MULTIPLE.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

static bool launched_by_mpi() {
    return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_RANK") || std::getenv("PMIX_RANK");
}

int main(int argc, char** argv) {
    bool mpi = launched_by_mpi();
    int rank = 0, size = 1;
    if (mpi) {
        // The highest level: tests run collectives from several threads.
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    Catch::Session session;
    int rc = session.applyCommandLine(argc, argv);
    if (rc == 0) {
        // Only rank 0 prints the summary unless something fails.
        if (rank != 0) session.configData().showSuccessfulTests = false;
        rc = session.run();
    }
    if (mpi) {
        int local_failed = rc != 0, any_failed = 0;
        MPI_Allreduce(&local_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any_failed && rank == 0) std::fprintf(stderr, "FAILED: a test failed on at least one of %d ranks\n", size);
        MPI_Finalize();
        return any_failed ? 1 : 0;
    }
    return rc;
}
