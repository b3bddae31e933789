// The C API's handles: communicators and requests are opaque numbers, never
// pointers to freed memory, so a destroyed communicator or a completed
// request is recognised as such, reliably. The registry is shared by every
// thread (short critical sections, never held while a collective waits).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "chorus.h"
#include "core/communicator.h"

namespace chorus::api {

// The message of the last failure of a call on this thread.
std::string& thread_error();

// Register a new communicator; returns its handle.
chorus_comm_t add_comm(std::unique_ptr<Communicator> comm);
// The live communicator of `handle`, or null.
Communicator* find_comm(chorus_comm_t handle);
// Unregister a communicator and the requests on it; null if not live.
std::unique_ptr<Communicator> remove_comm(chorus_comm_t handle);

// A request refers to a collective operation or to a point-to-point call.
chorus_request_t add_request(chorus_comm_t comm, Operation* op);
chorus_request_t add_request(chorus_comm_t comm, P2pRequest* p2p);
// The request's communicator and what it refers to (one of *op and *p2p
// set, the other null); false (with a message in *why) for a request that is
// not live or whose communicator was destroyed.
bool find_request(chorus_request_t request, Communicator** comm, Operation** op, P2pRequest** p2p, std::string* why);
void remove_request(chorus_request_t request);

}  // namespace chorus::api
