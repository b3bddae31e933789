// What an executor says about itself: the context added to a step's error,
// and the steps it waits on (hang reports, timeouts).
#include <algorithm>

#include "base/error.h"
#include "exec/executor.h"

namespace chorus {

namespace {
const char* kind_name(StepKind k) {
    switch (k) {
        case StepKind::Send: return "send to";
        case StepKind::Recv: return "recv from";
        case StepKind::Expose: return "expose to";
        case StepKind::Get: return "get from";
        case StepKind::Put: return "put to";
        default: return step_kind_name(k);
    }
}
}  // namespace

void Executor::rethrow_with_context(StepId s, const Error& e) const {
    const Step& st = sched_->steps()[s];
    throw Error(e.code(), cat(e.what(), " [operation #", seq_, ", step ", s, ": ", kind_name(st.kind), " rank ",
                              st.peer, ", ", st.bytes, " bytes, tag ", st.tag, "]"));
}

std::vector<int> Executor::waiting_peers() const {
    std::vector<int> peers;
    for (const auto& f : inflight_) peers.push_back(sched_->steps()[f.step].peer);
    for (StepId s : awaiting_) peers.push_back(sched_->steps()[s].peer);
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    return peers;
}

std::string Executor::pending_summary() const {
    std::string out;
    int shown = 0;
    for (const auto& f : inflight_) {
        if (shown++ == 8) {
            out += cat(", ... (", inflight_.size(), " in all)");
            break;
        }
        const Step& st = sched_->steps()[f.step];
        out += cat(out.empty() ? "" : ", ", kind_name(st.kind), " rank ", st.peer, " (step ", f.step, ")");
    }
    size_t staging = 0, device_steps = 0;
    for (size_t i = queued_head_; i < queued_.size(); ++i)
        (queued_[i].phase == Phase::Local ? device_steps : staging)++;
    if (staging) out += cat(out.empty() ? "" : ", ", staging, " transfers being staged");
    if (device_steps) out += cat(out.empty() ? "" : ", ", device_steps, " steps queued on the device");
    for (StepId s : awaiting_) out += cat(out.empty() ? "" : ", ", "await rank ", sched_->steps()[s].peer, "'s slot");
    if (!publishing_.empty() || !claiming_.empty())
        out += cat(out.empty() ? "" : ", ", "publish (its slot is still being read)");
    if (dev_.gate) out += cat(out.empty() ? "" : ", ", "waiting for the caller's stream");
    if (out.empty()) out = "no transfer in flight";
    return cat(out, "; ", completed_, " of ", sched_->steps().size(), " steps done");
}

}  // namespace chorus
