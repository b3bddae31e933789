// A Device for tests on machines without a GPU. "Device memory" is host
// memory that an EmulatedMemory registry marks as device (or managed, or
// pinned); queued work runs late (a few items each time the executor asks
// whether a mark is done), so an executor that uses device results before
// their mark is done reads stale data, and one that hands device memory to a
// transport without device support is caught by the loopback transport
// (LoopbackHub::emulate_device). Kernels (reduce, divide) on pageable host
// memory are errors, as they would fault on a GPU, and so is device work
// (copies included) that runs past the end of a buffer allocated here.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/error.h"
#include "exec/device.h"
#include "reduce/host_reducer.h"

namespace test {

using chorus::MemKind;

// Which pointers are which kind; shared by the ranks of one test.
class EmulatedMemory {
public:
    ~EmulatedMemory() {
        for (auto& kv : ranges_)
            if (std::find(foreign_.begin(), foreign_.end(), kv.first) == foreign_.end())
                std::free(reinterpret_cast<void*>(kv.first));
    }
    void* alloc(size_t bytes, MemKind kind) {
        void* p = std::malloc(bytes ? bytes : 1);
        if (!p) throw std::bad_alloc();
        std::lock_guard<std::mutex> lock(mutex_);
        ranges_[reinterpret_cast<uintptr_t>(p)] = {bytes ? bytes : 1, kind};
        return p;
    }
    void free(void* p) {
        if (!p) return;
        std::lock_guard<std::mutex> lock(mutex_);
        ranges_.erase(reinterpret_cast<uintptr_t>(p));
        std::free(p);
    }
    MemKind kind(const void* p) const {
        std::lock_guard<std::mutex> lock(mutex_);
        auto a = reinterpret_cast<uintptr_t>(p);
        auto it = ranges_.upper_bound(a);
        if (it == ranges_.begin()) return MemKind::Host;
        --it;
        return a < it->first + it->second.first ? it->second.second : MemKind::Host;
    }
    bool is_device(const void* p) const { return !chorus::host_side(kind(p)); }
    // Mark memory it does not own as pinned host memory (a registered
    // shared segment), or no longer.
    void register_range(void* p, size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        ranges_[reinterpret_cast<uintptr_t>(p)] = {bytes, MemKind::PinnedHost};
        foreign_.push_back(reinterpret_cast<uintptr_t>(p));
    }
    void unregister_range(void* p) {
        std::lock_guard<std::mutex> lock(mutex_);
        ranges_.erase(reinterpret_cast<uintptr_t>(p));
        foreign_.erase(std::remove(foreign_.begin(), foreign_.end(), reinterpret_cast<uintptr_t>(p)), foreign_.end());
    }
    // Fails when [p, p + bytes) starts inside memory allocated here but runs
    // past its end (as a GPU copy would fault); other memory is not checked.
    // `what`: "a copy reads", "a reduce writes", ...
    void check_range(const void* p, size_t bytes, const char* what) const {
        std::lock_guard<std::mutex> lock(mutex_);
        auto a = reinterpret_cast<uintptr_t>(p);
        auto it = ranges_.upper_bound(a);
        if (it == ranges_.begin() || bytes == 0) return;
        --it;
        const uintptr_t end = it->first + it->second.first;
        if (a < end && a + bytes > end)
            chorus::fail(CHORUS_ERR_INTERNAL, "emulated device: ", what, " ", bytes, " bytes at offset ", a - it->first,
                         " of a ", it->second.first, "-byte buffer, past its end");
    }
    // A copy of `bytes` from `src` into new memory of `kind`.
    void* clone(const void* src, size_t bytes, MemKind kind) {
        void* p = alloc(bytes, kind);
        if (bytes) std::memcpy(p, src, bytes);
        return p;
    }

private:
    mutable std::mutex mutex_;
    std::map<uintptr_t, std::pair<size_t, MemKind>> ranges_;
    std::vector<uintptr_t> foreign_;  // registered, not allocated here
};

// A caller's stream: work queued on it runs when a device waits for it.
struct EmulatedStream {
    std::deque<std::function<void()>> work;
    void run_all() {
        while (!work.empty()) {
            auto f = std::move(work.front());
            work.pop_front();
            f();
        }
    }
};

class EmulatedDevice final : public chorus::Device {
public:
    EmulatedDevice(std::shared_ptr<EmulatedMemory> mem, int items_per_poll = 1)
        : mem_(std::move(mem)), per_poll_(items_per_poll) {}
    ~EmulatedDevice() override {
        drain();
        forget_host();
        for (void* p : owned_) mem_->free(p);
    }

