#include "net/host.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace chorus::net {

namespace {

std::string first_line(const char* path) {
    std::ifstream f(path);
    std::string line;
    std::getline(f, line);
    return line;
}

std::string link_of(const char* path) {
    char buf[256];
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

const std::string& host_identity() {
    static const std::string id = [] {
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        return std::string(host) + "|" + first_line("/proc/sys/kernel/random/boot_id") + "|" +
               link_of("/proc/self/ns/pid");
    }();
    return id;
}

// Gone (kill says ESRCH), or ended and not yet reaped: a zombie. The
// launcher is the parent of the ranks and may reap a dead one late; MPICH's
// hydra (4.0.2) reaps it only when the whole job ends, so kill() alone would
// take a dead peer for a live one until the timeout.
bool process_gone(int pid) {
    if (pid <= 0) return false;
    if (kill(pid, 0) != 0) return errno == ESRCH;
    char path[32];
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT;
    char stat[512];
    const ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    if (n <= 0) return false;
    stat[n] = '\0';
    // "pid (comm) state ...": the name may hold ')' itself; the state is
    // after the last one.
    const char* end = std::strrchr(stat, ')');
    return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

}  // namespace chorus::net
