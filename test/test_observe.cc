// The flight recorder, the hang report's verdict and the straggler summary,
// without a network: the text a user reads when something hangs.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "core/hang_report.h"
#include "core/recorder.h"
#include "core/stragglers.h"
#include "core/trace.h"

using chorus::OpReport;
using chorus::RankReport;

namespace {
RankReport in_op(uint64_t seq, int coll, uint32_t done, uint32_t total, std::vector<int> waits, uint64_t last_seq) {
    RankReport r;
    r.has_last = true;
    r.last_seq = last_seq;
    r.last_coll = 1;  // broadcast
    OpReport op;
    op.seq = seq;
    op.coll = coll;
    op.count = 4;
    op.dtype = CHORUS_FLOAT32;
    op.done = done;
    op.total = total;
    op.waits = std::move(waits);
    r.ops.push_back(op);
    return r;
}
bool has(const std::string& text, const std::string& part) {
    if (text.find(part) != std::string::npos) return true;
    UNSCOPED_INFO("in: " << text);
    return false;
}
// The value of `name` in a trace event's line (a string without its quotes).
std::string field(const std::string& line, const std::string& name) {
    const size_t at = line.find("\"" + name + "\":");
    REQUIRE(at != std::string::npos);
    size_t from = at + name.size() + 3, to = line.find_first_of(",}", from);
    std::string v = line.substr(from, to - from);
    if (!v.empty() && v[0] == '"') v = v.substr(1, v.size() - 2);
    return v;
}

}  // namespace

TEST_CASE("the hang report names the rank that never entered", "[unit][observe]") {
    std::vector<std::optional<RankReport>> ranks(4);
    for (int r = 0; r < 3; ++r) ranks[r] = in_op(1042, 0, 3, 8, {3}, 1041);
    std::string v = chorus::hang_verdict(ranks, "comm 3 (4 ranks)");
    CHECK(has(v, "allreduce #1042 on comm 3 (4 ranks):"));
    CHECK(has(v, "ranks 0-2 have done 3 of 8 steps and wait for rank 3"));
    CHECK(has(v, "rank 3 does not answer"));
    // Rank 3 answers from outside the operation: it completed the one before.
    RankReport idle;
    idle.has_last = true;
    idle.last_seq = 1041;
    idle.last_coll = 1;
    ranks[3] = idle;
    v = chorus::hang_verdict(ranks, "comm 3 (4 ranks)");
    CHECK(has(v, "rank 3 completed bcast #1041 and has not entered allreduce #1042"));
    CHECK(!has(v, "does not answer"));
}

TEST_CASE("the hang report says when ranks are in different collectives", "[unit][observe]") {
    std::vector<std::optional<RankReport>> ranks(4);
    ranks[0] = in_op(1042, 0, 0, 2, {1}, 1041);
    ranks[1] = in_op(1042, 0, 0, 2, {0}, 1041);
    ranks[2] = in_op(1042, 1, 0, 1, {0}, 1041);
    ranks[3] = in_op(1042, 1, 0, 1, {0}, 1041);
    std::string v = chorus::hang_verdict(ranks, "comm 3 (4 ranks)");
    CHECK(has(v, "ranks disagree: 0,1 are in allreduce #1042, 2,3 in bcast #1042"));
    // Same collective, different counts: the arguments are shown.
    ranks[2] = ranks[3] = in_op(1042, 0, 0, 2, {0}, 1041);
    ranks[3]->ops[0].count = 8;
    v = chorus::hang_verdict(ranks, "comm 3 (4 ranks)");
    CHECK(has(v, "ranks disagree: 0-2 are in allreduce #1042 (4 x float32, root 0), 3 in allreduce #1042 (8 x"));
}

TEST_CASE("a rank's report survives its notice", "[unit][observe]") {
    RankReport r = in_op(7, 2, 1, 5, {0, 2}, 6);
    r.ops[0].label = "CG dot product";
    r.ops.push_back(in_op(8, 0, 0, 3, {}, 0).ops[0]);
    RankReport back;
    REQUIRE(chorus::decode_report(chorus::encode_report(r), &back));
    REQUIRE(back.has_last);
    CHECK(back.last_seq == 6);
    REQUIRE(back.ops.size() == 2);
    CHECK(back.ops[0].seq == 7);
    CHECK(back.ops[0].coll == 2);
    CHECK(back.ops[0].waits == std::vector<int>{0, 2});
    CHECK(back.ops[0].label == "CG dot product");
    CHECK(back.ops[1].waits.empty());
    CHECK(!chorus::decode_report("garbage", &back));
}

