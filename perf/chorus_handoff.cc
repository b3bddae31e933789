// chorus-handoff: how fast this host hands a message from one core to
// another through shared slots, with the writer's ordinary stores and with
// non-temporal ones: the choice the slots' pipeline makes
// (lib/coll/shm/shm_pipeline.cc streams every chunk it copies into a slot).
//
// Two processes (fork, no MPI), each pinned to a CPU of its own, share
// eight slots of 16 KiB. The writer copies its message into the slots a
// chunk at a time and publishes each; the reader waits for each chunk and
// either adds it to an input of its own into a result (as a reduce's root
// does: "add") or copies it out (as a broadcast's reader: "copy"), then
// releases the slot, which the writer reuses eight chunks later. The copies
// and the reduction are the library's own (host_copy, host_copy_stream,
// host_reduce, float32 sum). With -c the writer rewrites its message before
// every call, as a program whose data changes does (chorus-bench -c).
//
// Prints, per size, the median time of one message (us) for each reader
// and each kind of store, and streamed / ordinary speed-ups.
//
// With --cma, the same handoff by cross-memory attach, as the one-sided
// steps make it on one host (lib/exec/executor_one_sided.cc): the reader
// reads the writer's message with process_vm_readv, straight into its
// result ("copy", a get) or 128 KiB at a time into a buffer that stays in
// its cache and adds each piece into its result ("add", a get that
// reduces); beside it, the reader's own memcpy of as many bytes (glibc's),
// the rate a copy within one process gets. Beyond the caches the kernel's
// copy reads the writer's pages from memory one 4 KiB page at a time.
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "c_median.h"
#include "internal.h"

namespace {

constexpr size_t kSlots = 8, kChunk = 16384;

struct alignas(64) Flag {
    std::atomic<uint64_t> v{0};
    char pad[64 - sizeof(std::atomic<uint64_t>)];
};

struct Shared {
    Flag published[kSlots];  // chunk sequence number + 1, by slot
    Flag released[kSlots];
    Flag ready, go, done;  // call numbers (+ 1)
    Flag address;          // --cma: where the writer's message is
    alignas(64) char slot[kSlots][kChunk];
};

enum class Reader { Add, Copy };

void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);  // best effort
}

// Every element of the writer's message before call `call` (it starts at
// 1.5 and, rewritten between calls, alternates with 2.5).
float message_value(int call, bool rewrite) {
    return 1.5f + (rewrite ? static_cast<float>(call % 2) : 0.0f);
}

// The control block and slots, shared with the forked writer.
Shared* map_shared() {
    void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
    }
    return new (p) Shared();
}

// Every element of the last call's result is `want` (or exit 1); the
// median of the calls' times after a tenth of them (warm-up).
double check_and_time(Shared* sh, const std::vector<float>& out, float want, size_t bytes, const char* how,
                      std::vector<double>& us) {
    for (float x : out)
        if (x != want) {
            std::fprintf(stderr, "chorus-handoff: wrong result at %zu bytes%s\n", bytes, how);
            std::exit(1);
        }
    munmap(sh, sizeof(Shared));
    const size_t skip = us.size() / 10;
    return chorus_perf_median(us.data() + skip, static_cast<int>(us.size() - skip));
}

