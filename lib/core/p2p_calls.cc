// The communicator's point-to-point calls (p2p.h): memory kinds and the
// caller's stream, failures that fail the communicator, and teardown.
#include <string>

#include "base/log.h"
#include "core/communicator.h"
#include "reduce/datatype.h"

namespace chorus {

namespace {
// Wait until the work queued on the caller's `stream` so far has finished
// (a point-to-point call reads or writes its buffer from the host).
void catch_up(Device& device, void* stream) {
    device.wait_for(stream);
    const uint64_t m = device.mark();
    while (!device.done(m)) {
    }
}
}  // namespace

P2pRequest* Communicator::send(const void* buf, size_t count, chorus_datatype_t dtype, int peer, int tag,
                               void* stream) {
    if (failed_) fail(CHORUS_ERR_COMM_FAILED, "communicator failed earlier: ", failure_);
    const size_t bytes = count * datatype_size(dtype);
    Device& device = buffers_.device();
    const MemKind kind = bytes ? device.kind(buf) : MemKind::Host;
    // The data is copied now: after the work queued on the stream (always
    // for device memory, for host memory when a stream is given).
    if (stream || !host_side(kind)) catch_up(device, stream);
    P2pRequest* r = nullptr;
    try {
        r = p2p_.send(buf, count, dtype, bytes, kind, peer, tag);
    } catch (const Error&) {
        p2p_failed();
        throw;
    }
    p2p_failed();
    return r;
}

P2pRequest* Communicator::recv(void* buf, size_t count, chorus_datatype_t dtype, int peer, int tag, void* stream) {
    if (failed_) fail(CHORUS_ERR_COMM_FAILED, "communicator failed earlier: ", failure_);
    const size_t bytes = count * datatype_size(dtype);
    Device& device = buffers_.device();
    const MemKind kind = bytes ? device.kind(buf) : MemKind::Host;
    // The buffer is written after the work queued on the stream: a device
    // buffer by a copy queued behind it, a host buffer once it has run.
    if (!host_side(kind))
        device.wait_for(stream);
    else if (stream)
        catch_up(device, stream);
    P2pRequest* r = nullptr;
    try {
        r = p2p_.recv(buf, count, dtype, bytes, kind, peer, tag);
    } catch (const Error&) {
        p2p_failed();
        throw;
    }
    p2p_failed();
    return r;
}

chorus_result_t Communicator::release(P2pRequest* r) {
    const chorus_result_t rc = r->result;
    if (rc != CHORUS_SUCCESS) last_error_ = r->error;
    p2p_.release(r);
    return rc;
}

bool Communicator::progress_p2p(bool idle) {
    bool moved = false;
    if (idle)
        p2p_.check(config_.timeout_ms, config_.hang_warn_s, closing_, name());
    else
        moved = p2p_.progress();
    if (moved) p2p_.moved();
    p2p_failed();
    return moved;
}

void Communicator::p2p_failed() {
    chorus_result_t code;
    std::string why;
    if (!p2p_.take_failure(&code, &why)) return;
    // The operations in flight go on (their peers may finish them); the
    // next one fails here, and the peers learn of it at once.
    if (!failed_) tell_peers(code, next_seq_, why);
    mark_failed(next_seq_, CHORUS_ERR_COMM_FAILED, why);
}

void Communicator::close_p2p() {
    closing_ = true;
    try {
        if (!failed_ && p2p_.delivering()) wait_until([this] { return failed_ || !p2p_.delivering(); });
    } catch (...) {
    }
    p2p_.abandon();
}

}  // namespace chorus