TEST_CASE("the flight recorder keeps the last operations", "[unit][observe]") {
    chorus::FlightRecorder rec(4);
    chorus::Labels labels;
    chorus::coll::CollArgs a;
    a.count = 16;
    uint32_t label = labels.intern("gradient bucket 3");
    CHECK(labels.intern("gradient bucket 3") == label);
    CHECK(labels.intern("") == 0);
    uint64_t numbers[6];
    for (int i = 0; i < 6; ++i) {
        chorus::Record* r = rec.begin(100 + i, a, "ring", i == 5 ? label : 0, false);
        numbers[i] = r->number;
        if (i < 5) r->state = chorus::RecState::Done;
    }
    CHECK(rec.total() == 6);
    CHECK(rec.find(numbers[0]) == nullptr);  // overwritten
    REQUIRE(rec.find(numbers[5]) != nullptr);
    auto held = rec.in_order();
    REQUIRE(held.size() == 4);
    CHECK(held.front()->seq == 102);
    CHECK(held.back()->seq == 105);
    std::string d = chorus::dump_records(rec, labels, {}, "comm 0 (2 ranks)", "SIGUSR1");
    CHECK(has(d, "the last 4 of 6 operations"));
    CHECK(has(d, "allreduce #104 16 x float32 sum (ring): done"));
    CHECK(has(d, "allreduce #105 16 x float32 sum (ring) \"gradient bucket 3\": in progress"));
    CHECK(chorus::FlightRecorder(0).begin(1, a, "ring", 0, false) == nullptr);
    // A capacity that is not a power of two: the dump shows that many.
    chorus::FlightRecorder three(3);
    for (int i = 0; i < 5; ++i) three.begin(i, a, "ring", 0, false);
    REQUIRE(three.in_order().size() == 3);
    CHECK(three.in_order().front()->seq == 2);
    CHECK(has(chorus::dump_records(three, labels, {}, "comm 0 (2 ranks)", "test"), "CHORUS_RECORD=3"));
}

TEST_CASE("the straggler summary names the rank that is late", "[unit][observe]") {
    std::vector<std::map<uint64_t, double>> arr(3);
    for (uint64_t k = 1; k <= 100; ++k) {
        arr[0][k] = 1000.0 * k;
        arr[1][k] = 1000.0 * k + 2;
        arr[2][k] = 1000.0 * k + (k % 10 ? 500 : 1);  // late 90 times in 100
    }
    std::string s = chorus::straggler_summary(arr, "comm 0 (3 ranks)");
    CHECK(has(s, "over the last 100 operations"));
    CHECK(has(s, "rank 2: last to arrive 90 times (90%), late by median 500.0 us"));
    CHECK(has(s, "rank 1: last to arrive 10 times"));
    CHECK(has(s, "histogram"));
    // Through the notices rank 0 collects them with.
    chorus::Arrivals a;
    for (uint64_t k = 1; k <= 1500; ++k) a.add(k, 1000 * k);
    chorus::TickScale scale;
    scale.start();
    scale.finish();
    std::map<uint64_t, double> held = a.held(scale, 0);
    REQUIRE(held.size() == chorus::Arrivals::kWindow);
    for (auto& [k, t] : held) t = 1e9 + 3.3 * static_cast<double>(k);
    std::map<uint64_t, double> back;
    uint64_t entries = 0;
    auto notices = chorus::Arrivals::encode(held);
    CHECK(notices.size() > 1);
    for (const auto& n : notices) {
        REQUIRE(n.size() <= 1024);
        REQUIRE(chorus::Arrivals::decode(n, &back, &entries));
    }
    CHECK(entries == chorus::Arrivals::kWindow);
    REQUIRE(back.size() == chorus::Arrivals::kWindow);
    CHECK(back.begin()->first == 1500 - chorus::Arrivals::kWindow + 1);
    CHECK(back.at(1500) == Approx(1e9 + 3.3 * 1500).margin(0.1));
}

