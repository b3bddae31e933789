// The intercepted MPI collectives. Each one opens the gate (policy, thread
// level), checks that Chorus computes exactly what MPI defines for the
// arguments every rank agrees on, and then runs the call through Chorus on
// the communicator's Chorus twin; anything else goes to the PMPI function.
//
// Reductions need the same (count, datatype, op) on every rank, so they are
// mapped element for element. Broadcast and all-gather only need matching
// type signatures, which may be spelled differently on different ranks, so
// they always move bytes: a predefined type in place, anything else packed
// and unpacked around the call. Either way every rank runs the same Chorus
// collective with the same byte count.
//
// While a rank waits for Chorus it also drives MPI's progress engine: a
// correct program may have a peer blocked in MPI_Recv for a message this
// rank sent with MPI_Isend before the collective, and over TCP or shared
// memory without single-copy that message moves only while the sender is
// inside MPI. The wait is the library's (spin, yield, nap: CHORUS_SPIN);
// the interposer's idle hook turns MPI's progress engine meanwhile.
#include <vector>

#include "intercept.h"

namespace chorus_mpi {

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    const Fn fn = kAllreduce;
    return intercept(
        fn, comm,
        [&](HostStaging& st) {
            const size_t n = elems(count);
            void* r = st.view(recvbuf, n, type, sendbuf == MPI_IN_PLACE, true);
            const void* s = st.view(sendbuf, n, type, true, false);
            return st.failed() ? MPI_ERR_OTHER : PMPI_Allreduce(s, r, count, type, op, comm);
        },
        [&]() -> int {
            chorus_datatype_t dt;
            chorus_op_t cop;
            if (count < 0 || !map_reduction(type, op, &dt, &cop)) return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            count_intercepted(fn);
            const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
            return run_chorus(fn, comm, twin.t.cc, [&] {
                return chorus_allreduce(send, recvbuf, static_cast<size_t>(count), dt, cop, twin.t.cc, nullptr);
            });
        });
}

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
    const Fn fn = kReduce;
    return intercept(
        fn, comm,
        [&](HostStaging& st) {
            // Intercommunicator: the root group passes MPI_ROOT or MPI_PROC_NULL.
            const bool inter = st.refusing();
            const bool is_root = inter ? root == MPI_ROOT : st.enabled() && rank_of(comm) == root;
            const bool sends = inter ? root != MPI_ROOT && root != MPI_PROC_NULL : true;
            const size_t n = elems(count);
            void* r = is_root ? st.view(recvbuf, n, type, sendbuf == MPI_IN_PLACE, true) : recvbuf;
            const void* s = sends ? st.view(sendbuf, n, type, true, false) : sendbuf;
            return st.failed() ? MPI_ERR_OTHER : PMPI_Reduce(s, r, count, type, op, root, comm);
        },
        [&]() -> int {
            chorus_datatype_t dt;
            chorus_op_t cop;
            if (count < 0 || !map_reduction(type, op, &dt, &cop)) return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (root < 0 || root >= twin.t.size) return kPassThrough;  // MPI reports it
            const bool is_root = twin.t.rank == root;
            if (sendbuf == MPI_IN_PLACE && !is_root) return misuse(fn, comm, "MPI_IN_PLACE is valid on the root only");
            if (is_root && recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            count_intercepted(fn);
            const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
            return run_chorus(fn, comm, twin.t.cc, [&] {
                return chorus_reduce(send, is_root ? recvbuf : nullptr, static_cast<size_t>(count), dt, cop, root,
                                      twin.t.cc, nullptr);
            });
        });
}

int reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op,
                         MPI_Comm comm) {
    const Fn fn = kReduceScatterBlock;
    return intercept(
        fn, comm,
        [&](HostStaging& st) {
            const size_t n = elems(recvcount), p = st.enabled() ? size_of(comm) : 0;
            const bool in_place = sendbuf == MPI_IN_PLACE;
            void* r = st.view(recvbuf, in_place ? n * p : n, type, in_place, true);
            const void* s = st.view(sendbuf, n * p, type, true, false);
            return st.failed() ? MPI_ERR_OTHER : PMPI_Reduce_scatter_block(s, r, recvcount, type, op, comm);
        },
        [&]() -> int {
            chorus_datatype_t dt;
            chorus_op_t cop;
            if (recvcount < 0 || !map_reduction(type, op, &dt, &cop)) return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            count_intercepted(fn);
            // In place, recvbuf holds every block and the result lands at its start.
            const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
            return run_chorus(fn, comm, twin.t.cc, [&] {
                return chorus_reduce_scatter(send, recvbuf, static_cast<size_t>(recvcount), dt, cop, twin.t.cc,
                                              nullptr);
            });
        });
}

