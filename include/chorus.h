/*
 * chorus.h - Chorus: collectives for MPI programs over UCX.
 *
 * A Chorus communicator is created from any MPI communicator. MPI launches
 * the processes and bootstraps the group; Chorus moves and reduces the data.
 * Without MPI, the caller's own exchange bootstraps it instead
 * (chorus_comm_create_oob: e.g. torch's Store under torchrun).
 *
 * Conventions that hold for every call in this header:
 *
 *  - Every function returns a chorus_result_t. CHORUS_SUCCESS is 0. On
 *    failure, chorus_comm_last_error() gives a message that says what failed,
 *    where, and which peer was involved.
 *  - Collectives are called by every rank of the communicator, in the same
 *    order, with arguments that agree (count, datatype, op, root), exactly as
 *    MPI requires for its own collectives.
 *  - Every rank receives bit-identical results: each element of a reduction
 *    is computed once, in one fixed order, and then distributed.
 *  - Threads: every call is safe to make from any thread, and calls on
 *    different communicators run concurrently (no process-wide lock is
 *    held while a collective waits). As in MPI, the calls on one
 *    communicator are ordered by the program: one thread at a time, the
 *    same order of collectives on every rank. Several nonblocking
 *    collectives may be in flight on one communicator; they complete in any
 *    order and never mix their data. Use MPI_THREAD_MULTIPLE (or SERIALIZED
 *    / FUNNELED if only one thread calls at a time) as MPI requires for the
 *    MPI calls Chorus makes at creation.
 *  - Failures are shared: when an operation fails on one rank (a local
 *    error at its start, a dead peer, a timeout), every other rank of the
 *    communicator learns of it at once and fails it too, naming the rank
 *    where it happened; the communicator is failed from then on. Bad
 *    arguments are the exception: they are reported on the rank that
 *    passed them, nothing is sent, and the communicator stays usable.
 *  - Waiting: a collective waits as long as its peers need (MPI programs
 *    may be slow). An operation without progress for CHORUS_HANG_WARN_S
 *    seconds (default 60) prints one warning naming it and the ranks it
 *    waits for; CHORUS_TIMEOUT_MS (default 0: never) turns waiting that long
 *    into CHORUS_ERR_TIMEOUT.
 *  - Buffers may be host memory (pageable or pinned), CUDA device memory or
 *    CUDA managed memory, detected per buffer. Ranks may differ (one passes
 *    host memory, another device memory), and so may sendbuf and recvbuf on
 *    one rank. Reductions run where the data lives: CUDA kernels for device
 *    and managed buffers, vectorized CPU loops for host buffers, with
 *    bit-identical results either way. Device memory goes to UCX directly
 *    when UCX was built with CUDA, and through pinned host staging buffers
 *    otherwise (CHORUS_STAGING). Device work without a usable GPU fails with
 *    CHORUS_ERR_CUDA.
 *  - `stream` is a cudaStream_t, or NULL. The collective starts after the
 *    work queued on that stream before the call has finished (for device
 *    buffers always, NULL then meaning the legacy default stream; for host
 *    buffers only when `stream` is not NULL, and with host buffers and a NULL
 *    stream Chorus makes no CUDA call). The collective runs on a stream of
 *    the communicator's own; `stream` is not blocked, so work queued there
 *    after the call that reads the result must come after the collective
 *    has completed: a blocking call returns with the result in recvbuf, and
 *    a nonblocking one has it there once chorus_test() reports it done or
 *    chorus_wait() returns.
 *  - Every collective has a nonblocking twin (chorus_i...) that returns a
 *    request; buffers must stay untouched until the request completes.
 *  - Counts are in elements. A collective with nothing to move (count 0)
 *    still has to be called by every rank.
 *  - Point-to-point messages (chorus_send, chorus_recv and their twins)
 *    share the communicator with the collectives; see their section.
 *
 * Usable from C and C++. No CUDA or UCX type appears here.
 */
#ifndef CHORUS_H
#define CHORUS_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define CHORUS_VERSION_MAJOR 0
#define CHORUS_VERSION_MINOR 1
#define CHORUS_VERSION_PATCH 0

