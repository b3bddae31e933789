#include "net/host.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
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

bool process_gone(int pid) {
    return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace chorus::net
