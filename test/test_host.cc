// net::process_gone: how the transports tell that a peer on this host has
// died. A dead child not yet reaped (a zombie, as MPICH's hydra leaves its
// ranks until the job ends) is gone; a live or stopped one is not.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "net/host.h"

using chorus::net::process_gone;

namespace {

// A child that waits until the pipe's write end is closed, then exits.
pid_t waiting_child(const int fds[2]) {
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[1]);
        char c;
        (void)!read(fds[0], &c, 1);
        _exit(0);
    }
    return pid;
}

// Waits until the child has exited, without reaping it.
void wait_exited_not_reaped(pid_t pid) {
    siginfo_t info{};
    REQUIRE(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0);
}

}  // namespace

TEST_CASE("process_gone: a live process is not gone, a dead one is, reaped or not", "[unit][host]") {
    CHECK_FALSE(process_gone(getpid()));
    CHECK_FALSE(process_gone(0));
    CHECK_FALSE(process_gone(-1));

    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t pid = waiting_child(fds);
    REQUIRE(pid > 0);
    CHECK_FALSE(process_gone(pid));

    // Stopped is not dead: it may be resumed (the transports time out on it).
    REQUIRE(kill(pid, SIGSTOP) == 0);
    siginfo_t info{};
    REQUIRE(waitid(P_PID, static_cast<id_t>(pid), &info, WSTOPPED | WNOWAIT) == 0);
    CHECK_FALSE(process_gone(pid));
    REQUIRE(kill(pid, SIGCONT) == 0);

    // Ended, its parent (this process) not having reaped it: a zombie.
    close(fds[1]);
    wait_exited_not_reaped(pid);
    CHECK(process_gone(pid));

    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(process_gone(pid));
    close(fds[0]);
}

TEST_CASE("process_gone: a zombie is told by its state, whatever its name", "[unit][host]") {
    // The state follows the last ')' of /proc/PID/stat: a name with ") R"
    // in it must not fool the parser.
    const pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_NAME, "x) R (y", 0, 0, 0);
        _exit(0);
    }
    REQUIRE(pid > 0);
    wait_exited_not_reaped(pid);
    CHECK(process_gone(pid));
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
}
