// The flight recorder: each communicator keeps its last CHORUS_RECORD
// operations (default 64) in a ring, each with its state (running, done or
// failed, with the error). An operation still in flight is described from
// its executor when the record is dumped (step k of n, the peers it waits
// for), so the recorder keeps no second account of progress. Recording is a
// few stores per operation; the clock is read only when timing was asked
// for (CHORUS_TRACE, CHORUS_LOG=info).
//
// Labels (chorus_comm_set_label) are interned: a record holds a number.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chorus.h"
#include "coll/algorithm.h"
#include "core/operation.h"

namespace chorus {

enum class RecState : uint8_t { Running, Done, Failed };

// A record's fields of fixed size (what a trace copies of it).
struct RecordFields {
    uint64_t number = 0;  // 1, 2, 3, ... in the order operations start (the same on every rank); 0: empty
    uint64_t seq = 0;
    coll::Collective coll = coll::Collective::Allreduce;
    chorus_datatype_t dtype = CHORUS_FLOAT32;
    chorus_op_t op = CHORUS_SUM;
    int root = 0;
    size_t count = 0;
    size_t bytes = 0;  // the message size, as chorus-bench counts it (when timed)
    const char* algorithm = "";
    uint32_t label = 0;  // 0: none
    bool inline_run = false;
    RecState state = RecState::Running;
    chorus_result_t result = CHORUS_SUCCESS;
    uint32_t steps = 0;       // of the schedule
    uint64_t begin_tick = 0;  // base/clock.h ticks(); 0 when not timed
    uint64_t end_tick = 0;
};

struct Record : RecordFields {
    std::string error;  // when failed
};

class Labels {
public:
    // The number of `text` (0 for null or ""); at most kMax distinct labels,
    // the last one reused beyond.
    uint32_t intern(const char* text);
    const std::string& text(uint32_t id) const { return texts_[id < texts_.size() ? id : 0]; }
    static constexpr size_t kMax = 4096;

private:
    std::vector<std::string> texts_{std::string()};
};

class FlightRecorder {
public:
    // The ring's size is the next power of two (a mask, not a division, on
    // the way of every call); the dump shows the last `capacity`.
    explicit FlightRecorder(size_t capacity)
        : capacity_(capacity), ring_(capacity ? round_up_pow2(capacity) : 0), mask_(ring_.size() - 1) {}
    size_t capacity() const { return capacity_; }
    // Operations recorded so far (the last record's number).
    uint64_t total() const { return next_ - 1; }

    // A new record (null when the capacity is 0).
    Record* begin(uint64_t seq, const coll::CollArgs& a, const char* algorithm, uint32_t label, bool inline_run) {
        if (ring_.empty()) return nullptr;
        Record& r = ring_[next_ & mask_];
        r.number = next_++;
        r.seq = seq;
        r.coll = a.coll;
        r.dtype = a.dtype;
        r.op = a.op;
        r.root = a.root;
        r.count = a.count;
        r.bytes = 0;  // filled in when timed
        r.algorithm = algorithm;
        r.label = label;
        r.inline_run = inline_run;
        r.state = RecState::Running;
        r.result = CHORUS_SUCCESS;
        r.steps = 0;
        r.begin_tick = r.end_tick = 0;
        if (!r.error.empty()) r.error.clear();
        return &r;
    }
    // The record of `number`, if the ring still holds it.
    Record* find(uint64_t number) {
        if (ring_.empty() || number == 0) return nullptr;
        Record& r = ring_[number & mask_];
        return r.number == number ? &r : nullptr;
    }
    // The records held, oldest first.
    std::vector<const Record*> in_order() const;

private:
    static size_t round_up_pow2(size_t n) {
        size_t p = 1;
        while (p < n) p <<= 1;
        return p;
    }
    size_t capacity_;
    std::vector<Record> ring_;
    uint64_t mask_;
    uint64_t next_ = 1;
};

// "allreduce #12 4 x float32 sum (ring) "CG dot product""
std::string describe(const Record& r, const Labels& labels);

// The dump: a header line naming `why` and the communicator, then one line
// per record, oldest first; operations still in flight (found in `ops` by
// their record number) say which step they are in and whom they wait for.
std::string dump_records(const FlightRecorder& rec, const Labels& labels,
                         const std::vector<std::unique_ptr<Operation>>& ops, const std::string& comm,
                         const std::string& why);

}  // namespace chorus