// The median microseconds of one message of `bytes`, `calls` times.
double run(size_t bytes, int calls, Reader reader, bool stream, bool rewrite) {
    Shared* sh = map_shared();
    const size_t chunks = (bytes + kChunk - 1) / kChunk;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {  // the writer
        if (cpus > 1) pin(1);
        std::vector<float> msg(bytes / sizeof(float), message_value(0, rewrite));
        uint64_t seq = 0;
        for (int call = 0; call < calls; ++call) {
            // The rewrite is not timed: the reader starts its clock after it.
            if (rewrite) std::fill(msg.begin(), msg.end(), message_value(call, rewrite));
            sh->ready.v.store(call + 1, std::memory_order_release);
            while (sh->go.v.load(std::memory_order_acquire) <= static_cast<uint64_t>(call)) {
            }
            for (size_t k = 0; k < chunks; ++k, ++seq) {
                const size_t s = seq % kSlots, n = std::min(kChunk, bytes - k * kChunk);
                if (seq >= kSlots)
                    while (sh->released[s].v.load(std::memory_order_acquire) < seq - kSlots + 1) {
                    }
                const char* src = reinterpret_cast<const char*>(msg.data()) + k * kChunk;
                if (stream)
                    chorus::host_copy_stream(sh->slot[s], src, n);
                else
                    chorus::host_copy(sh->slot[s], src, n);
                sh->published[s].v.store(seq + 1, std::memory_order_release);
            }
            while (sh->done.v.load(std::memory_order_acquire) <= static_cast<uint64_t>(call)) {
            }
        }
        _exit(0);
    }
    if (cpus > 1) pin(0);
    std::vector<float> own(bytes / sizeof(float), 2.5f), out(bytes / sizeof(float));
    std::vector<double> us;
    uint64_t seq = 0;
    for (int call = 0; call < calls; ++call) {
        while (sh->ready.v.load(std::memory_order_acquire) <= static_cast<uint64_t>(call)) {
        }
        const auto t0 = std::chrono::steady_clock::now();
        sh->go.v.store(call + 1, std::memory_order_release);
        for (size_t k = 0; k < chunks; ++k, ++seq) {
            const size_t s = seq % kSlots, n = std::min(kChunk, bytes - k * kChunk);
            while (sh->published[s].v.load(std::memory_order_acquire) < seq + 1) {
            }
            char* dst = reinterpret_cast<char*>(out.data()) + k * kChunk;
            if (reader == Reader::Add)
                chorus::host_reduce(CHORUS_FLOAT32, CHORUS_SUM, dst, reinterpret_cast<char*>(own.data()) + k * kChunk,
                                    sh->slot[s], n / sizeof(float));
            else
                chorus::host_copy(dst, sh->slot[s], n);
            sh->released[s].v.store(seq + 1, std::memory_order_release);
        }
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        sh->done.v.store(call + 1, std::memory_order_release);
    }
    waitpid(pid, nullptr, 0);
    // The last call's message: every element of the result.
    const float m = message_value(calls - 1, rewrite);
    return check_and_time(sh, out, reader == Reader::Add ? 2.5f + m : m, bytes, "", us);
}

// --cma: the median microseconds of one message of `bytes` read by
// cross-memory attach (or, with `local`, of the reader's memcpy of as many
// bytes of its own), `calls` times.
constexpr size_t kBounce = size_t{128} << 10;  // as the one-sided reduce's

void cma_read(pid_t pid, void* dst, uint64_t src, size_t bytes) {
    while (bytes) {
        iovec l{dst, bytes}, r{reinterpret_cast<void*>(src), bytes};
        const ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            std::perror("chorus-handoff: process_vm_readv");
            std::exit(1);
        }
        dst = static_cast<char*>(dst) + n;
        src += static_cast<uint64_t>(n);
        bytes -= static_cast<size_t>(n);
    }
}

double run_cma(size_t bytes, int calls, Reader reader, bool local, bool rewrite) {
    Shared* sh = map_shared();
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {  // the writer: its message, rewritten between calls with -c
        if (cpus > 1) pin(1);
        std::vector<float> msg(bytes / sizeof(float), message_value(0, rewrite));
        sh->address.v.store(reinterpret_cast<uint64_t>(msg.data()), std::memory_order_release);
        for (int call = 0; call < calls; ++call) {
            if (rewrite) std::fill(msg.begin(), msg.end(), message_value(call, rewrite));
            sh->ready.v.store(call + 1, std::memory_order_release);
            while (sh->done.v.load(std::memory_order_acquire) <= static_cast<uint64_t>(call)) {
            }
        }
        _exit(0);
    }
    if (cpus > 1) pin(0);
    std::vector<float> own(bytes / sizeof(float), 2.5f), out(bytes / sizeof(float));
    std::vector<char> bounce(kBounce);
    std::vector<double> us;
    for (int call = 0; call < calls; ++call) {
        while (sh->ready.v.load(std::memory_order_acquire) <= static_cast<uint64_t>(call)) {
        }
        const uint64_t src = sh->address.v.load(std::memory_order_acquire);
        const auto t0 = std::chrono::steady_clock::now();
        char* dst = reinterpret_cast<char*>(out.data());
        if (local) {
            std::memcpy(dst, own.data(), bytes);
        } else if (reader == Reader::Copy) {
            cma_read(pid, dst, src, bytes);
        } else {
            const char* mine = reinterpret_cast<const char*>(own.data());
            for (size_t off = 0; off < bytes; off += kBounce) {
                const size_t n = std::min(kBounce, bytes - off);
                cma_read(pid, bounce.data(), src + off, n);
                chorus::host_reduce(CHORUS_FLOAT32, CHORUS_SUM, dst + off, mine + off, bounce.data(),
                                    n / sizeof(float));
            }
        }
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        sh->done.v.store(call + 1, std::memory_order_release);
    }
    waitpid(pid, nullptr, 0);
    const float m = message_value(calls - 1, rewrite);
    const float want = local ? 2.5f : reader == Reader::Add ? 2.5f + m : m;
    return check_and_time(sh, out, want, bytes, " (cross-memory attach)", us);
}

