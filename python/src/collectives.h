// Each collective's Python arguments -> one Call (collectives.cc). Every
// function fills `call` or raises TypeError / ValueError; the module binds
// each one twice, blocking and nonblocking.
#ifndef CHORUS_PYTHON_COLLECTIVES_H
#define CHORUS_PYTHON_COLLECTIVES_H

#include "binding.h"

namespace chorus_py {

using nb::handle;

void prep_allreduce(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle op, handle stream);
void prep_broadcast(Communicator& self, Call& call, handle sendbuf, handle recvbuf, int root, handle stream);
void prep_reduce(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle op, int root, handle stream);
void prep_reduce_scatter(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle op, handle stream);
void prep_reduce_scatterv(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle recvcounts, handle op,
                          handle stream);
void prep_allgather(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle stream);
void prep_allgatherv(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle recvcounts, handle displs,
                     handle stream);
void prep_alltoall(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle stream);
void prep_alltoallv(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle sendcounts,
                    handle recvcounts, handle sdispls, handle rdispls, handle stream);
void prep_gather(Communicator& self, Call& call, handle sendbuf, handle recvbuf, int root, handle stream);
void prep_gatherv(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle recvcounts, handle displs,
                  int root, handle stream);
void prep_scatter(Communicator& self, Call& call, handle sendbuf, handle recvbuf, int root, handle stream);
void prep_scatterv(Communicator& self, Call& call, handle sendbuf, handle recvbuf, handle sendcounts, handle displs,
                   int root, handle stream);
void prep_barrier(Communicator& self, Call& call, handle stream);

}  // namespace chorus_py

#endif  // CHORUS_PYTHON_COLLECTIVES_H
