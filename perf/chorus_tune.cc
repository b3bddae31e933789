// chorus-tune: measures this host's constants of the cost model and writes
// its cost file, which every communicator created on the host then loads
// (lib/core/machine_costs.h; CHORUS_COST_* settings still override it).
//
//   mpirun -np 2 chorus-tune [--dry-run]   measure (and write the file)
//   chorus-tune --print                     the constants a communicator
//                                           would use here, and whence
//
// What it measures, each rank on buffers of twice the largest cache (64 MiB
// to 512 MiB), the model's rates being those of two processes at once
// (coll/planner/cost_model.h): both ranks start each pass together.
//   cache_mib       the largest data cache the OS reports, in MiB
//   copy_gbs        memcpy (host_copy), beyond the caches
//   stream_gbs      host_copy_stream (non-temporal stores), beyond the caches
//   reduce_gbs      host_reduce float32 sum in place, GB/s of output
// and, with two ranks on one host (ranks 0 and 1; others wait):
//   memory_gbs      cross-memory attach (process_vm_readv) of the peer's
//                   whole buffer, beyond the caches
//   get_gbs         the same within the caches (a region of an eighth of
//                   the cache, 256 KiB to 4 MiB, read again and again)
//   get_reduce_gbs  a get that reduces: 128 KiB pieces read into a buffer
//                   and added into the result, as the one-sided steps do
//   slot_us         half a round trip of a flag through shared memory
//   get_us          a 64-byte process_vm_readv plus slot_us (the reply)
// With one rank, only the first four (one process alone: faster than two
// at once where they share the memory bus). memory_gbs and the get rates
// are shown but not written to the file: the model's are effective rates
// inside whole collectives, which these reads alone overstate. It takes 1-3 s at np=2, most of
// it the first touch of the buffers. Messages between hosts, alpha_us and
// local_alpha_us are not measured: the defaults (or settings) stand.
#include <mpi.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "internal.h"

using namespace chorus;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPasses = 3;  // of each rate: the best
constexpr size_t kPiece = 128 * 1024;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

char* map_buffer(size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw Error(CHORUS_ERR_OUT_OF_MEMORY, cat("chorus-tune: cannot map ", bytes, " bytes"));
    madvise(p, bytes, MADV_HUGEPAGE);
    std::memset(p, 1, bytes);
    return static_cast<char*>(p);
}

