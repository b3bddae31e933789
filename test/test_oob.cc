// A communicator created out of band, without MPI: the test forks N
// processes (N = 2, 3, 4) that exchange through files in a private
// directory (the kind of allgather a torch Store gives), creates the
// communicator with chorus_comm_create_oob, runs collectives, destroys it
// and exits; MPI is never initialized (Open MPI and MPICH end a process
// that calls MPI before MPI_Init, and MPI_Initialized must stay false).
// Also: bad arguments, a callback that fails on one rank (the others'
// exchange times out), settings that differ, ranks that do not fit.
#include <mpi.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "chorus.h"
#include "seeds.h"

namespace fs = std::filesystem;

namespace {

// An allgather over files: call k of rank r writes DIR/k.r (renamed into
// place whole), then reads every rank's file of call k. Fails (-1) on the
// call `fail_at`, and (-2) when a peer's file does not come within
// `timeout_s`: the store's timeout that bounds a peer's failure.
struct FileOob {
    std::string dir;
    int rank = 0, size = 1;
    int calls = 0, fail_at = 0;
    double timeout_s = 60;
};

int file_allgather(const void* send, void* recv, size_t bytes, void* arg) {
    auto* o = static_cast<FileOob*>(arg);
    const int call = ++o->calls;
    if (call == o->fail_at) return -1;
    const std::string mine = o->dir + "/" + std::to_string(call) + "." + std::to_string(o->rank);
    {
        std::ofstream f(mine + ".tmp", std::ios::binary);
        f.write(static_cast<const char*>(send), static_cast<std::streamsize>(bytes));
        if (!f) return -3;
    }
    fs::rename(mine + ".tmp", mine);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o->timeout_s);
    for (int r = 0; r < o->size; ++r) {
        const std::string theirs = o->dir + "/" + std::to_string(call) + "." + std::to_string(r);
        while (!fs::exists(theirs)) {
            if (std::chrono::steady_clock::now() > deadline) return -2;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        std::ifstream f(theirs, std::ios::binary);
        f.read(static_cast<char*>(recv) + static_cast<size_t>(r) * bytes, static_cast<std::streamsize>(bytes));
        if (static_cast<size_t>(f.gcount()) != bytes || f.peek() != EOF) return -4;  // `bytes` differ
    }
    return 0;
}

chorus_oob_t oob_of(FileOob& f) {
    return chorus_oob_t{f.rank, f.size, file_allgather, &f};
}

#define CHECK(cond)                                                                                        \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            std::fprintf(stderr, "rank %d: %s:%d: check failed: %s (last error: %s)\n", rank, __FILE__, \
                         __LINE__, #cond, chorus_comm_last_error(nullptr));                                \
            return 1;                                                                                      \
        }                                                                                                  \
    } while (0)

bool mpi_untouched() {
    int initialized = 1, finalized = 1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return !initialized && !finalized;
}

// Rank r's float input: values across many magnitudes, so that the order of
// the additions shows in the rounding.
float input(int r, size_t i) {
    const uint64_t b = seeds::bits(41, r, i);
    const float mantissa = static_cast<float>(b & 0xffffff) / static_cast<float>(1 << 24) + 0.5f;
    const int exponent = static_cast<int>((b >> 24) % 21) - 10;
    return ((b >> 40) & 1 ? -1.0f : 1.0f) * std::ldexp(mantissa, exponent);
}

