// chorus-model: the scale picture, computed from the schedules the algorithms
// really build. For each collective, rank count and message size it prints
// every algorithm's predicted time under the cost model and the selector's
// choice. No MPI, no network: it runs anywhere.
//
//   chorus-model [-c COLLECTIVE] [-p P1,P2,...] [-m MIN:MAX] [-T datatype] [--check] [-j THREADS]
//                [-H HOSTS | -H HOSTSxRANKS | --layout N,N,...] [--shm] [--rma]
//
// Hosts: -H HOSTS spreads each rank count of -p over HOSTS hosts
// (consecutive ranks, the first hosts one rank more where it does not
// divide); -H 4096x8 is 4096 hosts of 8 ranks; --layout 2,1,1 gives each
// host's ranks. Messages between hosts are priced by CHORUS_COST_NET_*.
// --shm (one host): the ranks share memory as the shared-memory transport
// lets them (publish slots, the single-copy steps, CHORUS_SHM_EAGER messages
// through its rings), so the flat, pipelined and one-sided algorithms are
// priced too; without it, one host's ranks are priced as over a network.
// --rma (hosts): the ranks reach each other's registered memory (UCX RMA,
// which the library uses between hosts where UCX offers it), so the
// one-sided algorithms are priced too.
//
// The cost parameters come from the same CHORUS_COST_* settings the library
// reads (see README); CHORUS_COST_MAX_STEPS defaults to 4 million here.
// The built-in defaults, not this host's cost file, unless --cost-file FILE
// gives one (as a communicator loads it: the settings still override it).
// --compare FILE: instead of the tables, every point whose choice under FILE
// differs from the one under the defaults, with both predictions (what a
// calibration by chorus-tune changes).
// --check: exit with status 1 unless the selector's choice is within 5% of
// the best prediction at every point printed (each point off is listed).
// -j THREADS: a table's rows (message sizes) are computed by this many
// threads at once, each with its own selector (default: one a core); the
// output does not depend on it.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "internal.h"

using namespace chorus;

namespace {

bool g_rma = false;  // --rma

void usage() {
    std::fprintf(stderr,
                 "usage: chorus-model [-c COLLECTIVE|all] [-p RANKS,...] [-m MIN:MAX bytes, suffixes K M G]\n"
                 "                    [-T datatype] [--check] [-j THREADS]\n"
                 "                    [-H HOSTS | -H HOSTSxRANKS_PER_HOST | --layout N,N,...] [--shm] [--rma]\n"
                 "                    [--cost-file FILE | --compare FILE]\n"
                 "COLLECTIVE: allreduce bcast reduce reduce_scatter allgather allgatherv alltoall\n"
                 "            alltoallv gather gatherv scatter scatterv barrier\n"
                 "bytes: the message (allgather(v), gather(v): per rank; alltoall(v): per peer;\n"
                 "scatter(v): per receiver; reduce_scatter: the whole input). allgatherv is shown\n"
                 "with equal blocks and skewed (rank 0's block holds the whole gathered message).\n"
                 "defaults: -c all -p 2,16,128,1024,4096 -m 8:1G -T float32, one host\n"
                 "--check: status 1 unless every choice is within 5%% of the best prediction\n"
                 "--shm: one host whose ranks share memory (publish slots, single-copy steps)\n"
                 "--cost-file FILE: the cost model's constants from a cost file (chorus-tune)\n"
                 "--compare FILE: only the points whose choice FILE changes, with both predictions\n"
                 "-j: rows computed at once (default: one a core)\n"
                 "a prediction marked ~ simulated only some of the ranks (see README)\n");
}

// Numbers from 1 to 2^20 separated by `sep`.
std::vector<int> parse_list(const char* text, char sep, const char* what) {
    std::vector<int> out;
    for (const char* p = text; *p;) {
        char* end = nullptr;
        long v = std::strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1 << 20) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat("bad ", what, ": ", text));
        out.push_back(static_cast<int>(v));
        p = *end == sep ? end + 1 : end;
        if (*end && *end != sep) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat("bad ", what, ": ", text));
    }
    return out;
}

// p ranks over `hosts` hosts, consecutive, the first ones a rank more.
std::vector<int> spread(int p, int hosts) {
    if (hosts > p) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat(p, " ranks cannot fill ", hosts, " hosts"));
    std::vector<int> sizes(static_cast<size_t>(hosts), p / hosts);
    for (int h = 0; h < p % hosts; ++h) ++sizes[h];
    return sizes;
}

