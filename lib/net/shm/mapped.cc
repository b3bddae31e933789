#include "net/shm/mapped.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "base/error.h"

namespace chorus::net::mapped {

namespace {

struct Allocation {
    size_t bytes;
    int fd;
    uint64_t serial;
};

// Every allocation of this process, by start address.
struct Registry {
    std::mutex mu;
    std::map<uintptr_t, Allocation> by_start;
    uint64_t next_serial = 1;
};

Registry& registry() {
    static Registry* r = new Registry;  // outlives every static user
    return *r;
}

size_t round_to_pages(size_t bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return (std::max<size_t>(bytes, 1) + page - 1) / page * page;
}

}  // namespace

void* allocate(size_t bytes, std::string* error) {
    const size_t size = round_to_pages(bytes);
    if (size < bytes) {
        *error = "size overflows";
        return nullptr;
    }
    const int fd = memfd_create("chorus-mem", MFD_CLOEXEC);
    if (fd < 0) {
        *error = cat("memfd_create: ", std::strerror(errno));
        return nullptr;
    }
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        *error = cat("ftruncate(", size, "): ", std::strerror(errno));
        close(fd);
        return nullptr;
    }
    // Populated now: the first touch of a page costs far more than a copy
    // of it, and no collective should pay it.
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
        *error = cat("mmap(", size, "): ", std::strerror(errno));
        close(fd);
        return nullptr;
    }
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.by_start[reinterpret_cast<uintptr_t>(p)] = {size, fd, r.next_serial++};
    return p;
}

bool release(void* p) {
    Registry& r = registry();
    Allocation a;
    {
        std::lock_guard<std::mutex> lock(r.mu);
        auto it = r.by_start.find(reinterpret_cast<uintptr_t>(p));
        if (it == r.by_start.end()) return false;
        a = it->second;
        r.by_start.erase(it);
    }
    munmap(p, a.bytes);
    close(a.fd);
    return true;
}

bool find(const void* addr, size_t bytes, MappedRef* ref) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(addr);
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.by_start.upper_bound(at);
    if (it == r.by_start.begin()) return false;
    --it;
    const Allocation& a = it->second;
    const uintptr_t offset = at - it->first;
    if (offset > a.bytes || bytes > a.bytes - offset) return false;
    *ref = {a.serial, static_cast<uint64_t>(a.fd), offset, a.bytes};
    return true;
}

PeerMaps::~PeerMaps() {
    for (const Map& m : maps_) munmap(m.base, m.bytes);
}

char* PeerMaps::map(int pid, const MappedRef& ref) {
    for (auto it = maps_.begin(); it != maps_.end(); ++it)
        if (it->pid == pid && it->serial == ref.serial) {
            if (it != maps_.begin()) maps_.splice(maps_.begin(), maps_, it);
            return it->base;
        }
    prune(pid);
    const int fd = open(cat("/proc/", pid, "/fd/", ref.fd).c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return nullptr;
    // The file must be the size the owner says (a descriptor number reused
    // for another file would not be).
    struct stat st;
    void* p = fstat(fd, &st) == 0 && st.st_size == static_cast<off_t>(ref.size)
                  ? mmap(nullptr, ref.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)
                  : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED) return nullptr;
    if (maps_.size() >= kMaxMaps) {
        munmap(maps_.back().base, maps_.back().bytes);
        maps_.pop_back();
    }
    maps_.push_front({pid, ref.serial, static_cast<char*>(p), ref.size, ref.fd, static_cast<uint64_t>(st.st_ino)});
    return static_cast<char*>(p);
}

void PeerMaps::prune(int pid) {
    for (auto it = maps_.begin(); it != maps_.end();) {
        struct stat st;
        if (it->pid == pid && (stat(cat("/proc/", pid, "/fd/", it->fd).c_str(), &st) != 0 ||
                               static_cast<uint64_t>(st.st_ino) != it->inode)) {
            munmap(it->base, it->bytes);
            it = maps_.erase(it);
        } else {
            ++it;
        }
    }
}

void PeerMaps::drop(int pid, uint64_t serial) {
    for (auto it = maps_.begin(); it != maps_.end(); ++it)
        if (it->pid == pid && it->serial == serial) {
            munmap(it->base, it->bytes);
            maps_.erase(it);
            return;
        }
}

}  // namespace chorus::net::mapped
