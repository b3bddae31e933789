#include "net/mpi_bootstrap.h"

#include <sched.h>

#include "status.h"

namespace chorus::net {

void check_mpi(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fail(CHORUS_ERR_TRANSPORT, "MPI error in ", what, ": ", std::string(text, len));
}

std::vector<std::string> allgather_blobs(MPI_Comm comm, const std::string& mine) {
    int size = 0;
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    // Lengths differ between ranks: exchange them first, then the bytes.
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(size), offsets(size);
    check_mpi(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm), "MPI_Allgather");
    int total = 0;
    for (int i = 0; i < size; ++i) {
        offsets[i] = total;
        total += lens[i];
    }
    std::string all(static_cast<size_t>(total), '\0');
    check_mpi(MPI_Allgatherv(mine.data(), len, MPI_BYTE, all.data(), lens.data(), offsets.data(),
                             MPI_BYTE, comm),
              "MPI_Allgatherv");
    std::vector<std::string> out(size);
    for (int i = 0; i < size; ++i) out[i] = all.substr(offsets[i], lens[i]);
    return out;
}

void barrier_with_progress(MPI_Comm comm, const std::function<void()>& progress) {
    MPI_Request req;
    check_mpi(MPI_Ibarrier(comm, &req), "MPI_Ibarrier");
    int done = 0;
    for (unsigned spins = 0;; ++spins) {
        progress();
        check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) return;
        if (spins > 64) sched_yield();
    }
}

}  // namespace chorus::net