/* Result of every call. */
typedef enum {
    CHORUS_SUCCESS = 0,
    CHORUS_ERR_INVALID_ARGUMENT = 1, /* a bad pointer, count, enum value or handle */
    CHORUS_ERR_UNSUPPORTED = 2,      /* valid, but not supported (e.g. a datatype/op pair) */
    CHORUS_ERR_OUT_OF_MEMORY = 3,    /* an allocation failed */
    CHORUS_ERR_TRANSPORT = 4,        /* UCX, MPI or an out-of-band exchange reported an error */
    CHORUS_ERR_CUDA = 5,             /* the CUDA runtime reported an error, or there is no GPU */
    CHORUS_ERR_TIMEOUT = 6,          /* an operation made no progress for CHORUS_TIMEOUT_MS */
    CHORUS_ERR_PEER_FAILED = 7,      /* a peer process died or became unreachable */
    CHORUS_ERR_COMM_FAILED = 8,      /* the communicator failed earlier; destroy it */
    CHORUS_ERR_MISMATCH = 9,         /* ranks passed arguments that do not agree */
    CHORUS_ERR_INTERNAL = 10,        /* a bug in Chorus; please report it */
    CHORUS_ERR_CONFIG = 11           /* a CHORUS_* environment variable has a bad value */
} chorus_result_t;

/* Element types. Integer arithmetic wraps (two's complement) on overflow.
 * FLOAT16 is IEEE binary16; BFLOAT16 is the upper half of a binary32. Both
 * are computed in binary32 and rounded to nearest even after every operation. */
typedef enum {
    CHORUS_INT8 = 0,
    CHORUS_UINT8 = 1,
    CHORUS_INT16 = 2,
    CHORUS_UINT16 = 3,
    CHORUS_INT32 = 4,
    CHORUS_UINT32 = 5,
    CHORUS_INT64 = 6,
    CHORUS_UINT64 = 7,
    CHORUS_FLOAT16 = 8,
    CHORUS_BFLOAT16 = 9,
    CHORUS_FLOAT32 = 10,
    CHORUS_FLOAT64 = 11
} chorus_datatype_t;

#define CHORUS_NUM_DATATYPES 12

/* Reduction operators.
 * SUM, PROD, MIN, MAX and AVG work on every datatype.
 * MIN and MAX on floating types follow fmin/fmax: a NaN loses to a number.
 * AVG is the SUM divided by the number of ranks, computed once on the sum:
 * for floating types the quotient is rounded to nearest even; for integer
 * types it is C integer division (truncation toward zero) of the wrapped sum.
 * The bitwise (BAND, BOR, BXOR) and logical (LAND, LOR, LXOR) operators work
 * on the integer types only; a floating datatype with one of them is
 * rejected with CHORUS_ERR_UNSUPPORTED. Bitwise operators act on the bits
 * (C's &, |, ^). Logical operators treat any non-zero element as true and
 * give 0 or 1, like C's &&, || and != applied to (x != 0). As for every
 * operator, a reduction over a single rank returns that rank's input as is. */
typedef enum {
    CHORUS_SUM = 0,
    CHORUS_PROD = 1,
    CHORUS_MIN = 2,
    CHORUS_MAX = 3,
    CHORUS_AVG = 4,
    CHORUS_BAND = 5,
    CHORUS_BOR = 6,
    CHORUS_BXOR = 7,
    CHORUS_LAND = 8,
    CHORUS_LOR = 9,
    CHORUS_LXOR = 10
} chorus_op_t;

#define CHORUS_NUM_OPS 11

typedef struct chorus_comm* chorus_comm_t;
typedef struct chorus_request* chorus_request_t;

/* A short, static description of a result code. Never NULL. */
const char* chorus_get_error_string(chorus_result_t result);

/* The detailed message of the last failure on `comm` (what, where, which
 * peer), or of the last failure of a call that had no valid communicator when
 * `comm` is NULL. Valid until the next call on the same communicator (or, for
 * NULL, on the same thread). Never NULL; "" when there was no failure. */
const char* chorus_comm_last_error(chorus_comm_t comm);

/* Create a communicator over the ranks of `mpi_comm`. Collective over
 * `mpi_comm`: every rank calls it. The MPI communicator is duplicated, so
 * Chorus's bootstrap traffic never mixes with the application's; the
 * application may free `mpi_comm` afterwards. MPI must be initialized.
 * Reads the CHORUS_* environment variables (docs/configuration.md). All or nothing:
 * it succeeds on every rank or fails on every rank with the same reason
 * (naming the ranks where it failed). The settings that change the protocol
 * are compared across ranks: one that differs fails creation everywhere
 * with CHORUS_ERR_CONFIG, naming the variable and its value on each group of
 * ranks; so does a bad value on any rank. */
