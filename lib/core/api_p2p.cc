// The point-to-point entry points (chorus_send, chorus_recv and their
// nonblocking twins; core/p2p.h), and the completion of every request, a
// collective's or a point-to-point call's (chorus_test, chorus_wait).
// No exception leaves this file.
#include <string>

#include "chorus.h"
#include "core/communicator.h"
#include "core/handles.h"
#include "core/validate.h"

using chorus::Communicator;
using chorus::Operation;
using chorus::P2pRequest;
using chorus::api::guarded;
using chorus::api::invalid;
using chorus::api::report;

namespace {

// A send or a receive: looked up, validated and started; waited for and
// released unless `request` is given (the nonblocking twins).
chorus_result_t p2p(bool is_send, const char* fn, const void* buf, size_t count, chorus_datatype_t datatype, int peer,
                    int tag, chorus_comm_t handle, void* stream, bool nonblocking, chorus_request_t* request) {
    Communicator* c = chorus::api::find_comm(handle);
    if (!c) return chorus::api::not_live(handle, fn);
    if (nonblocking) {
        if (!request) return chorus::api::no_request(c, fn);
        *request = nullptr;
    }
    chorus_result_t rc = chorus::api::validate_p2p(fn, c, buf, count, datatype, peer, tag);
    if (rc != CHORUS_SUCCESS) return rc;
    P2pRequest* r = nullptr;
    rc = guarded(c, [&] {
        r = is_send ? c->send(buf, count, datatype, peer, tag, stream)
                    : c->recv(const_cast<void*>(buf), count, datatype, peer, tag, stream);
        if (nonblocking) {
            *request = chorus::api::add_request(handle, r);
        } else {
            c->wait(r);
        }
        return CHORUS_SUCCESS;
    });
    // A blocking call's request (or one that could not be handed out) is
    // released here once finished; an unfinished one stays with the
    // communicator until it is destroyed.
    if (!r || (nonblocking && *request) || !r->finished) return rc;
    const chorus_result_t result = c->release(r);
    if (rc != CHORUS_SUCCESS || result == CHORUS_SUCCESS) return rc;
    return report(c, result, chorus::cat(fn, ": ", c->last_error()));
}

// The request's communicator and what it refers to, or an error.
chorus_result_t find(chorus_request_t request, const char* fn, Communicator** c, Operation** op, P2pRequest** p2p) {
    std::string why;
    if (!chorus::api::find_request(request, c, op, p2p, &why)) return invalid(nullptr, chorus::cat(fn, ": ", why));
    return CHORUS_SUCCESS;
}

chorus_result_t finish(chorus_request_t request, Communicator* c, Operation* op, P2pRequest* p2p) {
    chorus::api::remove_request(request);
    const chorus_result_t rc = op ? c->release(op) : c->release(p2p);
    if (rc != CHORUS_SUCCESS) chorus::api::thread_error() = c->last_error();
    return rc;
}

}  // namespace

extern "C" {

chorus_result_t chorus_send(const void* buf, size_t count, chorus_datatype_t datatype, int peer, int tag,
                            chorus_comm_t comm, void* stream) {
    return p2p(true, "chorus_send", buf, count, datatype, peer, tag, comm, stream, false, nullptr);
}

chorus_result_t chorus_recv(void* buf, size_t count, chorus_datatype_t datatype, int peer, int tag, chorus_comm_t comm,
                            void* stream) {
    return p2p(false, "chorus_recv", buf, count, datatype, peer, tag, comm, stream, false, nullptr);
}

chorus_result_t chorus_isend(const void* buf, size_t count, chorus_datatype_t datatype, int peer, int tag,
                             chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return p2p(true, "chorus_isend", buf, count, datatype, peer, tag, comm, stream, true, request);
}

chorus_result_t chorus_irecv(void* buf, size_t count, chorus_datatype_t datatype, int peer, int tag, chorus_comm_t comm,
                             void* stream, chorus_request_t* request) {
    return p2p(false, "chorus_irecv", buf, count, datatype, peer, tag, comm, stream, true, request);
}

chorus_result_t chorus_test(chorus_request_t request, int* done) {
    if (!done) return invalid(nullptr, "chorus_test: done (output) is NULL");
    *done = 0;
    Communicator* c = nullptr;
    Operation* op = nullptr;
    P2pRequest* p2p = nullptr;
    chorus_result_t rc = find(request, "chorus_test", &c, &op, &p2p);
    if (rc != CHORUS_SUCCESS) return rc;
    rc = guarded(c, [&] {
        *done = (op ? c->progress(op) : c->progress(p2p)) ? 1 : 0;
        return CHORUS_SUCCESS;
    });
    if (rc != CHORUS_SUCCESS || !*done) return rc;
    return finish(request, c, op, p2p);
}

chorus_result_t chorus_wait(chorus_request_t request) {
    Communicator* c = nullptr;
    Operation* op = nullptr;
    P2pRequest* p2p = nullptr;
    chorus_result_t rc = find(request, "chorus_wait", &c, &op, &p2p);
    if (rc != CHORUS_SUCCESS) return rc;
    rc = guarded(c, [&] {
        if (op)
            c->wait(op);
        else
            c->wait(p2p);
        return CHORUS_SUCCESS;
    });
    if (rc != CHORUS_SUCCESS) return rc;
    return finish(request, c, op, p2p);
}

}  // extern "C"
