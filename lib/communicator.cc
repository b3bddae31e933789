#include "communicator.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "host_reducer.h"
#include "log.h"
#include "net/mpi_bootstrap.h"
#include "net/shm_transport.h"
#include "net/ucx_transport.h"

namespace chorus {

namespace {
// At most this many operations in flight: the sequence number in the wire tag
// is 16 bits, so two operations in flight must never share it.
constexpr size_t kMaxInflight = 1024;
constexpr size_t kMaxCachedSchedules = 256;
}  // namespace

namespace {
// The cost model's parameters for this transport: messages it copies through
// shared memory pay no rendezvous.
coll::CostParams cost_params(coll::CostParams p, const net::Transport& t) {
    p.eager_bytes = std::max(p.eager_bytes, t.host_only_max());
    return p;
}
}  // namespace

std::unique_ptr<Communicator> Communicator::create_mpi(MPI_Comm comm, const Config& config) {
    MPI_Comm dup = MPI_COMM_NULL;
    net::check_mpi(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
    try {
        std::unique_ptr<net::Transport> transport = std::make_unique<net::UcxTransport>(dup, config.peer_errors);
        transport = net::ShmTransport::create(dup, std::move(transport), config.shm_eager_bytes);
        return std::make_unique<Communicator>(std::move(transport), config, dup);
    } catch (...) {
        MPI_Comm_free(&dup);
        throw;
    }
}

Communicator::Communicator(std::unique_ptr<net::Transport> transport, const Config& config, MPI_Comm owned,
                           std::unique_ptr<Device> device)
    : config_(config),
      mpi_comm_(owned),
      transport_(std::move(transport)),
      device_(device ? std::move(device) : make_cuda_device()),
      device_scratch_([this](size_t n) { return device_->alloc_device(n); },
                      [this](void* p) { device_->free_device(p); }),
      staging_([this](size_t n) { return device_->alloc_pinned(n); }, [this](void* p) { device_->free_pinned(p); }),
      selector_(cost_params(config.cost, *transport_)) {
    spin_ = config_.spin_before_yield;
    if (spin_ < 0) {
        // The host's cores, not this process's affinity mask: mpirun binds
        // each rank to one core when they fit, and then spinning is right.
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        spin_ = transport_->local_ranks() <= (cores > 0 ? cores : 1) ? 1 << 20 : 64;
    }
    for (int c = 0; c < coll::kNumCollectives; ++c) {
        std::string name = config_.forced_algo(coll::collective_name(static_cast<coll::Collective>(c)));
        forced_.push_back(name.empty() ? nullptr : &coll::find_algorithm(static_cast<coll::Collective>(c), name));
    }
    // Touch the scratch a pipelined operation needs once, up front.
    scratch_.release(scratch_.acquire(config_.chunk_bytes * static_cast<size_t>(config_.window)));
    if (rank() == 0) {
        log(LogLevel::Debug, 0, "communicator of ", size(), " ranks over ", transport_->name(), "; ",
            config_.describe());
        for (const auto& name : config_.unknown) log(LogLevel::Warn, 0, "unknown setting ", name, " ignored");
    }
}

Communicator::~Communicator() {
    // Finish what is in flight; a failed communicator just drops it.
    for (auto& op : ops_) {
        if (!failed_) {
            try {
                wait(op.get());
            } catch (...) {
            }
        }
        if (op->executor) op->executor->abort();
        release_buffers(*op);
    }
    ops_.clear();
    device_->drain();
    transport_.reset();  // collective for UCX
    if (mpi_comm_ != MPI_COMM_NULL) MPI_Comm_free(&mpi_comm_);
}

const coll::Algorithm& Communicator::choose(const coll::CollArgs& args) {
    if (const coll::Algorithm* forced = forced_[static_cast<size_t>(args.coll)]) return *forced;
    bool fresh = false;
    const coll::Choice& c = selector_.choose(args, &fresh);
    if (fresh && rank() == 0 && log_level() >= LogLevel::Info) {
        std::string line;
        for (const auto& [algo, us] : c.predictions) line += cat(" ", algo->name, "=", us, "us");
        log(LogLevel::Info, 0, coll::collective_name(args.coll), " of ~", c.model_bytes, " bytes on ", size(),
            " ranks: ", c.algorithm->name, " (predicted:", line, ")");
    }
    return *c.algorithm;
}

size_t Communicator::ScheduleKeyHash::operator()(const ScheduleKey& k) const {
    uint64_t h = reinterpret_cast<uintptr_t>(k.algo);
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
    mix(k.count);
    mix(static_cast<uint64_t>(k.dtype) << 32 | static_cast<uint32_t>(k.op));
    mix(static_cast<uint64_t>(k.root) << 1 | static_cast<uint64_t>(k.in_place));
    for (size_t c : k.counts) mix(c);
    return static_cast<size_t>(h);
}

std::shared_ptr<const Schedule> Communicator::schedule_for(const coll::CollArgs& a, const coll::Algorithm& algo) {
    // Chunk size and depth are the communicator's, fixed for its life.
    ScheduleKey key{&algo, a.count, a.dtype, a.op, a.root, a.in_place ? 1 : 0, a.counts};
    auto it = schedules_.find(key);
    if (it != schedules_.end()) return it->second;
    std::shared_ptr<const Schedule> s = algo.build(a);
    if (schedules_.size() >= kMaxCachedSchedules) schedules_.clear();
    schedules_.emplace(std::move(key), s);
    return s;
}

Operation* Communicator::start(coll::CollArgs args, const void* sendbuf, void* recvbuf, void* stream) {
    if (failed_) fail(CHORUS_ERR_COMM_FAILED, "communicator failed earlier: ", failure_);
    if (ops_.size() >= kMaxInflight)
        fail(CHORUS_ERR_INVALID_ARGUMENT, "too many operations in flight (", kMaxInflight,
             "); wait for some before starting more");
    args.rank = rank();
    args.size = size();
    args.chunk_bytes = config_.chunk_bytes;
    args.depth = config_.window;
    if (config_.check) check_agreement(args);
    // Repeated calls of one shape (the common case in a time-step loop)
    // skip the selector and the schedule cache.
    const Memo& m = memo_;
    if (m.schedule && m.args.coll == args.coll && m.args.count == args.count && m.args.dtype == args.dtype &&
        m.args.op == args.op && m.args.root == args.root && m.args.in_place == args.in_place &&
        m.args.counts == args.counts)
        return launch(args, *m.algo, m.schedule, sendbuf, recvbuf, stream);
    const coll::Algorithm& algo = choose(args);
    std::shared_ptr<const Schedule> schedule = schedule_for(args, algo);
    memo_ = Memo{args, &algo, schedule};
    return launch(args, algo, std::move(schedule), sendbuf, recvbuf, stream);
}

Operation* Communicator::launch(const coll::CollArgs& args, const coll::Algorithm& algo,
                                std::shared_ptr<const Schedule> schedule, const void* sendbuf, void* recvbuf,
                                void* stream) {
    std::unique_ptr<Operation> op;
    if (spare_ops_.empty()) {
        op = std::make_unique<Operation>();
    } else {
        op = std::move(spare_ops_.back());
        spare_ops_.pop_back();
    }
    op->seq = next_seq_++;
    op->args = args;
    op->algorithm = algo.name;
    op->schedule = std::move(schedule);
    // Memory kind decides how each step runs here, never which steps run.
    MemKind ks = sendbuf ? device_->kind(sendbuf) : MemKind::Host;
    MemKind kr = recvbuf ? device_->kind(recvbuf) : MemKind::Host;
    op->on_device = !host_side(ks) || !host_side(kr);
    DeviceUse use;
    use.device = device_.get();
    Buffers bufs;
    try {
        if (op->on_device) {
            bufs = prepare_device(*op, sendbuf, recvbuf, stream, ks, kr, use);
        } else {
            op->scratch = scratch_.acquire(op->schedule->scratch_bytes());
            bufs = Buffers{sendbuf, recvbuf, op->scratch};
            // Host buffers a kernel on the caller's stream may still write.
            if (stream) {
                device_->wait_for(stream);
                use.gate = device_->mark();
            }
        }
        if (op->executor) op->executor->reset(*op->schedule, bufs, op->seq, use);
        else op->executor = std::make_unique<Executor>(*op->schedule, *transport_, bufs, op->seq, config_.window, use);
        if (op->mirrors[1])
            op->executor->add_final_copy(recvbuf, op->mirrors[1], op->mirror_bytes);
    } catch (...) {
        if (op->executor) op->executor->abort();
        else if (op->on_device) device_->drain();
        release_buffers(*op);
        throw;
    }
    op->last_change = {};  // idle time is counted from the first idle check
    Operation* raw = op.get();
    ops_.push_back(std::move(op));
    progress(raw);
    return raw;
}

namespace {
// Bytes of the user's send and receive buffers that a collective touches.
void user_bytes(const coll::CollArgs& a, size_t* send, size_t* recv) {
    size_t es = datatype_size(a.dtype);
    switch (a.coll) {
        case coll::Collective::ReduceScatter:
            *send = a.total_count() * es;
            *recv = a.in_place ? *send : a.block_count(a.rank) * es;
            break;
        case coll::Collective::Allgather:
            *send = a.count * es;
            *recv = a.count * static_cast<size_t>(a.size) * es;
            break;
        default: *send = *recv = a.count * es; break;
    }
}
}  // namespace

Buffers Communicator::prepare_device(Operation& op, const void* sendbuf, void* recvbuf, void* stream, MemKind ks,
                                     MemKind kr, DeviceUse& use) {
    use.on_device = true;
    use.direct = transport_->device_memory() && !config_.always_stage;
    use.staging = &staging_;
    // Everything below runs after the caller's queued work (which may be
    // writing the input).
    device_->wait_for(stream);
    op.scratch = device_scratch_.acquire(op.schedule->scratch_bytes());
    size_t send_bytes = 0, recv_bytes = 0;
    user_bytes(op.args, &send_bytes, &recv_bytes);
    Buffers b{sendbuf, recvbuf, op.scratch};
    // A host buffer in a device-side operation: the steps work on a device
    // copy of it, copied back at the end (receive buffer).
    if (recvbuf && host_side(kr) && recv_bytes) {
        op.mirrors[1] = device_scratch_.acquire(recv_bytes);
        device_->copy(op.mirrors[1], recvbuf, recv_bytes);
        b.recv = op.mirrors[1];
        op.mirror_bytes = recv_bytes;
    }
    if (sendbuf && host_side(ks) && send_bytes) {
        auto s = reinterpret_cast<uintptr_t>(sendbuf), r = reinterpret_cast<uintptr_t>(recvbuf);
        if (op.mirrors[1] && s >= r && s < r + recv_bytes) {
            b.send = static_cast<char*>(op.mirrors[1]) + (s - r);  // in place
        } else {
            op.mirrors[0] = device_scratch_.acquire(send_bytes);
            device_->copy(op.mirrors[0], sendbuf, send_bytes);
            b.send = op.mirrors[0];
        }
    }
    use.gate = device_->mark();
    return b;
}

void Communicator::release_buffers(Operation& op) {
    ScratchPool& pool = op.on_device ? device_scratch_ : scratch_;
    pool.release(op.scratch);
    op.scratch = nullptr;
    for (void*& m : op.mirrors) {
        device_scratch_.release(m);
        m = nullptr;
    }
}

namespace {
// What every rank must agree on for a collective (CHORUS_CHECK=1).
struct Fingerprint {
    uint32_t coll, dtype, op;
    int32_t root;
    uint64_t count, counts_hash, seq;
    bool operator==(const Fingerprint& o) const {
        return coll == o.coll && dtype == o.dtype && op == o.op && root == o.root && count == o.count &&
               counts_hash == o.counts_hash && seq == o.seq;
    }
};

std::string describe(const Fingerprint& f) {
    auto c = static_cast<coll::Collective>(f.coll);
    std::string s = cat(coll::collective_name(c), " #", f.seq, " count=", f.count, " ",
                        datatype_name(static_cast<chorus_datatype_t>(f.dtype)));
    if (c == coll::Collective::Allreduce || c == coll::Collective::Reduce || c == coll::Collective::ReduceScatter)
        s += cat(" ", op_name(static_cast<chorus_op_t>(f.op)));
    if (c == coll::Collective::Broadcast || c == coll::Collective::Reduce) s += cat(" root=", f.root);
    if (f.counts_hash) s += cat(" recvcounts#", f.counts_hash);
    return s;
}
}  // namespace

void Communicator::check_agreement(const coll::CollArgs& args) {
    Fingerprint mine{static_cast<uint32_t>(args.coll), static_cast<uint32_t>(args.dtype), 0, 0, args.count, 0,
                     next_seq_};
    // Only what the collective uses has to agree.
    if (args.coll == coll::Collective::Allreduce || args.coll == coll::Collective::Reduce ||
        args.coll == coll::Collective::ReduceScatter)
        mine.op = static_cast<uint32_t>(args.op);
    if (args.coll == coll::Collective::Broadcast || args.coll == coll::Collective::Reduce) mine.root = args.root;
    for (size_t c : args.counts) mine.counts_hash = (mine.counts_hash ^ c) * 0x100000001b3ull + 1;
    std::vector<Fingerprint> all(size());
    // The check itself has the same shape on every rank, whatever they passed.
    coll::CollArgs g;
    g.coll = coll::Collective::Allgather;
    g.count = sizeof(Fingerprint);
    g.dtype = CHORUS_UINT8;
    g.rank = rank();
    g.size = size();
    g.chunk_bytes = config_.chunk_bytes;
    g.depth = config_.window;
    const coll::Algorithm& bruck = coll::find_algorithm(coll::Collective::Allgather, "bruck");
    Operation* op = launch(g, bruck, schedule_for(g, bruck), &mine, all.data());
    wait(op);
    chorus_result_t rc = release(op);
    if (rc != CHORUS_SUCCESS) fail(rc, "CHORUS_CHECK: exchanging arguments failed: ", last_error_);
    // Group the ranks by what they passed.
    std::vector<std::pair<Fingerprint, std::string>> groups;
    for (int r = 0; r < size(); ++r) {
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g2) { return g2.first == all[r]; });
        if (it == groups.end()) groups.emplace_back(all[r], cat(r));
        else it->second += cat(",", r);
    }
    if (groups.size() == 1) return;
    std::string msg = "CHORUS_CHECK: ranks disagree on the collective:";
    for (const auto& [f, ranks] : groups) msg += cat(" [ranks ", ranks, ": ", describe(f), "]");
    fail(CHORUS_ERR_MISMATCH, msg);
}

