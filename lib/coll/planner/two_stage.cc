#include "coll/planner/two_stage.h"

#include "base/error.h"
#include "coll/two_level/two_level.h"

namespace chorus::coll {

size_t sizes_per_rank(const CollArgs& a) {
    return a.coll == Collective::Alltoallv ? 2 * static_cast<size_t>(a.size) : 1;
}

std::vector<uint64_t> own_sizes(const CollArgs& a) {
    if (a.coll != Collective::Alltoallv) return {a.count};
    std::vector<uint64_t> out;
    out.reserve(sizes_per_rank(a));
    for (Side side : {Side::Send, Side::Recv})
        for (int q = 0; q < a.size; ++q) out.push_back(a.block(side, q).count);
    return out;
}

int sizes_gatherer(const CollArgs& a, int h) {
    const HostView v(a);
    return a.coll == Collective::Alltoallv ? v.map.members(h)[0] : v.rep(h, a.root);
}

size_t gathered_sizes(const CollArgs& a) {
    const HostView v(a);
    return sizes_gatherer(a, v.host) == a.rank ? static_cast<size_t>(v.local_size()) * sizes_per_rank(a) : 0;
}

std::unique_ptr<Schedule> build_sizes_stage(const CollArgs& a) {
    if (!two_level_applies(a) || a.tag_bits < 1) fail(CHORUS_ERR_INTERNAL, "two-stage: no second level or tag bit");
    auto s = std::make_unique<Schedule>(CHORUS_UINT64, CHORUS_SUM, a.rank, a.size);
    const HostView v(a);
    const int gatherer = sizes_gatherer(a, v.host);
    const uint32_t tag = 1u << (a.tag_bits - 1);
    const size_t bytes = sizes_per_rank(a) * sizeof(uint64_t);
    if (a.rank != gatherer) {
        s->send(gatherer, tag, {Buf::Send, 0}, bytes);
    } else {
        for (int i = 0; i < v.local_size(); ++i) {
            const int m = v.members()[static_cast<size_t>(i)];
            const Region at{Buf::Recv, static_cast<size_t>(i) * bytes};
            if (m == a.rank)
                s->copy(at, {Buf::Send, 0}, bytes);
            else
                s->recv(m, tag, at, bytes);
        }
    }
    s->finalize();
    return s;
}

std::vector<size_t> model_host_sizes(const CollArgs& a) {
    const HostView v(a);
    if (sizes_gatherer(a, v.host) != a.rank) return {};
    std::vector<size_t> out;
    CollArgs m = a;
    for (int r : v.members()) {
        m.rank = r;
        for (uint64_t x : own_sizes(m)) out.push_back(static_cast<size_t>(x));
    }
    return out;
}

CollArgs stage_two(const CollArgs& a) {
    if (a.tag_bits < 1) fail(CHORUS_ERR_INTERNAL, "two-stage: no tag bit for stage 1");
    CollArgs b = a;
    b.tag_bits = a.tag_bits - 1;
    return b;
}

}  // namespace chorus::coll
