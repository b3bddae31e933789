#include "core/recorder.h"

#include <cstring>

#include "base/error.h"
#include "reduce/datatype.h"

namespace chorus {

uint32_t Labels::intern(const char* text) {
    if (!text || !*text) return 0;
    for (size_t i = 1; i < texts_.size(); ++i)
        if (texts_[i] == text) return static_cast<uint32_t>(i);
    if (texts_.size() < kMax) {
        texts_.emplace_back(text);
        return static_cast<uint32_t>(texts_.size() - 1);
    }
    texts_.back() = text;
    return static_cast<uint32_t>(kMax - 1);
}

std::vector<const Record*> FlightRecorder::in_order() const {
    std::vector<const Record*> out;
    if (ring_.empty()) return out;
    const uint64_t first = next_ > capacity_ ? next_ - capacity_ : 1;
    for (uint64_t n = first; n < next_; ++n) out.push_back(&ring_[n & mask_]);
    return out;
}

std::string describe(const Record& r, const Labels& labels) {
    std::string out = cat(coll::collective_name(r.coll), " #", r.seq, " ", r.count, " x ", datatype_name(r.dtype));
    if (r.coll != coll::Collective::Broadcast && r.coll != coll::Collective::Allgather) out += cat(" ", op_name(r.op));
    if (r.coll == coll::Collective::Broadcast || r.coll == coll::Collective::Reduce) out += cat(" root ", r.root);
    out += cat(" (", r.algorithm, r.inline_run ? ", inline" : "", ")");
    if (r.label) out += cat(" \"", labels.text(r.label), "\"");
    return out;
}

namespace {
const Operation* live_op(const std::vector<std::unique_ptr<Operation>>& ops, uint64_t number) {
    for (const auto& op : ops)
        if (op->record == number) return op.get();
    return nullptr;
}
}  // namespace

std::string dump_records(const FlightRecorder& rec, const Labels& labels,
                         const std::vector<std::unique_ptr<Operation>>& ops, const std::string& comm,
                         const std::string& why) {
    std::vector<const Record*> records = rec.in_order();
    std::string out = cat("flight record of ", comm, " (", why, "): the last ", records.size(), " of ", rec.total(),
                          " operations (CHORUS_RECORD=", rec.capacity(), "), oldest first");
    for (const Record* r : records) {
        out += cat("\n  ", describe(*r, labels), ": ");
        switch (r->state) {
            case RecState::Done: out += cat("done, ", r->steps, " steps"); break;
            case RecState::Failed: out += cat("failed: ", r->error); break;
            case RecState::Running: {
                const Operation* op = live_op(ops, r->number);
                if (!op || !op->executor) {
                    out += "in progress";
                    break;
                }
                std::vector<int> peers = op->executor->waiting_peers();
                std::string who;
                for (int p : peers) who += cat(who.empty() ? "" : ",", p);
                out += cat("step ", op->executor->completed(), " of ", op->schedule->steps().size(),
                           peers.empty() ? std::string(", waits for local work")
                                         : cat(", waits for rank", peers.size() == 1 ? " " : "s ", who),
                           " (", op->executor->pending_summary(), ")");
                break;
            }
        }
    }
    return out;
}

}  // namespace chorus
