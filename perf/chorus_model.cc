// chorus-model: the scale picture, computed from the schedules the algorithms
// really build. For each collective, rank count and message size it prints
// every algorithm's predicted time under the cost model and the selector's
// choice. No MPI, no network: it runs anywhere.
//
//   chorus-model [-c COLLECTIVE] [-p P1,P2,...] [-m MIN:MAX] [-T datatype]
//
// The cost parameters come from the same CHORUS_COST_* settings the library
// reads (see README); CHORUS_COST_MAX_STEPS defaults to 20 million here.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll/algorithm.h"
#include "coll/cost_model.h"
#include "coll/selector.h"
#include "core/config.h"
#include "reduce/datatype.h"
#include "base/error.h"

using namespace chorus;

namespace {

void usage() {
    std::fprintf(stderr,
                 "usage: chorus-model [-c allreduce|bcast|reduce|reduce_scatter|allgather|all]\n"
                 "                    [-p RANKS,...] [-m MIN:MAX bytes, suffixes K M G] [-T datatype]\n"
                 "defaults: -c all -p 2,16,128,1024,4096 -m 8:1G -T float32\n");
}

std::vector<int> parse_ranks(const char* text) {
    std::vector<int> out;
    for (const char* p = text; *p;) {
        char* end = nullptr;
        long v = std::strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1 << 20) throw Error(CHORUS_ERR_INVALID_ARGUMENT, "bad rank list");
        out.push_back(static_cast<int>(v));
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') throw Error(CHORUS_ERR_INVALID_ARGUMENT, "bad rank list");
    }
    return out;
}

std::string human(size_t bytes) {
    if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) return cat(bytes >> 30, "G");
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return cat(bytes >> 20, "M");
    if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return cat(bytes >> 10, "K");
    return cat(bytes);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<coll::Collective> colls;
    std::vector<int> ranks = {2, 16, 128, 1024, 4096};
    size_t lo = 8, hi = size_t(1) << 30;
    chorus_datatype_t dt = CHORUS_FLOAT32;
    try {
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            if (a == "-h" || a == "--help") {
                usage();
                return 0;
            }
            if (i + 1 >= argc) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat("missing value after ", a));
            const char* v = argv[++i];
            if (a == "-c") {
                for (int c = 0; c < coll::kNumCollectives; ++c)
                    if (std::string(v) == "all" || v == std::string(coll::collective_name(coll::Collective(c))))
                        colls.push_back(coll::Collective(c));
                if (colls.empty()) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat("unknown collective ", v));
            } else if (a == "-p") {
                ranks = parse_ranks(v);
            } else if (a == "-m") {
                std::string m = v;
                size_t colon = m.find(':');
                if (colon != std::string::npos) lo = parse_bytes(m.substr(0, colon), "-m");
                hi = parse_bytes(m.substr(colon == std::string::npos ? 0 : colon + 1), "-m");
                if (lo < 1 || lo > hi) throw Error(CHORUS_ERR_INVALID_ARGUMENT, "-m: need 1 <= MIN <= MAX");
            } else if (a == "-T") {
                bool found = false;
                for (int d = 0; d < CHORUS_NUM_DATATYPES; ++d)
                    if (std::string(v) == datatype_name(chorus_datatype_t(d))) {
                        dt = chorus_datatype_t(d);
                        found = true;
                    }
                if (!found) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat("unknown datatype ", v));
            } else {
                throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat("unknown option ", a));
            }
        }
        if (colls.empty())
            for (int c = 0; c < coll::kNumCollectives; ++c) colls.push_back(coll::Collective(c));
        Config config = Config::from_env();
        // An offline tool can afford to simulate far larger groups exactly
        // than the library does at run time (memory: ~120 bytes per step).
        if (!std::getenv("CHORUS_COST_MAX_STEPS")) config.cost.max_simulated_steps = 20000000;
        coll::Selector selector(config.cost);
        std::printf("# chorus-model: predicted microseconds per algorithm; * marks the selector's choice\n");
        std::printf("# cost model: %s; chunk %zu bytes; every rank simulated while the group has at most %zu steps,\n"
                    "# rank 0 in lockstep with symmetric peers beyond\n",
                    config.cost.describe().c_str(), config.chunk_bytes, config.cost.max_simulated_steps);
        size_t esize = datatype_size(dt);
        for (auto c : colls) {
            const auto& algos = coll::algorithms_for(c);
            for (int p : ranks) {
                std::printf("\n# %s, %d ranks, %s\n# %10s", coll::collective_name(c), p, datatype_name(dt), "bytes");
                for (const auto& a : algos) std::printf(" %20s", a.name);
                std::printf("   choice\n");
                for (size_t bytes = lo; bytes <= hi; bytes *= 4) {
                    coll::CollArgs args;
                    args.coll = c;
                    args.size = p;
                    args.dtype = dt;
                    args.op = CHORUS_SUM;
                    args.chunk_bytes = config.chunk_bytes;
                    args.depth = config.window;
                    size_t elems = bytes / esize;
                    args.count = c == coll::Collective::ReduceScatter ? elems / p : elems;
                    if (args.count == 0) continue;
                    const coll::Choice& choice = selector.choose(args);
                    std::printf("  %10s", human(args.message_bytes()).c_str());
                    for (const auto& a : algos) {
                        try {
                            double t = coll::predict_us(a, args, config.cost);
                            std::printf(" %19.1f%s", t, &a == choice.algorithm ? "*" : " ");
                        } catch (const Error& e) {
                            if (e.code() != CHORUS_ERR_UNSUPPORTED) throw;
                            std::printf(" %19s ", "-");
                        }
                    }
                    std::printf("   %s\n", choice.algorithm->name);
                    std::fflush(stdout);
                    if (bytes > hi / 4) break;
                }
            }
        }
    } catch (const Error& e) {
        std::fprintf(stderr, "chorus-model: %s\n", e.what());
        usage();
        return 2;
    }
    return 0;
}
