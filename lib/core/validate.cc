#include "core/validate.h"

#include <cstdint>

#include "core/handles.h"
#include "reduce/datatype.h"

namespace chorus::api {

namespace {

using coll::Collective;

enum class Who { Everyone, Root };      // whose buffer the collective uses
enum class InPlace { Same, OwnBlock };  // sendbuf == recvbuf, or == recvbuf + rank * count

// Elements of the send and receive buffers on this rank; false on overflow.
using Elements = bool (*)(const Args& in, int rank, int size, size_t* send, size_t* recv);
// What overflowed, for the message (made only then).
using Overflow = std::string (*)(const Args& in, int size);

struct Rule {
    Form form;
    Collective coll;
    bool has_op, has_root, irregular;
    Who send, recv;
    InPlace in_place;
    Elements elements;
    Overflow overflow;
};

bool mul(size_t a, size_t b, size_t* out) {
    if (a && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

bool same_count(const Args& in, int, int, size_t* send, size_t* recv) {
    *send = *recv = in.count;
    return true;
}
std::string count_overflow(const Args& in, int) {
    return cat("count ", in.count);
}

bool blocks_to_one(const Args& in, int, int size, size_t* send, size_t* recv) {
    *recv = in.count;
    return mul(in.count, static_cast<size_t>(size), send);
}
std::string recvcount_overflow(const Args& in, int size) {
    return cat("recvcount ", in.count, " times ", size, " ranks");
}

bool irregular_blocks(const Args& in, int rank, int size, size_t* send, size_t* recv) {
    size_t total = 0;
    for (int i = 0; i < size; ++i) {
        if (in.counts[i] > SIZE_MAX - total) return false;
        total += in.counts[i];
    }
    *send = total;
    *recv = in.counts[rank];
    return true;
}
std::string counts_overflow(const Args&, int) {
    return "the sum of recvcounts";
}

bool one_to_blocks(const Args& in, int, int size, size_t* send, size_t* recv) {
    *send = in.count;
    return mul(in.count, static_cast<size_t>(size), recv);
}
std::string sendcount_overflow(const Args& in, int size) {
    return cat("sendcount ", in.count, " times ", size, " ranks");
}

constexpr Rule kRules[] = {
    {Form::Allreduce, Collective::Allreduce, true, false, false, Who::Everyone, Who::Everyone, InPlace::Same,
     same_count, count_overflow},
    {Form::Broadcast, Collective::Broadcast, false, true, false, Who::Root, Who::Everyone, InPlace::Same, same_count,
     count_overflow},
    {Form::Reduce, Collective::Reduce, true, true, false, Who::Everyone, Who::Root, InPlace::Same, same_count,
     count_overflow},
    {Form::ReduceScatter, Collective::ReduceScatter, true, false, false, Who::Everyone, Who::Everyone, InPlace::Same,
     blocks_to_one, recvcount_overflow},
    {Form::ReduceScatterV, Collective::ReduceScatter, true, false, true, Who::Everyone, Who::Everyone, InPlace::Same,
     irregular_blocks, counts_overflow},
    {Form::Allgather, Collective::Allgather, false, false, false, Who::Everyone, Who::Everyone, InPlace::OwnBlock,
     one_to_blocks, sendcount_overflow},
};

const Rule& rule_of(Form form) {
    for (const Rule& r : kRules)
        if (r.form == form) return r;
    return kRules[0];
}

bool overlaps(const void* a, size_t abytes, const void* b, size_t bbytes) {
    auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
    return abytes && bbytes && x < y + bbytes && y < x + abytes;
}

chorus_result_t invalid(Communicator* c, const std::string& message) {
    return report(c, CHORUS_ERR_INVALID_ARGUMENT, message);
}

}  // namespace

chorus_result_t report(Communicator* comm, chorus_result_t rc, const std::string& message) {
    if (comm) comm->last_error() = message;
    thread_error() = message;
    return rc;
}

chorus_result_t validate(Form form, const char* fn, Communicator* c, const Args& in, Call* call) {
    const Rule& rule = rule_of(form);
    const auto dt = static_cast<chorus_datatype_t>(in.datatype);
    const auto op = static_cast<chorus_op_t>(in.op);
    if (!datatype_valid(in.datatype))
        return invalid(c, cat(fn, ": datatype ", in.datatype, " is not a chorus_datatype_t"));
    if (rule.has_op && !op_valid(in.op)) return invalid(c, cat(fn, ": op ", in.op, " is not a chorus_op_t"));
    if (rule.has_op && !op_supported(dt, op))
        return report(c, CHORUS_ERR_UNSUPPORTED,
                      cat(fn, ": op ", op_name(op), " is not defined on datatype ", datatype_name(dt),
                          " (bitwise and logical ops take integer types only)"));
    if (c->failed()) {
        c->last_error() = cat(fn, ": communicator failed earlier: ", c->failure());
        return CHORUS_ERR_COMM_FAILED;
    }
    const int rank = c->rank(), size = c->size();
    if (rule.has_root && (in.root < 0 || in.root >= size))
        return invalid(c, cat(fn, ": root ", in.root, " is out of range for ", size, " ranks"));
    if (rule.irregular && !in.counts) return invalid(c, cat(fn, ": recvcounts is NULL"));

    size_t send_elems = 0, recv_elems = 0, send_bytes = 0, recv_bytes = 0;
    const size_t esize = datatype_size(dt);
    if (!rule.elements(in, rank, size, &send_elems, &recv_elems) || !mul(send_elems, esize, &send_bytes) ||
        !mul(recv_elems, esize, &recv_bytes))
        return invalid(c, cat(fn, ": ", rule.overflow(in, size), " overflows the byte size"));

    const bool is_root = rule.has_root && rank == in.root;
    const bool uses_send = rule.send == Who::Everyone || is_root;
    const bool uses_recv = rule.recv == Who::Everyone || is_root;
    const char* root_note = rule.has_root ? " (on the root)" : "";
    if (uses_send && send_bytes && !in.sendbuf)
        return invalid(c,
                       cat(fn, ": sendbuf", rule.send == Who::Root ? root_note : "", " is NULL with a non-zero count"));
    if (uses_recv && recv_bytes && !in.recvbuf)
        return invalid(c,
                       cat(fn, ": recvbuf", rule.recv == Who::Root ? root_note : "", " is NULL with a non-zero count"));

    bool in_place = true;  // a send buffer that does not matter is bound to the receive buffer
    if (uses_send && uses_recv) {
        const char* own = static_cast<const char*>(in.recvbuf);
        if (rule.in_place == InPlace::OwnBlock) own += static_cast<size_t>(rank) * send_bytes;
        in_place = own == in.sendbuf && (rule.in_place == InPlace::Same || send_bytes);
        if (!in_place && overlaps(in.sendbuf, send_bytes, in.recvbuf, recv_bytes))
            return invalid(
                c, cat(fn, ": sendbuf and recvbuf overlap without being the in-place form (",
                       rule.in_place == InPlace::Same ? "sendbuf == recvbuf" : "sendbuf == recvbuf + rank * sendcount",
                       rule.has_root ? ", on the root" : "", ")"));
    } else if (!uses_recv) {
        in_place = false;
    }

    coll::CollArgs& a = call->args;
    a = coll::CollArgs{};
    a.coll = rule.coll;
    a.dtype = dt;
    if (rule.has_op) a.op = op;
    if (rule.has_root) a.root = in.root;
    a.size = size;
    if (rule.irregular)
        a.counts.assign(in.counts, in.counts + size);
    else
        a.count = in.count;
    a.in_place = in_place;
    call->recv = uses_recv ? in.recvbuf : nullptr;
    call->send = uses_send ? in.sendbuf : in.recvbuf;
    return CHORUS_SUCCESS;
}

}  // namespace chorus::api
