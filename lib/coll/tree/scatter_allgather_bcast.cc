// Scatter + all-gather broadcast (van de Geijn), for large messages.
//
// The message is cut into `size` blocks, block i = split(count, size, i)
// indexed by RELATIVE rank (rel = rank - root mod size), so the blocks of a
// binomial subtree (rels c .. c + 2^k - 1) are one contiguous range.
//
//   scatter: down the binomial tree, a rank receives the blocks of its whole
//     subtree, straight into the receive buffer, and passes each child the
//     range of the child's subtree (largest subtree first). The range sent to
//     a child travels as the child's segments: its children's ranges, largest
//     first, then its own block, so a rank has the part it must forward first
//     before the rest; each piece is forwarded as soon as it has arrived.
//   all-gather: a ring over relative ranks. At step s rank rel sends block
//     (rel - s) to rel + 1 and receives block (rel - s - 1) from rel - 1, in
//     place. A block the receiver already holds from the scatter is skipped
//     on both sides (so nothing is written twice, and the root, which holds
//     everything, receives nothing).
//
// Steps: ceil(log2 size) + (size - 1). Bytes: every non-root receives the
// message exactly once (its subtree's blocks in the scatter, the others in
// the ring); every rank sends under twice the message (its children's
// blocks, then at most size - 1 blocks around the ring), the root about
// 2 (size - 1) / size of it against the binomial tree's ceil(log2 size)
// copies, which is why this wins for large messages.
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

namespace {
// Tag steps: scatter segments use 0 .. kRingTagBase - 1 (at most
// 1 + log2(size) of them), ring step s uses kRingTagBase + s.
constexpr uint32_t kRingTagBase = 32;

struct Held {
    Range elems;  // where in the message
    StepId step;  // the receive that wrote it
};
}  // namespace

std::unique_ptr<Schedule> build_scatter_allgather_bcast(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    const int p = a.size;
    StepBuilder sb(s, a, kRingTagBase + p - 1);
    const int rel = mod(a.rank - a.root, p);
    auto abs_rank = [&](int r) { return mod(r + a.root, p); };

    if (p == 1) {
        // The root's own output; in place the executor skips it.
        sb.copy(Buf::Recv, 0, Buf::Send, 0, a.count);
        s.finalize();
        return sched;
    }

    auto block = [&](int b) { return split(a.count, p, b); };
    auto subtree = [&](int r) { return r == 0 ? p : std::min(r & -r, p - r); };
    auto span = [&](int r) { return Range{block(r).begin, block(r + subtree(r) - 1).end}; };
    auto holds = [&](int r, int b) { return b >= r && b < r + subtree(r); };
    // The order a rank's range arrives in: its children's ranges, largest
    // first, then its own block.
    auto segments = [&](int r) {
        std::vector<Range> segs;
        std::vector<int> kids = binomial_children(r, p);
        for (auto it = kids.rbegin(); it != kids.rend(); ++it) segs.push_back(span(*it));
        segs.push_back(block(r));
        return segs;
    };

    // The root reads its send buffer; everyone else what it received.
    const Buf src = rel == 0 ? Buf::Send : Buf::Recv;
    std::vector<Held> held;    // scatter receives, sorted by position
    std::vector<StepId> sent;  // every send, in build order
    // Send elements [e.begin, e.end) to `peer` in pieces, each after the
    // scatter receives it overlaps.
    auto send_held = [&](int peer, uint32_t step, Range e) {
        for (size_t i = 0, n = sb.pieces(e.size()); i < n; ++i) {
            Range pc = sb.piece(e.size(), i);
            if (!pc.size()) continue;
            size_t b = e.begin + pc.begin, end = e.begin + pc.end;
            std::vector<StepId> deps;
            auto it = std::partition_point(held.begin(), held.end(), [&](const Held& h) { return h.elems.end <= b; });
            for (; it != held.end() && it->elems.begin < end; ++it) deps.push_back(it->step);
            sent.push_back(s.send(peer, sb.tag_of(step, i), sb.at(src, b), (end - b) * sb.esize(), deps));
        }
    };

    // Scatter.
    if (rel != 0) {
        const int parent = abs_rank(binomial_parent(rel));
        std::vector<Range> segs = segments(rel);
        for (size_t j = 0; j < segs.size(); ++j) {
            std::vector<StepId> got =
                sb.recv(parent, static_cast<uint32_t>(j), Buf::Recv, segs[j].begin, segs[j].size());
            for (size_t i = 0, k = 0; k < got.size(); ++i) {
                Range pc = sb.piece(segs[j].size(), i);
                if (pc.size()) held.push_back({{segs[j].begin + pc.begin, segs[j].begin + pc.end}, got[k++]});
            }
        }
        std::sort(held.begin(), held.end(), [](const Held& x, const Held& y) { return x.elems.begin < y.elems.begin; });
    }
    std::vector<int> kids = binomial_children(rel, p);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) {
        std::vector<Range> segs = segments(*it);
        for (size_t j = 0; j < segs.size(); ++j) send_held(abs_rank(*it), static_cast<uint32_t>(j), segs[j]);
    }

    // Ring all-gather over relative ranks.
    const int next = abs_rank(mod(rel + 1, p)), prev = abs_rank(mod(rel - 1, p));
    const int next_rel = mod(rel + 1, p);
    std::vector<StepId> arrived;  // pieces of the block received last step
    // With fewer elements than ranks only blocks 0 .. count - 1 hold any, and
    // a step whose two blocks are empty adds nothing: only the steps that move
    // one are visited, in order (else every rank's schedule passes over all p
    // steps, quadratic for a model that builds many ranks' of a large group).
    std::vector<int> steps;
    if (a.count >= static_cast<size_t>(p)) {
        steps.resize(static_cast<size_t>(p - 1));
        for (int st = 0; st < p - 1; ++st) steps[static_cast<size_t>(st)] = st;
    } else {
        for (int b = 0; b < static_cast<int>(a.count); ++b)
            for (int st : {mod(rel - b, p), mod(rel - b - 1, p)})
                if (st < p - 1) steps.push_back(st);
        std::sort(steps.begin(), steps.end());
        steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    }
    for (int st : steps) {
        const uint32_t step = kRingTagBase + static_cast<uint32_t>(st);
        const int out = mod(rel - st, p), in = mod(rel - st - 1, p);
        if (!holds(next_rel, out)) {
            Range b = block(out);
            if (holds(rel, out))
                send_held(next, step, b);
            else
                sb.send_each_after(next, step, Buf::Recv, b.begin, b.size(), arrived);
        }
        if (!holds(rel, in)) arrived = sb.recv(prev, step, Buf::Recv, block(in).begin, block(in).size());
    }
    // The root's own output, piece by piece behind its sends; in place the
    // executor skips it.
    if (rel == 0) sb.copy_behind(Buf::Recv, 0, Buf::Send, 0, a.count, sent);
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
