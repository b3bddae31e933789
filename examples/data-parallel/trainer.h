// One training step of the MLP on this rank's batch, shared by the two ways
// of spreading training over ranks. A strategy says where a layer's
// parameters come from before it runs (DDP: its own full copy; FSDP: an
// all-gather of the shards), what happens to a layer's gradients as soon as
// the backward pass has produced them (DDP: a bucket's all-reduce starts;
// FSDP: the layer's reduce-scatter starts), and how the step ends (wait for
// the communication, then the optimizer on what this rank owns).
#pragma once

#include <mpi.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "chorus.h"
#include "mlp.h"

namespace dp {

struct Options {
    int steps = 50;
    int batch = 32;  // samples per rank per step
    float lr = 0.05f;
    float momentum = 0.9f;
    size_t bucket_bytes = 24 * 1024;  // DDP gradient buckets
    int hidden = 64;                  // width of the hidden layers
    std::string csv;                  // loss per step (rank 0)
};

struct StepStats {
    double loss = 0;      // mean over the ranks' batches, before the update
    double seconds = 0;   // the whole step
    double backward = 0;  // the backward pass, communication started inside it
    double wait = 0;      // waiting for communication after the backward pass
};

// A Chorus call that failed: the message names the call and says why.
[[noreturn]] inline void fail(const char* what, chorus_result_t rc, chorus_comm_t comm) {
    throw std::runtime_error(std::string(what) + ": " + chorus_get_error_string(rc) + ": " +
                             chorus_comm_last_error(comm));
}
inline void check(chorus_result_t rc, const char* what, chorus_comm_t comm) {
    if (rc != CHORUS_SUCCESS) fail(what, rc, comm);
}

class Trainer {
public:
    Trainer(const Mlp& model, const std::vector<float>& teacher, const Options& opt, chorus_comm_t comm);
    virtual ~Trainer() = default;
    virtual const char* name() const = 0;
    // How this strategy spreads the model and its communication, in a line.
    virtual std::string describe() const = 0;

    StepStats step(int step);

    // This rank's copy of every parameter, in the model's flat layout (FSDP
    // gathers it from the shards).
    virtual std::vector<float> full_params() = 0;

protected:
    // The parameters of layer l, valid until the next call.
    virtual const float* layer_params(size_t l) = 0;
    // Where the backward pass writes layer l's gradients.
    virtual float* layer_grads(size_t l) = 0;
    // Layer l's gradients are complete.
    virtual void grads_ready(size_t l) = 0;
    // After the backward pass: complete the communication, then update.
    virtual void finish_step() = 0;

    // Lets the library move the requests in flight while this rank computes
    // (Chorus progresses inside its calls); a completed request is released
    // and its handle set to NULL.
    void poll(std::vector<chorus_request_t>& requests);
    void wait_all(std::vector<chorus_request_t>& requests);

    const Mlp& model_;
    const std::vector<float>& teacher_;
    Options opt_;
    chorus_comm_t comm_;
    int rank_ = 0, size_ = 1;

private:
    std::vector<std::vector<float>> acts_;  // acts_[l]: the input of layer l; acts_.back(): the output
    std::vector<std::vector<float>> grad_;  // grad_[l]: dLoss/d acts_[l]
};

std::unique_ptr<Trainer> make_ddp(const Mlp& model, const std::vector<float>& teacher, const Options& opt,
                                  chorus_comm_t comm, const std::vector<float>& init);
std::unique_ptr<Trainer> make_fsdp(const Mlp& model, const std::vector<float>& teacher, const Options& opt,
                                   chorus_comm_t comm, const std::vector<float>& init);

}  // namespace dp