void Communicator::abort(const std::string& why) {
    for (auto& op : ops_)
        if (!op->finished) fail_op(*op, CHORUS_ERR_COMM_FAILED, cat("aborted: ", why));
    if (!failed_) {
        failed_ = true;
        failure_ = cat("aborted: ", why);
    }
}

void Communicator::fail_op(Operation& op, chorus_result_t code, const std::string& message) {
    op.finished = true;
    op.result = code;
    op.error = cat(coll::collective_name(op.args.coll), " #", op.seq, " (", op.algorithm, ", ", op.args.count, " x ",
                   datatype_name(op.args.dtype), ") on rank ", rank(), ": ", message);
    op.executor->abort();
    // The peers' state is unknown now: later operations would not match.
    failed_ = true;
    failure_ = op.error;
    log(LogLevel::Error, rank(), op.error);
}

bool Communicator::progress(Operation* target) {
    bool moved = false;
    for (auto& op : ops_) {
        if (op->finished) continue;
        try {
            if (op->executor->progress()) {
                op->finished = true;
                transport_->settle();
            }
        } catch (const Error& e) {
            fail_op(*op, e.code(), e.what());
        } catch (const std::bad_alloc&) {
            fail_op(*op, CHORUS_ERR_OUT_OF_MEMORY, "out of memory");
        }
        if (op->executor->completed() != op->last_completed) {
            op->last_completed = op->executor->completed();
            moved = true;
        }
    }
    if (moved) {
        // The clock is read only when idle (it costs as much as a small
        // message here): a moved operation's idle time restarts at the next
        // idle check, at most 1024 polls late.
        idle_polls_ = 0;
        for (auto& op : ops_) op->last_change = {};
    } else if ((++idle_polls_ & 1023) == 0) {
        check_timeouts();
    }
    return target->finished;
}

