// CHORUS_TRACE=DIR: every rank writes, per communicator, a trace in the
// Chrome / Perfetto trace-event format (DIR/chorus-comm<ID>-rank<R>.json):
// one span per operation (collective, communicator, sequence number, bytes,
// datatype, op, root, algorithm and why, result, label), and child spans
// for its steps (transfers with peer and bytes, reductions, copies, slot
// work), batched by kind and peer where an operation has many. Timestamps
// are this rank's monotonic clock in microseconds; a metadata event gives
// the offset to rank 0's clock, estimated at creation, with which
// tools/chorus-trace merges the ranks. An operation costs two clock reads
// and, in a loop of calls of one shape, about 5 bytes (TraceWriter::add);
// the JSON is written when the
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
    // spilled to an unnamed file every kBatchBytes; the JSON is written at
    // close(), off the way of every call. An operation whose shape (every
    // field but its number and stamps: collective, count, algorithm, ...)
    // is the previous one's and whose number follows it, as in a loop of
    // calls, takes a few bytes: a tag and its stamps as differences
    // (varints); any other, its number, its shape's index (or the shape
    // itself, past kMaxShapes) and its stamps.
    void add(const Record& r) {
        const ShapeKey k = shape_key(r);
        const bool same = k == last_key_;
        const uint32_t shape = same ? last_shape_ : find_shape(k);
        if (same && r.number == last_number_ + 1) {
            put_byte(kRepeat);
        } else {
            put_byte(kFull);
            put_varint(r.number);
            put_varint(shape);
            if (shape == kInlineShape)
                for (uint64_t v : k) put_varint(v);
        }
        put_varint(zigzag(r.begin_tick - last_begin_));
        put_varint(zigzag(r.end_tick - r.begin_tick));
        last_number_ = r.number;
        last_begin_ = r.begin_tick;
        if (r.state == RecState::Failed) failed(r);
        if (ops_.size() >= kBatchBytes) spill_ops();
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
    static constexpr size_t kBatch = 4096;            // step spans held before a spill
    static constexpr size_t kBatchBytes = 64 * 1024;  // encoded operations held before a spill
    static constexpr uint32_t kMaxShapes = 1u << 16, kInlineShape = ~0u;
    static constexpr uint8_t kRepeat = 1, kFull = 2;
    static uint64_t zigzag(uint64_t d) {
        const int64_t v = static_cast<int64_t>(d);
        return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
    }
    void put_byte(uint8_t b) { ops_.push_back(b); }
    void put_varint(uint64_t v) {
        while (v >= 0x80) {
            ops_.push_back(static_cast<uint8_t>(v | 0x80));
            v >>= 7;
        }
        ops_.push_back(static_cast<uint8_t>(v));
    }
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
    static RecordFields unpack(const ShapeKey& k, uint64_t number, uint64_t begin_tick, uint64_t end_tick);
    // The index of a shape not the last one (kInlineShape past kMaxShapes).
    uint32_t find_shape(const ShapeKey& k);
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
    std::vector<uint8_t> ops_;  // encoded operations (add())
    uint64_t last_number_ = 0, last_begin_ = 0;
    std::vector<ShapeKey> shapes_;
    std::map<ShapeKey, uint32_t> shape_index_;
    ShapeKey last_key_{};
    uint32_t last_shape_ = kInlineShape;
    std::vector<StepSpan> spans_;
    std::map<uint64_t, std::string> errors_;  // of failed operations, by number
};

}  // namespace chorus