// printf into a string.
template <typename... Args>
std::string cat_format(const char* format, Args... args) {
    char buf[256];
    std::snprintf(buf, sizeof buf, format, args...);
    return buf;
}

std::string human(size_t bytes) {
    if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) return cat(bytes >> 30, "G");
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return cat(bytes >> 20, "M");
    if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return cat(bytes >> 10, "K");
    return cat(bytes);
}

}  // namespace

// The largest buffer a rank passes for a message of `bytes` (as the tables
// count them: per rank or per peer for the gathering and scattering
// collectives, whose receive or root buffer holds p of them).
size_t buffer_bytes(coll::Collective c, size_t bytes, int p) {
    switch (c) {
        case coll::Collective::Allgather:
        case coll::Collective::Allgatherv:
        case coll::Collective::Alltoall:
        case coll::Collective::Alltoallv:
        case coll::Collective::Gather:
        case coll::Collective::Gatherv:
        case coll::Collective::Scatter:
        case coll::Collective::Scatterv: return bytes * static_cast<size_t>(p);
        default: return bytes;
    }
}
// Beyond a node's memory: a 32768-rank gather of 1 GiB a rank would need
// 32 TiB at its root, and its schedule a step per piece of every block.
constexpr size_t kMaxBuffer = size_t(1) << 40;

// How far the choice is from the best prediction at one point.
struct Miss {
    std::string where;
    double ratio;
};

// The arguments of a table's row.
coll::CollArgs row_args(coll::Collective c, int p, chorus_datatype_t dt, size_t bytes, bool skewed,
                        const Config& config, const coll::CostParams& params) {
    coll::CollArgs args;
    if (params.all_local) {  // --shm: what the shared-memory transport offers
        args.slot_bytes = net::shm::kPubBytes;
        args.slot_line = net::shm::kPubLine;
        args.one_sided = true;
    }
    args.rma = g_rma && !args.one_sided;
    args.coll = c;
    args.size = p;
    args.dtype = dt;
    args.op = CHORUS_SUM;
    args.chunk_bytes = config.chunk_bytes;
    args.depth = config.window;
    args.hosts = params.hosts.get();
    const size_t elems = bytes / datatype_size(dt);
    args.count = c == coll::Collective::ReduceScatter ? elems / p : elems;
    if (skewed) {
        args.counts.assign(static_cast<size_t>(p), 0);
        args.counts[0] = elems * static_cast<size_t>(p);
        args.displs.assign(static_cast<size_t>(p), args.counts[0]);
        args.displs[0] = 0;
        args.count = args.counts[0];
    }
    return args;
}

// One line of a table: every algorithm's prediction at `bytes` and the
// selector's choice; a choice more than `tolerance` above the best is added
// to `misses`.
std::string table_row(coll::Selector& selector, const std::vector<coll::Algorithm>& algos, coll::Collective c, int p,
                      chorus_datatype_t dt, size_t bytes, bool skewed, const Config& config,
                      const coll::CostParams& params, double tolerance, std::vector<Miss>& misses) {
    const coll::CollArgs args = row_args(c, p, dt, bytes, skewed, config, params);
    const coll::Choice& choice = selector.choose(args);
    const coll::Predictions preds = selector.predictions(args, args.message_bytes());
    double best = 0, chosen = 0;
    for (const auto& [a, pr] : preds) {
        if (best == 0 || pr.us < best) best = pr.us;
        if (a == choice.algorithm) chosen = pr.us;
    }
    std::string out = cat_format("  %10s", human(args.message_bytes()).c_str());
    for (const auto& a : algos) {
        auto it = std::find_if(preds.begin(), preds.end(), [&](const auto& x) { return x.first == &a; });
        if (it == preds.end()) {
            out += cat_format(" %19s  ", "-");
            continue;
        }
        out += cat_format(" %18.1f%s%s", it->second.us, it->second.exact() ? " " : "~",
                          &a == choice.algorithm ? "*" : " ");
    }
    out += cat_format("   %s\n", choice.algorithm->name);
    // The irregular forms choose by the layout alone, for every size at once
    // (Selector::choose_unagreed): not checked per size.
    if (best > 0 && chosen > best * tolerance && coll::Selector::sizes_agreed(c))
        misses.push_back(
            {cat(coll::collective_name(c), skewed ? " (skewed)" : "", " p=", p, " ", human(args.message_bytes()), ": ",
                 choice.algorithm->name, " ", chosen, " us, best ", best, " us"),
             chosen / best});
    return out;
}