chorus_result_t chorus_comm_create(MPI_Comm mpi_comm, chorus_comm_t* comm);

/* An out-of-band exchange supplied by the caller, for creating a
 * communicator without MPI (chorus_comm_create_oob): e.g. over torch's c10d
 * Store in a torchrun job, where nobody calls MPI_Init. */
typedef struct {
    int rank; /* this process's rank, 0 <= rank < size */
    int size; /* number of ranks */
    /* Allgather: every rank calls it with the same `bytes`; `recvbuf` receives size * bytes,
     * rank i's `sendbuf` at i * bytes. Returns 0 on success, non-zero on failure
     * (e.g. a timeout of the underlying store). Called only from inside chorus_comm_create_oob,
     * on the calling thread, the same number of times on every rank. */
    int (*allgather)(const void* sendbuf, void* recvbuf, size_t bytes, void* arg);
    void* arg;
} chorus_oob_t;

/* Create a communicator over the `oob->size` processes that call this with
 * the same exchange, without MPI: collective over them, every rank calls it,
 * each with its own `oob->rank`. Chorus makes no MPI call for this
 * communicator, at creation or later (collectives, destroy, process exit),
 * so MPI need not be initialized; if it is, the communicator is the same as
 * one from chorus_comm_create. Creation exchanges through `oob->allgather`
 * everything chorus_comm_create exchanges over MPI (the settings, the
 * transports' addresses, which ranks share a host, the clock offsets when
 * tracing); `bytes` varies from call to call (a rank's part is at most a
 * few KiB). Neither `oob` nor the callback is used after the call returns.
 * Reads the CHORUS_* environment variables (docs/configuration.md).
 *
 * All or nothing, as chorus_comm_create: it succeeds on every rank or fails
 * on every rank with the same reason, naming the ranks where it failed; a
 * protocol setting that differs across ranks, or a bad value on any rank,
 * fails creation everywhere with CHORUS_ERR_CONFIG. Errors:
 *  - CHORUS_ERR_INVALID_ARGUMENT on this rank, before any exchange, when
 *    `oob` or `comm` or `oob->allgather` is NULL, `oob->size` < 1, or
 *    `oob->rank` is outside [0, size); and on every rank when the first
 *    exchange shows that the ranks' `rank` and `size` do not fit together
 *    (two ranks with one rank, sizes that differ, or bytes placed at the
 *    wrong rank).
 *  - CHORUS_ERR_TRANSPORT on a rank whose callback returned non-zero; the
 *    message says which call failed and what it returned. That rank makes
 *    no further call. Its peers wait in their own next call of the
 *    callback, which the callback's own timeout must bound (a store's
 *    timeout): Chorus cannot interrupt a call in progress. With that bound,
 *    each peer's callback fails too and so does its creation, with
 *    CHORUS_ERR_TRANSPORT; a callback that never returns leaves its rank
 *    waiting.
 * On failure `*comm` is NULL and chorus_comm_last_error(NULL) gives the
 * message. */
chorus_result_t chorus_comm_create_oob(const chorus_oob_t* oob, chorus_comm_t* comm);

/* Destroy a communicator. Every rank calls it, in any order relative to its
 * other communicators: it waits for no peer. Operations still in flight are
 * completed first (unless the communicator failed); then this rank's
 * resources are released, and data it sent that a busy peer has not taken
 * yet keeps flowing in the background (while Chorus is used, and at
 * MPI_Finalize). The handle is invalid afterwards; passing it again is
 * detected and returns CHORUS_ERR_INVALID_ARGUMENT. */
chorus_result_t chorus_comm_destroy(chorus_comm_t comm);

/* End every operation in flight on `comm` on this rank: each completes
 * (through chorus_test/chorus_wait) with CHORUS_ERR_COMM_FAILED, and so does
 * every later call until the communicator is destroyed. The peers are told
 * at once, and their operations on the communicator fail the same way. Use
 * it to give up on a collective that a failed peer will never finish. */
chorus_result_t chorus_comm_abort(chorus_comm_t comm);

/* Label the operations that this rank starts on `comm` from now on, until
 * the next call: e.g. "gradient bucket 3" or "CG dot product". The label
 * appears in traces (CHORUS_TRACE), in the flight record and in hang
 * reports. It is copied; NULL or "" removes it. Local: ranks may label
 * alike or not, and nothing is sent. At most 255 characters (longer is
 * CHORUS_ERR_INVALID_ARGUMENT). */