void Communicator::check_timeouts() {
    auto now = std::chrono::steady_clock::now();
    for (auto& op : ops_)
        if (op->last_change == std::chrono::steady_clock::time_point{}) op->last_change = now;
    // After a quarter second without progress, look for dead peers.
    if (now - last_peer_check_ > std::chrono::milliseconds(250)) {
        last_peer_check_ = now;
        bool stalled = false;
        for (auto& op : ops_)
            stalled = stalled || (!op->finished && now - op->last_change > std::chrono::milliseconds(250));
        if (stalled) transport_->check_peers();
    }
    if (config_.timeout_ms == 0) return;
    for (auto& op : ops_) {
        if (op->finished) continue;
        auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - op->last_change).count();
        if (static_cast<uint64_t>(idle) >= config_.timeout_ms)
            fail_op(*op, CHORUS_ERR_TIMEOUT,
                    cat("no progress for ", idle, " ms (CHORUS_TIMEOUT_MS=", config_.timeout_ms,
                        "); pending: ", op->executor->pending_summary()));
    }
}

void Communicator::wait(Operation* op) {
    int idle = 0;
    while (!progress(op)) {
        // Ranks that outnumber cores must give the CPU away soon, or the peer
        // they wait for cannot run; with a core each, spinning is fastest.
        if (++idle > spin_) {
            if (idle < spin_ + 4096) {
                sched_yield();
            } else {
                struct timespec ts{0, 20000};
                nanosleep(&ts, nullptr);
            }
        }
        if (idle_polls_ == 0) idle = 0;
    }
}

chorus_result_t Communicator::release(Operation* op) {
    chorus_result_t rc = op->result;
    if (rc != CHORUS_SUCCESS) last_error_ = op->error;
    release_buffers(*op);
    for (size_t i = 0; i < ops_.size(); ++i) {
        if (ops_[i].get() != op) continue;
        std::unique_ptr<Operation> done = std::move(ops_[i]);
        ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(i));
        if (spare_ops_.size() < 8) {
            // Kept with its executor; everything else back to the defaults.
            std::unique_ptr<Executor> executor = std::move(done->executor);
            *done = Operation{};
            done->executor = std::move(executor);
            spare_ops_.push_back(std::move(done));
        }
        break;
    }
    return rc;
}

chorus_result_t Communicator::run(const coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream) {
    Operation* op = start(args, sendbuf, recvbuf, stream);
    wait(op);
    return release(op);
}

}  // namespace chorus
