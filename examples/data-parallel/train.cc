// data-parallel: the collective patterns of distributed training, on a small
// MLP (tanh hidden layers, mean squared error) that learns a fixed teacher
// network from synthetic data drawn per rank (each rank its own batches,
// fixed seeds), on the host.
//
//   1. The initial weights: rank 0's, broadcast with chorus_broadcast (every
//      other rank starts from different random weights, which the broadcast
//      must replace).
//   2. DDP (ddp.cc): bucketed gradient all-reduces, started during the
//      backward pass.
//   3. FSDP / ZeRO-3 (fsdp.cc): sharded parameters, all-gathered before each
//      layer, gradients reduce-scattered, each rank updating its shard.
//
// Both train from the same weights on the same batches, step by step. After
// every step each rank hashes its copy of the weights and the hashes are
// compared (MPI_Allgather): they must be bit-identical on every rank. At the
// end the loss must have fallen below half its first value for both, and
// DDP's and FSDP's weights must agree: bit for bit at np = 2 (an average of
// two numbers does not depend on the order of addition); to a relative 1e-4
// of the largest weight otherwise (all-reduce and reduce-scatter algorithms
// may add the ranks' gradients in different orders, and the roundings
// compound over the steps).
//
// Exit status: 0 when every check holds, 1 otherwise, 2 on bad options.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "chorus.h"
#include "mlp.h"
#include "trainer.h"

namespace {

constexpr double kLossDrop = 0.5;          // final loss < kLossDrop x first loss
constexpr double kWeightAgreement = 1e-4;  // DDP vs FSDP, relative to max |w|

bool parse(int argc, char** argv, dp::Options& o) {
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return false;
        const char* v = argv[++i];
        if (a == "--steps") {
            o.steps = std::atoi(v);
        } else if (a == "--batch") {
            o.batch = std::atoi(v);
        } else if (a == "--lr") {
            o.lr = float(std::atof(v));
        } else if (a == "--hidden") {
            o.hidden = std::atoi(v);
        } else if (a == "--bucket-kb") {
            o.bucket_bytes = size_t(std::atol(v)) * 1024;
        } else if (a == "--csv") {
            o.csv = v;
        } else {
            return false;
        }
    }
    return o.steps > 0 && o.batch > 0 && o.lr > 0 && o.hidden > 0 && o.bucket_bytes > 0;
}