chorus_result_t chorus_comm_set_label(chorus_comm_t comm, const char* label);

/* While a call on `comm` waits for its peers (a blocking collective, or
 * chorus_wait on one of its requests), `fn(arg)` is called on the waiting
 * thread after every 8 polls without progress. For a program that must keep
 * another library's progress going meanwhile: the MPI interposer turns MPI's
 * progress engine there, so that a peer blocked in MPI_Recv for this rank's
 * earlier MPI_Isend is not stuck. `fn` must not call Chorus on `comm`.
 * NULL removes it. Set it before other threads use the communicator. */
typedef void (*chorus_idle_fn_t)(void* arg);
chorus_result_t chorus_comm_set_idle(chorus_comm_t comm, chorus_idle_fn_t fn, void* arg);

chorus_result_t chorus_comm_rank(chorus_comm_t comm, int* rank);
chorus_result_t chorus_comm_size(chorus_comm_t comm, int* size);

/* All-reduce: every rank's `recvbuf` receives the element-wise reduction
 * with `op` of all ranks' `sendbuf` (`count` elements of `datatype`).
 * In place when sendbuf == recvbuf: the input is taken from recvbuf.
 * Otherwise the two buffers must not overlap. */
chorus_result_t chorus_allreduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                 chorus_op_t op, chorus_comm_t comm, void* stream);

/* Nonblocking all-reduce. Returns at once with a request that completes
 * through chorus_test() or chorus_wait(). The buffers must stay untouched
 * until the request completes. */
chorus_result_t chorus_iallreduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                  chorus_op_t op, chorus_comm_t comm, void* stream, chorus_request_t* request);

/* Progress every operation in flight on the request's communicator
 * (collectives and point-to-point messages alike) and set *done to 1 if
 * `request` (of either kind) has completed, 0 otherwise. A completed request is
 * released: the handle must not be used again. If the operation failed, its
 * error is returned (and *done is 1). */
chorus_result_t chorus_test(chorus_request_t request, int* done);

/* Wait until `request` completes, then release it. Returns the operation's
 * result. */
chorus_result_t chorus_wait(chorus_request_t request);

/* Broadcast: the root's `sendbuf` (count elements) is copied into every
 * rank's `recvbuf`, the root's included. `sendbuf` is read on the root only
 * (other ranks may pass NULL). In place when sendbuf == recvbuf on the root. */
chorus_result_t chorus_broadcast(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                                 chorus_comm_t comm, void* stream);
chorus_result_t chorus_ibroadcast(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                  int root, chorus_comm_t comm, void* stream, chorus_request_t* request);

/* Reduce: the root's `recvbuf` receives the element-wise reduction of all
 * ranks' `sendbuf`. `recvbuf` is written on the root only (other ranks may
 * pass NULL). In place when sendbuf == recvbuf on the root. */
chorus_result_t chorus_reduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                              chorus_op_t op, int root, chorus_comm_t comm, void* stream);
chorus_result_t chorus_ireduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                               chorus_op_t op, int root, chorus_comm_t comm, void* stream, chorus_request_t* request);

/* Reduce-scatter: `sendbuf` holds size * recvcount elements, block i at
 * i * recvcount; rank r's `recvbuf` (recvcount elements) receives the
 * reduction of block r over all ranks. In place when sendbuf == recvbuf (as
 * MPI_IN_PLACE): the input is read from recvbuf, which then must hold all the
 * blocks, and the result is written at its start. */
chorus_result_t chorus_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, chorus_datatype_t datatype,
                                      chorus_op_t op, chorus_comm_t comm, void* stream);
chorus_result_t chorus_ireduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, chorus_datatype_t datatype,
                                       chorus_op_t op, chorus_comm_t comm, void* stream, chorus_request_t* request);

/* Reduce-scatter with irregular blocks: block i has recvcounts[i] elements
 * (zeros allowed) and starts after blocks 0..i-1. `recvcounts` has one entry
 * per rank and must agree on every rank; it is copied, so it may be freed
 * once the call returns. In place as for chorus_reduce_scatter. */
