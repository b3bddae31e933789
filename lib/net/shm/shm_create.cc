// ShmTransport's creation: which ranks share a host, the segment the host's
// first rank creates and the others map, and whether single-copy reads work,
// each decided through the bootstrap alike on every rank.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "net/host.h"
#include "net/shm/cma.h"
#include "net/shm/shm_transport.h"

namespace chorus::net {

std::unique_ptr<Transport> ShmTransport::create(Bootstrap& boot, std::unique_ptr<Transport> inner, size_t eager_bytes,
                                                bool rendezvous, bool one_sided) {
    if (eager_bytes == 0) return inner;
    const int n = inner->size(), me = inner->rank();
    // Ranks with the same host identity (net/host.h) share memory.
    std::vector<std::string> who = boot.allgather(cat(getpid(), " ", host_identity()));
    std::vector<int> local_index(n, -1), pids(n, 0);
    int local = 0, leader = -1;
    const std::string mine_id = who[me].substr(who[me].find(' ') + 1);
    for (int r = 0; r < n; ++r) {
        if (who[r].compare(who[r].find(' ') + 1, std::string::npos, mine_id) != 0) continue;
        if (leader < 0) leader = r;
        local_index[r] = local++;
        pids[r] = std::atoi(who[r].c_str());
    }
    // Whether shared memory is used is a property of the communicator, so
    // that every pair of ranks agrees on how small messages travel.
    if (boot.all(local <= 1)) return inner;  // every rank alone on its host

    // The host's first rank creates the segment; the others map it.
    static std::atomic<unsigned> counter{0};
    const size_t bytes = shm::Segment::bytes(local);
    void* mem = MAP_FAILED;
    std::string why, name;
    // An exchange that throws (an out-of-band callback that fails) leaves
    // no segment behind: neither its name nor the mapping.
    struct Leftover {
        void*& mem;
        size_t bytes;
        std::string name;
        ~Leftover() {
            if (!name.empty()) shm_unlink(name.c_str());
            if (mem != MAP_FAILED) munmap(mem, bytes);
        }
    } leftover{mem, bytes, {}};
    if (me == leader) {
        name = cat("/chorus-", getpid(), "-", counter++);
        int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0) {
            why = cat("shm_open ", name, ": ", std::strerror(errno));
        } else {
            // Reserve the pages now: on a full /dev/shm a segment sized by
            // ftruncate alone dies with SIGBUS at its first touch.
            int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
            if (err != 0)
                why = cat("reserving ", bytes, " bytes in /dev/shm: ", std::strerror(err));
            else
                mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (why.empty() && mem == MAP_FAILED) why = cat("mmap: ", std::strerror(errno));
            close(fd);
            if (mem != MAP_FAILED) shm::Segment::init(mem, local);
            if (why.empty()) leftover.name = name;
        }
    }
    std::vector<std::string> names = boot.allgather(me == leader && why.empty() ? name : std::string());
    if (me != leader && why.empty()) {
        if (names[leader].empty()) {
            why = cat("rank ", leader, " has no segment");
        } else {
            int fd = shm_open(names[leader].c_str(), O_RDWR, 0);
            mem = fd < 0 ? MAP_FAILED : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (fd >= 0) close(fd);
            if (mem == MAP_FAILED) why = cat("mapping rank ", leader, "'s segment: ", std::strerror(errno));
        }
    }
    const bool all_ok = boot.all(why.empty());
    // Every local rank has mapped the segment (or given up): unlink it now,
    // so nothing is left behind whatever happens later.
    if (me == leader && !names[leader].empty()) shm_unlink(names[leader].c_str());
    leftover.name.clear();
    if (!all_ok) {
        if (!why.empty())
            log(LogLevel::Warn, me, "shared memory for small messages unavailable (", why,
                "); every message goes through ", inner->name());
        return inner;  // unmapped by `leftover`
    }
    // Single-copy access where each local rank may read every other's memory
    // (cross-memory attach; a ptrace policy may forbid it): rendezvous for
    // the larger messages inside a host (host memory only: the inner
    // transport takes device memory where it can), and the one-sided
    // algorithms when every rank is here.
    const bool all_here = boot.all(local == n);
    const bool want_rendezvous = boot.all(rendezvous && !inner->device_memory());
    bool readable = false;
    if (all_here || want_rendezvous) {
        std::vector<std::string> words = boot.allgather(std::to_string(cma::probe_address()));
        bool ok = true;
        for (int r = 0; r < n && ok; ++r)
            ok = r == me || local_index[r] < 0 ||
                 cma::probe(pids[r], std::strtoull(words[r].c_str(), nullptr, 10), cma::probe_value());
        readable = boot.all(ok);
        if (!readable && !ok)
            log(LogLevel::Info, me, "single-copy reads of peers' memory unavailable (process_vm_readv refused)");
    }
    auto t = std::make_unique<ShmTransport>(std::move(inner), eager_bytes, std::move(local_index), mem, std::move(pids),
                                            bytes);
    mem = MAP_FAILED;  // the transport's now
    t->enable_single_copy(readable && want_rendezvous, readable && all_here && one_sided);
    return t;
}

}  // namespace chorus::net
