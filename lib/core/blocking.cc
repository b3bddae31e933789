// Blocking calls: run in the calling thread when nothing waits (a schedule
// without messages on host buffers, no operation in flight; never a
// two-stage one, whose second schedule follows its first), else started,
// waited for and released as any operation.
#include <string>

#include "core/communicator.h"

namespace chorus {

bool Communicator::run_inline(const coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream,
                              chorus_result_t* rc, Plan* planned, RanInPlace* ran) {
    if (!may_run_in_place(stream)) return false;
    const Plan& plan = plans_.plan(args);
    const Schedule& s = *plan.schedule;
    if (plan.algo->two_stage || s.has_transfers() || s.scratch_bytes() ||
        (sendbuf && !host_side(buffers_.device().kind(sendbuf))) ||
        (recvbuf && !host_side(buffers_.device().kind(recvbuf)))) {
        *planned = plan;
        return false;
    }
    if (ran) *ran = {plan, plans_.version()};
    *rc = run_planned_inline(args, plan, sendbuf, recvbuf);
    return true;
}

chorus_result_t Communicator::run_planned_inline(const coll::CollArgs& args, const Plan& plan, const void* sendbuf,
                                                 void* recvbuf) {
    const Schedule& s = *plan.schedule;
    Resume r{next_seq_, next_slot_op_, 0, 0};
    next_slot_op_ += s.slot_rounds();
    r.record = observer_.begin_call(r.seq, args, plan.algo->name, true);
    next_seq_ = net::next_operation_seq(next_seq_);
    Buffers b{sendbuf, recvbuf, nullptr, r.slot_op};
    uint64_t arrival = 0, *arrived = observer_.timing() ? &arrival : nullptr;
    try {
        r.done = run_in_place_(s, transport_->slots(), b, waiter_.inline_polls(), arrived);
        if (arrived) observer_.arrived(r.record, arrival, args);
    } catch (const Error& e) {
        if (arrived) observer_.arrived(r.record, arrival, args);
        std::string why = cat(coll::collective_name(args.coll), " #", r.seq, " (", plan.algo->name, ") on rank ",
                              rank(), ": ", e.what());
        tell_peers(e.code(), r.seq, why);
        mark_failed(r.seq, CHORUS_ERR_COMM_FAILED, why);
        last_error_ = why;
        observer_.end_inline(r.record, r.done, e.code(), why);
        return e.code();
    }
    if (r.done == s.steps().size()) {
        observer_.end_inline(r.record, r.done, CHORUS_SUCCESS, std::string());
        return CHORUS_SUCCESS;
    }
    // A peer is late: the rest waits as any operation does.
    Operation* op = launch(args, plan, sendbuf, recvbuf, nullptr, &r);
    wait(op);
    return release(op);
}

chorus_result_t Communicator::run(coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream,
                                  RanInPlace* last) {
    // The fast path: a repeated call whose last run was in place, with
    // neither the plans nor the communicator's state changed since (nothing
    // in flight, not failed; CHORUS_CHECK and injected faults never run in
    // place). The buffers are the same, and were host memory then: an
    // address the host's allocator handed out never becomes device memory.
    if (last && last->plan.algo && last->version == plans_.version() && ops_.empty() && !stream && !failed_)
        return run_planned_inline(args, last->plan, sendbuf, recvbuf);
    if (last) *last = RanInPlace{};
    fill(args);
    args.mapped = false;
    if (agrees_mapped(args)) {
        // Every rank agrees on every such call: none is kept for the fast
        // path (a rank whose buffers repeat would skip the agreement).
        chorus_result_t rc = agree_mapped(args, sendbuf, recvbuf, &args.mapped);
        if (rc != CHORUS_SUCCESS) return rc;
        last = nullptr;
    }
    return run_filled(args, sendbuf, recvbuf, stream, last);
}

chorus_result_t Communicator::run_filled(coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream,
                                         RanInPlace* last) {
    chorus_result_t rc;
    Plan plan;
    if (run_inline(args, sendbuf, recvbuf, stream, &rc, &plan, last)) return rc;
    Operation* op = start_filled(args, sendbuf, recvbuf, stream, plan.algo ? &plan : nullptr);
    wait(op);
    return release(op);
}

}  // namespace chorus
