// The interposer's settings (read once, on the first intercepted call after
// MPI_Init), its statistics, the error class Chorus failures are raised in,
// and the teardown before MPI_Finalize.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "interposer.h"

namespace chorus_mpi {

thread_local int t_inside CHORUS_MPI_TLS = 0;
std::atomic<bool> g_gate_open{false};
bool g_stage_all = false;

namespace {

// Every thread's statistics, never freed (a finished thread's calls still
// count); summed when read.
std::mutex g_counts_mutex;
std::vector<CallCounts*>& all_counts() {
    static auto* v = new std::vector<CallCounts*>;
    return *v;
}

struct State {
    std::mutex mutex;                   // first-call initialization, error codes
    std::atomic<bool> ready{false};     // settings read
    std::atomic<bool> finished{false};  // torn down: everything passes through
    Policy policy = Policy::Faster;
    std::string policy_text = "faster";
    std::string bad_policy;  // the message for Policy::Bad
    bool log_info = false;   // CHORUS_LOG=info or debug
    bool stage_all = false;  // CHORUS_MPI_STAGING=all
    int world_rank = 0;
    int error_class = -1;
    int error_codes[16] = {};  // per chorus_result_t, 0 until first used
};

State& state() {
    static State* s = new State;  // never destroyed: used until the process exits
    return *s;
}

void log_line(const char* level, const std::string& text) {
    std::fprintf(stderr, "[chorus %s rank %d] %s\n", level, state().world_rank, text.c_str());
}

// The policy, as the library reads CHORUS_MPI_INTERCEPT (default "faster").
void read_policy(State& s) {
    const char* v = "";
    if (chorus_setting("CHORUS_MPI_INTERCEPT", &v) != CHORUS_SUCCESS) {
        s.policy = Policy::Bad;
        s.bad_policy = std::string(chorus_comm_last_error(nullptr)) + "; the call was not run";
        s.policy_text = "(invalid)";
        return;
    }
    s.policy_text = v;
    s.policy = s.policy_text == "device" ? Policy::Device
               : s.policy_text == "none" ? Policy::None
               : s.policy_text == "all"  ? Policy::All
                                         : Policy::Faster;
}

void initialize(State& s) {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.ready.load()) return;
    read_policy(s);
    // A bad CHORUS_LOG fails the first communicator's creation instead.
    const char* log = "";
    s.log_info = chorus_setting("CHORUS_LOG", &log) == CHORUS_SUCCESS &&
                 (std::strcmp(log, "info") == 0 || std::strcmp(log, "debug") == 0);
    // A bad value fails the first communicator's creation (as CHORUS_LOG).
    const char* staging = "";
    s.stage_all = chorus_setting("CHORUS_MPI_STAGING", &staging) == CHORUS_SUCCESS && std::strcmp(staging, "all") == 0;
    g_stage_all = s.stage_all;
    PMPI_Comm_rank(MPI_COMM_WORLD, &s.world_rank);
    // MPI_Alloc_mem gives mapped memory (memory.cc): large collectives
    // first agree whether every rank's buffers are in it, on every
    // communicator (docs/configuration.md), unless the environment says.
    setenv("CHORUS_MAPPED", "always", 0);
    init_comms();
    if (s.log_info && s.world_rank == 0) {
        std::string note;
        if (s.policy == Policy::Device && !chorus_has_cuda())
            note = ": this build handles host memory only, so no call is run through Chorus";
        else if (s.policy == Policy::None)
            note = ": every call goes to MPI";
        if (s.policy != Policy::Bad) log_line("info", "MPI interposer: CHORUS_MPI_INTERCEPT=" + s.policy_text + note);
    }
    g_gate_open.store(
        s.policy == Policy::Faster || s.policy == Policy::All || (s.policy == Policy::Device && chorus_has_cuda()),
        std::memory_order_release);
    s.ready.store(true);
}

}  // namespace

const char* fn_name(Fn fn) {
    switch (fn) {
        case kAllreduce: return "MPI_Allreduce";
        case kBcast: return "MPI_Bcast";
        case kReduce: return "MPI_Reduce";
        case kReduceScatterBlock: return "MPI_Reduce_scatter_block";
        case kReduceScatter: return "MPI_Reduce_scatter";
        case kAllgather: return "MPI_Allgather";
        case kAllgatherv: return "MPI_Allgatherv";
        case kAlltoall: return "MPI_Alltoall";
        case kAlltoallv: return "MPI_Alltoallv";
        case kGather: return "MPI_Gather";
        case kGatherv: return "MPI_Gatherv";
        case kScatter: return "MPI_Scatter";
        case kScatterv: return "MPI_Scatterv";
        case kBarrier: return "MPI_Barrier";
        case kIallreduce: return "MPI_Iallreduce";
        case kIbcast: return "MPI_Ibcast";
        case kIreduce: return "MPI_Ireduce";
        case kIreduceScatterBlock: return "MPI_Ireduce_scatter_block";
        case kIreduceScatter: return "MPI_Ireduce_scatter";
        case kIallgather: return "MPI_Iallgather";
        case kIallgatherv: return "MPI_Iallgatherv";
        case kIalltoall: return "MPI_Ialltoall";
        case kIalltoallv: return "MPI_Ialltoallv";
        case kIgather: return "MPI_Igather";
        case kIgatherv: return "MPI_Igatherv";
        case kIscatter: return "MPI_Iscatter";
        case kIscatterv: return "MPI_Iscatterv";
        case kIbarrier: return "MPI_Ibarrier";
        case kNumFns: break;
    }
    return "?";
}

bool inside_chorus() {
    return t_inside > 0;
}