    MemKind kind(const void* p) override { return mem_->kind(p); }

    void copy(void* dst, const void* src, size_t bytes) override {
        mem_->check_range(dst, bytes, "a copy writes");
        mem_->check_range(src, bytes, "a copy reads");
        queue([=] { std::memcpy(dst, src, bytes); });
    }
    void reduce(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count) override {
        const size_t bytes = count * chorus::datatype_size(dt);
        for (const void* p : {static_cast<const void*>(dst), a, b}) {
            on_device(p, "reduce");
            mem_->check_range(p, bytes, "a reduce touches");
        }
        queue([=] { chorus::host_reduce(dt, op, dst, a, b, count); });
    }
    void divide(chorus_datatype_t dt, void* dst, size_t count, int divisor) override {
        on_device(dst, "divide");
        mem_->check_range(dst, count * chorus::datatype_size(dt), "a divide writes");
        queue([=] { chorus::host_divide(dt, dst, count, divisor); });
    }
    void wait_for(void* stream) override {
        if (stream) queue([stream] { static_cast<EmulatedStream*>(stream)->run_all(); });
    }
    uint64_t mark() override {
        ++marks;
        return queued_;
    }
    bool done(uint64_t m) override {
        for (int i = 0; i < per_poll_ && ran_ < queued_; ++i) run_one();
        return ran_ >= m;
    }
    void drain() noexcept override {
        while (ran_ < queued_) run_one();
    }
    void* alloc_device(size_t bytes) override { return keep(mem_->alloc(bytes, MemKind::Device)); }
    void free_device(void* p) noexcept override { release(p); }
    void register_host(void* p, size_t bytes) override {
        if (std::find(registered_.begin(), registered_.end(), p) != registered_.end()) return;
        mem_->register_range(p, bytes);
        registered_.push_back(p);
    }
    void forget_host() noexcept override {
        for (void* p : registered_) mem_->unregister_range(p);
        registered_.clear();
    }
    void* alloc_pinned(size_t bytes) override { return keep(mem_->alloc(bytes, MemKind::PinnedHost)); }
    void free_pinned(void* p) noexcept override { release(p); }

    uint64_t marks = 0;  // how many marks were made (tests: device work happened)
    size_t allocations() const { return owned_.size(); }

private:
    void queue(std::function<void()> f) {
        work_.push_back(std::move(f));
        ++queued_;
    }
    void run_one() {
        auto f = std::move(work_.front());
        work_.pop_front();
        ++ran_;
        f();
    }
    void on_device(const void* p, const char* what) {
        if (mem_->kind(p) == MemKind::Host)
            chorus::fail(CHORUS_ERR_INTERNAL, "emulated device: ", what, " kernel given pageable host memory");
    }
    void* keep(void* p) {
        owned_.push_back(p);
        return p;
    }
    void release(void* p) {
        for (auto& q : owned_)
            if (q == p) {
                q = owned_.back();
                owned_.pop_back();
                mem_->free(p);
                return;
            }
    }

    std::shared_ptr<EmulatedMemory> mem_;
    int per_poll_;
    std::deque<std::function<void()>> work_;
    uint64_t queued_ = 0, ran_ = 0;
    std::vector<void*> owned_;
    std::vector<void*> registered_;
};

}  // namespace test
