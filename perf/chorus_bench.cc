// chorus-bench: OSU-style latency benchmark of Chorus collectives, timed
// side by side with the MPI library's own collective.
//
// With -d cuda the buffers are device memory. Chorus gets them as they are
// (and the benchmark's stream); MPI, which may not be CUDA-aware, is timed
// as a program without a CUDA-aware MPI would call it: copy the input to a
// pinned host buffer, run the MPI collective there, copy the output back,
// all inside the timed region. A device-to-device copy of the message size,
// timed in the same run, gives a ceiling. Validation copies the output back
// to the host.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_cold.h"
#include "bench_collectives.h"
#include "bench_options.h"
#include "bench_report.h"
#include "bench_types.h"
#include "bench_util.h"
#include "chorus.h"
#include "internal.h"

namespace {

using namespace bench;

int main_impl(int argc, char** argv, const World& w) {
    const char* prog = "chorus-bench";
    const bool root_prints = w.rank == 0;
    auto usage_error = [&](const std::string& msg) {
        if (root_prints) {
            std::fprintf(stderr, "%s: %s\n\n", prog, msg.c_str());
            print_usage(stderr, prog);
        }
        return 2;
    };
    auto plain_error = [&](const std::string& msg, int status) {
        if (root_prints) std::fprintf(stderr, "%s: %s\n", prog, msg.c_str());
        return status;
    };

    Options o;
    std::string err;
    switch (parse_options(argc, argv, o, err)) {
        case ParseStatus::kHelp:
            if (root_prints) print_usage(stdout, prog);
            return 0;
        case ParseStatus::kError: return usage_error(err);
        case ParseStatus::kRun: break;
    }
    const Collective* coll = find_collective(o.collective);
    if (!coll) return usage_error("unknown collective '" + o.collective + "'");
    const bool cuda = o.device == "cuda";
    if (cuda) {
        // Every rank needs a GPU; ranks on one node share it.
        std::string why;
        const bool ok = chorus::gpu::available(&why);
        if (any_rank(!ok))
            return plain_error("-d cuda: no usable GPU " + (ok ? std::string("on another rank") : "here: " + why), 2);
    }
    if (!coll->chorus)
        return plain_error(
            std::string(coll->name) + ": " + coll->symbol + " is not available in this version of Chorus", 2);
    if (o.root >= w.size)
        return usage_error("root " + std::to_string(o.root) + " out of range (" + std::to_string(w.size) + " ranks)");

    const TypeInfo& type = *o.type;
    const size_t elem = type.size;
    std::vector<size_t> sizes;
    for (size_t s = std::max<size_t>(o.min_size, 1); s <= o.max_size; s *= 2) {
        if (layout_for(coll->kind, s, elem, w.size).count > 0) sizes.push_back(s);
        if (s > o.max_size / 2) break;
    }
    if (coll->kind == Kind::Barrier) sizes = {0};  // one row, whatever -m says
    if (sizes.empty())
        return usage_error("no message size in " + std::to_string(o.min_size) + ":" + std::to_string(o.max_size) +
                           " holds one " + type.name + " element" +
                           (coll->kind == Kind::ReduceScatter ? " per rank" : ""));

    // Memory: refuse sizes that cannot fit before allocating anything.
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_ranks = 1;
    MPI_Comm_size(node, &node_ranks);
    MPI_Comm_free(&node);
    const size_t max_bytes = sizes.back();
    const size_t limit = size_t{1} << 46;
    bool too_big = max_bytes > limit / static_cast<size_t>(w.size);
    const Layout big = layout_for(coll->kind, too_big ? 0 : max_bytes, elem, w.size);
    const size_t send_bytes = big.send_elems * elem, recv_bytes = big.recv_elems * elem;
    const size_t alloc_bytes = o.in_place ? std::max(send_bytes, recv_bytes) : send_bytes + recv_bytes;
    const size_t avail = mem_available_bytes();
    // Room for the libraries' own scratch: as much again as the buffers.
    const size_t cold_bytes = o.cold_cache ? ColdRing::arena_bytes(alloc_bytes) : 0;
    const size_t need = (2 * alloc_bytes + cold_bytes) * static_cast<size_t>(node_ranks);
    const bool absurd = too_big;
    too_big = too_big || (avail > 0 && need > avail);
    if (any_rank(too_big)) {
        if (absurd) return plain_error("message size " + std::to_string(max_bytes) + " is too large; lower -m MAX", 2);
        char msg[256];
        std::snprintf(msg, sizeof msg,
                      "message size %zu needs about %zu MiB per rank, %zu MiB for the %d ranks on "
                      "this node, but %zu MiB are available; lower -m MAX",
                      max_bytes, (2 * alloc_bytes + cold_bytes) >> 20, need >> 20, node_ranks, avail >> 20);
        return plain_error(msg, 2);
    }
    // Host buffers (with -d cuda: pinned, the host side of the staged MPI
    // calls and of validation) and, with -d cuda, their device twins and a
    // device buffer for the copy ceiling.
    const size_t a_bytes = o.in_place ? alloc_bytes : send_bytes;
    DeviceBuffers dev;
    void* buf_a = nullptr;
    void* buf_b = nullptr;
    void* copy_pair = nullptr;  // --mapped: the host copy ceiling's source and target
    std::string alloc_error;
    try {
        if (cuda) {
            buf_a = chorus::gpu::alloc_pinned(std::max<size_t>(a_bytes, 64));
            if (!o.in_place) buf_b = chorus::gpu::alloc_pinned(std::max<size_t>(recv_bytes, 64));
            dev.a = chorus::gpu::alloc_device(std::max<size_t>(a_bytes, 64));
            if (!o.in_place) dev.b = chorus::gpu::alloc_device(std::max<size_t>(recv_bytes, 64));
            dev.copy = chorus::gpu::alloc_device(2 * max_bytes);
            dev.stream = chorus::gpu::create_stream();
        } else if (o.mapped) {
            // Mapped memory, and a pair of buffers for the copy ceiling.
            if (chorus_mem_alloc(std::max<size_t>(a_bytes, 64), &buf_a) != CHORUS_SUCCESS ||
                (!o.in_place && chorus_mem_alloc(std::max<size_t>(recv_bytes, 64), &buf_b) != CHORUS_SUCCESS) ||
                chorus_mem_alloc(2 * std::max<size_t>(max_bytes, 64), &copy_pair) != CHORUS_SUCCESS)
                alloc_error = chorus_comm_last_error(nullptr);
        } else {
            if (posix_memalign(&buf_a, 4096, std::max<size_t>(a_bytes, 64)) != 0) buf_a = nullptr;
            if (buf_a && !o.in_place && posix_memalign(&buf_b, 4096, std::max<size_t>(recv_bytes, 64)) != 0)
                buf_b = nullptr;
            if (!buf_a || (!o.in_place && !buf_b)) alloc_error = "out of memory";
        }
    } catch (const chorus::Error& e) {
        alloc_error = e.what();
    }
    auto free_host = [&] {
        if (cuda) {
            chorus::gpu::free_pinned(buf_a);
            chorus::gpu::free_pinned(buf_b);
        } else if (o.mapped) {
            chorus_mem_free(buf_a);
            chorus_mem_free(buf_b);
            chorus_mem_free(copy_pair);
        } else {
            std::free(buf_a);
            std::free(buf_b);
        }
    };
    if (any_rank(!alloc_error.empty())) {
        free_host();
        return plain_error("cannot allocate " + std::to_string(alloc_bytes) + " bytes of " +
                               (cuda ? "device and pinned " : "") + "buffers" +
                               (alloc_error.empty() ? std::string() : " (" + alloc_error + ")") + "; lower -m MAX",
                           2);
    }
    std::memset(buf_a, 0, a_bytes);
    if (buf_b) std::memset(buf_b, 0, recv_bytes);
    ColdRing ring;
    if (o.cold_cache && any_rank(!ring.allocate(alloc_bytes, alloc_error, o.mapped))) {
        free_host();
        return plain_error(alloc_error.empty() ? "--cold-cache: out of memory on another rank" : alloc_error, 2);
    }

    RunInfo info;
    info.collective = coll->name;
    info.title = coll->title;
    info.datatype = type.name;
    info.op = o.op->name;
    info.device = o.device;
    info.hostname = host_name();
    info.date = now_iso8601();
    info.ranks = w.size;
    info.root = coll->has_root ? o.root : -1;
    info.in_place = o.in_place;
    info.cold_cache = o.cold_cache;
    info.mapped = o.mapped;
    info.uses_op = coll->uses_op;
    info.full = o.full;
    info.validate = o.validate;
    info.compare_mpi = o.compare_mpi;
    info.nonblocking = o.nonblocking;
    Report report(info);
    int file_ok = 1;
    if (root_prints && !report.open(o.csv_path, o.json_path, err)) file_ok = 0;
    MPI_Bcast(&file_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!file_ok) {
        free_host();
        return plain_error(err, 2);
    }

    // The self-test switch is the benchmark's own: read it, then hide it from
    // the library, which reports CHORUS_* variables it does not know.
    const char* corrupt_env = std::getenv("CHORUS_BENCH_CORRUPT");
    const bool corrupt = corrupt_env && *corrupt_env && std::strcmp(corrupt_env, "0") != 0;
    unsetenv("CHORUS_BENCH_CORRUPT");
    chorus_comm_t comm = nullptr;
    check_chorus(chorus_comm_create(MPI_COMM_WORLD, &comm), "chorus_comm_create", 0, nullptr, w.rank);
    if (o.mapped) {
        // Every buffer a call may use, a window.
        check_chorus(chorus_comm_register(comm, buf_a, std::max<size_t>(a_bytes, 64)), "chorus_comm_register", 0, comm,
                     w.rank);
        if (buf_b)
            check_chorus(chorus_comm_register(comm, buf_b, std::max<size_t>(recv_bytes, 64)), "chorus_comm_register", 0,
                         comm, w.rank);
        if (ring.active())
            check_chorus(chorus_comm_register(comm, ring.arena(), ring.arena_size()), "chorus_comm_register", 0, comm,
                         w.rank);
    }
    // Data movement compares against MPI with any type of the element's size.
    const MPI_Datatype mpi_type = coll->uses_op ? type.mpi : same_size_type(type.size);
    const bool mpi_type_ok = mpi_type != MPI_DATATYPE_NULL && (!coll->uses_op || o.op->mpi != MPI_OP_NULL);
    const int checker = writes_output(coll->kind, 0, o.root) ? 0 : o.root;
    const int n = w.size;
    bool any_fail = false;

    if (root_prints) report.print_header();
    for (const size_t bytes : sizes) {
        const Layout l = layout_for(coll->kind, bytes, elem, n);
        // The v forms run with equal blocks, block i at i * count.
        std::vector<size_t> counts(static_cast<size_t>(n), l.count), displs(static_cast<size_t>(n));
        std::vector<int> mpi_counts(counts.begin(), counts.end()), mpi_displs(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) mpi_displs[i] = static_cast<int>(displs[i] = static_cast<size_t>(i) * l.count);
        // The call on buffers a and b: `c` on the measured buffers, `hc` on
        // the host ones (the same call without -d cuda).
        auto call_on = [&](void* a_base, void* b_base) {
            Call k;
            k.count = l.count;
            k.counts = counts.data();
            k.displs = displs.data();
            k.mpi_counts = mpi_counts.data();
            k.mpi_displs = mpi_displs.data();
            k.type = &type;
            k.mpi_type = mpi_type;
            k.op = o.op;
            k.root = o.root;
            k.rank = w.rank;
            k.in_place = o.in_place;
            k.comm = comm;
            k.stream = dev.stream;
            place_buffers(coll->kind, a_base, b_base, l, elem, k);
            return k;
        };
        const Call hc = call_on(buf_a, buf_b);
        const Call c = cuda ? call_on(dev.a, dev.b) : hc;
        void* send_w = const_cast<void*>(hc.send);
        fill_input(type, o.op->op, w.rank, n, 0, send_w, l.send_elems);
        // What this rank's call reads and writes.
        const bool has_in = reads_input(coll->kind, w.rank, o.root);
        const bool has_out = writes_output(coll->kind, w.rank, o.root);
        const size_t in_bytes = l.send_elems * elem, out_bytes = l.recv_elems * elem;
        // Both whole buffers to the device (validation writes poison too).
        auto upload_all = [&] {
            if (!cuda) return;
            dev.upload(dev.a, buf_a, a_bytes);
            if (!o.in_place) dev.upload(dev.b, buf_b, recv_bytes);
        };
        upload_all();

        const bool with_mpi = o.compare_mpi && mpi_type_ok && l.recv_elems <= 0x7fffffff && l.send_elems <= 0x7fffffff;
        const int iters = o.iterations > 0 ? o.iterations
                          : bytes <= 8192  ? 1000
                                           : static_cast<int>(std::clamp<size_t>((size_t{1} << 30) / bytes, 10, 100));
        const int warmup = o.warmup >= 0 ? o.warmup : bytes <= 8192 ? 100 : std::max(2, iters / 10);
        // --cold-cache: every timed call on the next set of the ring.
        std::vector<Call> cold_calls;
        if (ring.active()) {
            const size_t a_used = o.in_place ? std::max(in_bytes, out_bytes) : in_bytes;
            ring.layout(a_used, o.in_place ? 0 : out_bytes, buf_a);
            for (size_t s = 0; s < ring.sets(); ++s) cold_calls.push_back(call_on(ring.a(s), ring.b(s)));
        }
        // Nonblocking (-n): the i-call, then its wait; else the blocking call.
        chorus_request_t req = nullptr;
        MPI_Request mpi_req = MPI_REQUEST_NULL;
        auto nonblocking = [&](Call k) {
            k.request = &req;
            k.mpi_request = &mpi_req;
            return k;
        };
        const Call ihc = nonblocking(hc);
        std::vector<Call> icalls{nonblocking(c)};
        for (const Call& k : cold_calls) icalls.push_back(nonblocking(k));
        size_t turn = 0;  // the call of this turn: c, or the ring's set turn - 1
        auto prepare = [&] {
            if (ring.active()) turn = 1 + ring.next();
        };
        auto current = [&]() -> const Call& { return turn ? cold_calls[turn - 1] : c; };
        auto start_chorus = [&] { check_chorus(coll->chorus(icalls[turn]), coll->symbol, bytes, comm, w.rank); };
        auto wait_chorus = [&] { check_chorus(chorus_wait(req), "chorus_wait", bytes, comm, w.rank); };
        auto run_chorus = [&] {
            if (!o.nonblocking) return check_chorus(coll->chorus(current()), coll->symbol, bytes, comm, w.rank);
            start_chorus();
            wait_chorus();
        };
        // With -d cuda, MPI runs on the host: the input comes down, the
        // output goes back up, inside the timed region.
        auto start_mpi = [&] {
            if (cuda && has_in) dev.download(const_cast<void*>(hc.send), c.send, in_bytes);
            coll->mpi(cuda ? ihc : icalls[turn]);
        };
        auto wait_mpi = [&] {
            MPI_Wait(&mpi_req, MPI_STATUS_IGNORE);
            // The broadcast root's output is its input (MPI_Bcast works in place).
            if (cuda && has_out && !(coll->kind == Kind::Broadcast && w.rank == o.root))
                dev.upload(c.recv, hc.recv, out_bytes);
        };
        auto run_mpi = [&] {
            if (o.nonblocking) {
                start_mpi();
                return wait_mpi();
            }
            if (!cuda) {
                coll->mpi(current());
                return;
            }
            if (has_in) dev.download(const_cast<void*>(hc.send), c.send, in_bytes);
            coll->mpi(hc);
            if (has_out && !(coll->kind == Kind::Broadcast && w.rank == o.root)) dev.upload(c.recv, hc.recv, out_bytes);
        };

        time_calls(warmup, prepare, run_chorus);
        if (with_mpi) time_calls(warmup, prepare, run_mpi);
        const int blocks = with_mpi ? std::min(iters, 4) : 1;
        double t_chorus = 0, t_mpi = 0;
        for (int b = 0; b < blocks; ++b) {
            const int k = iters * (b + 1) / blocks - iters * b / blocks;
            t_chorus += time_calls(k, prepare, run_chorus);
            if (with_mpi) t_mpi += time_calls(k, prepare, run_mpi);
        }
        // The overlap with computation, each side with its own pure time.
        Overlap ours, theirs;
        if (o.nonblocking) {
            ours = measure_overlap(iters, t_chorus * 1e6 / iters, prepare, start_chorus, wait_chorus);
            if (with_mpi) theirs = measure_overlap(iters, t_mpi * 1e6 / iters, prepare, start_mpi, wait_mpi);
        }
        double copy_gbs = 0;
        if (cuda) {
            // Every rank copies at once, as every rank runs the collective.
            char* const from = static_cast<char*>(dev.copy);
            auto copy = [&] { chorus::gpu::copy_async(from + max_bytes, from, bytes, dev.stream); };
            for (int i = 0; i < std::max(warmup, 1); ++i) copy();
            chorus::gpu::synchronize_stream(dev.stream);
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            for (int i = 0; i < iters; ++i) copy();
            chorus::gpu::synchronize_stream(dev.stream);
            const double t = MPI_Wtime() - t0;
            const double mine = t > 0 ? static_cast<double>(bytes) * iters / t / 1e9 : 0;
            MPI_Reduce(&mine, &copy_gbs, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            copy_gbs /= n;
        }
        if (copy_pair) {
            // Every rank copies at once, as every rank runs the collective.
            char* const from = static_cast<char*>(copy_pair);
            char* const to = from + std::max<size_t>(max_bytes, 64);
            for (int i = 0; i < std::max(warmup, 1); ++i) std::memcpy(to, from, bytes);
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            for (int i = 0; i < iters; ++i) {
                std::memcpy(to, from, bytes);
                asm volatile("" ::: "memory");
            }
            const double t = MPI_Wtime() - t0;
            const double mine = t > 0 ? static_cast<double>(bytes) * iters / t / 1e9 : 0;
            MPI_Reduce(&mine, &copy_gbs, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            copy_gbs /= n;
        }
        const double lat = t_chorus * 1e6 / iters, mpi_lat = t_mpi * 1e6 / iters;
        double lat_min = 0, lat_max = 0, lat_sum = 0, mpi_sum = 0;
        MPI_Reduce(&lat, &lat_min, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lat, &lat_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lat, &lat_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mpi_lat, &mpi_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        // OSU averages the three times over the ranks, then takes the overlap.
        double times[6] = {ours.comm_us,   ours.overall_us,   ours.compute_us,
                           theirs.comm_us, theirs.overall_us, theirs.compute_us};
        double mean[6] = {};
        MPI_Reduce(times, mean, 6, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        const Overlap our_mean{mean[0] / n, mean[1] / n, mean[2] / n},
            their_mean{mean[3] / n, mean[4] / n, mean[5] / n};

        Verdict verdict = Verdict::kNotChecked;
        if (o.validate) {
            // Poison the output, then write the input (which, in place, may
            // overwrite part of the poisoned region).
            std::memset(hc.recv, 0xA5, l.recv_elems * elem);
            if (has_in) fill_input(type, o.op->op, w.rank, n, 0, send_w, l.send_elems);
            upload_all();
            MPI_Barrier(MPI_COMM_WORLD);
            // A barrier is right when nobody leaves before the last one came.
            const double entered = MPI_Wtime();
            if (coll->kind == Kind::Barrier && w.rank == n - 1) usleep(20000);
            turn = 0;
            run_chorus();
            size_t bad = coll->kind == Kind::Barrier && w.rank != n - 1 && MPI_Wtime() - entered < 0.0199;
            // The broadcast root works in place: its result is its input.
            const bool root_bcast = coll->kind == Kind::Broadcast && w.rank == o.root;
            void* host_out = root_bcast ? const_cast<void*>(hc.send) : hc.recv;
            if (cuda && has_out) dev.download(host_out, root_bcast ? c.send : c.recv, out_bytes);
            unsigned char* out = static_cast<unsigned char*>(host_out);
            if (corrupt && has_out && w.rank == checker) {
                if (coll->kind == Kind::Barrier)
                    ++bad;
                else
                    out[(l.recv_elems / 2) * elem] ^= 0xFF;
            }
            if (has_out) bad += check_output(coll->kind, type, o.op->op, w.rank, n, o.root, l, out);
            const bool failed = any_rank(bad > 0);
            any_fail = any_fail || failed;
            verdict = failed ? Verdict::kFail : Verdict::kPass;
        }

        if (root_prints) {
            Row r;
            r.bytes = bytes;
            r.iterations = iters;
            r.avg_us = lat_sum / n;
            r.min_us = lat_min;
            r.max_us = lat_max;
            const double factor = bus_factor(coll->kind, n);
            r.algbw_gbs = r.avg_us > 0 ? static_cast<double>(l.nccl_bytes) / r.avg_us / 1e3 : 0;
            r.busbw_gbs = r.algbw_gbs * factor;
            r.has_mpi = with_mpi;
            if (with_mpi) {
                r.mpi_avg_us = mpi_sum / n;
                r.mpi_busbw_gbs =
                    r.mpi_avg_us > 0 ? static_cast<double>(l.nccl_bytes) / r.mpi_avg_us / 1e3 * factor : 0;
                r.speedup = r.avg_us > 0 ? r.mpi_avg_us / r.avg_us : 0;
            }
            r.verdict = verdict;
            r.copy_gbs = copy_gbs;
            r.overall_us = our_mean.overall_us;
            r.compute_us = our_mean.compute_us;
            r.overlap_pct = our_mean.percent();
            r.mpi_overlap_pct = their_mean.percent();
            report.add(r);
        }
    }

    check_chorus(chorus_comm_destroy(comm), "chorus_comm_destroy", 0, nullptr, w.rank);
    free_host();
    int status = any_fail ? 1 : 0;
    if (root_prints && !report.finish(err)) {
        std::fprintf(stderr, "%s: %s\n", prog, err.c_str());
        status = 1;
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    World w;
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    int status = 1;
    try {
        status = main_impl(argc, argv, w);
    } catch (const chorus::Error& e) {
        // A CUDA failure in the middle of a run: the other ranks may be
        // waiting in a collective.
        std::fprintf(stderr, "chorus-bench: rank %d: %s\n", w.rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return status;
}
