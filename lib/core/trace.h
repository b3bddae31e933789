// CHORUS_TRACE=DIR: every rank writes, per communicator, a trace in the
// Chrome / Perfetto trace-event format (DIR/chorus-comm<ID>-rank<R>.json):
// one span per operation (collective, communicator, sequence number, bytes,
// datatype, op, root, algorithm and why, result, label), and child spans
// for its steps (transfers with peer and bytes, reductions, copies, slot
// work), batched by kind and peer where an operation has many. Timestamps
// are this rank's monotonic clock in microseconds; a metadata event gives
// the offset to rank 0's clock, estimated at creation, with which
// tools/chorus-trace merges the ranks. An operation costs two clock reads
// and a copy of a few words; the JSON is written when the communicator is
// destroyed, never on the way of a call (a process that dies first leaves
// only the file's header).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"
#include "core/recorder.h"

namespace chorus {

// This rank's clock minus rank 0's, in microseconds: the best of a few
// ping-pongs with rank 0. Collective over `comm`.
double clock_offset_us(MPI_Comm comm);

struct StepSpan {
    uint64_t seq;
    uint8_t kind;  // StepKind
    int32_t peer;
    uint32_t steps;  // batched steps
    uint64_t bytes;
    uint64_t begin_tick, end_tick;
};

class TraceWriter {
public:
    // Opens the file (a warning, and no trace, if it cannot be written).
    TraceWriter(const std::string& dir, uint64_t comm, int rank, int size, double offset_us,
                const std::map<std::string, std::string>& forced);
    ~TraceWriter();
    TraceWriter(const TraceWriter&) = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;
    bool ok() const { return file_ != nullptr; }

    // A finished operation, and its steps' spans: a copy of a few words,
    // spilled in binary to an unnamed file every kBatch; the JSON is written
    // at close(), off the way of every call.
    void add(const Record& r);
    void add_steps(const std::vector<StepSpan>& spans);
    // Write the JSON (labels by number, stamps converted with `scale`) and
    // close the file.
    void close(const Labels& labels, const TickScale& scale);

private:
    struct OpEntry {
        uint64_t number, seq, count, bytes;
        uint64_t begin_tick, end_tick;
        const char* algorithm;  // a static name
        uint32_t label, steps;
        int32_t root;
        uint8_t coll, dtype, op, failed, inline_run;
    };
    static constexpr size_t kBatch = 4096;
    template <typename T>
    void spill(std::FILE*& to, std::vector<T>& from);
    void write_op(const OpEntry& e, const Labels& labels, const TickScale& scale);
    void write_step(const StepSpan& s, const TickScale& scale);

    std::FILE* file_ = nullptr;
    std::FILE* op_spill_ = nullptr;
    std::FILE* step_spill_ = nullptr;
    uint64_t comm_;
    int rank_;
    std::map<std::string, std::string> forced_;
    std::vector<OpEntry> ops_;
    std::vector<StepSpan> spans_;
    std::map<uint64_t, std::string> errors_;  // of failed operations, by number
};

}  // namespace chorus
