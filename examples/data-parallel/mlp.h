// A small multilayer perceptron on the host, plain C++: tanh hidden layers,
// a linear output layer, mean squared error, plain loops in a fixed order
// (so the same inputs give the same bits on every rank), and the synthetic
// data it learns: the outputs of a fixed "teacher" network on random inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dp {

// splitmix64: the same stream everywhere for a given seed.
class Rng {
public:
    explicit Rng(uint64_t seed) : s_(seed) {}
    uint64_t next();
    float uniform(float lo, float hi);  // [lo, hi)

private:
    uint64_t s_;
};

// One linear layer: W (out x in, row-major) then b (out), at `offset` in
// the model's flat parameter vector.
struct Layer {
    int in, out;
    size_t offset;
    size_t size() const { return size_t(in) * size_t(out) + size_t(out); }
};

struct Mlp {
    // widths: input, hidden..., output. The flat vector holds the last layer
    // first, so layers finish their gradients in the backward pass in the
    // order they sit in memory (what DDP's buckets want).
    explicit Mlp(const std::vector<int>& widths);
    bool hidden(size_t l) const { return l + 1 < layers.size(); }
    int inputs() const { return layers.front().in; }
    int outputs() const { return layers.back().out; }

    std::vector<Layer> layers;
    size_t params = 0;
};

// Uniform in +-1/sqrt(in) (scaled by `scale`), a fixed stream per seed.
void init_params(const Mlp& model, uint64_t seed, float scale, float* params);

// y = act(W x + b) for `batch` rows of x (batch x in) into y (batch x out).
void forward_layer(const Layer& layer, bool tanh_act, const float* wb, const float* x, float* y, int batch);

// Given dy = dLoss/dy (overwritten), writes dwb = dLoss/d(W, b) and, when dx
// is not null, dx = dLoss/dx.
void backward_layer(const Layer& layer, bool tanh_act, const float* wb, const float* x, const float* y, float* dy,
                    float* dwb, float* dx, int batch);

// Mean over the batch of 0.5 |y - t|^2; dy = (y - t) / batch.
double mse(const float* y, const float* t, int batch, int outputs, float* dy);

// SGD with momentum, element by element: m = mu m + g; p -= lr m.
void sgd_momentum(float* p, float* m, const float* g, size_t n, float lr, float mu);

// A batch of inputs and the teacher's outputs for them: the inputs are
// drawn from (rank, step), so every rank has its own data every step.
struct Batch {
    std::vector<float> x, t;
};
Batch make_batch(const Mlp& model, const std::vector<float>& teacher, int rank, int step, int batch);

uint64_t fnv1a(const void* data, size_t bytes);

}  // namespace dp