// `config`'s cost parameters with the constants of the cost file at `path`
// (the settings still first).
coll::CostParams file_costs(const Config& config, const std::string& path) {
    const CostFile file = read_cost_file(path);
    if (file.state != CostFile::State::Loaded)
        throw Error(CHORUS_ERR_INVALID_ARGUMENT,
                    cat("cost file ", path, ": ", file.problem.empty() ? "cannot read it" : file.problem));
    return machine_costs(config, file, 0).cost;
}

// --compare: the points whose choice differs between the defaults (with
// the settings) and `file`, each priced by `priced` as the tables are.
void compare_choices(const std::vector<coll::Collective>& colls, const std::vector<int>& ranks,
                     const std::vector<size_t>& sizes, chorus_datatype_t dt, const Config& config,
                     const std::function<coll::CostParams(int, const coll::CostParams&)>& priced,
                     const coll::CostParams& file) {
    std::printf("# the choices the cost file changes\n# defaults: %s\n# file: %s\n", config.cost.describe().c_str(),
                file.describe().c_str());
    std::printf("# %-14s %6s %10s  %-30s %s\n", "collective", "ranks", "bytes", "default: choice (us)",
                "file: choice (us)");
    size_t points = 0, changed = 0;
    for (auto c : colls)
        for (int p : ranks) {
            const coll::CostParams a = priced(p, config.cost), b = priced(p, file);
            coll::Selector sa(a), sb(b);
            for (size_t bytes : sizes) {
                const bool barrier = c == coll::Collective::Barrier;
                if (barrier && bytes != sizes.front()) break;
                const size_t elems = bytes / datatype_size(dt);
                if ((!barrier && (c == coll::Collective::ReduceScatter ? elems / p : elems) == 0) ||
                    buffer_bytes(c, bytes, p) > kMaxBuffer)
                    continue;
                const coll::CollArgs args_a = row_args(c, p, dt, bytes, false, config, a),
                                     args_b = row_args(c, p, dt, bytes, false, config, b);
                const coll::Algorithm* x = sa.choose(args_a).algorithm;
                const coll::Algorithm* y = sb.choose(args_b).algorithm;
                ++points;
                if (x == y) continue;
                ++changed;
                const std::string before = cat(x->name, " (", cat_format("%.1f", coll::predict_us(*x, args_a, a)), ")"),
                                  after = cat(y->name, " (", cat_format("%.1f", coll::predict_us(*y, args_b, b)), ")");
                std::printf("  %-14s %6d %10s  %-30s %s\n", coll::collective_name(c), p,
                            human(args_a.message_bytes()).c_str(), before.c_str(), after.c_str());
            }
        }
    std::printf("# %zu of %zu choices change\n", changed, points);
}

