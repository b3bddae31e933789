// What a communicator tells about itself: the flight recorder, labels, the
// trace (CHORUS_TRACE), the cross-rank hang report and the straggler
// summary. The communicator calls it where operations begin and end and in
// its idle checks; it reads the operations' own state (their executors) and
// keeps no other account of progress. With timing off, an operation costs a
// few stores into the record ring and a branch on a cached flag.
//
// The dump of the flight record goes to stderr on a timeout, on the hang
// warning, on chorus_comm_abort and on SIGUSR1; the signal handler only
// counts the signal, and each communicator dumps at its next call or idle
// check.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/hang_report.h"
#include "core/operation.h"
#include "core/recorder.h"
#include "core/stragglers.h"
#include "core/trace.h"
#include "net/transport.h"

namespace chorus {

// SIGUSR1s received (the handler's only work).
extern std::atomic<unsigned> g_dump_signals;

class Observer {
public:
    using Ops = std::vector<std::unique_ptr<Operation>>;
    Observer(const Config& config, net::Transport& transport, const Ops& ops);
    ~Observer();
    Observer(const Observer&) = delete;
    Observer& operator=(const Observer&) = delete;

    // After creation: the number all ranks agree on, whether every rank
    // times its operations (agreed), and this rank's clock minus rank 0's.
    void created(uint64_t id, bool timing, double offset_us);
    void set_label(const char* label) { label_ = labels_.intern(label); }

    // An operation has begun (its record number goes into `op`).
    void begin(Operation& op) { op.record = begin_call(op.seq, op.args, op.algorithm, false); }
    // A call run in place: its record number (its arrival comes with
    // arrived()).
    uint64_t begin_call(uint64_t seq, const coll::CollArgs& args, const char* algorithm, bool inline_run) {
        if (g_dump_signals.load(std::memory_order_relaxed) != signals_seen_) dump_for_signal();
        Record* r = recorder_.begin(seq, args, algorithm, label_, inline_run);
        if (timing_ && !inline_run) stamp(r, args, ticks());
        return r ? r->number : 0;
    }
    // Whether operations are timed (the same on every rank).
    bool timing() const { return timing_; }
    // A call run in place arrived at `tick` (0: now).
    void arrived(uint64_t number, uint64_t tick, const coll::CollArgs& args) {
        if (timing_) stamp(recorder_.find(number), args, tick ? tick : ticks());
    }
    // An operation has finished or failed.
    void end(const Operation& op);
    // A call run in place has finished, all `steps` done.
    void end_inline(uint64_t number, size_t steps, chorus_result_t rc, const std::string& error) {
        Record* r = recorder_.find(number);
        if (!r) return;
        r->state = rc == CHORUS_SUCCESS ? RecState::Done : RecState::Failed;
        r->result = rc;
        r->steps = static_cast<uint32_t>(steps);
        if (rc != CHORUS_SUCCESS) r->error = error;
        if (timing_) ended(*r, nullptr);
    }

    // The idle checks: a pending SIGUSR1 dump, the hang report (`warned`:
    // the hang warning was just printed).
    void idle(bool warned);
    // A notice of the observer's own (consumed: true).
    bool notice(int source, const std::string& text);
    // Dump the flight record to stderr.
    void dump(const std::string& why);
    // At destroy: the trace is closed; the arrivals go to rank 0, which
    // prints the straggler summary (CHORUS_LOG=info).
    void closing();

private:
    void stamp(Record* r, const coll::CollArgs& args, uint64_t tick);
    void ended(Record& r, const Operation* op);
    void dump_for_signal();
    RankReport report() const;
    void open_query();
    void close_query();
    std::string comm_name() const;

    const Config& config_;
    net::Transport& transport_;
    const Ops& ops_;
    const int rank_, size_;
    uint64_t id_ = 0;
    bool timing_;
    double offset_us_ = 0;
    TickScale scale_;  // ticks to microseconds
    Labels labels_;
    uint32_t label_ = 0;
    FlightRecorder recorder_;
    unsigned signals_seen_;
    std::unique_ptr<TraceWriter> trace_;
    bool trace_opened_ = false;
    Arrivals arrivals_;
    // Rank 0: the peers' arrivals, and how many entries each one sends.
    std::vector<std::map<uint64_t, double>> peer_arrivals_;
    std::vector<int64_t> peer_entries_;  // -1: not heard from
    // The hang report this rank asked for.
    struct Query {
        bool open = false;
        uint64_t id = 0;
        double deadline_us = 0;
        std::vector<std::optional<RankReport>> answers;
    } query_;
    double lower_query_us_ = -1;  // when a lower rank last asked
};

}  // namespace chorus
