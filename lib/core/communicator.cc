#include "core/communicator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "base/log.h"
#include "coll/planner/two_stage.h"
#include "core/agreement.h"
#include "core/machine_costs.h"
#include "core/trace.h"
#include "net/mpi_bootstrap.h"
#include "net/shm/shm_transport.h"
#include "net/ucx/ucx_retired.h"
#include "net/ucx/ucx_transport.h"
#include "reduce/datatype.h"

namespace chorus {

namespace {
// At most this many operations in flight: the sequence number in the wire tag
// is 16 bits, so two operations in flight must never share it.
constexpr size_t kMaxInflight = 1024;

// The cost model's parameters for this transport: messages it copies through
// shared memory pay no rendezvous.
coll::CostParams cost_params(coll::CostParams p, net::Transport& t, const std::shared_ptr<const coll::HostMap>& hosts) {
    p.eager_bytes = std::max(p.eager_bytes, t.host_only_max());
    p.all_local = t.slots() != nullptr;
    if (hosts->hosts() > 1) p.hosts = hosts;
    return p;
}

// The transport's host labels (none: every rank on this host).
std::shared_ptr<const coll::HostMap> host_map(const net::Transport& t) {
    std::vector<int> labels = t.host_labels();
    if (labels.empty()) labels.assign(static_cast<size_t>(t.size()), 0);
    return std::make_shared<const coll::HostMap>(coll::HostMap::from_labels(labels));
}

// What the transport's abilities let schedules do (the same on every rank:
// each is decided at the transport's creation; asked on every call, as a
// test's transport may gain one after the communicator is made).
coll::Abilities abilities(net::Transport& t, const coll::HostMap* hosts) {
    coll::Abilities a;
    if (const net::PublishSlots* slots = t.slots()) {
        a.slot_bytes = slots->slot_bytes();
        a.slot_line = slots->slot_line();
    }
    a.one_sided = t.peer_memory() != nullptr;
    // Keyed access (UCX RMA) where cross-memory attach is not offered: the
    // same steps, the data reached through registered memory.
    a.rma = !a.one_sided && t.keyed_memory() != nullptr;
    a.hosts = hosts;
    return a;
}
}  // namespace

namespace {
// At MPI_Finalize (MPI_COMM_SELF's attributes are deleted first thing, while
// MPI still works, and every rank is there), the endpoints of destroyed
// communicators that are still flushing are flushed to the end. Where MPI is
// not initialized (or finalized already: a communicator made out of band),
// the same at exit: MPI is never called then.
void drain_at_finalize() {
    static std::once_flag mpi_once, exit_once;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) {
        std::call_once(exit_once, [] { std::atexit([] { net::drain_retired(5000); }); });
        return;
    }
    std::call_once(mpi_once, [] {
        int keyval = MPI_KEYVAL_INVALID;
        MPI_Comm_create_keyval(
            MPI_COMM_NULL_COPY_FN,
            [](MPI_Comm, int, void*, void*) {
                net::drain_retired(5000);
                return MPI_SUCCESS;
            },
            &keyval, nullptr);
        MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
    });
}
}  // namespace

std::unique_ptr<Communicator> Communicator::create_mpi(MPI_Comm comm) {
    auto boot = std::make_unique<net::MpiBootstrap>(comm);
    std::unique_ptr<Communicator> c = create(*boot);
    c->boot_ = std::move(boot);
    return c;
}