chorus_result_t chorus_reduce_scatterv(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                       chorus_datatype_t datatype, chorus_op_t op, chorus_comm_t comm, void* stream);
chorus_result_t chorus_ireduce_scatterv(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                        chorus_datatype_t datatype, chorus_op_t op, chorus_comm_t comm, void* stream,
                                        chorus_request_t* request);

/* All-gather: every rank's `recvbuf` (size * sendcount elements) receives
 * every rank's `sendbuf` (sendcount elements), rank i's at i * sendcount.
 * In place when sendbuf == (char*)recvbuf + rank * sendcount * element size:
 * this rank's block is already in place. */
chorus_result_t chorus_allgather(const void* sendbuf, void* recvbuf, size_t sendcount, chorus_datatype_t datatype,
                                 chorus_comm_t comm, void* stream);
chorus_result_t chorus_iallgather(const void* sendbuf, void* recvbuf, size_t sendcount, chorus_datatype_t datatype,
                                  chorus_comm_t comm, void* stream, chorus_request_t* request);

/* ------------------------------------------------------------------------
 * Data movement: all-gather of irregular blocks, all-to-all, gather,
 * scatter, and barrier. Conventions for the calls below:
 *
 *  - A `v` form describes a buffer as one block per rank: block i holds
 *    counts[i] elements (zeros allowed) and starts displs[i] elements from
 *    the start of the buffer. Blocks may come in any order and leave gaps;
 *    the bytes between the blocks of a receive buffer are never written.
 *    Receive blocks must not overlap each other; send blocks may (they are
 *    only read). The arrays are copied: they may be freed once the call
 *    returns, even for the nonblocking twins.
 *  - A buffer, count or array used on the root only (gather's recvbuf,
 *    scatter's sendbuf, and their counts and displacements) is ignored
 *    elsewhere and may be NULL there.
 *  - What a rank passes for its own block must agree with itself:
 *    allgatherv's sendcount is recvcounts[rank], gatherv's sendcount on the
 *    root is recvcounts[root], scatterv's recvcount on the root is
 *    sendcounts[root], and alltoallv's sendcounts[rank] is
 *    recvcounts[rank] (checked: CHORUS_ERR_INVALID_ARGUMENT otherwise).
 *    Across ranks, counts agree as MPI requires: the elements rank i sends
 *    to rank j are the elements j expects from i (CHORUS_CHECK=1 compares
 *    them before each call).
 *  - Outside the in-place forms documented with each call, the send and
 *    receive buffers must not overlap.
 * ------------------------------------------------------------------------ */

/* All-gather of irregular blocks: every rank's `recvbuf` receives rank i's
 * `sendbuf` (sendcount elements, which is recvcounts[i] on that rank) as its
 * block i, recvcounts[i] elements at displs[i]. `recvcounts` must agree on
 * every rank; `displs` may differ. In place when
 * sendbuf == (char*)recvbuf + displs[rank] * element size (as MPI_IN_PLACE:
 * this rank's block is already in place, and sendcount is ignored). */
chorus_result_t chorus_allgatherv(const void* sendbuf, size_t sendcount, void* recvbuf, const size_t* recvcounts,
                                  const size_t* displs, chorus_datatype_t datatype, chorus_comm_t comm, void* stream);
chorus_result_t chorus_iallgatherv(const void* sendbuf, size_t sendcount, void* recvbuf, const size_t* recvcounts,
                                   const size_t* displs, chorus_datatype_t datatype, chorus_comm_t comm, void* stream,
                                   chorus_request_t* request);

/* All-to-all: `sendbuf` and `recvbuf` hold size blocks of `count` elements
 * each, block i at i * count; block j of rank i's sendbuf becomes block i of
 * rank j's recvbuf. In place when sendbuf == recvbuf (as MPI_IN_PLACE for
 * MPI_Alltoall): the blocks to send are taken from recvbuf, and replaced by
 * the blocks received. */
chorus_result_t chorus_alltoall(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                chorus_comm_t comm, void* stream);
chorus_result_t chorus_ialltoall(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                 chorus_comm_t comm, void* stream, chorus_request_t* request);

/* All-to-all of irregular blocks: the block for rank j is sendcounts[j]
 * elements at sdispls[j] of `sendbuf`; the block from rank i lands at
 * rdispls[i] of `recvbuf` (recvcounts[i] elements, which must be what rank i
 * sends this rank). In place when sendbuf == recvbuf (as MPI_IN_PLACE):
 * sendcounts and sdispls are ignored (and may be NULL), the block for rank j
 * is taken from recvbuf's block j and replaced by the block from rank j, so
 * recvcounts[j] must then be what rank j expects from this rank too. */
