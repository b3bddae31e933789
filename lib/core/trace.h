// CHORUS_TRACE=DIR: every rank writes, per communicator, a trace in the
// Chrome / Perfetto trace-event format (DIR/chorus-comm<ID>-rank<R>.json):
// one span per operation (collective, communicator, sequence number, bytes,
// datatype, op, root, algorithm and why, result, label), and child spans
// for its steps (transfers with peer and bytes, reductions, copies, slot
// work), batched by kind and peer where an operation has many. Timestamps
// are this rank's monotonic clock in microseconds; a metadata event gives
// the offset to rank 0's clock, estimated at creation, with which
// tools/chorus-trace merges the ranks. An operation costs two clock reads
// and 24 bytes (TraceWriter::add); the JSON is written when the
// communicator is destroyed, never on the way of a call (a process that
// dies first leaves only the file's header).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"
#include "core/recorder.h"
#include "net/bootstrap.h"

namespace chorus {

// This rank's clock minus rank 0's, in microseconds. Collective over
// `boot`. Over MPI, the best of a few ping-pongs with rank 0; over any
// other bootstrap (out of band), from a few all-gathers of time stamps:
// each bounds the offset from both sides (a stamp is taken before the
// exchange that carries it ends anywhere), and the estimate is the middle
// of the narrowest bounds, as good as the exchange is fast (a store's
// round trip, milliseconds, rather than a message's).
double clock_offset_us(net::Bootstrap& boot);

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

    // A finished operation, and its steps' spans, held in binary and
    // spilled to an unnamed file every kBatch; the JSON is written at
    // close(), off the way of every call. An operation takes 24 bytes: its
    // stamps, its number and the index of its shape (everything else it
    // records: collective, count, algorithm, ...), which is most often the
    // previous operation's.
    void add(const Record& r) {
        const ShapeKey k = shape_key(r);
        const uint32_t shape = k == last_key_ ? last_shape_ : find_shape(k);
        ops_.push_back({r.begin_tick, r.end_tick, static_cast<uint32_t>(r.number), shape});
        if (shape == kInlineShape) push_key(k);
        if (r.state == RecState::Failed) failed(r);
        if (ops_.size() >= kBatch) spill_ops();
    }
    void add_steps(const std::vector<StepSpan>& spans);
    // Write the JSON (labels by number, stamps converted with `scale`) and
    // close the file.
    void close(const Labels& labels, const TickScale& scale);

private:
    // An operation's fields but its number and stamps, packed: the sequence
    // number less the operation number, count, bytes, algorithm (a static
    // name), label and steps, then root, collective, datatype, op, failed
    // and inline.
    using ShapeKey = std::array<uint64_t, 6>;
    struct OpSpan {
        uint64_t begin_tick, end_tick;
        uint32_t number_low;  // the operation number's low 32 bits
        uint32_t shape;       // kInlineShape: the key follows in the next two entries
    };
    static_assert(sizeof(OpSpan) == 24 && 2 * sizeof(OpSpan) == sizeof(ShapeKey), "OpSpan packing");
    static constexpr size_t kBatch = 4096;
    static constexpr uint32_t kMaxShapes = 1u << 16, kInlineShape = ~0u;
    static ShapeKey shape_key(const Record& r) {
        return {r.seq - r.number,
                r.count,
                r.bytes,
                reinterpret_cast<uintptr_t>(r.algorithm),
                r.label | static_cast<uint64_t>(r.steps) << 32,
                static_cast<uint32_t>(r.root) | static_cast<uint64_t>(r.coll) << 32 |
                    static_cast<uint64_t>(r.dtype) << 40 | static_cast<uint64_t>(r.op) << 48 |
                    static_cast<uint64_t>(r.state == RecState::Failed) << 56 |
                    static_cast<uint64_t>(r.inline_run) << 57};
    }
    static RecordFields unpack(const ShapeKey& k, uint64_t number, const OpSpan& s);
    // The index of a shape not the last one (kInlineShape past kMaxShapes).
    uint32_t find_shape(const ShapeKey& k);
    void push_key(const ShapeKey& k);
    void failed(const Record& r);
    void spill_ops();
    template <typename T>
    void spill(std::FILE*& to, std::vector<T>& from);
    void write_op(const RecordFields& e, const Labels& labels, const TickScale& scale);
    void write_step(const StepSpan& s, const TickScale& scale);

    std::FILE* file_ = nullptr;
    std::FILE* op_spill_ = nullptr;
    std::FILE* step_spill_ = nullptr;
    uint64_t comm_;
    int rank_;
    std::map<std::string, std::string> forced_;
    std::vector<OpSpan> ops_;
    std::vector<ShapeKey> shapes_;
    std::map<ShapeKey, uint32_t> shape_index_;
    ShapeKey last_key_{};
    uint32_t last_shape_ = kInlineShape;
    std::vector<StepSpan> spans_;
    std::map<uint64_t, std::string> errors_;  // of failed operations, by number
};

}  // namespace chorus
