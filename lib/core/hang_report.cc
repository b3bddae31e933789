#include "core/hang_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "base/error.h"
#include "coll/algorithm.h"
#include "core/agreement.h"
#include "net/transport.h"
#include "reduce/datatype.h"

namespace chorus {

namespace {

const char* coll_name(int c) {
    return c >= 0 && c < coll::kNumCollectives ? coll::collective_name(static_cast<coll::Collective>(c)) : "?";
}

std::string peers_text(const std::vector<int>& peers) {
    if (peers.empty()) return "local work";
    return cat(peers.size() == 1 ? "rank " : "ranks ", rank_list(peers));
}

std::string plural(const std::string& ranks, const char* one, const char* many) {
    bool several = ranks.find_first_of(",-") != std::string::npos;
    return cat(several ? "ranks " : "rank ", ranks, " ", several ? many : one);
}

const OpReport* find_op(const RankReport& r, uint64_t seq) {
    for (const auto& op : r.ops)
        if (op.seq == seq) return &op;
    return nullptr;
}

bool same_call(const OpReport& a, const OpReport& b) {
    return a.coll == b.coll && a.count == b.count && a.dtype == b.dtype && a.root == b.root;
}

// "allreduce #5", with the arguments when `detail`.
std::string op_text(const OpReport& op, bool detail) {
    std::string out = cat(coll_name(op.coll), " #", op.seq);
    if (detail)
        out += cat(" (", op.count, " x ", datatype_name(static_cast<chorus_datatype_t>(op.dtype)), ", root ", op.root,
                   ")");
    return out;
}

// Ranks that disagree on an operation number: "" when none do.
std::string disagreement(const std::vector<std::optional<RankReport>>& ranks) {
    std::map<uint64_t, std::vector<int>> by_seq;
    for (size_t r = 0; r < ranks.size(); ++r)
        if (ranks[r])
            for (const auto& op : ranks[r]->ops) by_seq[op.seq].push_back(static_cast<int>(r));
    for (const auto& [seq, members] : by_seq) {
        const OpReport& first = *find_op(*ranks[members[0]], seq);
        bool differ = false, colls_differ = false;
        for (int r : members) {
            const OpReport& o = *find_op(*ranks[r], seq);
            differ = differ || !same_call(o, first);
            colls_differ = colls_differ || o.coll != first.coll;
        }
        if (!differ) continue;
        auto groups = group_ranks(static_cast<int>(members.size()), [&](int a, int b) {
            return same_call(*find_op(*ranks[members[a]], seq), *find_op(*ranks[members[b]], seq));
        });
        std::string out = "ranks disagree: ";
        for (size_t g = 0; g < groups.size(); ++g) {
            std::vector<int> in;
            for (size_t i = 0; i < members.size(); ++i)
                if (same_call(*find_op(*ranks[members[i]], seq), *find_op(*ranks[members[groups[g].first]], seq)))
                    in.push_back(members[i]);
            const OpReport& o = *find_op(*ranks[in[0]], seq);
            out += cat(g ? ", " : "", rank_list(in), g ? " in " : (in.size() > 1 ? " are in " : " is in "),
                       op_text(o, !colls_differ));
        }
        return out;
    }
    return "";
}

}  // namespace

std::string encode_report(const RankReport& r) {
    std::string out = r.has_last ? cat("L ", r.last_seq, " ", r.last_coll, "\n") : std::string();
    for (const auto& op : r.ops) {
        std::string waits;
        for (int p : op.waits) waits += cat(waits.empty() ? "" : ",", p);
        std::string label = op.label.substr(0, 64);
        std::replace(label.begin(), label.end(), '\n', ' ');
        std::string line = cat("O ", op.seq, " ", op.coll, " ", op.count, " ", op.dtype, " ", op.root, " ", op.done,
                               " ", op.total, " ", waits.empty() ? "-" : waits, "|", label, "\n");
        if (out.size() + line.size() > net::kMaxNotice - 32) break;
        out += line;
    }
    return out;
}

bool decode_report(const std::string& text, RankReport* r) {
    *r = RankReport{};
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, 2, "L ") == 0) {
            unsigned long long seq = 0;
            if (std::sscanf(line.c_str(), "L %llu %d", &seq, &r->last_coll) != 2) return false;
            r->has_last = true;
            r->last_seq = seq;
            continue;
        }
        if (line.compare(0, 2, "O ") != 0) return false;
        size_t bar = line.find('|');
        if (bar == std::string::npos) return false;
        OpReport op;
        unsigned long long seq = 0, count = 0;
        char waits[512] = {0};
        if (std::sscanf(line.substr(0, bar).c_str(), "O %llu %d %llu %d %d %u %u %511s", &seq, &op.coll, &count,
                        &op.dtype, &op.root, &op.done, &op.total, waits) != 8)
            return false;
        op.seq = seq;
        op.count = count;
        if (std::string(waits) != "-") {
            std::istringstream w(waits);
            std::string p;
            while (std::getline(w, p, ',')) op.waits.push_back(std::atoi(p.c_str()));
        }
        op.label = line.substr(bar + 1);
        r->ops.push_back(op);
    }
    return true;
}