chorus_result_t chorus_alltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls, void* recvbuf,
                                 const size_t* recvcounts, const size_t* rdispls, chorus_datatype_t datatype,
                                 chorus_comm_t comm, void* stream);
chorus_result_t chorus_ialltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls, void* recvbuf,
                                  const size_t* recvcounts, const size_t* rdispls, chorus_datatype_t datatype,
                                  chorus_comm_t comm, void* stream, chorus_request_t* request);

/* Gather: the root's `recvbuf` (size * count elements) receives every rank's
 * `sendbuf` (count elements), rank i's at i * count. `recvbuf` is written on
 * the root only (other ranks may pass NULL). In place on the root when
 * sendbuf == (char*)recvbuf + root * count * element size: its own block is
 * already in place. */
chorus_result_t chorus_gather(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                              chorus_comm_t comm, void* stream);
chorus_result_t chorus_igather(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                               chorus_comm_t comm, void* stream, chorus_request_t* request);

/* Gather of irregular blocks: rank i's `sendbuf` (sendcount elements) lands
 * at displs[i] of the root's `recvbuf`, as recvcounts[i] elements.
 * `recvbuf`, `recvcounts` and `displs` are read on the root only (other
 * ranks may pass NULL). In place on the root when
 * sendbuf == (char*)recvbuf + displs[root] * element size (its sendcount is
 * then ignored). */
chorus_result_t chorus_gatherv(const void* sendbuf, size_t sendcount, void* recvbuf, const size_t* recvcounts,
                               const size_t* displs, chorus_datatype_t datatype, int root, chorus_comm_t comm,
                               void* stream);
chorus_result_t chorus_igatherv(const void* sendbuf, size_t sendcount, void* recvbuf, const size_t* recvcounts,
                                const size_t* displs, chorus_datatype_t datatype, int root, chorus_comm_t comm,
                                void* stream, chorus_request_t* request);

/* Scatter: block i of the root's `sendbuf` (size * count elements, block i
 * at i * count) goes to rank i's `recvbuf` (count elements). `sendbuf` is
 * read on the root only (other ranks may pass NULL). In place on the root
 * when recvbuf == (char*)sendbuf + root * count * element size: its own
 * block stays where it is. */
chorus_result_t chorus_scatter(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                               chorus_comm_t comm, void* stream);
chorus_result_t chorus_iscatter(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                                chorus_comm_t comm, void* stream, chorus_request_t* request);

/* Scatter of irregular blocks: sendcounts[i] elements at displs[i] of the
 * root's `sendbuf` go to rank i's `recvbuf` (recvcount elements, which must
 * be sendcounts[i]). `sendbuf`, `sendcounts` and `displs` are read on the
 * root only (other ranks may pass NULL). In place on the root when
 * recvbuf == (char*)sendbuf + displs[root] * element size (its recvcount is
 * then ignored). */
chorus_result_t chorus_scatterv(const void* sendbuf, const size_t* sendcounts, const size_t* displs, void* recvbuf,
                                size_t recvcount, chorus_datatype_t datatype, int root, chorus_comm_t comm,
                                void* stream);
chorus_result_t chorus_iscatterv(const void* sendbuf, const size_t* sendcounts, const size_t* displs, void* recvbuf,
                                 size_t recvcount, chorus_datatype_t datatype, int root, chorus_comm_t comm,
                                 void* stream, chorus_request_t* request);

/* Barrier: returns (the nonblocking twin: completes) only once every rank of
 * the communicator has called it. With a non-NULL `stream` it also starts
 * after the work queued there, like every collective. */
chorus_result_t chorus_barrier(chorus_comm_t comm, void* stream);
chorus_result_t chorus_ibarrier(chorus_comm_t comm, void* stream, chorus_request_t* request);

