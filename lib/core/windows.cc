// Mapped memory and the communicator: windows, and the agreement of a call
// on whether every rank's buffers lie in mapped memory.
//
// A call's choice of algorithm may count on single-copy access through
// mappings only when every rank's buffers are mapped, which no rank knows
// of the others: so, before planning, a blocking call that could use it
// (a collective with a one-sided algorithm, of at least CHORUS_MAPPED_MIN
// bytes, every rank on one host, with a window registered or
// CHORUS_MAPPED=always) runs a 4-byte all-reduce of "mine are mapped" among
// the ranks. Whether a call agrees depends only on what every rank knows
// alike, so every rank runs the agreement or none does; a rank whose
// buffers are not mapped (device memory, a stream, plain memory) says so,
// and the call is priced as unmapped on every rank. Nonblocking calls never
// agree (their start must not wait for the peers), and run as unmapped: the
// one-sided steps still reach mapped regions through the mappings, pair by
// pair (exec/executor_one_sided.cc).
#include <string>

#include "core/communicator.h"
#include "net/shm/mapped.h"
#include "reduce/datatype.h"

namespace chorus {

namespace {

// The collectives that have one-sided algorithms (coll/one_sided), in their
// block forms: only their choice can change.
bool has_one_sided(const coll::CollArgs& a) {
    switch (a.coll) {
        case coll::Collective::Allreduce:
        case coll::Collective::Broadcast:
        case coll::Collective::Reduce:
        case coll::Collective::Gather:
        case coll::Collective::Scatter: return true;
        case coll::Collective::ReduceScatter:
        case coll::Collective::Allgather: return a.counts.empty();
        default: return false;
    }
}

}  // namespace

bool Communicator::agrees_mapped(const coll::CollArgs& args) const {
    if (config_.mapped == MappedCalls::Off || (config_.mapped == MappedCalls::Auto && windows_.empty())) return false;
    return args.size > 1 && args.one_sided && has_one_sided(args) && args.message_bytes() >= config_.mapped_min_bytes;
}

chorus_result_t Communicator::agree_mapped(const coll::CollArgs& args, const void* sendbuf, const void* recvbuf,
                                           bool* mapped) {
    // This rank's part: each buffer it uses lies in mapped memory.
    int32_t mine = 1;
    net::PeerMemory* pm = transport_->peer_memory();
    const size_t esize = datatype_size(args.dtype);
    for (coll::Side side : {coll::Side::Send, coll::Side::Recv}) {
        const void* buf = side == coll::Side::Send && !args.in_place ? sendbuf : recvbuf;
        size_t elems = 0;
        if (args.blocks(side) == 0 || !args.extent(side, &elems) || elems == 0) continue;
        net::MappedRef ref;
        if (!pm || !buf || !pm->mapped_here(buf, elems * esize, &ref)) mine = 0;
    }
    coll::CollArgs g;
    g.coll = coll::Collective::Allreduce;
    g.count = 1;
    g.dtype = CHORUS_INT32;
    g.op = CHORUS_MIN;
    fill(g);
    // Whatever CHORUS_ALGO forces for all-reduces: the flat one through the
    // publish slots (in place, a fraction of a microsecond) where the ranks
    // share them, else recursive doubling.
    const coll::Algorithm& algo =
        coll::find_algorithm(coll::Collective::Allreduce, g.slot_bytes ? "shm_flat" : "recursive_doubling");
    const Plan plan{&algo, plans_.schedule(g, algo)};
    int32_t all = 0;
    chorus_result_t rc;
    if (g.slot_bytes && may_run_in_place(nullptr)) {
        rc = run_planned_inline(g, plan, &mine, &all);
    } else {
        Operation* op = start_filled(g, &mine, &all, nullptr, &plan);
        wait(op);
        rc = release(op);
    }
    *mapped = rc == CHORUS_SUCCESS && all == 1;
    return rc;
}

void Communicator::register_window(void* base, size_t bytes) {
    // Every rank's reference, and whether it may register: the result is
    // the same on every rank.
    net::PeerMemory* pm = transport_->peer_memory();
    net::MappedRef ref;
    bool ok = base && bytes && net::mapped::find(base, bytes, &ref);
    for (const Window& w : windows_)
        if (w.base == base) ok = false;
    const uint64_t part[5] = {ok ? 1u : 0u, ref.serial, ref.fd, ref.offset, ref.size};
    std::vector<uint64_t> all(5 * static_cast<size_t>(size()));
    exchange(coll::Collective::Allgather, "bruck", 5, CHORUS_UINT64, part, all.data(), "registering a window");
    std::string refused;
    for (int r = 0; r < size(); ++r)
        if (!all[5 * r]) refused += cat(refused.empty() ? "" : ",", r);
    if (!refused.empty())
        fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_comm_register: rank(s) ", refused,
             " passed a region that is not memory from chorus_mem_alloc, is empty, or is registered already");
    Window w{base, bytes, std::vector<uint64_t>(static_cast<size_t>(size()))};
    for (int r = 0; r < size(); ++r) {
        const net::MappedRef peer{all[5 * r + 1], all[5 * r + 2], all[5 * r + 3], all[5 * r + 4]};
        w.serials[r] = peer.serial;
        // Mapped now, so that no call pays for it (a region that cannot be
        // mapped here is reached through the kernel instead; without
        // single-copy access, ranks on several hosts, nothing is mapped).
        if (pm && r != rank()) pm->map_peer(r, peer);
    }
    windows_.push_back(std::move(w));
    plans_.forget_last();
}

void Communicator::deregister_window(void* base) {
    size_t at = windows_.size();
    for (size_t i = 0; i < windows_.size(); ++i)
        if (windows_[i].base == base) at = i;
    const uint64_t part = at < windows_.size() ? 1 : 0;
    std::vector<uint64_t> all(static_cast<size_t>(size()));
    exchange(coll::Collective::Allgather, "bruck", 1, CHORUS_UINT64, &part, all.data(), "deregistering a window");
    std::string unknown;
    for (int r = 0; r < size(); ++r)
        if (!all[r]) unknown += cat(unknown.empty() ? "" : ",", r);
    if (!unknown.empty())
        fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_comm_deregister: rank(s) ", unknown,
             " passed a region that is not a window of this communicator");
    if (net::PeerMemory* pm = transport_->peer_memory())
        for (int r = 0; r < size(); ++r)
            if (r != rank()) pm->unmap_peer(r, windows_[at].serials[r]);
    windows_.erase(windows_.begin() + static_cast<long>(at));
    plans_.forget_last();
}

}  // namespace chorus
