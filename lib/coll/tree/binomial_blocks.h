// The blocks of a binomial gather or scatter (binomial_gather.cc,
// binomial_scatter.cc) as one rank sees them. Ranks are relative to the root
// (rel = rank - root mod size) and form the tree of binomial_bcast.cc; rel's
// subtree is relative ranks rel .. rel + subtree - 1. A rank keeps its
// subtree's blocks in scratch in relative order, its own first; the root
// keeps them in its user buffer, block i at i * count.
#pragma once

#include <vector>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

struct TreeBlocks {
    explicit TreeBlocks(const CollArgs& a)
        : p(a.size), root(a.root), rel(mod(a.rank - a.root, a.size)), subtree(binomial_subtree(rel, p)), n(a.count) {}
    int abs_rank(int x) const { return mod(x + root, p); }
    // Where relative rank x's block is here (in elements).
    size_t place(int x) const { return static_cast<size_t>(rel == 0 ? abs_rank(x) : x - rel) * n; }
    // The buffer that holds the blocks here (the root's: its user buffer).
    Buf buffer(Buf at_root) const { return rel == 0 ? at_root : Buf::Scratch; }
    // The message of rel x's subtree, as the runs both its ends cut it into.
    std::vector<RankRun> runs(int x) const { return absolute_runs(x, binomial_subtree(x, p), root, p); }
    size_t elems(const RankRun& run) const { return static_cast<size_t>(run.n) * n; }
    // Scratch for the subtree's blocks, where a rank keeps any.
    void need_scratch(Schedule& s, size_t esize) const {
        if (rel != 0 && subtree > 1) s.need_scratch(static_cast<size_t>(subtree) * n * esize);
    }

    int p, root, rel, subtree;
    size_t n;
};

}  // namespace chorus::coll
