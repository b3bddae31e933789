// Device over lib/cuda's runtime wrappers: one non-blocking stream, and a
// pool of events recorded as marks.
#include <deque>
#include <vector>

#include "base/error.h"
#include "exec/device.h"

namespace chorus {
namespace {

class CudaDevice final : public Device {
public:
    ~CudaDevice() override {
        drain();
        forget_host();
        for (auto& p : pending_) gpu::destroy_event(p.event);
        for (void* e : spare_) gpu::destroy_event(e);
        if (wait_event_) gpu::destroy_event(wait_event_);
        if (stream_) gpu::destroy_stream(stream_);
    }

    MemKind kind(const void* p) override { return gpu::memory_kind(p); }

    void copy(void* dst, const void* src, size_t bytes) override { gpu::copy_async(dst, src, bytes, stream()); }
    void reduce(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count) override {
        gpu::reduce_async(dt, op, dst, a, b, count, stream());
    }
    void divide(chorus_datatype_t dt, void* dst, size_t count, int divisor) override {
        gpu::divide_async(dt, dst, count, divisor, stream());
    }
    void wait_for(void* user_stream) override {
        void* s = stream();
        if (!wait_event_) wait_event_ = gpu::create_event();
        gpu::record_event(wait_event_, user_stream);
        gpu::stream_wait_event(s, wait_event_);
    }

    uint64_t mark() override {
        void* s = stream();
        void* e;
        if (spare_.empty()) {
            e = gpu::create_event();
        } else {
            e = spare_.back();
            spare_.pop_back();
        }
        try {
            gpu::record_event(e, s);
        } catch (...) {
            spare_.push_back(e);
            throw;
        }
        pending_.push_back({++last_mark_, e});
        return last_mark_;
    }

    bool done(uint64_t m) override {
        while (finished_ < m && !pending_.empty() && gpu::event_done(pending_.front().event)) {
            finished_ = pending_.front().id;
            spare_.push_back(pending_.front().event);
            pending_.pop_front();
        }
        return finished_ >= m;
    }

    void drain() noexcept override {
        if (!stream_) return;
        try {
            gpu::synchronize_stream(stream_);
        } catch (...) {
            // A fault in queued work: it has stopped either way, and the
            // operation that queued it has reported or will report it.
        }
        for (auto& p : pending_) spare_.push_back(p.event);
        if (!pending_.empty()) finished_ = pending_.back().id;
        pending_.clear();
    }

    void* alloc_device(size_t bytes) override { return gpu::alloc_device(bytes); }
    void free_device(void* p) noexcept override { gpu::free_device(p); }
    void register_host(void* p, size_t bytes) override {
        for (void* q : registered_)
            if (q == p) return;
        stream();  // fails cleanly without a usable GPU
        gpu::register_host(p, bytes);
        registered_.push_back(p);
    }
    void forget_host() noexcept override {
        for (void* p : registered_) gpu::unregister_host(p);
        registered_.clear();
    }
    void* alloc_pinned(size_t bytes) override { return gpu::alloc_pinned(bytes); }
    void free_pinned(void* p) noexcept override { gpu::free_pinned(p); }

private:
    void* stream() {
        if (!stream_) {
            std::string why;
            if (!gpu::available(&why))
                fail(CHORUS_ERR_CUDA, "CUDA work (device or managed buffers, or a stream to wait for) ",
                     "without a usable GPU: ", why);
            stream_ = gpu::create_stream();
        }
        return stream_;
    }

    struct Pending {
        uint64_t id;
        void* event;
    };
    void* stream_ = nullptr;
    void* wait_event_ = nullptr;
    std::deque<Pending> pending_;
    std::vector<void*> spare_;
    std::vector<void*> registered_;
    uint64_t last_mark_ = 0, finished_ = 0;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device() {
    return std::make_unique<CudaDevice>();
}

}  // namespace chorus
