#include "net/shm/cma.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace chorus::net::cma {

namespace {

const volatile uint64_t probe_word = 0x43484f5255530a01ull;  // "CHORUS" and a version

template <bool kWrite>
void copy(int pid, int rank, char* local, uint64_t remote, size_t bytes) {
    while (bytes > 0) {
        iovec l{local, bytes};
        iovec r{reinterpret_cast<void*>(remote), bytes};
        ssize_t n = kWrite ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == ESRCH)
            fail(CHORUS_ERR_PEER_FAILED, "single-copy ", kWrite ? "write into" : "read of", " rank ", rank, " (pid ",
                 pid, "): the process is gone");
        if (n <= 0)
            fail(CHORUS_ERR_TRANSPORT, "single-copy ", kWrite ? "write into" : "read of", " rank ", rank, " (pid ", pid,
                 ") at 0x", std::hex, remote, std::dec, " (", bytes,
                 " bytes) failed: ", n < 0 ? std::strerror(errno) : "nothing copied");
        local += n;
        remote += static_cast<uint64_t>(n);
        bytes -= static_cast<size_t>(n);
    }
}

}  // namespace

void read(int pid, int rank, void* dst, uint64_t remote, size_t bytes) {
    copy<false>(pid, rank, static_cast<char*>(dst), remote, bytes);
}

void write(int pid, int rank, uint64_t remote, const void* src, size_t bytes) {
    copy<true>(pid, rank, const_cast<char*>(static_cast<const char*>(src)), remote, bytes);
}

bool probe(int pid, uint64_t remote, uint64_t expect) {
    uint64_t got = 0;
    iovec l{&got, sizeof got};
    iovec r{reinterpret_cast<void*>(remote), sizeof got};
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == static_cast<ssize_t>(sizeof got) && got == expect;
}

uint64_t probe_address() {
    return reinterpret_cast<uint64_t>(&probe_word);
}

uint64_t probe_value() {
    return probe_word;
}

}  // namespace chorus::net::cma