std::string hang_verdict(const std::vector<std::optional<RankReport>>& ranks, const std::string& comm) {
    std::string differ = disagreement(ranks);
    if (!differ.empty()) return cat(differ, " (on ", comm, ")");
    // The oldest operation any answering rank is in.
    const OpReport* oldest = nullptr;
    for (const auto& r : ranks)
        if (r && !r->ops.empty() && (!oldest || r->ops.front().seq < oldest->seq)) oldest = &r->ops.front();
    if (!oldest) return cat("no operation is in flight on the ranks that answered (on ", comm, ")");
    const uint64_t seq = oldest->seq;
    std::string out = cat(op_text(*oldest, false), " on ", comm);
    if (!oldest->label.empty()) out += cat(" \"", oldest->label, "\"");
    out += ":";
    const int n = static_cast<int>(ranks.size());
    // What each rank is doing about it, as text; ranks with the same text are
    // named together.
    std::vector<std::string> what(n);
    std::vector<int> waiting_kind(n);  // 0: in it, 1: not entered, 2: done, 3: no answer
    for (int r = 0; r < n; ++r) {
        if (!ranks[r]) {
            what[r] = "no answer";
            waiting_kind[r] = 3;
            continue;
        }
        const RankReport& rep = *ranks[r];
        if (const OpReport* op = find_op(rep, seq)) {
            what[r] = cat("have done ", op->done, " of ", op->total, " steps and wait for ", peers_text(op->waits));
            continue;
        }
        if (rep.has_last && rep.last_seq >= seq) {
            what[r] = cat("completed ", op_text(*oldest, false));
            waiting_kind[r] = 2;
        } else {
            what[r] = rep.has_last ? cat("completed ", coll_name(rep.last_coll), " #", rep.last_seq,
                                         " and has not entered ", op_text(*oldest, false))
                                   : cat("has not entered ", op_text(*oldest, false), " (no operation completed)");
            waiting_kind[r] = 1;
        }
    }
    auto groups = group_ranks(n, [&](int a, int b) { return what[a] == what[b]; });
    std::stable_sort(groups.begin(), groups.end(),
                     [&](const auto& a, const auto& b) { return waiting_kind[a.first] < waiting_kind[b.first]; });
    bool first = true;
    for (const auto& [r, list] : groups) {
        std::string part;
        switch (waiting_kind[r]) {
            case 0: {
                bool several = list.find_first_of(",-") != std::string::npos;
                std::string w = what[r];
                if (!several) w.replace(0, 4, "has");
                if (!several) w.replace(w.find(" and wait for "), 14, " and waits for ");
                part = cat(several ? "ranks " : "rank ", list, " ", w);
                break;
            }
            case 3:
                part = plural(list, "does not answer", "do not answer") +
                       " (not inside Chorus: busy elsewhere, stopped or dead)";
                break;
            default: part = plural(list, what[r].c_str(), what[r].c_str()); break;
        }
        out += cat(first ? " " : "; ", part);
        first = false;
    }
    return out;
}

}  // namespace chorus