Gate open_gate(Fn fn, MPI_Comm comm, int* error) {
    if (t_inside > 0) return Gate::Quiet;
    State& s = state();
    if (!s.ready.load(std::memory_order_acquire)) {
        int initialized = 0, finalized = 0;
        PMPI_Initialized(&initialized);
        PMPI_Finalized(&finalized);
        if (!initialized || finalized) return Gate::Quiet;  // MPI reports the misuse itself
        initialize(s);
    }
    if (s.finished.load(std::memory_order_acquire) || comm == MPI_COMM_NULL) return Gate::Pass;
    switch (s.policy) {
        case Policy::Bad:
            *error = raise_error(comm, CHORUS_ERR_CONFIG, std::string(fn_name(fn)) + ": " + s.bad_policy);
            return Gate::Refused;
        case Policy::None: return Gate::Pass;
        case Policy::Device:
            // Any call may carry device buffers, and ranks must decide alike:
            // a build with CUDA takes every eligible call (as `all`), one
            // without, none.
            if (!chorus_has_cuda()) return Gate::Pass;
            break;
        case Policy::Faster:
        case Policy::All: break;
    }
    return Gate::Chorus;
}

bool tuning() {
    return state().policy == Policy::Faster;
}

void agree_route(Fn fn, MPI_Comm comm, size_t bytes, TuneCell& cell) {
    double mine[2] = {cell.typical(0), cell.typical(1)}, most[2] = {mine[0], mine[1]};
    {
        InsideChorus inside;
        if (PMPI_Allreduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS) {
            // Failed on every rank, or the job is broken: Chorus (nothing timed decides).
            cell.route = Route::Chorus;
            return;
        }
    }
    cell.route = decide(most[0], most[1]);
    State& s = state();
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    if (!s.log_info || rank != 0) return;
    const int k = size_class(bytes);
    char line[256];
    std::snprintf(line, sizeof line,
                  "MPI interposer: %s of %zu to %zu bytes goes %s (%.3f us a call through Chorus, %.3f us through MPI, "
                  "the slowest rank's)",
                  fn_name(fn), k ? size_t{1} << (k - 1) : size_t{0}, k ? (size_t{1} << k) - 1 : size_t{0},
                  cell.route == Route::Mpi ? "to MPI" : "through Chorus", most[0] * 1e6, most[1] * 1e6);
    log_line("info", line);
}

bool stage_host_buffers() {
    return state().stage_all;
}

thread_local CallCounts* t_counts CHORUS_MPI_TLS = nullptr;

CallCounts& new_thread_counts() {
    auto* c = new CallCounts;
    std::lock_guard<std::mutex> lock(g_counts_mutex);
    all_counts().push_back(c);
    t_counts = c;
    return *c;
}

unsigned long long total(bool passed, int fn) {
    std::lock_guard<std::mutex> lock(g_counts_mutex);
    unsigned long long n = 0;
    for (const CallCounts* c : all_counts())
        n += (passed ? c->passed : c->intercepted)[fn].load(std::memory_order_relaxed);
    return n;
}

int raise_error(MPI_Comm comm, chorus_result_t result, const std::string& message) {
    State& s = state();
    int code = MPI_ERR_OTHER;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.error_class < 0) {
            int cls = -1;
            if (PMPI_Add_error_class(&cls) == MPI_SUCCESS) {
                s.error_class = cls;
                PMPI_Add_error_string(cls, "Chorus error");
            }
        }
        unsigned slot = static_cast<unsigned>(result) < 16 ? static_cast<unsigned>(result) : 0;
        if (s.error_class >= 0 && s.error_codes[slot] == 0) {
            int c = 0;
            if (PMPI_Add_error_code(s.error_class, &c) == MPI_SUCCESS) s.error_codes[slot] = c;
        }
        if (s.error_codes[slot] != 0) {
            code = s.error_codes[slot];
            // The string of a code is replaced by the latest failure's message.
            std::string text = std::string("Chorus (") + chorus_get_error_string(result) + "): " + message;
            if (text.size() >= MPI_MAX_ERROR_STRING) text.resize(MPI_MAX_ERROR_STRING - 1);
            PMPI_Add_error_string(code, text.c_str());
        }
    }
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

bool torn_down() {
    return state().finished.load();
}

void teardown() {
    State& s = state();
    if (!s.ready.load() || s.finished.exchange(true)) return;
    g_gate_open.store(false, std::memory_order_release);
    destroy_all_comms();
    if (!s.log_info || s.world_rank != 0) return;
    unsigned long long in = 0, out = 0;
    for (int f = 0; f < kNumFns; ++f) {
        in += total(false, f);
        out += total(true, f);
    }
    log_line("info", "MPI interposer statistics (rank 0, CHORUS_MPI_INTERCEPT=" + s.policy_text +
                         "): " + std::to_string(in) + " calls intercepted, " + std::to_string(out) + " passed through");
    for (int f = 0; f < kNumFns; ++f) {
        char line[160];
        std::snprintf(line, sizeof line, "  %s: %llu intercepted, %llu passed through", fn_name(static_cast<Fn>(f)),
                      total(false, f), total(true, f));
        log_line("info", line);
    }
}

}  // namespace chorus_mpi

// For tests and tools: calls run through Chorus, and calls handed to PMPI,
// on this rank, over every intercepted function.
extern "C" unsigned long long chorus_mpi_intercepted_calls(void) {
    unsigned long long n = 0;
    for (int f = 0; f < chorus_mpi::kNumFns; ++f) n += chorus_mpi::total(false, f);
    return n;
}

extern "C" unsigned long long chorus_mpi_passed_calls(void) {
    unsigned long long n = 0;
    for (int f = 0; f < chorus_mpi::kNumFns; ++f) n += chorus_mpi::total(true, f);
    return n;
}