int main(int argc, char** argv) {
    // Each prediction fills and frees up to a few hundred MB: kept in the
    // heap rather than returned to the system, the next one does not fault
    // its pages in again (a sixth of the time at -H 4096x8).
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
    std::vector<coll::Collective> colls;
    std::vector<int> ranks = {2, 16, 128, 1024, 4096};
    size_t lo = 8, hi = size_t(1) << 30;
    chorus_datatype_t dt = CHORUS_FLOAT32;
    bool check = false;
    bool shm = false;                // --shm
    std::string cost_file, compare;  // --cost-file, --compare
    int hosts = 0;                   // -H HOSTS: each rank count spread over them
    std::vector<int> layout;         // --layout, or -H HOSTSxRANKS
    constexpr double kTolerance = 1.05;
    // Rows computed at once (-j): each as many cores.
    int threads = std::max(1u, std::thread::hardware_concurrency());
    try {
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            if (a == "-h" || a == "--help") {
                usage();
                return 0;
            }
            if (a == "--check") {
                check = true;
                continue;
            }
            if (a == "--shm") {
                shm = true;
                continue;
            }
            if (a == "--rma") {
                g_rma = true;
                continue;
            }
            if (i + 1 >= argc) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat("missing value after ", a));
            const char* v = argv[++i];
            if (a == "--cost-file" || a == "--compare") {
                (a == "--compare" ? compare : cost_file) = v;
            } else if (a == "-c") {
                for (int c = 0; c < coll::kNumCollectives; ++c)
                    if (std::string(v) == "all" || v == std::string(coll::collective_name(coll::Collective(c))))
                        colls.push_back(coll::Collective(c));
                if (colls.empty()) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat("unknown collective ", v));
            } else if (a == "-p") {
                ranks = parse_list(v, ',', "rank list");
            } else if (a == "-H") {
                std::vector<int> hr = parse_list(v, 'x', "-H (HOSTS or HOSTSxRANKS)");
                if (hr.size() > 2) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat("bad -H: ", v));
                if (hr.size() == 2)
                    layout.assign(static_cast<size_t>(hr[0]), hr[1]);
                else
                    hosts = hr[0];
            } else if (a == "-j") {
                threads = parse_list(v, ',', "-j")[0];
            } else if (a == "--layout") {
                layout = parse_list(v, ',', "layout");
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
        // An offline tool can afford to simulate larger groups exactly than
        // the library does at run time (memory: ~40 bytes per step).
        if (!std::getenv("CHORUS_COST_MAX_STEPS")) config.cost.max_simulated_steps = 4000000;
        if (!cost_file.empty()) config.cost = file_costs(config, cost_file);
        if (!layout.empty()) {
            long total = 0;
            for (int n : layout) total += n;
            if (total > 1 << 20) throw Error(CHORUS_ERR_INVALID_ARGUMENT, cat(total, " ranks: at most 2^20"));
            ranks = {static_cast<int>(total)};
        }
        if (shm && (!layout.empty() || hosts > 1))
            throw Error(CHORUS_ERR_INVALID_ARGUMENT, "--shm is for one host: leave out -H and --layout");
        // The host map of a rank count (null: one host).
        auto hosts_for = [&](int p) -> std::shared_ptr<const coll::HostMap> {
            if (layout.empty() && hosts <= 1) return nullptr;
            return std::make_shared<const coll::HostMap>(
                coll::HostMap::from_layout(layout.empty() ? spread(p, hosts) : layout));
        };
        // The parameters of p ranks, priced as the tables price them.
        auto priced = [&](int p, coll::CostParams params) {
            params.hosts = hosts_for(p);
            if (shm) {  // as the communicator prices a shared-memory transport
                params.all_local = true;
                params.eager_bytes = std::max(params.eager_bytes, config.shm_eager_bytes);
            }
            return params;
        };
        if (!compare.empty()) {
            std::vector<size_t> sizes;
            for (size_t bytes = lo; bytes <= hi; bytes *= 4) {
                sizes.push_back(bytes);
                if (bytes > hi / 4) break;
            }
            compare_choices(colls, ranks, sizes, dt, config, priced, file_costs(config, compare));
            return 0;
        }
        std::printf(
            "# chorus-model: predicted microseconds per algorithm; * marks the selector's choice,\n"
            "# ~ a prediction that simulated only some of the ranks\n");
        std::printf(
            "# cost model: %s; chunk %zu bytes; symmetric schedules: rank 0 alone (hosts of one size\n"
            "# and consecutive ranks: host 0); others: every rank while the group has at most\n"
            "# %zu steps, a sample of them beyond\n",
            config.cost.describe().c_str(), config.chunk_bytes, config.cost.max_simulated_steps);
        size_t esize = datatype_size(dt);
        std::vector<Miss> misses;
        size_t points = 0;
        for (auto c : colls) {
            const auto& algos = coll::algorithms_for(c);
            const auto t0 = std::chrono::steady_clock::now();
            const bool skews = c == coll::Collective::Allgatherv, barrier = c == coll::Collective::Barrier;
            for (int p : ranks) {
                const coll::CostParams params = priced(p, config.cost);
                const std::string where = params.hosts ? params.hosts->describe() : cat(p, " ranks");
                for (int skewed = 0; skewed <= (skews ? 1 : 0); ++skewed) {
                    std::printf("\n# %s%s, %s, %s\n# %10s", coll::collective_name(c),
                                skewed ? " (skewed: one rank holds every element)" : "", where.c_str(),
                                datatype_name(dt), "bytes");
                    for (const auto& a : algos) std::printf(" %20s", a.name);
                    std::printf("   choice\n");
                    // The table's rows (message sizes), computed by `threads`
                    // workers, each with its own selector, printed in order.
                    // Rows whose buffer on some rank would pass kMaxBuffer are
                    // left out (said once).
                    std::vector<size_t> sizes;
                    size_t beyond = 0;
                    for (size_t bytes = barrier ? 0 : lo; bytes <= hi; bytes = bytes ? bytes * 4 : 1) {
                        const size_t elems = bytes / esize;
                        const size_t count = c == coll::Collective::ReduceScatter ? elems / p : elems;
                        if (buffer_bytes(c, bytes, p) > kMaxBuffer)
                            ++beyond;
                        else if (count > 0 || barrier)
                            sizes.push_back(bytes);
                        if (barrier || bytes > hi / 4) break;
                    }
                    struct Row {
                        std::string text;
                        std::vector<Miss> misses;
                        std::string error;
                    };
                    std::vector<Row> rows(sizes.size());
                    std::vector<char> ready(sizes.size(), 0);
                    std::mutex mu;
                    std::condition_variable filled;
                    std::atomic<size_t> next{0};
                    // The irregular forms' choice needs predictions at several
                    // sizes (Selector::unagreed_blocks), most of them the
                    // rows': the workers predict their rows, and then one
                    // selector holding all their predictions chooses and
                    // writes every row (so no size is predicted twice).
                    const bool unagreed = !coll::Selector::sizes_agreed(c);
                    const int workers = std::min<int>(threads, static_cast<int>(sizes.size()));
                    std::vector<coll::Selector> selectors(static_cast<size_t>(std::max(workers, 1)),
                                                          coll::Selector(params));
                    auto work = [&](coll::Selector& selector) {
                        for (size_t i; (i = next++) < sizes.size();) {
                            Row row;
                            try {
                                if (unagreed)
                                    selector.predictions(row_args(c, p, dt, sizes[i], skewed, config, params),
                                                         sizes[i]);
                                else
                                    row.text = table_row(selector, algos, c, p, dt, sizes[i], skewed, config, params,
                                                         kTolerance, row.misses);
                            } catch (const Error& e) {
                                row.error = e.what();
                            }
                            std::lock_guard<std::mutex> lock(mu);
                            rows[i] = std::move(row);
                            ready[i] = unagreed ? 0 : 1;
                            filled.notify_all();
                        }
                    };
                    std::vector<std::thread> pool;
                    for (int t = 0; t < workers && workers > 1; ++t) pool.emplace_back(work, std::ref(selectors[t]));
                    std::string error;
                    if (pool.empty()) work(selectors[0]);
                    if (unagreed) {
                        for (auto& t : pool) t.join();
                        pool.clear();
                        for (size_t t = 1; t < selectors.size(); ++t) selectors[0].adopt_predictions(selectors[t]);
                        for (size_t i = 0; i < sizes.size(); ++i) {
                            if (!rows[i].error.empty()) continue;
                            try {
                                rows[i].text = table_row(selectors[0], algos, c, p, dt, sizes[i], skewed, config,
                                                         params, kTolerance, rows[i].misses);
                            } catch (const Error& e) {
                                rows[i].error = e.what();
                            }
                        }
                        std::fill(ready.begin(), ready.end(), 1);
                    }
                    for (size_t i = 0; i < sizes.size(); ++i) {
                        std::unique_lock<std::mutex> lock(mu);
                        filled.wait(lock, [&] { return ready[i] != 0; });
                        if (!rows[i].error.empty() && error.empty()) error = rows[i].error;
                        if (!error.empty()) continue;
                        std::fputs(rows[i].text.c_str(), stdout);
                        std::fflush(stdout);
                        ++points;
                        misses.insert(misses.end(), rows[i].misses.begin(), rows[i].misses.end());
                    }
                    for (auto& t : pool) t.join();
                    if (!error.empty()) throw Error(CHORUS_ERR_INTERNAL, error);
                    if (beyond)
                        std::printf("  # %zu larger sizes left out: a rank's buffer would pass %s bytes\n", beyond,
                                    human(kMaxBuffer).c_str());
                }
            }
            const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::printf("# %s: %.1f s\n", coll::collective_name(c), secs);
        }
        if (check) {
            std::printf("\n# check: %zu of %zu choices more than %.0f%% above the best prediction\n", misses.size(),
                        points, (kTolerance - 1) * 100);
            for (const Miss& m : misses) std::printf("#   %s (%.3fx)\n", m.where.c_str(), m.ratio);
            if (!misses.empty()) return 1;
        }
    } catch (const Error& e) {
        std::fprintf(stderr, "chorus-model: %s\n", e.what());
        usage();
        return 2;
    }
    return 0;
}