void usage() {
    std::puts(
        "Usage: chorus-handoff [-m MIN:MAX] [-i CALLS] [-c] [--cma]\n"
        "One core hands messages to another through eight shared 16 KiB slots, the\n"
        "writer with ordinary and with non-temporal (streamed) stores; the reader adds\n"
        "each chunk to an input of its own (a reduce's root) or copies it out (a\n"
        "broadcast's reader). Median us per message, and streamed/ordinary speed-ups.\n"
        "  -m MIN:MAX  message sizes, doubling, multiples of 4 (suffixes K, M; default 1K:4M)\n"
        "  -i CALLS    messages per size and mode (default: 2000 to 64 KiB, fewer beyond)\n"
        "  -c          the writer rewrites its message before every call\n"
        "  --cma       the reader reads the writer's message by cross-memory attach\n"
        "              instead (add: through a 128 KiB buffer it reduces from; copy:\n"
        "              into its result), beside its own memcpy of as many bytes;\n"
        "              median us and GB/s");
}

}  // namespace

int main(int argc, char** argv) {
    size_t lo = 1024, hi = size_t{4} << 20;
    int calls = 0;
    bool rewrite = false, cma = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-m" && i + 1 < argc) {
            const std::string v = argv[++i];
            const size_t colon = v.find(':');
            try {
                lo = chorus::parse_bytes(v.substr(0, colon), "-m");
                hi = colon == std::string::npos ? lo : chorus::parse_bytes(v.substr(colon + 1), "-m");
            } catch (const chorus::Error& e) {
                std::fprintf(stderr, "chorus-handoff: %s\n", e.what());
                return 2;
            }
        } else if (a == "-i" && i + 1 < argc) {
            calls = std::atoi(argv[++i]);
        } else if (a == "-c") {
            rewrite = true;
        } else if (a == "--cma") {
            cma = true;
        } else {
            usage();
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    if (lo < 4 || lo > hi || lo % 4 || calls < 0) {
        usage();
        return 2;
    }
    if (cma) {
        std::printf("# chorus-handoff --cma: median us per message (GB/s); cross-memory attach against memcpy\n");
        std::printf("# %-10s %18s %18s %18s\n", "bytes", "add-cma", "copy-cma", "memcpy");
        for (size_t bytes = lo; bytes <= hi; bytes *= 2) {
            const int n = calls ? calls : static_cast<int>(std::clamp<size_t>((size_t{128} << 20) / bytes, 20, 2000));
            const double add = run_cma(bytes, n, Reader::Add, false, rewrite);
            const double copy = run_cma(bytes, n, Reader::Copy, false, rewrite);
            const double local = run_cma(bytes, n, Reader::Copy, true, rewrite);
            auto gbs = [&](double us) { return static_cast<double>(bytes) / (us * 1e3); };
            std::printf("%-12zu %10.2f (%5.2f) %10.2f (%5.2f) %10.2f (%5.2f)\n", bytes, add, gbs(add), copy, gbs(copy),
                        local, gbs(local));
            std::fflush(stdout);
        }
        return 0;
    }
    std::printf("# chorus-handoff: median us per message; stream/ordinary = speed-up of streamed stores\n");
    std::printf("# %-10s %10s %10s %8s %10s %10s %8s\n", "bytes", "add", "add-nt", "speedup", "copy", "copy-nt",
                "speedup");
    for (size_t bytes = lo; bytes <= hi; bytes *= 2) {
        const int n = calls ? calls : static_cast<int>(std::clamp<size_t>((size_t{128} << 20) / bytes, 20, 2000));
        const double add = run(bytes, n, Reader::Add, false, rewrite);
        const double add_nt = run(bytes, n, Reader::Add, true, rewrite);
        const double copy = run(bytes, n, Reader::Copy, false, rewrite);
        const double copy_nt = run(bytes, n, Reader::Copy, true, rewrite);
        std::printf("%-12zu %10.2f %10.2f %8.2f %10.2f %10.2f %8.2f\n", bytes, add, add_nt, add / add_nt, copy, copy_nt,
                    copy / copy_nt);
        std::fflush(stdout);
    }
    return 0;
}
