#include "core/observer.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "base/clock.h"
#include "base/log.h"
#include "reduce/datatype.h"

namespace chorus {

std::atomic<unsigned> g_dump_signals{0};

namespace {

// How long a rank that asked for the hang report waits for the answers.
constexpr double kAnswerWindowUs = 2e6;
// How long rank 0 waits at destroy for its peers' arrival times.
constexpr double kArrivalsWaitUs = 1e6;

void on_sigusr1(int) {
    g_dump_signals.fetch_add(1, std::memory_order_relaxed);
}

// SIGUSR1 dumps the flight records, unless the program handles it itself.
void install_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction old {};
        if (sigaction(SIGUSR1, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
        struct sigaction sa {};
        sa.sa_handler = on_sigusr1;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(SIGUSR1, &sa, nullptr);
    });
}

// Lines to stderr in one write, each with the prefix.
void print_lines(const char* tag, int rank, const std::string& text) {
    std::string prefix = cat("[chorus ", tag, " rank ", rank, "] "), out;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) nl = text.size();
        out += prefix + text.substr(pos, nl - pos) + "\n";
        pos = nl + 1;
    }
    std::fputs(out.c_str(), stderr);
}

}  // namespace

Observer::Observer(const Config& config, net::Transport& transport, const Ops& ops)
    : config_(config),
      transport_(transport),
      ops_(ops),
      rank_(transport.rank()),
      size_(transport.size()),
      timing_(!config.trace_dir.empty() || config.log_level >= LogLevel::Info),
      recorder_(config.record),
      signals_seen_(g_dump_signals.load()) {
    scale_.start();
    if (config.record) install_handler();
}

Observer::~Observer() = default;

std::string Observer::comm_name() const {
    return cat("comm ", id_, " (", size_, " ranks)");
}

void Observer::created(uint64_t id, bool timing, double offset_us) {
    id_ = id;
    timing_ = timing;
    offset_us_ = offset_us;
    scale_.start();
}

void Observer::stamp(Record* r, const coll::CollArgs& args, uint64_t now) {
    if (!r) return;
    r->begin_tick = now;
    r->bytes = args.message_bytes();
    arrivals_.add(r->number, now);
}

void Observer::end(const Operation& op) {
    Record* r = recorder_.find(op.record);
    if (!r) return;
    r->state = op.result == CHORUS_SUCCESS ? RecState::Done : RecState::Failed;
    r->result = op.result;
    r->steps = op.schedule ? static_cast<uint32_t>(op.schedule->steps().size()) : 0;
    if (op.result != CHORUS_SUCCESS) r->error = op.error;
    if (timing_) ended(*r, &op);
}

void Observer::ended(Record& r, const Operation* op) {
    r.end_tick = ticks();
    if (config_.trace_dir.empty()) return;
    if (!trace_opened_) {
        trace_opened_ = true;
        auto t = std::make_unique<TraceWriter>(config_.trace_dir, id_, rank_, size_, offset_us_, config_.algo);
        if (t->ok()) trace_ = std::move(t);
    }
    if (!trace_) return;
    trace_->add(r);
    if (!op || !op->executor || op->executor->ready_ticks().empty()) return;
    // One span per step; where there are many, one per (kind, peer).
    const auto& steps = op->schedule->steps();
    const auto& ready = op->executor->ready_ticks();
    const auto& done = op->executor->done_ticks();
    const bool batch = steps.size() > 32;
    std::vector<StepSpan> spans;
    const size_t esize = datatype_size(op->args.dtype);
    for (size_t s = 0; s < steps.size() && s < ready.size(); ++s) {
        if (done[s] == 0) continue;  // never ran (the operation failed)
        const Step& st = steps[s];
        const uint64_t bytes = st.bytes ? st.bytes : st.count * esize;
        const uint8_t kind = static_cast<uint8_t>(st.kind);
        StepSpan* into = nullptr;
        if (batch)
            for (auto& sp : spans)
                if (sp.kind == kind && sp.peer == st.peer) into = &sp;
        if (!into) {
            spans.push_back({op->seq, kind, st.peer, 0, 0, ready[s], done[s]});
            into = &spans.back();
        }
        into->steps++;
        into->bytes += bytes;
        into->begin_tick = std::min(into->begin_tick, ready[s]);
        into->end_tick = std::max(into->end_tick, done[s]);
    }
    trace_->add_steps(spans);
}

void Observer::dump_for_signal() {
    signals_seen_ = g_dump_signals.load(std::memory_order_relaxed);
    dump("SIGUSR1");
}

void Observer::dump(const std::string& why) {
    if (!recorder_.capacity()) return;
    print_lines("record", rank_, dump_records(recorder_, labels_, ops_, comm_name(), why));
}