// The ranks that measure (`comm`) start each pass together; a pass's rate is
// `bytes` over its time, the best of kPasses, averaged over the ranks.
template <typename F>
double rate_gbs(MPI_Comm comm, size_t bytes, F&& pass) {
    double best = 0;
    for (int i = 0; i < kPasses; ++i) {
        MPI_Barrier(comm);
        const auto t0 = Clock::now();
        pass();
        best = std::max(best, static_cast<double>(bytes) / seconds_since(t0) / 1e9);
    }
    double sum = 0;
    int n = 1;
    MPI_Allreduce(&best, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Comm_size(comm, &n);
    return sum / n;
}

// Reads `bytes` at `remote` in process `pid` into `dst`; false on failure.
bool read_peer(pid_t pid, char* dst, uint64_t remote, size_t bytes) {
    while (bytes > 0) {
        iovec local{dst, bytes}, far{reinterpret_cast<void*>(remote), bytes};
        const ssize_t n = process_vm_readv(pid, &local, 1, &far, 1, 0);
        if (n <= 0) return false;
        dst += n;
        remote += static_cast<uint64_t>(n);
        bytes -= static_cast<size_t>(n);
    }
    return true;
}

struct Buffers {
    size_t bytes;
    char *src, *dst;
};

// The two ranks of `pair` (one host): each reads the other's `src`.
void measure_pair(MPI_Comm pair, const Buffers& b, size_t cache, std::map<std::string, double>& out) {
    int me = 0;
    MPI_Comm_rank(pair, &me);
    uint64_t mine[2] = {static_cast<uint64_t>(getpid()), reinterpret_cast<uint64_t>(b.src)}, peer[2] = {};
    MPI_Sendrecv(mine, 2, MPI_UINT64_T, 1 - me, 0, peer, 2, MPI_UINT64_T, 1 - me, 0, pair, MPI_STATUS_IGNORE);
    const pid_t pid = static_cast<pid_t>(peer[0]);
    const uint64_t remote = peer[1];
    int ok = read_peer(pid, b.dst, remote, 64) ? 1 : 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, pair);
    if (!all) {
        if (me == 0)
            std::fprintf(stderr, "chorus-tune: cross-memory attach refused (ptrace scope?): get rates not measured\n");
    } else {
        out["memory_gbs"] = rate_gbs(pair, b.bytes, [&] { read_peer(pid, b.dst, remote, b.bytes); });
        const size_t region = std::clamp<size_t>(cache / 8, 256 * 1024, 4 << 20);
        const int rounds = static_cast<int>(std::max<size_t>(4, (64u << 20) / region));
        out["get_gbs"] = rate_gbs(pair, region * static_cast<size_t>(rounds), [&] {
            for (int i = 0; i < rounds; ++i) read_peer(pid, b.dst, remote, region);
        });
        std::vector<char> bounce(kPiece);
        const size_t elems = kPiece / sizeof(float);
        out["get_reduce_gbs"] = rate_gbs(pair, b.bytes, [&] {
            for (size_t off = 0; off + kPiece <= b.bytes; off += kPiece) {
                read_peer(pid, bounce.data(), remote + off, kPiece);
                host_reduce(CHORUS_FLOAT32, CHORUS_SUM, b.dst + off, b.dst + off, bounce.data(), elems);
            }
        });
    }
    // The handoff: rank 0 raises a flag, rank 1 answers with its own.
    MPI_Win win;
    std::atomic<uint64_t>* flags = nullptr;
    MPI_Win_allocate_shared(me == 0 ? 256 : 0, 1, MPI_INFO_NULL, pair, &flags, &win);
    MPI_Aint size = 0;
    int unit = 0;
    MPI_Win_shared_query(win, 0, &size, &unit, &flags);
    if (me == 0) {
        new (&flags[0]) std::atomic<uint64_t>(0);
        new (&flags[16]) std::atomic<uint64_t>(0);  // a cache line apart
    }
    MPI_Barrier(pair);
    std::atomic<uint64_t>& ping = flags[0];
    std::atomic<uint64_t>& pong = flags[16];
    constexpr uint64_t kRounds = 20000;
    const auto t0 = Clock::now();
    for (uint64_t i = 1; i <= kRounds; ++i) {
        if (me == 0) {
            ping.store(i, std::memory_order_release);
            while (pong.load(std::memory_order_acquire) != i) {
            }
        } else {
            while (ping.load(std::memory_order_acquire) != i) {
            }
            pong.store(i, std::memory_order_release);
        }
    }
    double slot = seconds_since(t0) * 1e6 / (2 * kRounds);
    MPI_Bcast(&slot, 1, MPI_DOUBLE, 0, pair);
    MPI_Win_free(&win);
    out["slot_us"] = slot;
    if (!all) return;
    std::vector<double> times;
    for (int i = 0; i < 2000; ++i) {
        const auto t = Clock::now();
        read_peer(pid, b.dst, remote + static_cast<uint64_t>(i % 64) * 4096, 64);
        times.push_back(seconds_since(t) * 1e6);
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    double small = times[times.size() / 2], both = 0;
    MPI_Allreduce(&small, &both, 1, MPI_DOUBLE, MPI_SUM, pair);
    out["get_us"] = both / 2 + slot;
    MPI_Barrier(pair);
}

// The constants this host's ranks measure (rank 0's map holds them).
// The constants chorus-tune measures but does not write (see main).
bool effective_rate(const std::string& key) {
    return key == "memory_gbs" || key == "get_gbs" || key == "get_us" || key == "get_reduce_gbs";
}

std::map<std::string, double> measure(int rank, int size, size_t cache) {
    std::map<std::string, double> out;
    if (cache > 0) out["cache_mib"] = cache_mib_of(cache);
    // Ranks 0 and 1 on one host measure; others wait at the end.
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_rank = 0;
    MPI_Comm_rank(node, &node_rank);
    int on_host = rank >= 2 || node_rank == rank ? 1 : 0, host_ok = 0;
    MPI_Allreduce(&on_host, &host_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    const int measurers = size >= 2 && host_ok ? 2 : 1;
    MPI_Comm group;
    MPI_Comm_split(MPI_COMM_WORLD, rank < measurers ? 0 : MPI_UNDEFINED, rank, &group);
    if (group != MPI_COMM_NULL) {
        const size_t bytes = std::clamp<size_t>(2 * cache, 64u << 20, 512u << 20);
        Buffers b{bytes, map_buffer(bytes), map_buffer(bytes)};
        out["copy_gbs"] = rate_gbs(group, bytes, [&] { host_copy(b.dst, b.src, bytes); });
        out["stream_gbs"] = rate_gbs(group, bytes, [&] { host_copy_stream(b.dst, b.src, bytes); });
        out["reduce_gbs"] = rate_gbs(
            group, bytes, [&] { host_reduce(CHORUS_FLOAT32, CHORUS_SUM, b.dst, b.dst, b.src, bytes / sizeof(float)); });
        if (measurers == 2) measure_pair(group, b, cache, out);
        munmap(b.src, bytes);
        munmap(b.dst, bytes);
        MPI_Comm_free(&group);
    }
    if (size >= 2 && !host_ok && rank == 0)
        std::fprintf(stderr, "chorus-tune: ranks 0 and 1 are not on one host: only one rank's rates measured\n");
    MPI_Comm_free(&node);
    MPI_Barrier(MPI_COMM_WORLD);
    return out;
}

// The constants a communicator created here would use, and whence.
int print(const Config& config) {
    const CostFile file = read_cost_file(cost_file_path(config.cost_file));
    const MachineCosts m = machine_costs(config, file, host_cache_bytes());
    std::printf("# %s\n# %-16s %12s %12s  %s\n", m.note.c_str(), "constant", "value", "default", "from");
    const coll::CostParams defaults;
    for (const auto& k : machine_constants())
        std::printf("  %-16s %12.4g %12.4g  %s\n", k.key, m.cost.*k.member, defaults.*k.member,
                    m.source.at(k.key) == "setting" ? k.setting : m.source.at(k.key).c_str());
    if (file.state == CostFile::State::Loaded)
        std::printf("# the choices that change on one host of 2 ranks:\n#   chorus-model --shm -p 2 --compare %s\n",
                    file.path.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    bool dry = false, show = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--dry-run") {
            dry = true;
        } else if (a == "--print") {
            show = true;
        } else {
            std::fprintf(stderr,
                         "usage: mpirun -np 2 chorus-tune [--dry-run]   measure this host, write its cost file\n"
                         "       chorus-tune --print                     the constants in use here, and whence\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    try {
        const Config config = Config::from_env();
        if (show) return print(config);
        MPI_Init(&argc, &argv);
        int rank = 0, size = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        const auto t0 = Clock::now();
        const size_t cache = host_cache_bytes();
        const std::map<std::string, double> values = measure(rank, size, cache);
        int status = 0;
        if (rank == 0) {
            const coll::CostParams defaults;
            std::printf("# chorus-tune on %s, %d rank%s (%.1f s)\n# %-16s %12s %12s\n", host_name().c_str(),
                        std::min(size, 2), size > 1 ? "s" : "", seconds_since(t0), "constant", "measured", "default");
            // What the file keeps: the rates whose measurement is what the
            // model means by them. The single-copy and beyond-the-caches
            // message rates are the model's effective rates inside whole
            // collectives (a copy and a reduction sharing the memory bus),
            // which one read alone overstates: written, they made the
            // choices worse where the defaults were right (on a 2-vCPU VM:
            // all-gather at 16 KiB-4 MiB 0.6x MPI instead of 1.0x, reduce at
            // 32-64 MiB 0.8x instead of 1.5x). They are shown, not kept.
            std::map<std::string, double> kept;
            for (const auto& k : machine_constants()) {
                auto it = values.find(k.key);
                if (it == values.end()) continue;
                const bool keep = !effective_rate(k.key);
                if (keep) kept[k.key] = it->second;
                std::printf("  %-16s %12.4g %12.4g%s\n", k.key, it->second, defaults.*k.member,
                            keep ? "" : "  (shown only: not written)");
            }
            const std::string path = cost_file_path(config.cost_file);
            const std::time_t now = std::time(nullptr);
            char when[64];
            std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
            const std::string text =
                cost_file_text(kept, host_name(),
                               {cat("the cost model's constants of this host, measured by chorus-tune at ", when,
                                    " with ", std::min(size, 2), " rank(s)"),
                                "CHORUS_COST_* settings override them; delete the file for the built-in defaults"});
            if (dry) {
                std::printf("# --dry-run: %s not written\n", path.empty() ? "the cost file" : path.c_str());
            } else {
                try {
                    write_cost_file(path, text);
                    std::printf("# written to %s\n", path.c_str());
                } catch (const Error& e) {
                    std::fprintf(stderr, "chorus-tune: %s\n", e.what());
                    status = 1;
                }
            }
        }
        MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Finalize();
        return status;
    } catch (const Error& e) {
        std::fprintf(stderr, "chorus-tune: %s\n", e.what());
        return 1;
    }
}
