#include "core/op_buffers.h"

#include "reduce/datatype.h"

namespace chorus {

namespace {
// Bytes of the user's send and receive buffers that a collective touches:
// from the start to the end of the last block, gaps between displaced
// blocks included (a mirror covers the whole span; what it copies back to
// a gap is what it copied from there).
void user_bytes(const coll::CollArgs& a, size_t* send, size_t* recv) {
    size_t es = datatype_size(a.dtype), send_elems = 0, recv_elems = 0;
    a.extent(coll::Side::Send, &send_elems);  // validated: no overflow
    // A side the rank does not use is 0 (CollArgs::blocks): so a non-root's
    // reduce (or gather) receive buffer, which may be NULL or too small, is
    // never mirrored, read or copied back into.
    a.extent(coll::Side::Recv, &recv_elems);
    // An in-place reduce-scatter reads its input from the receive buffer.
    if (a.coll == coll::Collective::ReduceScatter && a.in_place) recv_elems = send_elems;
    *send = send_elems * es;
    *recv = recv_elems * es;
}
}  // namespace

OpBuffers::OpBuffers(std::unique_ptr<Device> device, bool direct)
    : device_(std::move(device)),
      direct_(direct),
      device_scratch_([this](size_t n) { return device_->alloc_device(n); },
                      [this](void* p) { device_->free_device(p); }),
      staging_([this](size_t n) { return device_->alloc_pinned(n); }, [this](void* p) { device_->free_pinned(p); }) {}

void OpBuffers::warm(size_t bytes) {
    scratch_.release(scratch_.acquire(bytes));
}

Buffers OpBuffers::prepare(Operation& op, const void* sendbuf, void* recvbuf, void* stream, DeviceUse& use) {
    MemKind ks = sendbuf ? device_->kind(sendbuf) : MemKind::Host;
    MemKind kr = recvbuf ? device_->kind(recvbuf) : MemKind::Host;
    op.on_device = !host_side(ks) || !host_side(kr);
    use.device = device_.get();
    try {
        if (op.on_device) return prepare_device(op, sendbuf, recvbuf, stream, ks, kr, use);
        op.scratch = scratch_.acquire(op.schedule->scratch_bytes());
        // Host buffers a kernel on the caller's stream may still write.
        if (stream) {
            device_->wait_for(stream);
            use.gate = device_->mark();
        }
        return Buffers{sendbuf, recvbuf, op.scratch};
    } catch (...) {
        if (op.on_device) device_->drain();
        release(op);
        throw;
    }
}

Buffers OpBuffers::prepare_device(Operation& op, const void* sendbuf, void* recvbuf, void* stream, MemKind ks,
                                  MemKind kr, DeviceUse& use) {
    use.on_device = true;
    use.direct = direct_;
    use.staging = &staging_;
    // Everything below runs after the caller's queued work (which may be
    // writing the input).
    device_->wait_for(stream);
    op.scratch = device_scratch_.acquire(op.schedule->scratch_bytes());
    size_t send_bytes = 0, recv_bytes = 0;
    user_bytes(op.args, &send_bytes, &recv_bytes);
    Buffers b{sendbuf, recvbuf, op.scratch};
    // A host buffer in a device-side operation: the steps work on a device
    // copy of it, copied back at the end (receive buffer).
    if (recvbuf && host_side(kr) && recv_bytes) {
        op.mirrors[1] = device_scratch_.acquire(recv_bytes);
        device_->copy(op.mirrors[1], recvbuf, recv_bytes);
        b.recv = op.mirrors[1];
        op.mirror_bytes = recv_bytes;
    }
    if (sendbuf && host_side(ks) && send_bytes) {
        auto s = reinterpret_cast<uintptr_t>(sendbuf), r = reinterpret_cast<uintptr_t>(recvbuf);
        if (op.mirrors[1] && s >= r && s < r + recv_bytes) {
            b.send = static_cast<char*>(op.mirrors[1]) + (s - r);  // in place
        } else {
            op.mirrors[0] = device_scratch_.acquire(send_bytes);
            device_->copy(op.mirrors[0], sendbuf, send_bytes);
            b.send = op.mirrors[0];
        }
    }
    use.gate = device_->mark();
    return b;
}

void* OpBuffers::rescratch(Operation& op, size_t bytes) {
    ScratchPool& pool = op.on_device ? device_scratch_ : scratch_;
    pool.release(op.scratch);
    op.scratch = nullptr;
    op.scratch = pool.acquire(bytes);
    return op.scratch;
}

void OpBuffers::release(Operation& op) {
    ScratchPool& pool = op.on_device ? device_scratch_ : scratch_;
    pool.release(op.scratch);
    op.scratch = nullptr;
    for (void*& m : op.mirrors) {
        device_scratch_.release(m);
        m = nullptr;
    }
}

}  // namespace chorus
