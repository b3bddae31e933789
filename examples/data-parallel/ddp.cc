// DDP (distributed data parallel): every rank holds all parameters and
// computes gradients on its own batch; the gradients are averaged over the
// ranks so every rank takes the same optimizer step.
//
// The gradients are grouped into buckets of whole layers (at most
// bucket_bytes each, unless one layer is larger), in the order the backward
// pass finishes them. As soon as the last layer of a bucket has its
// gradients, that bucket's nonblocking all-reduce (CHORUS_AVG, in place)
// starts, and runs while the backward pass goes on with the layers before
// it; the step waits for all of them before the optimizer.
#include <algorithm>

#include "trainer.h"

namespace dp {
namespace {

class Ddp final : public Trainer {
public:
    Ddp(const Mlp& model, const std::vector<float>& teacher, const Options& opt, chorus_comm_t comm,
        const std::vector<float>& init)
        : Trainer(model, teacher, opt, comm), params_(init), grads_(model.params), momentum_(model.params) {
        // Layers in backward order sit in memory in that order (mlp.h), so
        // a bucket is one contiguous range of the gradient vector.
        bucket_of_.resize(model.layers.size());
        for (size_t l = model.layers.size(); l-- > 0;) {
            const Layer& layer = model.layers[l];
            const size_t bytes = layer.size() * sizeof(float);
            if (buckets_.empty() || (buckets_.back().bytes + bytes > opt.bucket_bytes && buckets_.back().layers > 0))
                buckets_.push_back({layer.offset, layer.offset, 0, 0, 0});
            Bucket& b = buckets_.back();
            b.end = layer.offset + layer.size();
            b.bytes += bytes;
            b.layers++;
            bucket_of_[l] = buckets_.size() - 1;
        }
        requests_.assign(buckets_.size(), nullptr);
    }

    const char* name() const override { return "DDP"; }
    std::vector<float> full_params() override { return params_; }

    std::string describe() const override {
        std::string d = "DDP: " + std::to_string(buckets_.size()) +
                        " gradient buckets, all-reduced (AVG) as the backward pass completes each:";
        for (size_t bi = 0; bi < buckets_.size(); bi++) {
            d += " [layers";
            for (size_t l = model_.layers.size(); l-- > 0;)
                if (bucket_of_[l] == bi) d += " " + std::to_string(l);
            d += ", " + std::to_string(buckets_[bi].bytes) + " B]";
        }
        return d;
    }

protected:
    const float* layer_params(size_t l) override { return params_.data() + model_.layers[l].offset; }
    float* layer_grads(size_t l) override { return grads_.data() + model_.layers[l].offset; }

    void grads_ready(size_t l) override {
        const size_t bi = bucket_of_[l];
        Bucket& b = buckets_[bi];
        if (++b.ready == b.layers) {
            float* g = grads_.data() + b.begin;
            // Named in traces, flight records and hang reports.
            const std::string label = "gradient bucket " + std::to_string(bi);
            check(chorus_comm_set_label(comm_, label.c_str()), "chorus_comm_set_label", comm_);
            check(chorus_iallreduce(g, g, b.end - b.begin, CHORUS_FLOAT32, CHORUS_AVG, comm_, nullptr, &requests_[bi]),
                  "chorus_iallreduce (gradient bucket)", comm_);
        }
        poll(requests_);
    }

    void finish_step() override {
        wait_all(requests_);
        for (Bucket& b : buckets_) b.ready = 0;
        sgd_momentum(params_.data(), momentum_.data(), grads_.data(), params_.size(), opt_.lr, opt_.momentum);
    }

private:
    struct Bucket {
        size_t begin, end;  // range of the gradient vector
        size_t bytes;
        int layers, ready;  // layers in it; layers whose gradients are done this step
    };
    std::vector<float> params_, grads_, momentum_;
    std::vector<Bucket> buckets_;
    std::vector<size_t> bucket_of_;  // per layer
    std::vector<chorus_request_t> requests_;
};

}  // namespace

std::unique_ptr<Trainer> make_ddp(const Mlp& model, const std::vector<float>& teacher, const Options& opt,
                                  chorus_comm_t comm, const std::vector<float>& init) {
    return std::make_unique<Ddp>(model, teacher, opt, comm, init);
}

}  // namespace dp
