#include "core/communicator.h"

#include <algorithm>

#include "base/log.h"
#include "core/agreement.h"
#include "net/mpi_bootstrap.h"
#include "net/shm/shm_transport.h"
#include "net/ucx/ucx_transport.h"
#include "reduce/datatype.h"

namespace chorus {

namespace {
// At most this many operations in flight: the sequence number in the wire tag
// is 16 bits, so two operations in flight must never share it.
constexpr size_t kMaxInflight = 1024;

// The cost model's parameters for this transport: messages it copies through
// shared memory pay no rendezvous.
coll::CostParams cost_params(coll::CostParams p, const net::Transport& t) {
    p.eager_bytes = std::max(p.eager_bytes, t.host_only_max());
    return p;
}
}  // namespace

std::unique_ptr<Communicator> Communicator::create_mpi(MPI_Comm comm, const Config& config) {
    auto boot = std::make_unique<net::MpiBootstrap>(comm);
    std::unique_ptr<net::Transport> transport = std::make_unique<net::UcxTransport>(*boot, config.peer_errors);
    transport = net::ShmTransport::create(*boot, std::move(transport), config.shm_eager_bytes);
    return std::make_unique<Communicator>(std::move(transport), config, nullptr, std::move(boot));
}

Communicator::Communicator(std::unique_ptr<net::Transport> transport, const Config& config,
                           std::unique_ptr<Device> device, std::unique_ptr<net::Bootstrap> boot)
    : config_(config),
      boot_(std::move(boot)),
      transport_(std::move(transport)),
      buffers_(device ? std::move(device) : make_cuda_device(), transport_->device_memory() && !config_.always_stage),
      plans_(config_, cost_params(config_.cost, *transport_), transport_->rank() == 0),
      waiter_(config_, transport_->local_ranks()),
      watchdog_(config_.timeout_ms) {
    // Touch the scratch a pipelined operation needs once, up front.
    buffers_.warm(config_.chunk_bytes * static_cast<size_t>(config_.window));
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
        buffers_.release(*op);
    }
    ops_.clear();
    buffers_.device().drain();
    transport_.reset();  // collective for UCX
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
    return launch(args, plans_.plan(args), sendbuf, recvbuf, stream);
}

Operation* Communicator::launch(const coll::CollArgs& args, const Plan& plan, const void* sendbuf, void* recvbuf,
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
    op->algorithm = plan.algo->name;
    op->schedule = plan.schedule;
    DeviceUse use;
    Buffers bufs = buffers_.prepare(*op, sendbuf, recvbuf, stream, use);
    try {
        if (op->executor)
            op->executor->reset(*op->schedule, bufs, op->seq, use);
        else
            op->executor = std::make_unique<Executor>(*op->schedule, *transport_, bufs, op->seq, config_.window, use);
        if (op->mirrors[1]) op->executor->add_final_copy(recvbuf, op->mirrors[1], op->mirror_bytes);
    } catch (...) {
        if (op->executor)
            op->executor->abort();
        else if (op->on_device)
            buffers_.device().drain();
        buffers_.release(*op);
        throw;
    }
    op->last_change = {};  // idle time is counted from the first idle check
    Operation* raw = op.get();
    ops_.push_back(std::move(op));
    progress(raw);
    return raw;
}

void Communicator::check_agreement(const coll::CollArgs& args) {
    Fingerprint mine = fingerprint(args, next_seq_);
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
    Operation* op = launch(g, Plan{&bruck, plans_.schedule(g, bruck)}, &mine, all.data());
    wait(op);
    chorus_result_t rc = release(op);
    if (rc != CHORUS_SUCCESS) fail(rc, "CHORUS_CHECK: exchanging arguments failed: ", last_error_);
    std::string msg = disagreement(all);
    if (!msg.empty()) fail(CHORUS_ERR_MISMATCH, msg);
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
    // The clock is read only when idle (it costs as much as a small message
    // here): a moved operation's idle time restarts at the next idle check,
    // at most 1024 polls late.
    if (moved) Watchdog::moved(ops_);
    if (waiter_.after_pass(moved))
        watchdog_.check(ops_, *transport_,
                        [this](Operation& op, const std::string& why) { fail_op(op, CHORUS_ERR_TIMEOUT, why); });
    return target->finished;
}

void Communicator::wait(Operation* op) {
    unsigned idle = 0;
    while (!progress(op)) {
        waiter_.pause(++idle);
        if (waiter_.just_moved()) idle = 0;
    }
}

chorus_result_t Communicator::release(Operation* op) {
    chorus_result_t rc = op->result;
    if (rc != CHORUS_SUCCESS) last_error_ = op->error;
    buffers_.release(*op);
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
