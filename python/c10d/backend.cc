// The backend's creation through torch's Store, its life, and its calls.
#include <c10/util/Exception.h>

#ifdef CHORUS_C10D_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include "backend.h"

namespace chorus_c10d {

namespace {

// The out-of-band exchange over torch's Store: round k's blob of rank r is
// the key "chorus/<group>/<k>/<r>"; get() waits for a key up to the store's
// timeout, which bounds a creation whose peer never comes.
struct StoreExchange {
    c10::intrusive_ptr<c10d::Store> store;
    std::string prefix;
    int rank = 0, size = 0;
    int round = 0;
    std::string error;
};

int store_allgather(const void* sendbuf, void* recvbuf, size_t bytes, void* arg) {
    auto* x = static_cast<StoreExchange*>(arg);
    try {
        const std::string base = x->prefix + std::to_string(x->round++) + "/";
        const auto* in = static_cast<const uint8_t*>(sendbuf);
        x->store->set(base + std::to_string(x->rank), std::vector<uint8_t>(in, in + bytes));
        auto* out = static_cast<uint8_t*>(recvbuf);
        for (int r = 0; r < x->size; ++r) {
            std::vector<uint8_t> blob = x->store->get(base + std::to_string(r));
            if (blob.size() != bytes) {
                x->error = "rank " + std::to_string(r) + " sent " + std::to_string(blob.size()) +
                           " bytes in exchange round " + std::to_string(x->round - 1) + ", expected " +
                           std::to_string(bytes);
                return 1;
            }
            std::copy(blob.begin(), blob.end(), out + static_cast<size_t>(r) * bytes);
        }
        return 0;
    } catch (const std::exception& e) {
        x->error = e.what();
        return 1;
    }
}

}  // namespace

Backend::Backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, c10::intrusive_ptr<Options> options)
    : c10d::Backend(rank, size),
      comm_(std::make_shared<Comm>()),
      options_(std::move(options)) {
    comm_->group = options_->group_name;
    comm_->rank = rank;
    comm_->size = size;
    comm_->timeout_ms = options_->timeout.count();
    for (uint64_t g : options_->global_ranks_in_group) comm_->global_ranks.push_back(static_cast<int64_t>(g));

    StoreExchange x;
    x.store = store;
    x.prefix = "chorus/" + (comm_->group.empty() ? std::string("default") : comm_->group) + "/";
    x.rank = rank;
    x.size = size;
    chorus_oob_t oob{};
    oob.rank = rank;
    oob.size = size;
    oob.allgather = store_allgather;
    oob.arg = &x;
    chorus_comm_t handle = nullptr;
    const chorus_result_t rc = chorus_comm_create_oob(&oob, &handle);
    if (rc != CHORUS_SUCCESS) {
        std::string msg = "chorus: creating the communicator of group " +
                          (comm_->group.empty() ? std::string("default") : comm_->group) + " (rank " +
                          std::to_string(rank) + " of " + std::to_string(size) +
                          ") failed: " + chorus_get_error_string(rc);
        const std::string detail = chorus_comm_last_error(nullptr);
        if (!detail.empty()) msg += ": " + detail;
        if (!x.error.empty()) msg += " (store: " + x.error + ")";
        C10_THROW_ERROR(DistBackendError, msg);
    }
    comm_->handle = handle;
}

Backend::~Backend() { shutdown(); }

void Backend::shutdown() {
    std::lock_guard<std::mutex> lock(comm_->mu);
    if (!comm_->handle) return;
    comm_->reap_locked(!comm_->aborted);
    chorus_comm_destroy(comm_->handle);
    comm_->handle = nullptr;
}

void Backend::abort() {
    std::lock_guard<std::mutex> lock(comm_->mu);
    if (comm_->handle && !comm_->aborted) {
        chorus_comm_abort(comm_->handle);
        comm_->aborted = true;
    }
}

void Backend::setTimeout(std::chrono::milliseconds timeout) {
    options_->timeout = timeout;
    comm_->timeout_ms = timeout.count();
}

c10::intrusive_ptr<c10d::Backend> Backend::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                 const std::vector<int>& ranks,
                                                 const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
    // `ranks` are this group's ranks that form the new group, in order.
    auto it = std::find(ranks.begin(), ranks.end(), getRank());
    if (it == ranks.end()) return nullptr;
    auto options = c10::make_intrusive<Options>(opts ? opts->timeout : options_->timeout);
    if (opts) {
        options->group_name = opts->group_name;
        options->group_desc = opts->group_desc;
        options->global_ranks_in_group = opts->global_ranks_in_group;
    }
    if (options->global_ranks_in_group.empty())
        for (int r : ranks)
            options->global_ranks_in_group.push_back(
                comm_->global_ranks.empty() ? static_cast<uint64_t>(r)
                                            : static_cast<uint64_t>(comm_->global_ranks[static_cast<size_t>(r)]));
    return c10::make_intrusive<Backend>(store, static_cast<int>(it - ranks.begin()), static_cast<int>(ranks.size()),
                                        options);
}

void* Backend::stream_of(const at::Tensor& t) const {
#ifdef CHORUS_C10D_CUDA
    if (t.is_cuda()) return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
#else
    TORCH_CHECK(!t.is_cuda(), "chorus: this build of chorus.torch has no CUDA support (tensor on ", t.device(), ")");
#endif
    return nullptr;
}

c10::intrusive_ptr<Work> Backend::launch(c10d::OpType type, const char* what, std::vector<at::Tensor> outputs,
                                         const std::function<void(Work&)>& start) {
    auto work = c10::make_intrusive<Work>(comm_, type, what, std::move(outputs));
    std::lock_guard<std::mutex> lock(comm_->mu);
    if (!comm_->handle) C10_THROW_ERROR(DistBackendError, "chorus: the process group has been shut down");
    if (!comm_->orphans.empty()) comm_->reap_locked(false);
    start(*work);
    if (!c10d::isP2POp(type)) ++seq_;
    return work;
}

}  // namespace chorus_c10d