// Create, run an all-reduce (float: near the exact sum, and the same bits on
// every rank; int64: exact), a broadcast and an all-gather, destroy.
int collectives(int rank, int size, const std::string& dir) {
    FileOob f{dir, rank, size};
    chorus_oob_t oob = oob_of(f);
    chorus_comm_t comm = nullptr;
    CHECK(chorus_comm_create_oob(&oob, &comm) == CHORUS_SUCCESS);
    CHECK(comm != nullptr);
    int me = -1, p = -1;
    chorus_comm_rank(comm, &me);
    chorus_comm_size(comm, &p);
    CHECK(me == rank && p == size);

    const size_t n = 100003;
    std::vector<float> in(n), out(n);
    for (size_t i = 0; i < n; ++i) in[i] = input(rank, i);
    CHECK(chorus_allreduce(in.data(), out.data(), n, CHORUS_FLOAT32, CHORUS_SUM, comm, nullptr) == CHORUS_SUCCESS);
    for (size_t i = 0; i < n; ++i) {
        double exact = 0, magnitude = 0;
        for (int r = 0; r < size; ++r) {
            exact += input(r, i);
            magnitude += std::fabs(input(r, i));
        }
        CHECK(std::fabs(out[i] - exact) <= size * magnitude * 1.2e-7);
    }
    // The same bits everywhere: every rank's result, compared through the
    // test's own exchange.
    std::vector<float> all(n * static_cast<size_t>(size));
    CHECK(file_allgather(out.data(), all.data(), n * sizeof(float), &f) == 0);
    for (int r = 0; r < size; ++r) CHECK(std::memcmp(&all[static_cast<size_t>(r) * n], out.data(), n * 4) == 0);

    std::vector<int64_t> a(n), s(n);
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<int64_t>(seeds::bits(7, rank, i) >> 8);
    CHECK(chorus_allreduce(a.data(), s.data(), n, CHORUS_INT64, CHORUS_SUM, comm, nullptr) == CHORUS_SUCCESS);
    for (size_t i = 0; i < n; ++i) {
        int64_t want = 0;
        for (int r = 0; r < size; ++r) want += static_cast<int64_t>(seeds::bits(7, r, i) >> 8);
        CHECK(s[i] == want);
    }

    const int root = size - 1;
    std::vector<int32_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = rank == root ? static_cast<int32_t>(i * 3 + 1) : -1;
    CHECK(chorus_broadcast(b.data(), b.data(), n, CHORUS_INT32, root, comm, nullptr) == CHORUS_SUCCESS);
    for (size_t i = 0; i < n; ++i) CHECK(b[i] == static_cast<int32_t>(i * 3 + 1));

    const size_t m = 1000;
    std::vector<int32_t> mine(m), gathered(m * static_cast<size_t>(size));
    for (size_t i = 0; i < m; ++i) mine[i] = rank * 100000 + static_cast<int32_t>(i);
    CHECK(chorus_allgather(mine.data(), gathered.data(), m, CHORUS_INT32, comm, nullptr) == CHORUS_SUCCESS);
    for (int r = 0; r < size; ++r)
        for (size_t i = 0; i < m; ++i) CHECK(gathered[r * m + i] == r * 100000 + static_cast<int32_t>(i));

    CHECK(chorus_comm_destroy(comm) == CHORUS_SUCCESS);
    CHECK(mpi_untouched());
    return 0;
}

// Rank 1's callback fails at its second call; the others' exchange times
// out (2 s) in the same call. Every rank's creation fails, none hangs.
int callback_fails(int rank, int size, const std::string& dir) {
    FileOob f{dir, rank, size};
    f.fail_at = rank == 1 ? 2 : 0;
    f.timeout_s = 2;
    chorus_oob_t oob = oob_of(f);
    chorus_comm_t comm = reinterpret_cast<chorus_comm_t>(1);
    CHECK(chorus_comm_create_oob(&oob, &comm) == CHORUS_ERR_TRANSPORT);
    CHECK(comm == nullptr);
    const std::string msg = chorus_comm_last_error(nullptr);
    CHECK(msg.find("out-of-band allgather") != std::string::npos);
    CHECK(msg.find(rank == 1 ? "returned -1" : "returned -2") != std::string::npos);
    CHECK(f.calls == 2);  // nothing called after the failure
    CHECK(mpi_untouched());
    return 0;
}