// True when every rank's copy of `params` has the same bits; rank 0 names the
// ranks that differ from it unless `what` is null.
bool identical_on_all_ranks(const std::vector<float>& params, const char* what, int step) {
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    unsigned long long h = dp::fnv1a(params.data(), params.size() * sizeof(float));
    std::vector<unsigned long long> all(np);
    MPI_Allgather(&h, 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    bool same = true;
    for (int r = 1; r < np; r++)
        if (all[r] != all[0]) {
            same = false;
            if (me == 0 && what)
                std::printf("FAIL: %s, step %d: rank %d's weights differ from rank 0's\n", what, step, r);
        }
    return same;
}

int run(int argc, char** argv) {
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    dp::Options opt;
    if (!parse(argc, argv, opt)) {
        if (me == 0)
            std::fprintf(stderr,
                         "usage: data-parallel [--steps N] [--batch B] [--lr LR] [--hidden H] [--bucket-kb KB] "
                         "[--csv FILE]\n");
        return 2;
    }

    chorus_comm_t comm;
    dp::check(chorus_comm_create(MPI_COMM_WORLD, &comm), "chorus_comm_create", nullptr);
    const dp::Mlp model({16, opt.hidden, opt.hidden, opt.hidden, 4});
    std::vector<float> teacher(model.params);
    dp::init_params(model, 7, 2.0f, teacher.data());  // the same on every rank: the task

    // Rank 0's initial weights, everywhere. The others start from their own.
    std::vector<float> init(model.params);
    dp::init_params(model, 42 + uint64_t(me) * 1000, 1.0f, init.data());
    const bool differed = np > 1 && !identical_on_all_ranks(init, nullptr, 0);
    dp::check(chorus_broadcast(init.data(), init.data(), init.size(), CHORUS_FLOAT32, 0, comm, nullptr),
              "chorus_broadcast (initial weights)", comm);
    bool ok = identical_on_all_ranks(init, "after the broadcast", 0);

    auto ddp = dp::make_ddp(model, teacher, opt, comm, init);
    auto fsdp = dp::make_fsdp(model, teacher, opt, comm, init);
    if (me == 0) {
        std::printf(
            "data-parallel: MLP 16-%d-%d-%d-4 (%zu parameters), %d ranks x %d samples per step, %d steps, "
            "SGD lr %g momentum %g\n",
            opt.hidden, opt.hidden, opt.hidden, model.params, np, opt.batch, opt.steps, double(opt.lr),
            double(opt.momentum));
        std::printf("initial weights: rank 0's, by chorus_broadcast (the ranks' own ones %s)\n",
                    differed ? "differed before" : "already agreed");
        std::printf("%s\n%s\n", ddp->describe().c_str(), fsdp->describe().c_str());
        std::printf("%5s %12s %12s   %s\n", "step", "DDP loss", "FSDP loss", "weights on every rank");
    }
    std::vector<double> ddp_loss, fsdp_loss;
    dp::StepStats ddp_total, fsdp_total;
    for (int s = 1; s <= opt.steps; s++) {
        const dp::StepStats a = ddp->step(s);
        const dp::StepStats b = fsdp->step(s);
        const bool same_ddp = identical_on_all_ranks(ddp->full_params(), "DDP", s);
        const bool same_fsdp = identical_on_all_ranks(fsdp->full_params(), "FSDP", s);
        ok = ok && same_ddp && same_fsdp;
        ddp_loss.push_back(a.loss);
        fsdp_loss.push_back(b.loss);
        for (auto [total, st] : {std::pair{&ddp_total, a}, std::pair{&fsdp_total, b}}) {
            total->seconds += st.seconds;
            total->backward += st.backward;
            total->wait += st.wait;
        }
        if (me == 0)
            std::printf("%5d %12.6f %12.6f   %s\n", s, a.loss, b.loss,
                        same_ddp && same_fsdp ? "bit-identical (DDP, FSDP)" : "DIFFER");
    }

    // DDP against FSDP.
    const std::vector<float> wd = ddp->full_params(), wf = fsdp->full_params();
    double max_diff = 0, max_w = 0;
    bool bitwise = true;
    for (size_t i = 0; i < wd.size(); i++) {
        max_diff = std::fmax(max_diff, std::fabs(double(wd[i]) - wf[i]));
        max_w = std::fmax(max_w, std::fabs(double(wd[i])));
        bitwise = bitwise && std::memcmp(&wd[i], &wf[i], sizeof(float)) == 0;
    }
    const bool agree = np == 2 ? bitwise : max_diff <= kWeightAgreement * max_w;
    const bool fell =
        ddp_loss.back() < kLossDrop * ddp_loss.front() && fsdp_loss.back() < kLossDrop * fsdp_loss.front();
    ok = ok && agree && fell;

    if (me == 0) {
        for (auto [t, name] : {std::pair{&ddp_total, "DDP "}, std::pair{&fsdp_total, "FSDP"}})
            std::printf(
                "%s: %.3f ms/step; backward %.3f ms (communication started inside it), "
                "then waiting %.3f ms\n",
                name, 1e3 * t->seconds / opt.steps, 1e3 * t->backward / opt.steps, 1e3 * t->wait / opt.steps);
        std::printf("DDP vs FSDP weights: max |difference| %.3e (max |w| %.3f)%s\n", max_diff, max_w,
                    bitwise ? ", bit-identical" : "");
        std::printf("loss: DDP %.6f -> %.6f, FSDP %.6f -> %.6f\n", ddp_loss.front(), ddp_loss.back(), fsdp_loss.front(),
                    fsdp_loss.back());
        if (!fell) std::printf("FAIL: the loss did not fall below %.2f of its first value\n", kLossDrop);
        if (!agree)
            std::printf(np == 2 ? "FAIL: DDP and FSDP weights are not bit-identical at np=2\n"
                                : "FAIL: DDP and FSDP weights differ by more than %.0e relative\n",
                        kWeightAgreement);
        std::printf("%s\n", ok ? "PASS: weights bit-identical on every rank after every step; loss fell; DDP and "
                                 "FSDP agree"
                               : "FAIL");
        if (!opt.csv.empty()) {
            FILE* f = std::fopen(opt.csv.c_str(), "w");
            if (!f) {
                std::printf("FAIL: cannot write %s\n", opt.csv.c_str());
                ok = false;
            } else {
                std::fprintf(f, "step,ddp_loss,fsdp_loss\n");
                for (size_t s = 0; s < ddp_loss.size(); s++)
                    std::fprintf(f, "%zu,%.9g,%.9g\n", s + 1, ddp_loss[s], fsdp_loss[s]);
                std::fclose(f);
                std::printf("loss per step written to %s\n", opt.csv.c_str());
            }
        }
    }
    int all_ok = ok;  // rank 0 decided
    MPI_Bcast(&all_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    ddp.reset();
    fsdp.reset();
    dp::check(chorus_comm_destroy(comm), "chorus_comm_destroy", nullptr);
    return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int status = 1;
    try {
        status = run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "data-parallel: %s\n", e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return status;
}
