// Bruck all-to-all, for small blocks and any rank count.
//
// Position i of a rank holds the block bound for rank + i (position 0 is its
// own). In round k (d = 2^k, while d < size) every position with bit k set
// moves to rank + d and keeps its index, so a block travels the binary
// digits of the distance to its destination, and after the last round
// position i of rank r holds the block rank r - i sent to r. A round's
// positions are scattered, so the round packs them into scratch, sends one
// message, receives one, and unpacks it: into scratch slot i while a later
// round moves position i again, into its final place in the receive buffer
// (block r - i) after the last round that does (the highest set bit of i).
// A position is read from the send buffer itself (block r + i) until its
// first move; in place, the send buffer is first rotated into scratch, so
// that nothing is overwritten before it has been read. Copies of
// neighbouring blocks are merged, and each copy waits only for the steps
// that touch what it reads or overwrites, so a round costs O(size) steps and
// dependencies. Each message is one transfer (the blocks are small).
//
// Steps: ceil(log2 size) rounds of one message each way. Bytes: about
// size/2 blocks per message, (size/2) log2(size) blocks in all against
// size - 1 for the pairwise exchange, and twice that copied locally: the win
// is log2(size) messages instead of size - 1.
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

namespace {

constexpr StepId kNone = ~StepId(0);

// Block copies, merged where both sides continue the previous one; a merged
// copy waits for the union of its parts' dependencies.
class Copies {
public:
    explicit Copies(Schedule& s) : s_(s) {}
    // Returns the index of the run the copy joined (its step, after emit()).
    size_t add(Region dst, Region src, size_t bytes, std::initializer_list<StepId> deps) {
        bool joins = !runs_.empty() && runs_.back().dst.buf == dst.buf && runs_.back().src.buf == src.buf &&
                     runs_.back().dst.offset + runs_.back().bytes == dst.offset &&
                     runs_.back().src.offset + runs_.back().bytes == src.offset;
        if (joins)
            runs_.back().bytes += bytes;
        else
            runs_.push_back({dst, src, bytes, {}});
        std::vector<StepId>& d = runs_.back().deps;
        for (StepId x : deps)
            if (x != kNone && std::find(d.begin(), d.end(), x) == d.end()) d.push_back(x);
        return runs_.size() - 1;
    }
    std::vector<StepId> emit() {
        std::vector<StepId> out;
        for (const Run& r : runs_) out.push_back(s_.copy(r.dst, r.src, r.bytes, r.deps));
        runs_.clear();
        return out;
    }

private:
    struct Run {
        Region dst, src;
        size_t bytes;
        std::vector<StepId> deps;
    };
    Schedule& s_;
    std::vector<Run> runs_;
};

}  // namespace

std::unique_ptr<Schedule> build_bruck_alltoall(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    const size_t es = datatype_size(a.dtype), blk = a.count * es;  // bytes per block
    auto block = [&](int b) { return static_cast<size_t>(mod(b, p)) * blk; };
    if (blk == 0) {
        s.finalize();
        return sched;
    }
    // Scratch: slot i at i * blk, then the outgoing and the incoming pack.
    size_t most = 0;
    for (int d = 1; d < p; d *= 2) {
        size_t moved = 0;
        for (int i = d; i < p; ++i) moved += (i & d) != 0;
        most = std::max(most, moved);
    }
    const TagSpace tags(ceil_log2(static_cast<uint64_t>(p)), a.tag_bits);  // one step index a round
    const size_t out_pack = static_cast<size_t>(p) * blk, in_pack = out_pack + most * blk;
    s.need_scratch(in_pack + most * blk);

    std::vector<Region> at(p);             // where position i is now
    std::vector<StepId> writer(p, kNone);  // the copy that put it there
    Copies copies(s);
    for (int i = 0; i < p; ++i) {
        at[i] = a.in_place ? Region{Buf::Scratch, static_cast<size_t>(i) * blk} : Region{Buf::Send, block(r + i)};
        if (a.in_place && i > 0) writer[i] = copies.add(at[i], {Buf::Send, block(r + i)}, blk, {});
    }
    const std::vector<StepId> rotation = copies.emit();  // in place: at most two runs
    for (int i = 1; a.in_place && i < p; ++i) writer[i] = rotation[writer[i]];
    const StepId rot[2] = {rotation.empty() ? kNone : rotation[0], rotation.size() < 2 ? kNone : rotation[1]};
    StepId sent = kNone, first_send = kNone;
    std::vector<StepId> unpacked;  // the previous round's unpacking, which reads the incoming pack
    for (int k = 0, d = 1; d < p; ++k, d *= 2) {
        std::vector<size_t> read_by(p);  // the pack copy (run) that read position i
        size_t moved = 0;
        for (int i = d; i < p; ++i)
            if (i & d) read_by[i] = copies.add({Buf::Scratch, out_pack + moved++ * blk}, at[i], blk, {writer[i], sent});
        const std::vector<StepId> packed = copies.emit();
        const uint32_t tag = tags.tag(static_cast<uint64_t>(k), 0);
        sent = s.send(mod(r + d, p), tag, {Buf::Scratch, out_pack}, moved * blk, packed);
        if (k == 0) first_send = sent;
        const StepId got = s.recv(mod(r - d, p), tag, {Buf::Scratch, in_pack}, moved * blk, unpacked);
        moved = 0;
        for (int i = d; i < p; ++i) {
            if (!(i & d)) continue;
            const bool last = i < 2 * d;  // no later round moves it
            at[i] = last ? Region{Buf::Recv, block(r - i)} : Region{Buf::Scratch, static_cast<size_t>(i) * blk};
            // After the pack read what this overwrites (and, in place, after
            // the rotation read the receive buffer).
            writer[i] = copies.add(at[i], {Buf::Scratch, in_pack + moved++ * blk}, blk,
                                   {got, packed[read_by[i]], last ? rot[0] : kNone, last ? rot[1] : kNone});
        }
        unpacked = copies.emit();
        for (int i = d; i < p; ++i)
            if (i & d) writer[i] = unpacked[writer[i]];
    }
    // The own block (in place, already where it belongs: the executor skips it).
    s.copy({Buf::Recv, block(r)}, {Buf::Send, block(r)}, blk, first_send == kNone ? Deps() : Deps{first_send});
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
