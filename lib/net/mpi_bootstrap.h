// The bootstrap over MPI: a private duplicate of the application's
// communicator, so that Chorus's own traffic never matches the program's.
#pragma once

#include <mpi.h>

#include "net/bootstrap.h"

namespace chorus::net {

class MpiBootstrap final : public Bootstrap {
public:
    // Collective over `comm`: duplicates it.
    explicit MpiBootstrap(MPI_Comm comm);
    ~MpiBootstrap() override;
    MpiBootstrap(const MpiBootstrap&) = delete;
    MpiBootstrap& operator=(const MpiBootstrap&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    std::vector<std::string> allgather(const std::string& mine) override;
    bool all(bool mine) override;
    void barrier(const std::function<void()>& progress) override;
    // The private duplicate (for the clock offsets of traces).
    MPI_Comm comm() const { return comm_; }

private:
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 0;
};

// Turn an MPI error code into an Error(CHORUS_ERR_TRANSPORT) naming `what`.
void check_mpi(int rc, const char* what);

}  // namespace chorus::net
