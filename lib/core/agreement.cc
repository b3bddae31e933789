#include "core/agreement.h"

#include "base/error.h"
#include "reduce/datatype.h"

namespace chorus {

namespace {

bool uses_op(coll::Collective c) {
    return c == coll::Collective::Allreduce || c == coll::Collective::Reduce || c == coll::Collective::ReduceScatter;
}
bool uses_root(coll::Collective c) {
    return c == coll::Collective::Broadcast || c == coll::Collective::Reduce;
}

std::string describe(const Fingerprint& f) {
    auto c = static_cast<coll::Collective>(f.coll);
    std::string s = cat(coll::collective_name(c), " #", f.seq, " count=", f.count, " ",
                        datatype_name(static_cast<chorus_datatype_t>(f.dtype)));
    if (uses_op(c)) s += cat(" ", op_name(static_cast<chorus_op_t>(f.op)));
    if (uses_root(c)) s += cat(" root=", f.root);
    if (f.counts_hash) s += cat(" recvcounts#", f.counts_hash);
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
    Fingerprint f{static_cast<uint32_t>(args.coll), static_cast<uint32_t>(args.dtype), 0, 0, args.count, 0, seq};
    if (uses_op(args.coll)) f.op = static_cast<uint32_t>(args.op);
    if (uses_root(args.coll)) f.root = args.root;
    for (size_t c : args.counts) f.counts_hash = (f.counts_hash ^ c) * 0x100000001b3ull + 1;
    return f;
}

std::string disagreement(const std::vector<Fingerprint>& all) {
    auto groups = group_ranks(static_cast<int>(all.size()), [&](int a, int b) { return all[a] == all[b]; });
    if (groups.size() <= 1) return "";
    std::string msg = "CHORUS_CHECK: ranks disagree on the collective:";
    for (const auto& [first, ranks] : groups) msg += cat(" [ranks ", ranks, ": ", describe(all[first]), "]");
    return msg;
}

}  // namespace chorus