RankReport Observer::report() const {
    RankReport rep;
    for (const Record* r : recorder_.in_order())
        if (r->state == RecState::Done && (!rep.has_last || r->seq > rep.last_seq)) {
            rep.has_last = true;
            rep.last_seq = r->seq;
            rep.last_coll = static_cast<int>(r->coll);
        }
    std::vector<const Operation*> live;
    for (const auto& op : ops_)
        if (!op->finished && op->executor) live.push_back(op.get());
    std::sort(live.begin(), live.end(), [](const Operation* a, const Operation* b) { return a->seq < b->seq; });
    for (const Operation* op : live) {
        OpReport o;
        o.seq = op->seq;
        o.coll = static_cast<int>(op->args.coll);
        o.count = op->args.count;
        o.dtype = op->args.dtype;
        o.root = op->args.root;
        o.done = static_cast<uint32_t>(op->executor->completed());
        o.total = static_cast<uint32_t>(op->schedule->steps().size());
        o.waits = op->executor->waiting_peers();
        if (const Record* r = const_cast<FlightRecorder&>(recorder_).find(op->record)) o.label = labels_.text(r->label);
        rep.ops.push_back(o);
    }
    return rep;
}

void Observer::open_query() {
    query_.open = true;
    query_.id++;
    query_.deadline_us = now_us() + kAnswerWindowUs;
    query_.answers.assign(static_cast<size_t>(size_), std::nullopt);
    query_.answers[static_cast<size_t>(rank_)] = report();
    for (int r = 0; r < size_; ++r)
        if (r != rank_) transport_.notify(r, cat("Q ", query_.id));
}

void Observer::close_query() {
    query_.open = false;
    // The lowest rank that asked prints; the others stay quiet.
    if (lower_query_us_ >= 0 && now_us() - lower_query_us_ < 4 * kAnswerWindowUs) return;
    if (log_level() >= LogLevel::Warn)
        log(LogLevel::Warn, rank_, "hang report: ", hang_verdict(query_.answers, comm_name()));
}

void Observer::idle(bool warned) {
    if (g_dump_signals.load(std::memory_order_relaxed) != signals_seen_) dump_for_signal();
    if (warned) {
        if (log_level() >= LogLevel::Warn) dump("hang warning");
        if (!query_.open && size_ > 1) open_query();
    }
    if (!query_.open) return;
    bool all = true;
    for (const auto& a : query_.answers) all = all && a.has_value();
    // Every answer in closes the query at once, unless a lower rank waits in
    // an operation too: its own hang warning will ask, and the lowest rank
    // that asks prints, so its question is waited for until the deadline
    // (closing early, both ranks printed when this rank's warning came
    // first and the lower rank answered before asking).
    for (int r = 0; r < rank_ && all; ++r) all = query_.answers[static_cast<size_t>(r)]->ops.empty();
    if (all || now_us() >= query_.deadline_us) close_query();
}

bool Observer::notice(int source, const std::string& text) {
    if (text.size() < 2 || text[1] != ' ') return false;
    switch (text[0]) {
        case 'Q':
            if (source < rank_) lower_query_us_ = now_us();
            transport_.notify(source, cat("A ", text.substr(2), "\n", encode_report(report())));
            return true;
        case 'A': {
            size_t nl = text.find('\n');
            uint64_t id = std::strtoull(text.c_str() + 2, nullptr, 10);
            RankReport rep;
            if (query_.open && id == query_.id && source >= 0 && source < size_ &&
                decode_report(nl == std::string::npos ? std::string() : text.substr(nl + 1), &rep))
                query_.answers[static_cast<size_t>(source)] = rep;
            return true;
        }
        case 'S': {
            if (rank_ != 0 || source <= 0 || source >= size_) return true;
            peer_arrivals_.resize(static_cast<size_t>(size_));
            peer_entries_.resize(static_cast<size_t>(size_), -1);
            uint64_t entries = 0;
            if (Arrivals::decode(text, &peer_arrivals_[static_cast<size_t>(source)], &entries))
                peer_entries_[static_cast<size_t>(source)] = static_cast<int64_t>(entries);
            return true;
        }
        default: return false;
    }
}

void Observer::closing() {
    if (timing_) scale_.finish();
    if (trace_) trace_->close(labels_, scale_);
    trace_.reset();
    // Notices nobody will read (queries that came while this rank was
    // elsewhere) would stay unmatched in the transport.
    int source = -1;
    std::string text;
    while (transport_.poll_notice(&source, &text)) notice(source, text);
    if (!timing_ || size_ < 2) return;
    if (rank_ != 0) {
        for (const auto& n : Arrivals::encode(arrivals_.held(scale_, offset_us_))) transport_.notify(0, n);
        transport_.flush_notices(1000);
        return;
    }
    peer_arrivals_.resize(static_cast<size_t>(size_));
    peer_entries_.resize(static_cast<size_t>(size_), -1);
    const double deadline = now_us() + kArrivalsWaitUs;
    auto complete = [&] {
        for (int r = 1; r < size_; ++r)
            if (peer_entries_[r] < 0 || peer_arrivals_[r].size() < static_cast<size_t>(peer_entries_[r])) return false;
        return true;
    };
    while (!complete() && now_us() < deadline) {
        transport_.progress();
        int source = -1;
        std::string text;
        bool any = false;
        while (transport_.poll_notice(&source, &text)) {
            any = true;
            notice(source, text);
        }
        if (!any) usleep(200);
    }
    peer_arrivals_[0] = arrivals_.held(scale_, offset_us_);
    std::string summary = straggler_summary(peer_arrivals_, comm_name());
    if (!summary.empty() && log_level() >= LogLevel::Info) print_lines("info", rank_, summary);
}

}  // namespace chorus
