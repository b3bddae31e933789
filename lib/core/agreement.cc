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
