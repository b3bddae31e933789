#include "core/agreement.h"

#include "base/error.h"
#include "reduce/datatype.h"

namespace chorus {

namespace {

using coll::Collective;

bool uses_op(Collective c) {
    return c == Collective::Allreduce || c == Collective::Reduce || c == Collective::ReduceScatter;
}
bool uses_root(Collective c) {
    return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather ||
           c == Collective::Gatherv || c == Collective::Scatter || c == Collective::Scatterv;
}
// Whether the count argument must be the same on every rank (a v form's is
// this rank's own block).
bool uses_count(Collective c) {
    return c != Collective::Allgatherv && c != Collective::Alltoallv && c != Collective::Gatherv &&
           c != Collective::Scatterv && c != Collective::Barrier;
}
// Whether the counts array must be the same on every rank.
bool counts_agree(Collective c) {
    return c == Collective::ReduceScatter || c == Collective::Allgatherv;
}

std::string describe(const Fingerprint& f) {
    auto c = static_cast<coll::Collective>(f.coll);
    std::string s = cat(coll::collective_name(c), " #", f.seq);
    if (uses_count(c)) s += cat(" count=", f.count);
    if (c != Collective::Barrier) s += cat(" ", datatype_name(static_cast<chorus_datatype_t>(f.dtype)));
    if (uses_op(c)) s += cat(" ", op_name(static_cast<chorus_op_t>(f.op)));
    if (uses_root(c)) s += cat(" root=", f.root);
    if (f.counts_hash) s += cat(" recvcounts#", f.counts_hash);
    if (f.peer >= 0) s += cat(" expects ", f.expected, " elements from rank ", f.peer, ", which sends ", f.peer_sends);
    return s;
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
    std::string out;
    for (size_t i = 0; i < ranks.size();) {
        size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        out += cat(out.empty() ? "" : ",", ranks[i]);
        if (j > i) out += cat(j == i + 1 ? "," : "-", ranks[j]);
        i = j + 1;
    }
    return out;
}

std::string settings_disagreement(const std::vector<std::string>& settings) {
    const int n = static_cast<int>(settings.size());
    // Each blob: NAME=value lines, the same names in the same order.
    std::vector<std::vector<std::string>> lines(n);
    for (int r = 0; r < n; ++r) {
        size_t pos = 0;
        while (pos < settings[r].size()) {
            size_t end = settings[r].find('\n', pos);
            if (end == std::string::npos) end = settings[r].size();
            lines[r].push_back(settings[r].substr(pos, end - pos));
            pos = end + 1;
        }
    }
    std::string msg;
    for (size_t k = 0; k < lines[0].size(); ++k) {
        auto value = [&](int r) { return k < lines[r].size() ? lines[r][k] : std::string("?"); };
        auto groups = group_ranks(n, [&](int a, int b) { return value(a) == value(b); });
        if (groups.size() <= 1) continue;
        const std::string& line = lines[0][k];
        msg += cat(msg.empty() ? "" : "; ", line.substr(0, line.find('=')), " differs across ranks:");
        for (size_t g = 0; g < groups.size(); ++g) {
            std::string v = value(groups[g].first);
            msg += cat(g ? "," : "", " ", v.substr(v.find('=') + 1), " on rank",
                       groups[g].second.find_first_of(",-") == std::string::npos ? " " : "s ", groups[g].second);
        }
    }
    return msg;
}

Fingerprint fingerprint(const coll::CollArgs& args, uint64_t seq) {
    Fingerprint f;
    f.coll = static_cast<uint32_t>(args.coll);
    f.dtype = static_cast<uint32_t>(args.dtype);
    f.seq = seq;
    if (uses_count(args.coll)) f.count = args.count;
    if (uses_op(args.coll)) f.op = static_cast<uint32_t>(args.op);
    if (uses_root(args.coll)) f.root = args.root;
    if (counts_agree(args.coll))
        for (size_t c : args.counts) f.counts_hash = (f.counts_hash ^ c) * 0x100000001b3ull + 1;
    return f;
}

bool pair_counts(const coll::CollArgs& a, std::vector<uint64_t>* sends, std::vector<uint64_t>* expects) {
    if (a.coll != Collective::Alltoallv && a.coll != Collective::Gatherv && a.coll != Collective::Scatterv)
        return false;
    const auto p = static_cast<size_t>(a.size);
    sends->assign(p, 0);
    expects->assign(p, 0);
    // A side of one block (gatherv's send, scatterv's receive) is the root's.
    auto fill = [&](coll::Side side, std::vector<uint64_t>* v) {
        const int n = a.blocks(side);
        if (n && !a.per_rank(side)) (*v)[static_cast<size_t>(a.root)] = a.block(side, 0).count;
        for (int i = 0; a.per_rank(side) && i < n; ++i) (*v)[static_cast<size_t>(i)] = a.block(side, i).count;
    };
    fill(coll::Side::Send, sends);
    fill(coll::Side::Recv, expects);
    // In place, the root's own block is where it belongs: nothing travels.
    if (a.in_place && a.coll != Collective::Alltoallv) (*sends)[a.rank] = (*expects)[a.rank] = 0;
    return true;
}

void note_pairs(Fingerprint& f, const std::vector<uint64_t>& got, const std::vector<uint64_t>& expects) {
    for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != expects[i]) {
            f.peer = static_cast<int32_t>(i);
            f.peer_sends = got[i];
            f.expected = expects[i];
            return;
        }
}

std::string disagreement(const std::vector<Fingerprint>& all) {
    auto groups = group_ranks(static_cast<int>(all.size()), [&](int a, int b) { return all[a] == all[b]; });
    if (groups.size() <= 1) return "";
    std::string msg = "CHORUS_CHECK: ranks disagree on the collective:";
    for (const auto& [first, ranks] : groups) msg += cat(" [ranks ", ranks, ": ", describe(all[first]), "]");
    return msg;
}

}  // namespace chorus