/* ------------------------------------------------------------------------
 * Point-to-point messages between two ranks of a communicator, as NCCL has
 * them. Unlike the collectives, only the two ranks involved call: a send to
 * `peer` is matched by a receive from the sender on `peer`.
 *
 *  - Matching: by (peer, tag). Messages of one sender with one tag are
 *    received in the order they were sent; a message of another tag may be
 *    received first. `tag` is 0 or more (any int); `peer` is a rank of the
 *    communicator, this rank included (a message to itself). Point-to-point
 *    tags are apart from the collectives: the two never match each other,
 *    and may be interleaved freely on one communicator.
 *  - Sizes: a receive must be posted for exactly the message's size in
 *    bytes (count times the datatype's size; the datatypes may differ). If
 *    not, it fails with CHORUS_ERR_MISMATCH (the message names both sizes,
 *    the peer and the tag); the message is dropped and the communicator
 *    stays usable. A count of 0 is a message with no data.
 *  - A send never waits for its receive: it copies the data (a device
 *    buffer through pinned host memory) and returns, so two ranks may each
 *    send to the other and then receive, whatever the size. The data goes
 *    out while later calls on the communicator progress it, and
 *    chorus_comm_destroy waits for it to be received (so every message
 *    sent must be received). The nonblocking send's request is complete at
 *    once.
 *  - A receive waits (its nonblocking twin completes) once the data is in
 *    `buf`. `stream` as for collectives: the call starts after the work
 *    queued there; a device buffer is written on the communicator's own
 *    stream and holds the data once the call returns or the request
 *    completes.
 *  - Requests are completed and released by chorus_test and chorus_wait,
 *    as the collectives' are.
 *  - Failures: on a failed communicator these calls fail with
 *    CHORUS_ERR_COMM_FAILED. A dead peer ends the receives from it with
 *    CHORUS_ERR_PEER_FAILED (or a transport error), and CHORUS_TIMEOUT_MS
 *    ends a receive without progress for that long with CHORUS_ERR_TIMEOUT;
 *    either fails the communicator, and its peers learn of it. Once the
 *    communicator has failed (here, or at a peer that told), the receives
 *    still waiting end with that failure. A bad
 *    argument fails only the call (CHORUS_ERR_INVALID_ARGUMENT).
 *    Communicators of more than 524288 ranks have no point-to-point
 *    (CHORUS_ERR_UNSUPPORTED).
 * ------------------------------------------------------------------------ */

/* Send `count` elements of `datatype` from `buf` to rank `peer` with `tag`.
 * Returns once the data has been copied: `buf` may be reused at once. */
chorus_result_t chorus_send(const void* buf, size_t count, chorus_datatype_t datatype, int peer, int tag,
                            chorus_comm_t comm, void* stream);

/* Receive the next message from rank `peer` with `tag` into `buf`, of
 * exactly `count` elements of `datatype` (in bytes). Returns once it is in
 * `buf`. */
chorus_result_t chorus_recv(void* buf, size_t count, chorus_datatype_t datatype, int peer, int tag, chorus_comm_t comm,
                            void* stream);

/* Nonblocking send: as chorus_send, with a request (complete at once) that
 * chorus_test or chorus_wait releases. */
chorus_result_t chorus_isend(const void* buf, size_t count, chorus_datatype_t datatype, int peer, int tag,
                             chorus_comm_t comm, void* stream, chorus_request_t* request);

/* Nonblocking receive: returns at once with a request that completes
 * through chorus_test() or chorus_wait() once the data is in `buf` (which
 * must stay untouched until then). Receives posted earlier for the same
 * (peer, tag) are matched first. */
chorus_result_t chorus_irecv(void* buf, size_t count, chorus_datatype_t datatype, int peer, int tag, chorus_comm_t comm,
                             void* stream, chorus_request_t* request);

/* ------------------------------------------------------------------------
 * Mapped memory and windows: single-copy collectives.
 *
 * Memory from chorus_mem_alloc can be mapped by the other processes of its
 * host (it is backed by a memory file). A collective whose buffers lie in
 * such memory on every rank of a host lets each rank read its peers'
 * inputs in place, reduce them as it reads, and write results straight
 * into their outputs: each byte moves once, at the rate of a plain copy,
 * without a system call per transfer (docs/performance.md). Buffers
 * elsewhere work as always; any mix of the two is correct.
 *
 * Registering a region as a window of a communicator (collective) maps
 * every rank's region into its peers at once and, from then on, lets the
 * cost model count on single-copy access: a blocking call of at least
 * CHORUS_MAPPED_MIN bytes first agrees, among the ranks (a 4-byte
 * all-reduce), whether every rank's buffers lie in mapped memory, and is
 * then planned accordingly (CHORUS_ALGO can force the one-sided
 * algorithms). Nonblocking calls do not agree (their start never waits for
 * a peer) and are planned as unmapped; their one-sided steps still read
 * mapped peers in place.
 * ------------------------------------------------------------------------ */

