// A communicator's failures: its own (an operation that fails here, an
// abort) and its peers' (the notices they send), and which operations each
// one ends. A notice carries the first operation its sender will not
// finish: the operations before it go on everywhere.
#include <cstdlib>
#include <string>

#include "base/log.h"
#include "core/communicator.h"
#include "reduce/datatype.h"

namespace chorus {

void Communicator::abort(const std::string& why) {
    observer_.dump("chorus_comm_abort");
    // The peers learn of it at once, whatever they are doing.
    if (!failed_) tell_peers(CHORUS_ERR_COMM_FAILED, 0, cat("rank ", rank(), " aborted: ", why));
    for (auto& op : ops_)
        if (!op->finished) fail_op(*op, CHORUS_ERR_COMM_FAILED, cat("aborted: ", why), false);
    p2p_.fail_receives(-1, CHORUS_ERR_COMM_FAILED, cat("aborted: ", why));
    mark_failed(0, CHORUS_ERR_COMM_FAILED, cat("aborted: ", why));
}

void Communicator::fail_op(Operation& op, chorus_result_t code, const std::string& message, bool tell) {
    op.finished = true;
    op.result = code;
    op.error = cat(coll::collective_name(op.args.coll), " #", op.seq, " (", op.algorithm, ", ", op.args.count, " x ",
                   datatype_name(op.args.dtype), ") on rank ", rank(), ": ", message);
    op.executor->abort();
    // The peers' state is unknown now: later operations would not match.
    if (tell && !failed_) tell_peers(code, op.seq, op.error);
    mark_failed(op.seq, CHORUS_ERR_COMM_FAILED, op.error);
    observer_.end(op);
    log(LogLevel::Error, rank(), op.error);
}

void Communicator::mark_failed(uint64_t from, chorus_result_t code, const std::string& why) {
    if (failed_ && failed_from_ <= from) return;
    failed_ = true;
    failed_from_ = from;
    failed_code_ = code;
    failure_ = why;
}

// A notice: the code (one byte), the first operation the sender will not
// finish (decimal, then a space), the message.
void Communicator::tell_peers(chorus_result_t code, uint64_t from, const std::string& message) {
    std::string notice = std::string(1, static_cast<char>(code)) + std::to_string(from) + " " + message;
    for (int r = 0; r < size(); ++r)
        if (r != rank()) transport_->notify(r, notice);
    transport_->flush_notices(3000);
}

void Communicator::poll_notices() {
    int source = -1;
    std::string notice;
    while (transport_->poll_notice(&source, &notice)) {
        if (observer_.notice(source, notice)) continue;
        const size_t space = notice.find(' ');
        if (notice.size() < 2 || space == std::string::npos) continue;
        auto code = static_cast<chorus_result_t>(notice[0]);
        const uint64_t from = std::strtoull(notice.c_str() + 1, nullptr, 10);
        std::string why = cat("rank ", source, " failed: ", notice.substr(space + 1));
        // The sender finished every operation before `from`: those go on.
        for (auto& op : ops_)
            if (!op->finished && op->seq >= from) fail_op(*op, code, why, false);
        // Point-to-point calls have no order against the notice, and every
        // rank's calls fail from now on: the receives waiting here would
        // never get their message.
        p2p_.fail_receives(-1, code, why);
        mark_failed(from, code, why);
    }
}

}  // namespace chorus