std::unique_ptr<Communicator> Communicator::create(net::Bootstrap& boot) {
    drain_at_finalize();
    // The settings: read on every rank, then compared (all or nothing).
    static std::atomic<uint64_t> created{0};
    const uint64_t mine = created++;
    // The cost model's machine constants: each rank's from the settings,
    // its host's cost file and the OS; then every rank takes rank 0's.
    Config config;
    MachineCosts machine;
    std::vector<std::string> settings = net::allgather_agreed(boot, [&] {
        config = Config::from_env();
        machine = machine_costs(config, read_cost_file(cost_file_path(config.cost_file)), host_cache_bytes());
        return cat(mine, "\n", machine_line(machine.cost), "\n", config.protocol_settings());
    });
    const uint64_t id = std::strtoull(settings[0].c_str(), nullptr, 10);
    // Each blob: the creation number, the machine constants, the protocol
    // settings (one a line).
    const size_t second = settings[0].find('\n') + 1;
    const std::string agreed = settings[0].substr(second, settings[0].find('\n', second) - second);
    for (auto& blob : settings) blob.erase(0, blob.find('\n', blob.find('\n') + 1) + 1);
    std::string differ = settings_disagreement(settings);
    if (!differ.empty())
        fail(CHORUS_ERR_CONFIG, "settings that change the protocol must be the same on every rank: ", differ);
    set_log_level(config.log_level);
    const int rank = boot.rank();
    log(machine.level, rank, machine.note);
    apply_machine_line(config.cost, agreed);
    if (agreed != machine_line(machine.cost))
        log(LogLevel::Info, rank, "cost model: this rank's constants (", machine_line(machine.cost),
            ") differ from rank 0's, which every rank uses: ", agreed);
    if (rank == 0) log(LogLevel::Info, 0, "cost model constants: ", agreed);

    std::unique_ptr<net::Transport> transport = std::make_unique<net::UcxTransport>(
        boot, config.peer_errors,
        config.one_sided == OneSidedAccess::Off    ? net::UcxTransport::RmaUse::Off
        : config.one_sided == OneSidedAccess::Keys ? net::UcxTransport::RmaUse::Always
                                                   : net::UcxTransport::RmaUse::BetweenHosts);
    // ShmTransport::create returns the transport it was given, or a shared
    // memory transport in front of it: calls then run in place on its slots
    // with its slot calls inline.
    const net::Transport* ucx = transport.get();
    transport = net::ShmTransport::create(boot, std::move(transport), config.shm_eager_bytes, config.shm_rendezvous,
                                          config.one_sided == OneSidedAccess::Auto);
    const bool shm = transport.get() != ucx;
    std::unique_ptr<Communicator> c;
    net::allgather_agreed(boot, [&] {
        if (config.inject == "create")
            fail(CHORUS_ERR_TRANSPORT, "failure injected at creation (CHORUS_INJECT_FAILURE=create)");
        c = std::make_unique<Communicator>(std::move(transport), config);
        if (shm) c->run_in_place_ = run_in_order_on<net::ShmTransport>;
        return std::string();
    });
    c->id_ = id;
    // Timing (traces, stragglers) is on for all ranks if any rank asks, with
    // the clock offsets measured now.
    const bool timing = !boot.all(config.trace_dir.empty() && config.log_level < LogLevel::Info);
    c->observer_.created(id, timing, timing ? clock_offset_us(boot) : 0);
    return c;
}