/* Allocate `bytes` (rounded up to whole pages) of zeroed host memory that
 * the host's ranks can map. Local. CHORUS_ERR_INVALID_ARGUMENT for a zero
 * size or a null `ptr`; CHORUS_ERR_OUT_OF_MEMORY if the system refuses
 * (the reason in chorus_comm_last_error(NULL)). */
chorus_result_t chorus_mem_alloc(size_t bytes, void** ptr);

/* Free memory from chorus_mem_alloc (NULL: nothing). Local, and allowed
 * while the region is registered: the window then stays until
 * deregistered, its memory is never read again, and peers let go of their
 * mappings of it. CHORUS_ERR_INVALID_ARGUMENT for a pointer that is not the
 * start of such memory. */
chorus_result_t chorus_mem_free(void* ptr);

/* 1 when [ptr, ptr + bytes) lies in one allocation of chorus_mem_alloc,
 * else 0. Local. */
int chorus_mem_mapped(const void* ptr, size_t bytes);

/* Register [ptr, ptr + bytes) of this rank (inside one chorus_mem_alloc
 * allocation) as a window of `comm`. Collective: every rank registers its
 * own region, of any size, and all succeed or all fail
 * (CHORUS_ERR_INVALID_ARGUMENT when a rank's region is not mapped memory,
 * is empty, or starts where one of its windows does). */
chorus_result_t chorus_comm_register(chorus_comm_t comm, void* ptr, size_t bytes);

/* Deregister the window that starts at `ptr` on this rank. Collective; all
 * succeed or all fail. Windows end with their communicator. */
chorus_result_t chorus_comm_deregister(chorus_comm_t comm, void* ptr);

/* ------------------------------------------------------------------------
 * Memory and settings, for tools built on Chorus (the MPI interposer
 * libchorus_mpi.so is one). None of these is collective.
 * ------------------------------------------------------------------------ */

/* Memory kinds, as Chorus tells them apart per pointer. */
typedef enum {
    CHORUS_MEMORY_HOST = 0,        /* ordinary host memory (malloc, stack, ...) */
    CHORUS_MEMORY_PINNED_HOST = 1, /* page-locked host memory registered with CUDA */
    CHORUS_MEMORY_DEVICE = 2,      /* CUDA device memory */
    CHORUS_MEMORY_MANAGED = 3      /* CUDA managed (unified) memory */
} chorus_memory_kind_t;

/* What kind of memory `ptr` points into. NULL, memory CUDA does not know,
 * and every pointer of a library built without CUDA or of a process that
 * holds no CUDA context are CHORUS_MEMORY_HOST; in those cases no CUDA call
 * is made. */
chorus_result_t chorus_memory_kind(const void* ptr, chorus_memory_kind_t* kind);

/* 0 while chorus_memory_kind would say CHORUS_MEMORY_HOST of every pointer
 * (a library built without CUDA, no GPU, or a process that holds no CUDA
 * context yet), so a caller may skip asking it per pointer; 1 from when
 * device memory may exist. Once 1, it stays 1. Makes no CUDA call that
 * could create a context. */
int chorus_device_memory_possible(void);

/* Copy `bytes` from `src` to `dst`, whatever memory either is in, and return
 * once the copy is complete. Device memory is copied on CUDA's legacy default
 * stream; a copy between host buffers is a plain memcpy. The two ranges must
 * not overlap. A CUDA failure (or device memory without a usable GPU) is
 * CHORUS_ERR_CUDA. */
chorus_result_t chorus_memcpy(void* dst, const void* src, size_t bytes);

/* 1 if this library was built with CUDA (device buffers work wherever a GPU
 * is present), 0 otherwise. */
int chorus_has_cuda(void);

/* The value that a communicator created now would use for the setting
 * `name` (a CHORUS_* variable, docs/configuration.md), as Chorus prints it: the default
 * when the variable is unset. *value stays valid until the next call of this
 * function on the same thread. A bad value in the environment returns
 * CHORUS_ERR_CONFIG (chorus_comm_last_error(NULL) names the variable and the
 * value); a name Chorus does not know, CHORUS_ERR_INVALID_ARGUMENT. */
chorus_result_t chorus_setting(const char* name, const char** value);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* CHORUS_H */
