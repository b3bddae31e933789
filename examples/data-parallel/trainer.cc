#include "trainer.h"

namespace dp {

Trainer::Trainer(const Mlp& model, const std::vector<float>& teacher, const Options& opt, chorus_comm_t comm)
    : model_(model), teacher_(teacher), opt_(opt), comm_(comm) {
    check(chorus_comm_rank(comm, &rank_), "chorus_comm_rank", comm);
    check(chorus_comm_size(comm, &size_), "chorus_comm_size", comm);
    acts_.resize(model.layers.size() + 1);
    grad_.resize(model.layers.size() + 1);
    acts_[0].resize(size_t(opt.batch) * model.inputs());
    for (size_t l = 0; l < model.layers.size(); l++) {
        acts_[l + 1].resize(size_t(opt.batch) * model.layers[l].out);
        grad_[l].resize(acts_[l].size());
    }
    grad_.back().resize(acts_.back().size());
}

StepStats Trainer::step(int step) {
    StepStats st;
    const double t0 = MPI_Wtime();
    const Batch batch = make_batch(model_, teacher_, rank_, step, opt_.batch);
    const size_t nl = model_.layers.size();

    acts_[0] = batch.x;
    for (size_t l = 0; l < nl; l++)
        forward_layer(model_.layers[l], model_.hidden(l), layer_params(l), acts_[l].data(), acts_[l + 1].data(),
                      opt_.batch);
    double local_loss = mse(acts_[nl].data(), batch.t.data(), opt_.batch, model_.outputs(), grad_[nl].data());

    const double t1 = MPI_Wtime();
    for (size_t l = nl; l-- > 0;) {
        const float* wb = layer_params(l);
        backward_layer(model_.layers[l], model_.hidden(l), wb, acts_[l].data(), acts_[l + 1].data(),
                       grad_[l + 1].data(), layer_grads(l), l > 0 ? grad_[l].data() : nullptr, opt_.batch);
        grads_ready(l);
    }
    const double t2 = MPI_Wtime();
    finish_step();
    const double t3 = MPI_Wtime();

    check(chorus_comm_set_label(comm_, "loss"), "chorus_comm_set_label", comm_);
    check(chorus_allreduce(&local_loss, &st.loss, 1, CHORUS_FLOAT64, CHORUS_AVG, comm_, nullptr),
          "chorus_allreduce (loss)", comm_);
    check(chorus_comm_set_label(comm_, nullptr), "chorus_comm_set_label", comm_);
    st.seconds = t3 - t0;
    st.backward = t2 - t1;
    st.wait = t3 - t2;
    return st;
}

void Trainer::poll(std::vector<chorus_request_t>& requests) {
    for (chorus_request_t& r : requests) {
        if (!r) continue;
        int done = 0;
        check(chorus_test(r, &done), "chorus_test", comm_);
        if (done) r = nullptr;
    }
}

void Trainer::wait_all(std::vector<chorus_request_t>& requests) {
    for (chorus_request_t& r : requests) {
        if (!r) continue;
        chorus_result_t rc = chorus_wait(r);
        r = nullptr;
        check(rc, "chorus_wait", comm_);
    }
}

}  // namespace dp
