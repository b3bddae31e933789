#include "core/validate.h"

#include <algorithm>
#include <cstdint>

#include "core/handles.h"
#include "reduce/datatype.h"

namespace chorus::api {

namespace {

using coll::Collective;
using coll::Side;

enum class Who { Everyone, Root, Nobody };  // whose buffer the collective uses
// The in-place form: sendbuf == recvbuf; sendbuf == recvbuf + this rank's
// receive block; recvbuf == sendbuf + this rank's send block (the root of a
// scatter); none.
enum class InPlace { Same, OwnBlock, OwnSendBlock, None };

// The names of a side's arguments: its count (one block) or its arrays (one
// block per rank); nullptr where the call has no such argument. `own`: the
// arrays are this side's arguments (reduce_scatterv's send blocks are its
// recvcounts).
struct Names {
    const char* count;
    const char* counts;
    const char* displs;
    bool own = true;
};

struct Rule {
    Collective coll;
    bool v;  // reduce_scatterv
    bool has_op, has_root;
    Who send, recv;
    InPlace in_place;
    Names send_names, recv_names;
};

constexpr Names kCount{"count", nullptr, nullptr};
constexpr Names kSendcount{"sendcount", nullptr, nullptr};
constexpr Names kRecvcount{"recvcount", nullptr, nullptr};
constexpr Names kRecvcounts{nullptr, "recvcounts", nullptr};
constexpr Names kRecvcountsShared{nullptr, "recvcounts", nullptr, false};  // the send side's blocks
constexpr Names kRecvDispls{nullptr, "recvcounts", "displs"};
constexpr Names kSendDispls{nullptr, "sendcounts", "displs"};
constexpr Names kSdispls{nullptr, "sendcounts", "sdispls"};
constexpr Names kRdispls{nullptr, "recvcounts", "rdispls"};
constexpr Names kNone{nullptr, nullptr, nullptr};

using C = Collective;
constexpr Who kAll = Who::Everyone, kRoot = Who::Root, kNobody = Who::Nobody;

// clang-format off
constexpr Rule kRules[] = {
    // collective         v      op     root   send     recv     in place               send names         recv names
    {C::Allreduce,       false, true,  false, kAll,    kAll,    InPlace::Same,         kCount,            kCount},
    {C::Broadcast,       false, false, true,  kRoot,   kAll,    InPlace::Same,         kCount,            kCount},
    {C::Reduce,          false, true,  true,  kAll,    kRoot,   InPlace::Same,         kCount,            kCount},
    {C::ReduceScatter,   false, true,  false, kAll,    kAll,    InPlace::Same,         kRecvcount,        kRecvcount},
    {C::ReduceScatter,   true , true,  false, kAll,    kAll,    InPlace::Same,         kRecvcountsShared, kRecvcounts},
    {C::Allgather,       false, false, false, kAll,    kAll,    InPlace::OwnBlock,     kSendcount,        kSendcount},
    {C::Allgatherv,      false, false, false, kAll,    kAll,    InPlace::OwnBlock,     kSendcount,        kRecvDispls},
    {C::Alltoall,        false, false, false, kAll,    kAll,    InPlace::Same,         kCount,            kCount},
    {C::Alltoallv,       false, false, false, kAll,    kAll,    InPlace::Same,         kSdispls,          kRdispls},
    {C::Gather,          false, false, true,  kAll,    kRoot,   InPlace::OwnBlock,     kCount,            kCount},
    {C::Gatherv,         false, false, true,  kAll,    kRoot,   InPlace::OwnBlock,     kSendcount,        kRecvDispls},
    {C::Scatter,         false, false, true,  kRoot,   kAll,    InPlace::OwnSendBlock, kCount,            kCount},
    {C::Scatterv,        false, false, true,  kRoot,   kAll,    InPlace::OwnSendBlock, kSendDispls,       kRecvcount},
    {C::Barrier,         false, false, false, kNobody, kNobody, InPlace::None,         kNone,             kNone},
};
// clang-format on

const Rule& rule_of(Collective coll, bool v) {
    for (const Rule& r : kRules)
        if (r.coll == coll && r.v == v) return r;
    return kRules[0];
}

bool mul(size_t a, size_t b, size_t* out) {
    if (a && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

const char* on_root(const Rule& rule, Who who) {
    return rule.has_root && who == Who::Root ? " (on the root)" : "";
}

// A block of a buffer, in bytes from its start, and whose block it is.
struct Span {
    size_t begin, end;
    int rank;
};

// The side's non-empty blocks in bytes, sorted by where they start (sides
// without displacements: one span over the whole extent, which they fill).
// Into `out` (reused: a steady stream of calls allocates nothing).
const std::vector<Span>& spans(const coll::CollArgs& a, Side side, bool displaced, size_t esize, size_t extent_bytes,
                               std::vector<Span>& out) {
    out.clear();
    if (!displaced) {
        if (extent_bytes) out.push_back({0, extent_bytes, -1});
        return out;
    }
    for (int i = 0, n = a.blocks(side); i < n; ++i) {
        const coll::Block b = a.block(side, i);
        if (b.count) out.push_back({b.offset * esize, (b.offset + b.count) * esize, i});
    }
    std::sort(out.begin(), out.end(), [](const Span& x, const Span& y) { return x.begin < y.begin; });
    return out;
}

// CollArgs' defaults, keeping the storage of its arrays (moved out and back:
// a steady stream of calls neither allocates nor copies).
void reset_keeping_arrays(coll::CollArgs& a) {
    std::vector<size_t> arrays[4] = {std::move(a.counts), std::move(a.displs), std::move(a.send_counts),
                                     std::move(a.send_displs)};
    a = coll::CollArgs();
    std::vector<size_t>* into[4] = {&a.counts, &a.displs, &a.send_counts, &a.send_displs};
    for (int i = 0; i < 4; ++i) {
        arrays[i].clear();
        into[i]->swap(arrays[i]);
    }
}

// Whether any span of `a` (at base pa) overlaps one of `b` (at base pb,
// sorted and disjoint) in memory.
bool overlap(const std::vector<Span>& a, uintptr_t pa, const std::vector<Span>& b, uintptr_t pb) {
    for (const Span& s : a) {
        const uintptr_t begin = pa + s.begin, end = pa + s.end;
        auto it =
            std::upper_bound(b.begin(), b.end(), begin, [pb](uintptr_t v, const Span& t) { return v < pb + t.end; });
        if (it != b.end() && pb + it->begin < end) return true;
    }
    return false;
}

// This rank's own block of a side: the only one, or its rank's.
coll::Block own_block(const coll::CollArgs& a, Side side) {
    return a.block(side, a.per_rank(side) ? a.rank : 0);
}

// "recvcounts[3] = 5" or "sendcount 5".
std::string own_text(const Names& n, const coll::CollArgs& a, Side side) {
    const size_t count = own_block(a, side).count;
    if (a.per_rank(side) && n.counts) return cat(n.counts, "[", a.rank, "] = ", count);
    return cat(n.count ? n.count : "count", " ", count);
}

// What overflows when a side's extent does.
std::string extent_text(const Names& n, const coll::CollArgs& a, Side side, bool in_elements) {
    if (n.counts && !n.displs) return cat("the sum of ", n.counts);
    if (n.counts) return cat("the end of the last block of ", n.counts, " and ", n.displs);
    if (in_elements || a.per_rank(side)) return cat(n.count, " ", a.count, " times ", a.size, " ranks");
    return cat(n.count, " ", a.count);
}

}  // namespace

chorus_result_t report(Communicator* comm, chorus_result_t rc, const std::string& message) {
    if (comm) comm->last_error() = message;
    thread_error() = message;
    return rc;
}

chorus_result_t invalid(Communicator* comm, const std::string& message) {
    return report(comm, CHORUS_ERR_INVALID_ARGUMENT, message);
}

chorus_result_t not_live(chorus_comm_t handle, const char* fn) {
    return invalid(
        nullptr, cat(fn, ": comm is ", handle ? "not a live communicator" : "NULL", " (destroyed, or never created)"));
}

chorus_result_t no_request(Communicator* c, const char* fn) {
    return invalid(c, cat(fn, ": request (output) is NULL"));
}

chorus_result_t check_not_failed(const char* fn, Communicator* c) {
    if (!c->failed_before_next()) return CHORUS_SUCCESS;
    c->last_error() = cat(fn, ": communicator failed earlier: ", c->failure());
    return CHORUS_ERR_COMM_FAILED;
}

chorus_result_t validate(Collective coll, const char* fn, Communicator* c, const Args& in, Call* call) {
    const Rule& rule = rule_of(coll, in.reduce_scatterv && coll == Collective::ReduceScatter);
    const auto dt = static_cast<chorus_datatype_t>(in.datatype);
    const auto op = static_cast<chorus_op_t>(in.op);
    if (!datatype_valid(in.datatype))
        return invalid(c, cat(fn, ": datatype ", in.datatype, " is not a chorus_datatype_t"));
    if (rule.has_op && !op_valid(in.op)) return invalid(c, cat(fn, ": op ", in.op, " is not a chorus_op_t"));
    if (rule.has_op && !op_supported(dt, op))
        return report(c, CHORUS_ERR_UNSUPPORTED,
                      cat(fn, ": op ", op_name(op), " is not defined on datatype ", datatype_name(dt),
                          " (bitwise and logical ops take integer types only)"));
    if (const chorus_result_t rc = check_not_failed(fn, c); rc != CHORUS_SUCCESS) return rc;
    const int rank = c->rank(), size = c->size();
    if (rule.has_root && (in.root < 0 || in.root >= size))
        return invalid(c, cat(fn, ": root ", in.root, " is out of range for ", size, " ranks"));
    const bool is_root = rule.has_root && rank == in.root;
    const bool uses_send = rule.send == Who::Everyone || (rule.send == Who::Root && is_root);
    const bool uses_recv = rule.recv == Who::Everyone || (rule.recv == Who::Root && is_root);
    // In place as MPI_IN_PLACE for MPI_Alltoall(v): the send arguments are ignored.
    const bool same = rule.in_place == InPlace::Same && uses_send && uses_recv && in.sendbuf == in.recvbuf;

    coll::CollArgs& a = call->args;
    reset_keeping_arrays(a);
    a.coll = rule.coll;
    a.dtype = dt;
    if (rule.has_op) a.op = op;
    if (rule.has_root) a.root = in.root;
    a.rank = rank;
    a.size = size;
    a.count = in.count;
    a.in_place = same;
    // The arrays this rank needs, copied: they may be freed once the call returns.
    struct Array {
        const char* name;
        const size_t* given;
        std::vector<size_t>* into;
        bool needed;
        Who who;
    };
    const Array arrays[] = {
        {rule.recv_names.counts, in.counts, &a.counts, uses_recv, rule.recv},
        {rule.recv_names.displs, in.displs, &a.displs, uses_recv, rule.recv},
        {rule.send_names.counts, in.send_counts, &a.send_counts, uses_send && !same && rule.send_names.own, rule.send},
        {rule.send_names.displs, in.send_displs, &a.send_displs, uses_send && !same && rule.send_names.own, rule.send},
    };
    for (const Array& arr : arrays) {
        if (!arr.name || !arr.needed) continue;
        if (!arr.given) return invalid(c, cat(fn, ": ", arr.name, on_root(rule, arr.who), " is NULL"));
        arr.into->assign(arr.given, arr.given + size);
    }

    // How far each buffer reaches, in elements and bytes.
    const size_t esize = datatype_size(dt);
    size_t extent[2] = {0, 0}, bytes[2] = {0, 0};
    for (Side side : {Side::Send, Side::Recv}) {
        const int k = side == Side::Send ? 0 : 1;
        const bool elements_ok = a.extent(side, &extent[k]);
        if (!elements_ok || !mul(extent[k], esize, &bytes[k])) {
            const Names& n = k == 0 ? rule.send_names : rule.recv_names;
            return invalid(c, cat(fn, ": ", extent_text(n, a, side, !elements_ok), " overflows the byte size"));
        }
    }
    if (uses_send && bytes[0] && !in.sendbuf)
        return invalid(c, cat(fn, ": sendbuf", on_root(rule, rule.send), " is NULL with a non-zero count"));
    if (uses_recv && bytes[1] && !in.recvbuf)
        return invalid(c, cat(fn, ": recvbuf", on_root(rule, rule.recv), " is NULL with a non-zero count"));

    bool in_place = !uses_send && uses_recv;  // an unused send buffer is bound to the receive buffer
    if (uses_send && uses_recv) {
        const auto* sb = static_cast<const char*>(in.sendbuf);
        const auto* rb = static_cast<const char*>(in.recvbuf);
        switch (rule.in_place) {
            case InPlace::Same: in_place = same; break;
            case InPlace::OwnBlock: {
                const coll::Block own = own_block(a, Side::Recv);
                in_place = own.count && sb == rb + own.offset * esize;
                break;
            }
            case InPlace::OwnSendBlock: {
                const coll::Block own = own_block(a, Side::Send);
                in_place = own.count && rb == sb + own.offset * esize;
                break;
            }
            case InPlace::None: in_place = false; break;
        }
        // What this rank sends itself is what it receives from itself.
        if (!in_place && own_block(a, Side::Send).count != own_block(a, Side::Recv).count)
            return invalid(
                c, cat(fn, ": ", own_text(rule.send_names, a, Side::Send), " but ",
                       own_text(rule.recv_names, a, Side::Recv), " (this rank's own block: the counts must be equal)"));
    }
    a.in_place = in_place;
    // Displaced receive blocks must not overlap each other (send blocks may:
    // they are only read).
    const bool recv_displaced = uses_recv && !a.displs.empty() && a.blocks(Side::Recv) > 1;
    const bool send_displaced = uses_send && !a.send_displs.empty() && a.blocks(Side::Send) > 1;
    // Spans only where blocks are displaced: the plain forms allocate nothing.
    thread_local std::vector<Span> recv_spans, send_spans;
    if (recv_displaced) {
        spans(a, Side::Recv, true, esize, bytes[1], recv_spans);
        for (size_t i = 1; i < recv_spans.size(); ++i)
            if (recv_spans[i].begin < recv_spans[i - 1].end)
                return invalid(c, cat(fn, ": ", rule.recv_names.counts, " and ", rule.recv_names.displs,
                                      ": the receive blocks of ranks ", recv_spans[i - 1].rank, " and ",
                                      recv_spans[i].rank, " overlap", on_root(rule, rule.recv)));
    }
    if (uses_send && uses_recv && !in_place) {
        const auto sb = reinterpret_cast<uintptr_t>(in.sendbuf), rb = reinterpret_cast<uintptr_t>(in.recvbuf);
        bool clash = bytes[0] && bytes[1] && sb < rb + bytes[1] && rb < sb + bytes[0];
        if (clash && (send_displaced || recv_displaced)) {
            if (!recv_displaced) spans(a, Side::Recv, false, esize, bytes[1], recv_spans);
            clash = overlap(spans(a, Side::Send, send_displaced, esize, bytes[0], send_spans), sb, recv_spans, rb);
        }
        if (clash) {
            const char* form_text = rule.in_place == InPlace::Same       ? "sendbuf == recvbuf"
                                    : rule.in_place == InPlace::OwnBlock ? "sendbuf == recvbuf + this rank's block"
                                                                         : "recvbuf == sendbuf + the root's block";
            return invalid(c, cat(fn, ": sendbuf and recvbuf overlap without being the in-place form (", form_text,
                                  rule.has_root ? ", on the root" : "", ")"));
        }
    }

    call->recv = uses_recv ? in.recvbuf : nullptr;
    call->send = uses_send ? in.sendbuf : in.recvbuf;
    return CHORUS_SUCCESS;
}

chorus_result_t validate_p2p(const char* fn, Communicator* c, const void* buf, size_t count, int datatype, int peer,
                             int tag) {
    if (!datatype_valid(datatype)) return invalid(c, cat(fn, ": datatype ", datatype, " is not a chorus_datatype_t"));
    size_t bytes = 0;
    if (!mul(count, datatype_size(static_cast<chorus_datatype_t>(datatype)), &bytes))
        return invalid(c, cat(fn, ": count ", count, " overflows the byte size"));
    if (bytes && !buf) return invalid(c, cat(fn, ": buf is NULL with a non-zero count"));
    const int size = c->size();
    if (peer < 0 || peer >= size) return invalid(c, cat(fn, ": peer ", peer, " is out of range for ", size, " ranks"));
    if (tag < 0) return invalid(c, cat(fn, ": tag ", tag, " is negative (tags are 0 or more)"));
    if (size > kP2pMaxRanks)
        return report(c, CHORUS_ERR_UNSUPPORTED,
                      cat(fn, ": point-to-point needs a communicator of at most ", kP2pMaxRanks, " ranks, not ", size));
    if (c->failed()) {
        c->last_error() = cat(fn, ": communicator failed earlier: ", c->failure());
        return CHORUS_ERR_COMM_FAILED;
    }
    return CHORUS_SUCCESS;
}

}  // namespace chorus::api
