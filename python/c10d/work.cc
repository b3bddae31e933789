// Works: completion by polling, futures, timeouts.
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

#include <sched.h>

#include <thread>

#include "backend.h"

namespace chorus_c10d {

namespace {

using Clock = std::chrono::steady_clock;

// Between polls that found nothing. A rank moves its part of a collective
// only while it polls, so a waiter keeps polling: spinning first (a small
// collective between two ranks completes within microseconds), then
// yielding the CPU at each poll (peers on the same cores run); only a wait
// that has lasted 20 ms sleeps, 50 us at a time.
class Backoff {
public:
    void pause() {
        if (++polls_ < 2000) return;
        if (polls_ == 2000) since_ = Clock::now();
        if (Clock::now() - since_ < std::chrono::milliseconds(20)) {
            sched_yield();
            return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }

private:
    long polls_ = 0;
    Clock::time_point since_;
};

std::exception_ptr backend_error(const std::string& message) {
    try {
        C10_THROW_ERROR(DistBackendError, message);
    } catch (...) {
        return std::current_exception();
    }
}

}  // namespace

std::string Comm::last_error(chorus_result_t rc) const {
    std::string detail = chorus_comm_last_error(handle);
    std::string msg = "chorus (group ";
    msg += group.empty() ? "default" : group;
    msg += ", rank " + std::to_string(rank) + " of " + std::to_string(size) + "): ";
    msg += chorus_get_error_string(rc);
    if (!detail.empty()) msg += ": " + detail;
    return msg;
}

Work::Work(std::shared_ptr<Comm> comm, c10d::OpType type, const char* what, std::vector<at::Tensor> outputs)
    : c10d::Work(comm->rank, type, what),
      comm_(std::move(comm)),
      what_(what),
      outputs_(std::move(outputs)) {
    for (const auto& t : outputs_)
        if (t.is_cuda()) devices_.push_back(t.device());
}

Work::~Work() {
    // A Work dropped unwaited still owns requests in flight: they complete
    // with the communicator's later calls, or at its shutdown, and the
    // tensors they use stay alive until then.
    std::lock_guard<std::mutex> lock(comm_->mu);
    if (requests_.empty() || !comm_->handle) return;
    Comm::Orphan orphan{std::move(requests_), std::move(keep_)};
    for (auto& t : outputs_) orphan.tensors.push_back(t);
    comm_->orphans.push_back(std::move(orphan));
}

void Comm::reap_locked(bool wait) {
    for (size_t i = 0; i < orphans.size();) {
        auto& reqs = orphans[i].requests;
        for (size_t j = 0; j < reqs.size();) {
            int done = 0;
            if (!handle) {
                done = 1;
            } else if (wait) {
                chorus_wait(reqs[j]);
                done = 1;
            } else {
                chorus_test(reqs[j], &done);
            }
            if (done)
                reqs.erase(reqs.begin() + static_cast<std::ptrdiff_t>(j));
            else
                ++j;
        }
        if (reqs.empty())
            orphans.erase(orphans.begin() + static_cast<std::ptrdiff_t>(i));
        else
            ++i;
    }
}

void Work::fail_start(chorus_result_t rc) {
    std::string msg = comm_->last_error(rc);
    for (chorus_request_t r : requests_) chorus_wait(r);
    requests_.clear();
    done_ = true;
    C10_THROW_ERROR(DistBackendError, msg);
}

bool Work::test_locked() {
    if (done_) return true;
    for (size_t i = 0; i < requests_.size();) {
        int done = 0;
        chorus_result_t rc = comm_->handle ? chorus_test(requests_[i], &done) : CHORUS_ERR_COMM_FAILED;
        if (rc != CHORUS_SUCCESS && !error_) error_ = backend_error(comm_->last_error(rc));
        // A request the C API does not know any more is gone all the same.
        if (done || rc != CHORUS_SUCCESS || !comm_->handle) {
            requests_.erase(requests_.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
            ++i;
        }
        if (rc == CHORUS_SUCCESS && !done) break;  // in order: later ones cannot be done first often
    }
    if (!requests_.empty()) return false;
    done_ = true;
    if (!error_ && finish_) {
        try {
            finish_();
        } catch (...) {
            error_ = std::current_exception();
        }
    }
    finish_ = nullptr;
    keep_.clear();
    return true;
}

bool Work::poll() {
    bool done;
    {
        std::lock_guard<std::mutex> lock(comm_->mu);
        done = test_locked();
    }
    if (done) publish();
    return done;
}

void Work::publish() {
    c10::intrusive_ptr<c10::ivalue::Future> future;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (completed_) return;
        {
            std::lock_guard<std::mutex> comm_lock(comm_->mu);
            exception_ = error_;
        }
        completed_ = true;
        future = future_;
    }
    cv_.notify_all();
    if (future) complete_future(future);
}

void Work::complete_future(const c10::intrusive_ptr<c10::ivalue::Future>& f) {
    if (exception_)
        f->setError(exception_);
    else
        f->markCompleted(c10::IValue(outputs_));
}

bool Work::isCompleted() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (completed_) return true;
    }
    return poll();
}

bool Work::isSuccess() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_ && !exception_;
}

std::exception_ptr Work::exception() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return exception_;
}

std::vector<at::Tensor> Work::result() { return outputs_; }

std::chrono::milliseconds Work::getTimeout() const { return std::chrono::milliseconds(comm_->timeout_ms.load()); }

bool Work::wait(std::chrono::milliseconds timeout) {
    const auto limit = timeout == kNoTimeout ? std::chrono::milliseconds(comm_->timeout_ms.load()) : timeout;
    const auto deadline = Clock::now() + limit;
    Backoff backoff;
    while (!poll()) {
        if (limit.count() > 0 && Clock::now() > deadline) {
            // A collective that timed out leaves its peers mid-way: the
            // communicator is aborted, so that they fail too instead of
            // waiting for this rank.
            std::string msg;
            {
                std::lock_guard<std::mutex> lock(comm_->mu);
                msg = "chorus (group " + (comm_->group.empty() ? std::string("default") : comm_->group) +
                      ", rank " + std::to_string(comm_->rank) + "): " + what_ + " timed out after " +
                      std::to_string(limit.count()) + " ms; the group is aborted";
                if (comm_->handle && !comm_->aborted) {
                    chorus_comm_abort(comm_->handle);
                    comm_->aborted = true;
                }
                if (!error_) error_ = backend_error(msg);
            }
            // The abort completes every request in flight with an error.
            while (!poll()) sched_yield();
            break;
        }
        backoff.pause();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (exception_) std::rethrow_exception(exception_);
    return true;
}

void Work::abort() {
    std::lock_guard<std::mutex> lock(comm_->mu);
    if (comm_->handle && !comm_->aborted) {
        chorus_comm_abort(comm_->handle);
        comm_->aborted = true;
    }
}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
    // Completed here, on the calling thread (backend.h: callbacks in
    // program order); a failure is the future's error.
    try {
        wait();
    } catch (...) {
    }
    c10::intrusive_ptr<c10::ivalue::Future> f;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!future_) {
            future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                               devices_);
            f = future_;
        } else {
            return future_;
        }
    }
    complete_future(f);
    return f;
}

}  // namespace chorus_c10d