int reduce_scatter(const void* sendbuf, void* recvbuf, const int* recvcounts, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm) {
    const Fn fn = kReduceScatter;
    return intercept(
        fn, comm,
        [&](HostStaging& st) {
            size_t total = 0, mine = 0;
            if (st.enabled() && recvcounts) {
                const size_t p = size_of(comm), me = static_cast<size_t>(rank_of(comm));
                for (size_t i = 0; i < p; ++i) total += elems(recvcounts[i]);
                mine = me < p ? elems(recvcounts[me]) : 0;
            }
            const bool in_place = sendbuf == MPI_IN_PLACE;
            void* r = st.view(recvbuf, in_place ? total : mine, type, in_place, true);
            const void* s = st.view(sendbuf, total, type, true, false);
            return st.failed() ? MPI_ERR_OTHER : PMPI_Reduce_scatter(s, r, recvcounts, type, op, comm);
        },
        [&]() -> int {
            chorus_datatype_t dt;
            chorus_op_t cop;
            if (!recvcounts || !map_reduction(type, op, &dt, &cop)) return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            std::vector<size_t> counts(static_cast<size_t>(twin.t.size));
            for (int i = 0; i < twin.t.size; ++i) {
                if (recvcounts[i] < 0) return kPassThrough;  // the same on every rank; MPI reports it
                counts[static_cast<size_t>(i)] = static_cast<size_t>(recvcounts[i]);
            }
            count_intercepted(fn);
            const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
            return run_chorus(fn, comm, twin.t.cc, [&] {
                return chorus_reduce_scatterv(send, recvbuf, counts.data(), dt, cop, twin.t.cc, nullptr);
            });
        });
}

int bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
    const Fn fn = kBcast;
    return intercept(
        fn, comm,
        [&](HostStaging& st) {
            bool reads, writes;
            if (st.refusing()) {
                reads = root == MPI_ROOT;
                writes = root != MPI_ROOT && root != MPI_PROC_NULL;
            } else {
                reads = st.enabled() && rank_of(comm) == root;
                writes = !reads;
            }
            void* b = reads || writes ? st.view(buffer, elems(count), type, reads, writes) : buffer;
            return st.failed() ? MPI_ERR_OTHER : PMPI_Bcast(b, count, type, root, comm);
        },
        [&]() -> int {
            Layout l;
            if (!layout_of(type, count, &l)) return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (buffer == MPI_IN_PLACE) return misuse(fn, comm, "buffer cannot be MPI_IN_PLACE");
            if (root < 0 || root >= twin.t.size) return kPassThrough;
            count_intercepted(fn);
            chorus_comm_t cc = twin.t.cc;
            if (l.direct) {
                return run_chorus(fn, comm, cc, [&] {
                    return chorus_broadcast(buffer, buffer, l.bytes, CHORUS_UINT8, root, cc, nullptr);
                });
            }
            if (!packable(l.bytes)) return too_large(fn, comm, l.bytes);
            const int bytes = static_cast<int>(l.bytes);
            const bool is_root = twin.t.rank == root;
            // PMPI_Pack and PMPI_Unpack read and write host memory only.
            HostStaging host;
            void* user = host.view(buffer, elems(count), type, is_root, !is_root);
            if (host.failed()) return host.raise(fn, comm);
            std::vector<char> staged(l.bytes);
            int pos = 0, rc;
            if (is_root && (rc = pack(user, count, type, staged.data(), bytes, &pos, comm)) != MPI_SUCCESS) return rc;
            rc = run_chorus(fn, comm, cc, [&] {
                return chorus_broadcast(staged.data(), staged.data(), l.bytes, CHORUS_UINT8, root, cc, nullptr);
            });
            if (rc != MPI_SUCCESS || is_root) return rc;
            pos = 0;
            if ((rc = unpack(staged.data(), bytes, &pos, user, count, type, comm)) != MPI_SUCCESS) return rc;
            return host.finish() ? MPI_SUCCESS : host.raise(fn, comm);
        });
}