Communicator::Communicator(std::unique_ptr<net::Transport> transport, const Config& config,
                           std::unique_ptr<Device> device, std::unique_ptr<net::Bootstrap> boot)
    : config_(config),
      boot_(std::move(boot)),
      transport_(std::move(transport)),
      rank_(transport_->rank()),
      size_(transport_->size()),
      hosts_(host_map(*transport_)),
      buffers_(device ? std::move(device) : make_cuda_device(), transport_->device_memory() && !config_.always_stage),
      plans_(config_, cost_params(config_.cost, *transport_, hosts_), transport_->rank() == 0),
      waiter_(config_, transport_->local_ranks()),
      watchdog_(config_),
      observer_(config_, *transport_, ops_),
      p2p_(*transport_, buffers_.device()),
      run_in_place_(run_in_order) {
    // Touch the scratch a pipelined operation needs once, up front.
    buffers_.warm(config_.chunk_bytes * static_cast<size_t>(config_.window));
    if (rank() == 0) {
        const coll::Abilities can = abilities(*transport_, hosts_.get());
        log(LogLevel::Debug, 0, "communicator of ", size(), " ranks (", transport_->local_ranks(),
            " on this host) over ", transport_->name(), "; ", config_.describe());
        log(LogLevel::Info, 0, hosts_->describe(), "; one-sided steps: ",
            can.one_sided ? "in place (cross-memory attach)"
            : can.rma     ? "through registration keys (UCX RMA)"
                          : "none");
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
    close_p2p();
    observer_.closing();
    ops_.clear();
    buffers_.device().drain();
    buffers_.device().forget_host();  // the slots go with the transport
    transport_.reset();               // local: waits for no peer
}

Operation* Communicator::take_operation() {
    if (spare_ops_.empty()) return new Operation;
    Operation* op = spare_ops_.back().release();
    spare_ops_.pop_back();
    return op;
}

void Communicator::fill(coll::CollArgs& args) const {
    args.rank = rank();
    args.size = size();
    args.chunk_bytes = config_.chunk_bytes;
    args.depth = config_.window;
    args.abilities() = abilities(*transport_, hosts_.get());
}

Operation* Communicator::start_filled(coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream,
                                      const Plan* plan) {
    if (failed_ && next_seq_ >= failed_from_) {
        // The operation a peer failed in fails here with the peer's error;
        // the ones after it say the communicator failed.
        if (next_seq_ == failed_from_ && failed_code_ != CHORUS_ERR_COMM_FAILED) {
            next_seq_ = net::next_operation_seq(next_seq_);
            fail(failed_code_, failure_);
        }
        fail(CHORUS_ERR_COMM_FAILED, "communicator failed earlier: ", failure_);
    }
    if (!plan) fill(args);
    if (config_.check) check_agreement(args);
    const uint64_t seq = next_seq_;
    try {
        if (ops_.size() >= kMaxInflight)
            fail(CHORUS_ERR_INVALID_ARGUMENT, "too many operations in flight (", kMaxInflight,
                 "); wait for some before starting more");
        return plan ? launch(args, *plan, sendbuf, recvbuf, stream)
                    : launch(args, plans_.plan(args), sendbuf, recvbuf, stream);
    } catch (const Error& e) {
        // The peers have started this operation or will: they must not wait
        // for this rank, which will never take part.
        if (next_seq_ == seq) next_seq_ = net::next_operation_seq(next_seq_);
        std::string why =
            cat(coll::collective_name(args.coll), " #", seq, " on rank ", rank(), " failed to start: ", e.what());
        tell_peers(e.code(), seq, why);
        mark_failed(seq, CHORUS_ERR_COMM_FAILED, why);
        throw Error(e.code(), why);
    }
}

Operation* Communicator::launch(const coll::CollArgs& args, const Plan& plan, const void* sendbuf, void* recvbuf,
                                void* stream, const Resume* resume) {
    std::unique_ptr<Operation> op(take_operation());
    op->seq = resume ? resume->seq : next_seq_;
    if (!resume) next_seq_ = net::next_operation_seq(next_seq_);
    op->args = args;
    op->algorithm = plan.algo->name;
    op->schedule = plan.schedule;
    op->algo = plan.algo;
    op->first_stage = plan.algo->two_stage && !resume;  // run_inline begins none
    if (resume)
        op->record = resume->record;
    else
        observer_.begin(*op);
    if (!config_.inject.empty() && config_.inject == cat("start:", op->seq))
        fail(CHORUS_ERR_OUT_OF_MEMORY, "failure injected at the start of operation #", op->seq,
             " (CHORUS_INJECT_FAILURE=", config_.inject, ")");
    DeviceUse use;
    Buffers bufs = buffers_.prepare(*op, sendbuf, recvbuf, stream, use);
    // Slot operations are numbered apart (every rank numbers them alike).
    if (resume)
        bufs.slot_op = resume->slot_op;
    else if (op->schedule->uses_slots()) {
        bufs.slot_op = next_slot_op_;
        next_slot_op_ += op->schedule->slot_rounds();
    }
    const size_t done = resume ? resume->done : 0;
    if (op->first_stage) {
        // The first stage runs on the sizes (host memory); the user's
        // buffers, prepared now, wait for the second (second_stage()).
        op->user = bufs;
        op->use = use;
        op->user_recv = recvbuf;
        op->sizes_out = coll::own_sizes(args);
        op->sizes_in.assign(coll::gathered_sizes(args), 0);
        bufs = Buffers{op->sizes_out.data(), op->sizes_in.data(), nullptr};
        use = DeviceUse{};
    }
    try {
        if (op->executor)
            op->executor->reset(*op->schedule, bufs, op->seq, use, done);
        else
            op->executor =
                std::make_unique<Executor>(*op->schedule, *transport_, bufs, op->seq, config_.window, use, done);
        if (op->mirrors[1] && !op->first_stage) op->executor->add_final_copy(recvbuf, op->mirrors[1], op->mirror_bytes);
        if (!config_.trace_dir.empty()) op->executor->time_steps();
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

void Communicator::second_stage(Operation& op) {
    op.first_stage = false;
    coll::CollArgs a = op.args;
    a.host_sizes.assign(op.sizes_in.begin(), op.sizes_in.end());
    op.schedule = plans_.schedule(a, *op.algo, true);
    Buffers b = op.user;
    b.scratch = buffers_.rescratch(op, op.schedule->scratch_bytes());
    op.executor->reset(*op.schedule, b, op.seq, op.use);
    if (op.mirrors[1]) op.executor->add_final_copy(op.user_recv, op.mirrors[1], op.mirror_bytes);
    if (!config_.trace_dir.empty()) op.executor->time_steps();
}

void Communicator::check_agreement(const coll::CollArgs& args) {
    Fingerprint mine = fingerprint(args, next_seq_);
    std::vector<uint64_t> sends, expects;
    if (pair_counts(args, &sends, &expects)) {
        std::vector<uint64_t> got(size());
        exchange(coll::Collective::Alltoall, "pairwise", 1, CHORUS_UINT64, sends.data(), got.data());
        note_pairs(mine, got, expects);
    }
    std::vector<Fingerprint> all(size());
    exchange(coll::Collective::Allgather, "bruck", sizeof(Fingerprint), CHORUS_UINT8, &mine, all.data());
    std::string msg = disagreement(all);
    if (!msg.empty()) fail(CHORUS_ERR_MISMATCH, msg);
}

void Communicator::exchange(coll::Collective coll, const char* algo, size_t count, chorus_datatype_t dtype,
                            const void* send, void* recv, const char* what) {
    // The check itself has the same shape on every rank, whatever they passed.
    coll::CollArgs g;
    g.coll = coll;
    g.count = count;
    g.dtype = dtype;
    fill(g);
    const coll::Algorithm& a = coll::find_algorithm(coll, algo);
    Operation* op = launch(g, Plan{&a, plans_.schedule(g, a)}, send, recv);
    wait(op);
    chorus_result_t rc = release(op);
    if (rc != CHORUS_SUCCESS) fail(rc, what, " failed: ", last_error_);
}

std::string Communicator::name() const {
    return cat("comm ", id_, " (", size(), " ranks)");
}

bool Communicator::progress(Operation* target) {
    pass();
    return target->finished;
}

void Communicator::pass() {
    bool moved = p2p_.busy() && progress_p2p(false);
    for (auto& op : ops_) {
        if (op->finished) continue;
        try {
            if (!op->steps_done) op->steps_done = op->executor->progress();
            if (op->steps_done && op->first_stage) {
                second_stage(*op);
                op->steps_done = op->executor->progress();
            }
            if (op->steps_done && transport_->settled()) {
                op->finished = true;
                observer_.end(*op);
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
    if (waiter_.after_pass(moved)) {
        bool warned = watchdog_.check(ops_, *transport_, name(), [this](Operation& op, const std::string& why) {
            fail_op(op, CHORUS_ERR_TIMEOUT, why);
            observer_.dump("timeout");
        });
        if (p2p_.busy()) progress_p2p(true);
        poll_notices();
        observer_.idle(warned);
    }
}

void Communicator::wait(Operation* op) {
    wait_until([op] { return op->finished; });
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
            done->recycle();
            spare_ops_.push_back(std::move(done));
        }
        break;
    }
    return rc;
}

}  // namespace chorus
