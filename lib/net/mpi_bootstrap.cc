#include "net/mpi_bootstrap.h"

#include <sched.h>

#include "base/error.h"

namespace chorus::net {

void check_mpi(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fail(CHORUS_ERR_TRANSPORT, "MPI error in ", what, ": ", std::string(text, len));
}

MpiBootstrap::MpiBootstrap(MPI_Comm comm) {
    check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
}

MpiBootstrap::~MpiBootstrap() {
    // Local in MPI (it waits for no peer); impossible once MPI has finalized.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

std::vector<std::string> MpiBootstrap::allgather(const std::string& mine) {
    // Lengths differ between ranks: exchange them first, then the bytes.
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(size_), offsets(size_);
    check_mpi(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_), "MPI_Allgather");
    int total = 0;
    for (int i = 0; i < size_; ++i) {
        offsets[i] = total;
        total += lens[i];
    }
    std::string all(static_cast<size_t>(total), '\0');
    check_mpi(MPI_Allgatherv(mine.data(), len, MPI_BYTE, all.data(), lens.data(), offsets.data(), MPI_BYTE, comm_),
              "MPI_Allgatherv");
    std::vector<std::string> out(size_);
    for (int i = 0; i < size_; ++i) out[i] = all.substr(offsets[i], lens[i]);
    return out;
}

bool MpiBootstrap::all(bool mine) {
    int in = mine ? 1 : 0, out = 0;
    check_mpi(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, comm_), "MPI_Allreduce");
    return out != 0;
}

void MpiBootstrap::barrier(const std::function<void()>& progress) {
    MPI_Request req;
    check_mpi(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
    int done = 0;
    for (unsigned spins = 0;; ++spins) {
        progress();
        check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) return;
        if (spins > 64) sched_yield();
    }
}

}  // namespace chorus::net
