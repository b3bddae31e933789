// The cross-rank hang report. When an operation has made no progress for
// CHORUS_HANG_WARN_S, the rank asks every peer for its state over the
// transport's notices (which work while every rank is stuck inside a
// collective; no collective is used). Each rank that is inside Chorus
// answers with what it is doing; a rank that is not (busy elsewhere,
// stopped, dead) does not answer. One rank then prints a verdict such as
//
//   allreduce #1042 on comm 3 (4 ranks): ranks 0-2 have done 3 of 8 steps
//   and wait for rank 3; rank 3 does not answer (...)
//   ranks disagree: 0-1 are in allreduce #1042, 2-3 in bcast #1042
//
// This file is the state a rank reports, its encoding in a notice, and the
// verdict: pure functions, tested without a network.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace chorus {

// One operation in flight, as a rank reports it.
struct OpReport {
    uint64_t seq = 0;
    int coll = 0;  // coll::Collective
    uint64_t count = 0;
    int dtype = 0, root = 0;
    uint32_t done = 0, total = 0;  // steps
    std::vector<int> waits;        // the peers its transfers wait for
    std::string label;
};

struct RankReport {
    bool has_last = false;  // the last operation this rank completed
    uint64_t last_seq = 0;
    int last_coll = 0;
    std::vector<OpReport> ops;  // in flight, oldest first
};

// As text that fits a notice (ops beyond the room are left out).
std::string encode_report(const RankReport& r);
bool decode_report(const std::string& text, RankReport* r);

// The verdict from every rank's report (nullopt: no answer).
std::string hang_verdict(const std::vector<std::optional<RankReport>>& ranks, const std::string& comm);

}  // namespace chorus