// The trace holds an operation in 24 bytes: stamps, the number's low bits
// and a shape shared by operations alike. Every field must come back: past
// the shapes the writer indexes (65536; more are written whole), across a
// spill to the unnamed file, and with numbers past 2^32.
TEST_CASE("the trace writes back every operation's fields", "[unit][observe]") {
    char dir[] = "/tmp/chorus-trace-test-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    constexpr uint64_t kOps = 70000, kFirst = (1ull << 32) - 5;
    static const char* const kAlgos[] = {"ring", "shm_flat"};
    {
        chorus::TraceWriter w(dir, 3, 1, 4, 0.0, {});
        REQUIRE(w.ok());
        chorus::Labels labels;
        for (uint64_t i = 0; i < kOps; ++i) {
            chorus::Record r;
            r.number = kFirst + i;
            r.seq = r.number + (i < 10 ? 0 : 7);
            r.coll = i % 3 ? chorus::coll::Collective::Allreduce : chorus::coll::Collective::Broadcast;
            r.dtype = CHORUS_FLOAT64;
            r.op = CHORUS_MAX;
            r.root = static_cast<int>(i % 4);
            r.count = i / 2;  // distinct shapes: more than the writer indexes
            r.bytes = r.count * 8;
            r.algorithm = kAlgos[i % 2];
            r.steps = static_cast<uint32_t>(i % 5);
            r.inline_run = i % 2;
            r.state = i == 100 ? chorus::RecState::Failed : chorus::RecState::Done;
            if (i == 100) r.error = "planted";
            r.begin_tick = 1000 + 10 * i;
            r.end_tick = r.begin_tick + 5;
            w.add(r);
        }
        chorus::TickScale scale;
        scale.start();
        scale.finish();
        w.close(labels, scale);
    }
    const std::string path = std::string(dir) + "/chorus-comm3-rank1.json";
    std::ifstream in(path);
    REQUIRE(in.good());
    std::string line;
    uint64_t seen = 0, failed = 0;
    std::vector<bool> got(kOps, false);
    while (std::getline(in, line)) {
        if (line.find("\"cat\":\"op\"") == std::string::npos) continue;
        const uint64_t number = std::stoull(field(line, "number"));
        REQUIRE(number >= kFirst);
        REQUIRE(number < kFirst + kOps);
        const uint64_t i = number - kFirst;
        REQUIRE_FALSE(got[i]);
        got[i] = true;
        ++seen;
        CHECK(std::stoull(field(line, "seq")) == number + (i < 10 ? 0 : 7));
        CHECK(field(line, "collective") == (i % 3 ? "allreduce" : "bcast"));
        CHECK(field(line, "datatype") == "float64");
        CHECK(field(line, "op") == "max");
        CHECK(std::stoi(field(line, "root")) == static_cast<int>(i % 4));
        CHECK(std::stoull(field(line, "count")) == i / 2);
        CHECK(std::stoull(field(line, "bytes")) == i / 2 * 8);
        CHECK(field(line, "algorithm") == kAlgos[i % 2]);
        CHECK(std::stoul(field(line, "steps")) == i % 5);
        CHECK((line.find(", run inline\"") != std::string::npos) == (i % 2 == 1));
        if (field(line, "result") != "success") {
            CHECK(i == 100);
            CHECK(field(line, "result") == "planted");
            ++failed;
        }
    }
    CHECK(seen == kOps);
    CHECK(failed == 1);
    std::remove(path.c_str());
    rmdir(dir);
}

TEST_CASE("the trace writes back repeated operations, their stamps and gaps in their numbers", "[unit][observe]") {
    // A loop of calls of one shape (each a few bytes in the writer), stamps
    // that go back (an operation begun before the last one), numbers with a
    // gap, and a shape that changes and comes back.
    char dir[] = "/tmp/chorus-trace-test-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    constexpr uint64_t kOps = 50000;
    auto number_of = [](uint64_t i) { return 1 + i + (i >= 20000 ? 3 : 0); };
    auto begin_of = [](uint64_t i) { return 1000000 + 1000 * i - (i % 7 == 3 ? 1500 : 0); };
    auto count_of = [](uint64_t i) -> uint64_t { return i >= 30000 && i < 30010 ? 9 : 4; };
    {
        chorus::TraceWriter w(dir, 5, 0, 2, 0.0, {});
        REQUIRE(w.ok());
        for (uint64_t i = 0; i < kOps; ++i) {
            chorus::Record r;
            r.number = number_of(i);
            r.seq = r.number - 1;
            r.count = count_of(i);
            r.bytes = r.count * 4;
            r.algorithm = "shm_flat";
            r.inline_run = true;
            r.state = chorus::RecState::Done;
            r.begin_tick = begin_of(i);
            r.end_tick = r.begin_tick + 100 + i % 3;
            w.add(r);
        }
        chorus::TickScale scale;
        scale.start();
        scale.finish();
        w.close(chorus::Labels(), scale);
    }
    const std::string path = std::string(dir) + "/chorus-comm5-rank0.json";
    std::ifstream in(path);
    REQUIRE(in.good());
    std::string line;
    uint64_t i = 0;
    std::vector<double> ts, dur;
    while (std::getline(in, line)) {
        if (line.find("\"cat\":\"op\"") == std::string::npos) continue;
        REQUIRE(i < kOps);
        CHECK(std::stoull(field(line, "number")) == number_of(i));
        CHECK(std::stoull(field(line, "count")) == count_of(i));
        ts.push_back(std::stod(field(line, "ts")));
        dur.push_back(std::stod(field(line, "dur")));
        ++i;
    }
    REQUIRE(i == kOps);
    // Every stamp as written, to the printed precision (microseconds to
    // 0.001), on the scale that the first and last begin give.
    const double per_tick = (ts.back() - ts.front()) / static_cast<double>(begin_of(kOps - 1) - begin_of(0));
    for (i = 0; i < kOps; ++i) {
        CHECK(ts[i] - ts[0] == Approx(per_tick * static_cast<double>(begin_of(i) - begin_of(0))).margin(0.002));
        CHECK(dur[i] == Approx(per_tick * static_cast<double>(100 + i % 3)).margin(0.002));
    }
    std::remove(path.c_str());
    rmdir(dir);
}
