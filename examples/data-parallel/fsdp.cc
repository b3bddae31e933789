// FSDP / ZeRO-3 (fully sharded data parallel): each layer's parameters,
// padded to a multiple of the number of ranks, are cut into one shard per
// rank; a rank keeps only its shard (and its shard of the optimizer state).
//
//   - before a layer runs, forward or backward, chorus_allgather assembles
//     its full parameters from the shards (dropped again after use: only one
//     layer is ever whole);
//   - as soon as the backward pass has a layer's gradients, the layer's
//     nonblocking reduce-scatter (CHORUS_AVG) starts: each rank receives the
//     average of its shard's gradients, overlapped with the backward pass of
//     the layers before;
//   - each rank updates its own shard.
#include <algorithm>
#include <cstring>

#include "trainer.h"

namespace dp {
namespace {

class Fsdp final : public Trainer {
public:
    Fsdp(const Mlp& model, const std::vector<float>& teacher, const Options& opt, chorus_comm_t comm,
         const std::vector<float>& init)
        : Trainer(model, teacher, opt, comm) {
        size_t widest = 0;
        for (const Layer& layer : model.layers) {
            Shard s;
            s.count = (layer.size() + size_ - 1) / size_;
            const size_t padded = s.count * size_;
            // This rank's piece of the (broadcast) initial parameters.
            s.params.assign(s.count, 0.0f);
            const size_t begin = std::min(layer.size(), s.count * rank_);
            const size_t end = std::min(layer.size(), s.count * (rank_ + 1));
            std::copy(init.begin() + layer.offset + begin, init.begin() + layer.offset + end, s.params.begin());
            s.momentum.assign(s.count, 0.0f);
            s.grad.assign(s.count, 0.0f);
            s.full_grad.assign(padded, 0.0f);  // the padding stays zero
            shards_.push_back(std::move(s));
            widest = std::max(widest, padded);
        }
        gathered_.resize(widest);
        requests_.assign(model.layers.size(), nullptr);
    }

    const char* name() const override { return "FSDP"; }

    std::string describe() const override {
        size_t mine = 0;
        for (const Shard& s : shards_) mine += s.count;
        return "FSDP: each layer in " + std::to_string(size_) + " shards (" + std::to_string(mine) + " of " +
               std::to_string(model_.params) + " parameters here), all-gathered before use; gradients " +
               "reduce-scattered (AVG)";
    }

    std::vector<float> full_params() override {
        std::vector<float> all(model_.params);
        for (size_t l = 0; l < model_.layers.size(); l++) {
            const float* wb = layer_params(l);
            std::copy(wb, wb + model_.layers[l].size(), all.begin() + model_.layers[l].offset);
        }
        return all;
    }

protected:
    const float* layer_params(size_t l) override {
        Shard& s = shards_[l];
        const std::string label = "layer " + std::to_string(l) + " parameters";
        check(chorus_comm_set_label(comm_, label.c_str()), "chorus_comm_set_label", comm_);
        check(chorus_allgather(s.params.data(), gathered_.data(), s.count, CHORUS_FLOAT32, comm_, nullptr),
              "chorus_allgather (layer parameters)", comm_);
        return gathered_.data();
    }

    float* layer_grads(size_t l) override { return shards_[l].full_grad.data(); }

    void grads_ready(size_t l) override {
        Shard& s = shards_[l];
        const std::string label = "layer " + std::to_string(l) + " gradients";
        check(chorus_comm_set_label(comm_, label.c_str()), "chorus_comm_set_label", comm_);
        check(chorus_ireduce_scatter(s.full_grad.data(), s.grad.data(), s.count, CHORUS_FLOAT32, CHORUS_AVG, comm_,
                                     nullptr, &requests_[l]),
              "chorus_ireduce_scatter (layer gradients)", comm_);
        poll(requests_);
    }

    void finish_step() override {
        wait_all(requests_);
        for (Shard& s : shards_)
            sgd_momentum(s.params.data(), s.momentum.data(), s.grad.data(), s.count, opt_.lr, opt_.momentum);
    }

private:
    struct Shard {
        size_t count = 0;              // elements per rank
        std::vector<float> params;     // this rank's shard
        std::vector<float> momentum;   // its optimizer state
        std::vector<float> grad;       // its averaged gradients
        std::vector<float> full_grad;  // this rank's gradients of the whole layer (padded)
    };
    std::vector<Shard> shards_;
    std::vector<float> gathered_;  // the one layer that is whole at a time
    std::vector<chorus_request_t> requests_;
};

}  // namespace

std::unique_ptr<Trainer> make_fsdp(const Mlp& model, const std::vector<float>& teacher, const Options& opt,
                                   chorus_comm_t comm, const std::vector<float>& init) {
    return std::make_unique<Fsdp>(model, teacher, opt, comm, init);
}

}  // namespace dp