int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm) {
    const Fn fn = kAllgather;
    return intercept(
        fn, comm,
        [&](HostStaging& st) {
            const bool in_place = sendbuf == MPI_IN_PLACE;
            const size_t p = st.enabled() ? size_of(comm) : 0;
            void* r = st.view(recvbuf, elems(recvcount) * p, recvtype, in_place, true);
            const void* s = st.view(sendbuf, elems(sendcount), sendtype, true, false);
            return st.failed() ? MPI_ERR_OTHER : PMPI_Allgather(s, sendcount, sendtype, r, recvcount, recvtype, comm);
        },
        [&]() -> int {
            const bool in_place = sendbuf == MPI_IN_PLACE;
            Layout rl, sl;
            if (!layout_of(recvtype, recvcount, &rl)) return kPassThrough;
            if (!in_place && !layout_of(sendtype, sendcount, &sl)) return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            const size_t block = rl.bytes, p = static_cast<size_t>(twin.t.size);
            const size_t me = static_cast<size_t>(twin.t.rank);
            if (!in_place && sl.bytes != block)
                return mismatch(fn, comm, "sendcount * sendtype", sl.bytes, "recvcount * recvtype", block);
            count_intercepted(fn);
            chorus_comm_t cc = twin.t.cc;
            // PMPI_Pack and PMPI_Unpack read and write host memory only: a
            // device buffer of a packed type is seen through a host copy.
            HostStaging host;
            char* const user =
                rl.direct ? static_cast<char*>(recvbuf)
                          : static_cast<char*>(host.view(recvbuf, elems(recvcount) * p, recvtype, in_place, true));
            const void* const user_send =
                in_place || sl.direct ? sendbuf : host.view(sendbuf, elems(sendcount), sendtype, true, false);
            if (host.failed()) return host.raise(fn, comm);
            // Where the gathered bytes go: recvbuf itself, or a staging buffer.
            std::vector<char> staged_recv, staged_send;
            char* all = user;
            int rc, pos;
            if (!rl.direct) {
                if (!packable(block * p)) return too_large(fn, comm, block * p);
                staged_recv.resize(block * p);
                all = staged_recv.data();
            }
            const void* send = sendbuf;
            if (in_place) {
                if (!rl.direct) {
                    pos = static_cast<int>(block * me);
                    const char* mine = user + static_cast<MPI_Aint>(me) * recvcount * rl.extent;
                    if ((rc = pack(mine, recvcount, recvtype, all, static_cast<int>(block * p), &pos, comm)) !=
                        MPI_SUCCESS)
                        return rc;
                }
                send = all + block * me;
            } else if (!sl.direct) {
                if (!packable(block)) return too_large(fn, comm, block);
                staged_send.resize(block);
                pos = 0;
                if ((rc = pack(user_send, sendcount, sendtype, staged_send.data(), static_cast<int>(block), &pos,
                               comm)) != MPI_SUCCESS)
                    return rc;
                send = staged_send.data();
            }
            rc = run_chorus(fn, comm, cc, [&] {
                return chorus_allgather(send, all, block, CHORUS_UINT8, cc, nullptr);
            });
            if (rc != MPI_SUCCESS || rl.direct) return rc;
            for (size_t i = 0; i < p; ++i) {
                pos = 0;
                char* dst = user + static_cast<MPI_Aint>(i) * recvcount * rl.extent;
                if ((rc = unpack(all + block * i, static_cast<int>(block), &pos, dst, recvcount, recvtype, comm)) !=
                    MPI_SUCCESS)
                    return rc;
            }
            return host.finish() ? MPI_SUCCESS : host.raise(fn, comm);
        });
}

}  // namespace chorus_mpi

// ---------------------------------------------------------------------------
// The C entry points.

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    return chorus_mpi::allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    return chorus_mpi::bcast(buffer, count, datatype, root, comm);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
    return chorus_mpi::reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
    return chorus_mpi::reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
    return chorus_mpi::reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
    return chorus_mpi::allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

// Chorus communicators are collective to destroy: destroy them while every
// rank can still take part, in the same order everywhere.
int MPI_Finalize(void) {
    if (!chorus_mpi::inside_chorus()) chorus_mpi::teardown();
    return PMPI_Finalize();
}

}  // extern "C"
