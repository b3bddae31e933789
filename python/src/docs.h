// Docstrings of the extension's classes and functions (module.cc), kept
// apart so the bindings stay readable. chorus/_chorus.pyi mirrors them.
#ifndef CHORUS_PYTHON_DOCS_H
#define CHORUS_PYTHON_DOCS_H

namespace chorus_py::docs {

constexpr const char* kModule = R"(Chorus collectives on arrays: the binding of chorus.h.

Every collective takes arrays that export DLPack or the buffer protocol
(NumPy, torch, CuPy, ...), C-contiguous, on the host or a CUDA device (the
memory kind comes from the array's pointer). Sizes come from the arrays.
Each collective has a nonblocking twin named with an "i" that returns a
Request; the arrays stay referenced by it until it completes.)";

constexpr const char* kFromOob = R"(A communicator created without MPI, over an exchange the caller supplies.

Communicator.from_oob(rank, size, allgather): collective over the `size`
processes that call it, each with its own `rank`. allgather(data: bytes)
is called the same number of times on every rank, each time with bytes of
the same length on every rank, and returns every rank's bytes in rank
order: a sequence of `size` bytes-like objects, or one of size * len(data)
bytes. Any all-gather will do: mpi4py's comm.allgather, a key-value store
(torch.distributed's Store: set this rank's key, get every rank's), files
on a shared file system. Chorus makes no MPI call for this communicator.

Creation is all or nothing, as with an MPI communicator. When allgather
raises or returns something else, creation fails with a ChorusError whose
__cause__ is that exception; the peers then wait in their own allgather,
which must time out for them to fail too (a store's timeout does).)";

constexpr const char* kRegister = R"(Register `array` as a window of this communicator (collective: every rank
its own array, which must lie in mapped memory: chorus.mapped_empty). Peers
map it at once, and blocking collectives of at least CHORUS_MAPPED_MIN bytes
on mapped arrays then take single-copy schedules where they are faster.)";

constexpr const char* kCommunicator = R"(A Chorus communicator over the ranks of an MPI communicator.

Communicator(comm=None): comm is an mpi4py communicator, or None for
MPI_COMM_WORLD. mpi4py must be built against the same MPI library as Chorus
(checked: a ValueError otherwise). With comm=None and MPI not initialized
yet, Chorus calls MPI_Init_thread(MPI_THREAD_MULTIPLE) itself and
MPI_Finalize at exit. Creation is collective over comm's ranks.

close() (or leaving a `with` block) completes the operations in flight and
frees the communicator; every open one is closed at exit, before MPI is
finalized. One thread at a time uses a communicator: calls from several
threads are serialized.)";

constexpr const char* kRequest = R"(A nonblocking collective in flight.

It keeps the collective's arrays alive until it completes; the arrays must
not be touched before then. wait() blocks until completion and returns what
the blocking call would (the result's array); test() returns whether it has
completed. Either raises ChorusError if the collective failed.)";

constexpr const char* kAllreduce = R"(Every rank's recvbuf receives the element-wise reduction of all ranks'
sendbuf. recvbuf=None: in place, the result replaces sendbuf (as does
sendbuf=IN_PLACE with recvbuf). Returns the result's array.)";

constexpr const char* kBroadcast = R"(The root's sendbuf is copied into every rank's recvbuf. recvbuf=None: in
place, sendbuf is the data on the root and the result elsewhere. sendbuf
is ignored on the other ranks when recvbuf is given (None will do).
Returns the result's array.)";

constexpr const char* kReduce = R"(The root's recvbuf receives the element-wise reduction of all ranks'
sendbuf. On the root, recvbuf=None (or sendbuf=IN_PLACE) reduces in place;
elsewhere recvbuf is ignored. Returns recvbuf (sendbuf in place).)";

constexpr const char* kReduceScatter = R"(sendbuf holds size blocks of len(recvbuf) elements; rank r's recvbuf
receives the reduction of block r over all ranks. sendbuf=IN_PLACE: recvbuf
holds all the blocks and the result lands at its start. Returns recvbuf.)";

constexpr const char* kReduceScatterv = R"(As reduce_scatter with blocks of recvcounts[i] elements, one after another
(recvcounts: one count per rank, the same on every rank). sendbuf=IN_PLACE:
recvbuf holds all the blocks. Returns recvbuf.)";

constexpr const char* kAllgather = R"(Every rank's recvbuf (size blocks of len(sendbuf) elements) receives every
rank's sendbuf, rank i's as block i. sendbuf=IN_PLACE: this rank's block is
already in recvbuf. Returns recvbuf.)";

constexpr const char* kAllgatherv = R"(Rank i's sendbuf (recvcounts[i] elements) lands in every rank's recvbuf at
displs[i] (default: the blocks one after another). recvcounts agree on
every rank. sendbuf=IN_PLACE: this rank's block is already in place.
Returns recvbuf.)";

constexpr const char* kAlltoall = R"(sendbuf and recvbuf hold size blocks each; block j of rank i's sendbuf
becomes block i of rank j's recvbuf. recvbuf=None (or sendbuf=IN_PLACE with
recvbuf): in place. Returns the result's array.)";

constexpr const char* kAlltoallv = R"(The block for rank j is sendcounts[j] elements at sdispls[j] of sendbuf; the
block from rank i lands at rdispls[i] of recvbuf (recvcounts[i] elements).
Displacements default to the blocks one after another. sendbuf=IN_PLACE:
the blocks to send are recvbuf's and are replaced (sendcounts and sdispls
are ignored). Returns recvbuf.)";

constexpr const char* kGather = R"(The root's recvbuf (size blocks of len(sendbuf) elements) receives every
rank's sendbuf, rank i's as block i. recvbuf is needed on the root only.
sendbuf=IN_PLACE on the root: its block is already in place. Returns
recvbuf.)";

constexpr const char* kGatherv = R"(Rank i's sendbuf lands at displs[i] of the root's recvbuf, as recvcounts[i]
elements. recvbuf, recvcounts and displs are needed on the root only.
sendbuf=IN_PLACE on the root: its block is already in place. Returns
recvbuf.)";

constexpr const char* kScatter = R"(Block i of the root's sendbuf (size blocks of len(recvbuf) elements) goes
to rank i's recvbuf. sendbuf is needed on the root only. recvbuf=IN_PLACE
on the root: its own block stays in sendbuf. Returns recvbuf.)";

constexpr const char* kScatterv = R"(sendcounts[i] elements at displs[i] of the root's sendbuf go to rank i's
recvbuf, whose size must be that count. sendbuf, sendcounts and displs are
needed on the root only. recvbuf=IN_PLACE on the root: its own block stays
in sendbuf. Returns recvbuf.)";

constexpr const char* kBarrier = R"(Returns once every rank has called it.)";

constexpr const char* kNonblocking = R"(): returns a Request at once, and the arrays must stay
untouched until it completes. Request.wait() returns what the blocking call
returns.

)";

constexpr const char* kStream = R"(

Common arguments: op is a chorus.Op or its name ("sum", "max", ...);
stream is None or a CUDA stream object (torch.cuda.Stream,
cupy.cuda.Stream, or one with __cuda_stream__) after whose queued work the
collective starts. Raises TypeError or ValueError for arguments Chorus
cannot take (checked on this rank, before anything is sent) and ChorusError
for a failure of the collective.)";

}  // namespace chorus_py::docs

#endif  // CHORUS_PYTHON_DOCS_H