// A protocol setting that differs on rank 0: CHORUS_ERR_CONFIG everywhere.
int settings_differ(int rank, int size, const std::string& dir) {
    if (rank == 0) setenv("CHORUS_CHUNK_BYTES", "12288", 1);
    FileOob f{dir, rank, size};
    chorus_oob_t oob = oob_of(f);
    chorus_comm_t comm = nullptr;
    CHECK(chorus_comm_create_oob(&oob, &comm) == CHORUS_ERR_CONFIG);
    CHECK(std::string(chorus_comm_last_error(nullptr)).find("CHORUS_CHUNK_BYTES") != std::string::npos);
    CHECK(mpi_untouched());
    return 0;
}

// Ranks that say they are one another's (each passes rank + 1) to an
// exchange that places their bytes by the process's own number: the first
// exchange shows it, on every rank.
int ranks_misplaced(int rank, int size, const std::string& dir) {
    FileOob f{dir, rank, size};
    chorus_oob_t oob = oob_of(f);
    oob.rank = (rank + 1) % size;
    chorus_comm_t comm = nullptr;
    CHECK(chorus_comm_create_oob(&oob, &comm) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(std::string(chorus_comm_last_error(nullptr)).find("rank") != std::string::npos);
    CHECK(f.calls == 1);
    return 0;
}

int bad_arguments() {
    const int rank = -1;
    FileOob f;
    chorus_comm_t comm = nullptr;
    chorus_oob_t oob = oob_of(f);
    CHECK(chorus_comm_create_oob(nullptr, &comm) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(chorus_comm_create_oob(&oob, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    oob.allgather = nullptr;
    CHECK(chorus_comm_create_oob(&oob, &comm) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(std::string(chorus_comm_last_error(nullptr)).find("allgather") != std::string::npos);
    for (auto [r, p] : {std::pair{0, 0}, {0, -3}, {-1, 2}, {2, 2}, {5, 3}}) {
        oob = oob_of(f);
        oob.rank = r;
        oob.size = p;
        CHECK(chorus_comm_create_oob(&oob, &comm) == CHORUS_ERR_INVALID_ARGUMENT);
        CHECK(comm == nullptr);
    }
    CHECK(f.calls == 0);
    CHECK(mpi_untouched());
    return 0;
}

// Fork `size` ranks running `body`; true if every one exits with 0 within
// two minutes.
bool run_ranks(const char* name, int size, const std::function<int(int, int, const std::string&)>& body) {
    const fs::path dir = fs::temp_directory_path() / ("chorus-oob-" + std::to_string(getpid()) + "-" + name + "-" +
                                                      std::to_string(size));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::fflush(nullptr);
    std::vector<pid_t> pids;
    for (int r = 0; r < size; ++r) {
        const pid_t pid = fork();
        if (pid == 0) std::exit(body(r, size, dir.string()));  // exit(): the exit path runs as in a program
        pids.push_back(pid);
    }
    bool ok = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (int r = 0; r < size; ++r) {
        int status = 0;
        while (waitpid(pids[r], &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                std::fprintf(stderr, "%s np=%d: rank %d hangs; killing the ranks\n", name, size, r);
                for (pid_t p : pids) kill(p, SIGKILL);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::fprintf(stderr, "%s np=%d: rank %d %s %d\n", name, size, r,
                         WIFEXITED(status) ? "exited with" : "died by signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            ok = false;
        }
    }
    fs::remove_all(dir);
    std::printf("%-16s np=%d: %s\n", name, size, ok ? "ok" : "FAILED");
    return ok;
}

}  // namespace

int main() {
    bool ok = bad_arguments() == 0;
    std::printf("%-16s      : %s\n", "bad arguments", ok ? "ok" : "FAILED");
    for (int np : {2, 3, 4}) ok = run_ranks("collectives", np, collectives) && ok;
    for (int np : {2, 3}) {
        ok = run_ranks("callback_fails", np, callback_fails) && ok;
        ok = run_ranks("settings_differ", np, settings_differ) && ok;
        ok = run_ranks("ranks_misplaced", np, ranks_misplaced) && ok;
    }
    ok = run_ranks("collectives", 1, collectives) && ok;
    ok = mpi_untouched() && ok;
    return ok ? 0 : 1;
}
