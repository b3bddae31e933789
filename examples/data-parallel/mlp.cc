#include "mlp.h"

#include <cmath>
#include <cstring>

namespace dp {

uint64_t Rng::next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float Rng::uniform(float lo, float hi) {
    const double u = double(next() >> 11) * 0x1.0p-53;
    return lo + float(u) * (hi - lo);
}

Mlp::Mlp(const std::vector<int>& widths) {
    for (size_t l = 0; l + 1 < widths.size(); l++) layers.push_back({widths[l], widths[l + 1], 0});
    for (size_t l = layers.size(); l-- > 0;) {
        layers[l].offset = params;
        params += layers[l].size();
    }
}

void init_params(const Mlp& model, uint64_t seed, float scale, float* params) {
    Rng rng(seed);
    for (const Layer& layer : model.layers) {
        const float a = scale / std::sqrt(float(layer.in));
        float* wb = params + layer.offset;
        for (size_t i = 0; i < size_t(layer.in) * layer.out; i++) wb[i] = rng.uniform(-a, a);
        for (int o = 0; o < layer.out; o++) wb[size_t(layer.in) * layer.out + o] = rng.uniform(-0.1f, 0.1f);
    }
}

void forward_layer(const Layer& layer, bool tanh_act, const float* wb, const float* x, float* y, int batch) {
    const float* w = wb;
    const float* b = wb + size_t(layer.in) * layer.out;
    for (int s = 0; s < batch; s++) {
        const float* xs = x + size_t(s) * layer.in;
        for (int o = 0; o < layer.out; o++) {
            const float* wo = w + size_t(o) * layer.in;
            float z = b[o];
            for (int i = 0; i < layer.in; i++) z += wo[i] * xs[i];
            y[size_t(s) * layer.out + o] = tanh_act ? std::tanh(z) : z;
        }
    }
}

void backward_layer(const Layer& layer, bool tanh_act, const float* wb, const float* x, const float* y, float* dy,
                    float* dwb, float* dx, int batch) {
    const size_t nw = size_t(layer.in) * layer.out;
    if (tanh_act)  // through tanh: dz = dy (1 - y^2)
        for (size_t k = 0; k < size_t(batch) * layer.out; k++) dy[k] *= 1 - y[k] * y[k];
    std::memset(dwb, 0, layer.size() * sizeof(float));
    for (int s = 0; s < batch; s++) {
        const float* xs = x + size_t(s) * layer.in;
        const float* dz = dy + size_t(s) * layer.out;
        for (int o = 0; o < layer.out; o++) {
            float* dwo = dwb + size_t(o) * layer.in;
            for (int i = 0; i < layer.in; i++) dwo[i] += dz[o] * xs[i];
            dwb[nw + o] += dz[o];
        }
    }
    if (!dx) return;
    for (int s = 0; s < batch; s++) {
        const float* dz = dy + size_t(s) * layer.out;
        float* dxs = dx + size_t(s) * layer.in;
        for (int i = 0; i < layer.in; i++) dxs[i] = 0;
        for (int o = 0; o < layer.out; o++) {
            const float* wo = wb + size_t(o) * layer.in;
            for (int i = 0; i < layer.in; i++) dxs[i] += wo[i] * dz[o];
        }
    }
}

double mse(const float* y, const float* t, int batch, int outputs, float* dy) {
    double loss = 0;
    for (size_t k = 0; k < size_t(batch) * outputs; k++) {
        const float d = y[k] - t[k];
        loss += 0.5 * double(d) * d;
        dy[k] = d / float(batch);
    }
    return loss / batch;
}

void sgd_momentum(float* p, float* m, const float* g, size_t n, float lr, float mu) {
    for (size_t i = 0; i < n; i++) {
        m[i] = mu * m[i] + g[i];
        p[i] -= lr * m[i];
    }
}

Batch make_batch(const Mlp& model, const std::vector<float>& teacher, int rank, int step, int batch) {
    Batch b;
    Rng rng(0x5EED0000ull + uint64_t(rank) * 1000003ull + uint64_t(step));
    b.x.resize(size_t(batch) * model.inputs());
    for (float& v : b.x) v = rng.uniform(-1, 1);
    // The teacher's forward pass gives the targets.
    std::vector<float> in = b.x, out;
    for (size_t l = 0; l < model.layers.size(); l++) {
        const Layer& layer = model.layers[l];
        out.assign(size_t(batch) * layer.out, 0);
        forward_layer(layer, model.hidden(l), teacher.data() + layer.offset, in.data(), out.data(), batch);
        in.swap(out);
    }
    b.t = in;
    return b;
}

uint64_t fnv1a(const void* data, size_t bytes) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < bytes; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

}  // namespace dp
