// Every Chorus collective on CUDA device buffers, under mpirun (ranks may
// share one GPU), against references computed on the host from per-rank
// seeds (reference.h):
//
//   - every collective x every datatype x every op it defines, device send
//     and receive buffers, in place and out of place, counts 0, 1, 7, 4099
//     and 1048577 (past several pipeline chunks; there one op per datatype,
//     cycling through the ops), blocking and nonblocking, on a user stream
//     and on the default stream;
//   - every algorithm (CHORUS_ALGO) on device buffers, small chunks (the
//     one-sided ones in place and through registration keys);
//   - host and device mixed across ranks (even ranks device, odd ranks host),
//     and within a rank (send on the host, receive on the device and back);
//   - managed memory (cudaMallocManaged), written and read by the host;
//   - several nonblocking collectives in flight on device buffers at once;
//   - the data-movement collectives (all-gatherv, all-to-all(v), gather(v),
//     scatter(v), barrier) on device, managed and mixed buffers, irregular
//     blocks with zeros and gaps, against MPI's own on host copies;
//   - stream order: the input is produced by a long chain of device work
//     queued on the user's stream right before the call, never synchronized.
//
// Each case also checks that the send buffer is unchanged (out of place) and
// that the bytes just past every buffer are untouched. Every rank reaches the
// same verdict for every case (an all-reduce of the local one), so all ranks
// run the same sequence of collectives whatever fails.
//
// Exits 77 (skipped) on every rank when any rank has no usable GPU.
//
//   test_gpu_collectives          the checks
//   test_gpu_collectives --host   the same cases with every buffer in host
//                                 memory and no stream (no GPU needed; the
//                                 stream-order part is left out): checks the
//                                 checks themselves against the host path
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "chorus.h"
#include "cuda/cuda_runtime_api.h"
#include "mpi_test_util.h"
#include "reference.h"

namespace gpu = chorus::gpu;

namespace {

constexpr size_t kGuard = 64;  // poisoned bytes after every buffer
constexpr unsigned char kPoison = 0xA5;
constexpr size_t kBig = (size_t{1} << 20) + 1;
constexpr int kMaxReported = 25;  // failure messages printed per rank

enum class Place { Host, Device, Managed };

bool g_host_only = false;  // --host: every buffer in host memory

const char* place_name(Place p) {
    switch (p) {
        case Place::Host: return "host";
        case Place::Device: return "device";
        default: return "managed";
    }
}

// A buffer of `bytes` plus kGuard poisoned bytes, in host, device or managed
// memory. put/get move bytes between it and the host, synchronously.
class Buffer {
public:
    Buffer(Place place, size_t bytes) : place_(g_host_only ? Place::Host : place), bytes_(bytes) {
        const size_t total = bytes + kGuard;
        switch (place_) {
            case Place::Host: p_ = std::malloc(total); break;
            case Place::Device: p_ = gpu::alloc_device(total); break;
            case Place::Managed: p_ = gpu::alloc_managed(total); break;
        }
        if (!p_) chorus::fail(CHORUS_ERR_OUT_OF_MEMORY, "cannot allocate ", total, " bytes");
        std::vector<unsigned char> poison(total, kPoison);
        put(poison.data(), total, 0);
    }
    ~Buffer() {
        switch (place_) {
            case Place::Host: std::free(p_); break;
            case Place::Device: gpu::free_device(p_); break;
            case Place::Managed: gpu::free_managed(p_); break;
        }
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    char* data() const { return static_cast<char*>(p_); }
    size_t bytes() const { return bytes_; }
    Place place() const { return place_; }

    void put(const void* src, size_t n, size_t offset) {
        if (n == 0) return;
        if (place_ == Place::Device) {
            gpu::copy_async(data() + offset, src, n, nullptr);
            gpu::synchronize_stream(nullptr);
        } else {
            // Managed memory is written by the host itself: pages then move
            // to the GPU on first touch, as in an application.
            gpu_idle();
            std::memcpy(data() + offset, src, n);
        }
    }
    // Every byte, the guard included.
    std::vector<unsigned char> get() const {
        std::vector<unsigned char> out(bytes_ + kGuard);
        if (place_ == Place::Device) {
            gpu::copy_async(out.data(), p_, out.size(), nullptr);
            gpu::synchronize_stream(nullptr);
        } else {
            gpu_idle();
            std::memcpy(out.data(), p_, out.size());
        }
        return out;
    }

private:
    // The host touches managed memory only while the GPU is idle (devices
    // without concurrent managed access require it).
    void gpu_idle() const {
        if (place_ == Place::Managed) gpu::synchronize_stream(nullptr);
    }
    Place place_;
    size_t bytes_;
    void* p_ = nullptr;
};

enum class Coll { Allreduce, Broadcast, Reduce, ReduceScatter, ReduceScatterv, Allgather };
const Coll kColls[] = {Coll::Allreduce,     Coll::Broadcast,      Coll::Reduce,
                       Coll::ReduceScatter, Coll::ReduceScatterv, Coll::Allgather};

const char* coll_name(Coll c) {
    switch (c) {
        case Coll::Allreduce: return "allreduce";
        case Coll::Broadcast: return "broadcast";
        case Coll::Reduce: return "reduce";
        case Coll::ReduceScatter: return "reduce_scatter";
        case Coll::ReduceScatterv: return "reduce_scatterv";
        default: return "allgather";
    }
}

bool uses_op(Coll c) {
    return c != Coll::Broadcast && c != Coll::Allgather;
}

struct Case {
    Coll coll = Coll::Allreduce;
    chorus_datatype_t dt = CHORUS_FLOAT32;
    chorus_op_t op = CHORUS_SUM;
    size_t count = 0;
    bool in_place = false;
    Place send = Place::Device;  // this rank's
    Place recv = Place::Device;  // this rank's (the only buffer, in place)
    int root = 0;
    bool nonblocking = false;
    void* stream = nullptr;
};

std::string describe(const Case& k) {
    return chorus::cat(coll_name(k.coll), " dt ", k.dt, uses_op(k.coll) ? " op " : "",
                       uses_op(k.coll) ? std::to_string(k.op) : std::string(), " count ", k.count,
                       k.in_place ? " in place" : " out of place", " send ", place_name(k.send), " recv ",
                       place_name(k.recv), " root ", k.root, k.nonblocking ? " nonblocking" : " blocking",
                       k.stream ? " user stream" : " default stream");
}

// The verdicts of the run so far (identical on every rank).
struct Tally {
    long cases = 0;
    long failed = 0;
    int reported = 0;  // this rank's printed messages
    int rank = 0;
    void report(const std::string& what) {
        if (reported++ < kMaxReported) std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
    }
    // Every rank's verdict on one case; true when it passed everywhere.
    bool agree(bool ok) {
        ++cases;
        const bool all = mpitest::all_ranks(ok);
        if (!all) ++failed;
        return all;
    }
    bool too_many() const { return failed > 40; }
};

// Irregular block sizes for reduce_scatterv, zeros included; the same on
// every rank.
std::vector<size_t> v_counts(size_t count, int p) {
    std::vector<size_t> c(static_cast<size_t>(p));
    for (int i = 0; i < p; ++i) c[static_cast<size_t>(i)] = i % 3 == 1 ? 0 : count + static_cast<size_t>(i);
    return c;
}

// Runs the call of one case; the result of the blocking call or of the
// completed request.
chorus_result_t call(const Case& k, const void* send, void* recv, const size_t* vcounts, chorus_comm_t comm,
                     bool by_test) {
    chorus_request_t req = nullptr;
    chorus_result_t rc;
    const bool nb = k.nonblocking;
    switch (k.coll) {
        case Coll::Allreduce:
            rc = nb ? chorus_iallreduce(send, recv, k.count, k.dt, k.op, comm, k.stream, &req)
                    : chorus_allreduce(send, recv, k.count, k.dt, k.op, comm, k.stream);
            break;
        case Coll::Broadcast:
            rc = nb ? chorus_ibroadcast(send, recv, k.count, k.dt, k.root, comm, k.stream, &req)
                    : chorus_broadcast(send, recv, k.count, k.dt, k.root, comm, k.stream);
            break;
        case Coll::Reduce:
            rc = nb ? chorus_ireduce(send, recv, k.count, k.dt, k.op, k.root, comm, k.stream, &req)
                    : chorus_reduce(send, recv, k.count, k.dt, k.op, k.root, comm, k.stream);
            break;
        case Coll::ReduceScatter:
            rc = nb ? chorus_ireduce_scatter(send, recv, k.count, k.dt, k.op, comm, k.stream, &req)
                    : chorus_reduce_scatter(send, recv, k.count, k.dt, k.op, comm, k.stream);
            break;
        case Coll::ReduceScatterv:
            rc = nb ? chorus_ireduce_scatterv(send, recv, vcounts, k.dt, k.op, comm, k.stream, &req)
                    : chorus_reduce_scatterv(send, recv, vcounts, k.dt, k.op, comm, k.stream);
            break;
        default:
            rc = nb ? chorus_iallgather(send, recv, k.count, k.dt, comm, k.stream, &req)
                    : chorus_allgather(send, recv, k.count, k.dt, comm, k.stream);
            break;
    }
    if (!nb || rc != CHORUS_SUCCESS) return rc;
    if (!by_test) return chorus_wait(req);
    for (;;) {
        int done = 0;
        rc = chorus_test(req, &done);
        if (done) return rc;
    }
}

// Compares `got` (count elements of size w) with `want`; "" when equal.
std::string compare(const unsigned char* got, const void* want, size_t count, size_t w, const char* what) {
    const long i = ref::first_difference(got, want, count, w);
    if (i < 0) return "";
    return chorus::cat(what, ": element ", i, " differs");
}

std::string guard_intact(const std::vector<unsigned char>& all, size_t bytes, const char* what) {
    for (size_t i = bytes; i < all.size(); ++i)
        if (all[i] != kPoison) return chorus::cat(what, ": byte ", i - bytes, " past the end was written");
    return "";
}

// One case on this rank: fills the inputs, runs the call, checks the output.
// Returns "" on success, else what went wrong here.
std::string run_case(const Case& k, uint64_t seed, chorus_comm_t comm, bool by_test) {
    const int p = mpitest::world_size(), me = mpitest::world_rank();
    const size_t w = ref::esize(k.dt), up = static_cast<size_t>(p), ume = static_cast<size_t>(me);
    const bool is_root = me == k.root;
    // Elements of this rank's input and output, and where the output sits in
    // the full reference.
    size_t in_elems = k.count, out_elems = k.count, want_elems = k.count, want_off = 0;
    std::vector<size_t> vcounts;
    switch (k.coll) {
        case Coll::ReduceScatter:
            in_elems = want_elems = k.count * up;
            want_off = k.count * ume;
            break;
        case Coll::ReduceScatterv: {
            vcounts = v_counts(k.count, p);
            in_elems = 0;
            for (int i = 0; i < p; ++i) {
                if (i == me) want_off = in_elems;
                in_elems += vcounts[static_cast<size_t>(i)];
            }
            want_elems = in_elems;
            out_elems = vcounts[ume];
            break;
        }
        case Coll::Allgather: out_elems = want_elems = k.count * up; break;
        default: break;
    }
    // The reference: a reduction of every rank's input, or the moved blocks.
    std::vector<char> want(want_elems * w + 1);
    if (k.coll == Coll::Broadcast)
        ref::fill_input(k.dt, CHORUS_SUM, k.root, p, seed, want.data(), k.count);
    else if (k.coll == Coll::Allgather)
        for (int r = 0; r < p; ++r)
            ref::fill_input(k.dt, CHORUS_SUM, r, p, seed, want.data() + r * k.count * w, k.count);
    else
        ref::expected(k.dt, k.op, p, seed, want.data(), want_elems);
    // This rank's input.
    std::vector<char> in(in_elems * w + 1);
    if (k.coll == Coll::Broadcast || k.coll == Coll::Allgather)
        ref::fill_input(k.dt, CHORUS_SUM, me, p, seed, in.data(), in_elems);
    else
        ref::fill_input(k.dt, k.op, me, p, seed, in.data(), in_elems);

    // The buffers. In place, one buffer (of the receive placement) holds the
    // input where the call expects it.
    const bool has_input = k.coll != Coll::Broadcast || is_root;
    const bool has_output = k.coll != Coll::Reduce || is_root;
    const void* send = nullptr;
    void* recv = nullptr;
    Buffer* sendbuf = nullptr;
    std::vector<std::unique_ptr<Buffer>> owned;
    if (k.in_place && (k.coll == Coll::Allreduce || k.coll == Coll::ReduceScatter || k.coll == Coll::ReduceScatterv ||
                       (is_root && k.coll != Coll::Allgather))) {
        owned.emplace_back(new Buffer(k.recv, std::max(in_elems, out_elems) * w));
        owned.back()->put(in.data(), in_elems * w, 0);
        send = recv = owned.back()->data();
    } else if (k.in_place && k.coll == Coll::Allgather) {
        owned.emplace_back(new Buffer(k.recv, out_elems * w));
        owned.back()->put(in.data(), in_elems * w, ume * k.count * w);
        recv = owned.back()->data();
        send = owned.back()->data() + ume * k.count * w;
    } else {
        if (has_input) {
            owned.emplace_back(new Buffer(k.send, in_elems * w));
            owned.back()->put(in.data(), in_elems * w, 0);
            sendbuf = owned.back().get();
            send = sendbuf->data();
        }
        if (has_output) {
            owned.emplace_back(new Buffer(k.recv, out_elems * w));
            recv = owned.back()->data();
        }
    }
    Buffer* recvbuf = has_output ? owned.back().get() : nullptr;

    const chorus_result_t rc = call(k, send, recv, vcounts.empty() ? nullptr : vcounts.data(), comm, by_test);
    if (rc != CHORUS_SUCCESS)
        return chorus::cat("returned ", chorus_get_error_string(rc), ": ", chorus_comm_last_error(comm));
    std::string err;
    if (recvbuf) {
        const std::vector<unsigned char> got = recvbuf->get();
        err = compare(got.data(), want.data() + want_off * w, out_elems, w, "result");
        if (err.empty()) err = guard_intact(got, recvbuf->bytes(), "receive buffer");
    }
    if (err.empty() && sendbuf) {
        const std::vector<unsigned char> got = sendbuf->get();
        err = compare(got.data(), in.data(), in_elems, w, "send buffer changed");
        if (err.empty()) err = guard_intact(got, sendbuf->bytes(), "send buffer");
    }
    return err;
}

// Runs one case on every rank and records the common verdict.
void check(Tally& t, const Case& k, chorus_comm_t comm, const char* group) {
    if (t.too_many()) return;
    const uint64_t seed = seeds::mix(static_cast<uint64_t>(t.cases) + 1000);
    std::string err;
    try {
        err = run_case(k, seed, comm, t.cases % 2 == 1);
    } catch (const chorus::Error& e) {
        err = chorus::cat("threw: ", e.what());
    }
    if (!err.empty()) t.report(chorus::cat(group, ": ", describe(k), ": ", err));
    t.agree(err.empty());
}

std::vector<chorus_op_t> ops_of(chorus_datatype_t dt) {
    std::vector<chorus_op_t> ops(std::begin(ref::kAllOps), std::end(ref::kAllOps));
    if (!ref::is_float(dt)) ops.insert(ops.end(), std::begin(ref::kIntegerOps), std::end(ref::kIntegerOps));
    return ops;
}

chorus_comm_t make_comm(const char* algo, const char* chunk, const char* one_sided = nullptr) {
    if (algo) setenv("CHORUS_ALGO", algo, 1);
    if (chunk) setenv("CHORUS_CHUNK_BYTES", chunk, 1);
    // The run's own CHORUS_ONE_SIDED, if it sets one, holds for the other
    // communicators.
    const char* outer = std::getenv("CHORUS_ONE_SIDED");
    const std::string run_one_sided = outer ? outer : "";
    if (one_sided) setenv("CHORUS_ONE_SIDED", one_sided, 1);
    chorus_comm_t c = nullptr;
    const chorus_result_t rc = chorus_comm_create(MPI_COMM_WORLD, &c);
    unsetenv("CHORUS_ALGO");
    unsetenv("CHORUS_CHUNK_BYTES");
    if (outer)
        setenv("CHORUS_ONE_SIDED", run_one_sided.c_str(), 1);
    else
        unsetenv("CHORUS_ONE_SIDED");
    if (rc != CHORUS_SUCCESS) chorus::fail(rc, "chorus_comm_create: ", chorus_comm_last_error(nullptr));
    return c;
}

// Every collective x datatype x op x count x in place, device buffers.
void device_grid(Tally& t, chorus_comm_t comm, void* stream) {
    const int p = mpitest::world_size();
    long n = 0;
    for (Coll coll : kColls)
        for (chorus_datatype_t dt : ref::kAllTypes) {
            const std::vector<chorus_op_t> ops = uses_op(coll) ? ops_of(dt) : std::vector<chorus_op_t>{CHORUS_SUM};
            for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{4099}, kBig})
                for (size_t oi = 0; oi < ops.size(); ++oi) {
                    // At the large count, one op per datatype, cycling.
                    if (count == kBig && oi != static_cast<size_t>(dt) % ops.size()) continue;
                    for (bool in_place : {false, true}) {
                        Case k;
                        k.coll = coll;
                        k.dt = dt;
                        k.op = ops[oi];
                        k.count = count;
                        k.in_place = in_place;
                        k.root = static_cast<int>(n % p);
                        k.nonblocking = n % 3 == 2;
                        k.stream = n % 2 ? stream : nullptr;
                        ++n;
                        check(t, k, comm, "device grid");
                    }
                }
        }
}

// Every algorithm of every collective on device buffers, with small chunks;
// the one-sided ones over cross-memory attach and through UCX RMA
// (registration keys), where device buffers travel as messages.
void every_algorithm(Tally& t, void* stream) {
    struct Algo {
        Coll coll;
        const char* setting;
        const char* one_sided = nullptr;  // CHORUS_ONE_SIDED
    };
    const Algo algos[] = {
        {Coll::Allreduce, "allreduce=ring"},
        {Coll::Allreduce, "allreduce=recursive_doubling"},
        {Coll::Allreduce, "allreduce=rabenseifner"},
        {Coll::Broadcast, "bcast=binomial"},
        {Coll::Broadcast, "bcast=chain"},
        {Coll::Broadcast, "bcast=scatter_allgather"},
        {Coll::Reduce, "reduce=binomial"},
        {Coll::Reduce, "reduce=reduce_scatter_gather"},
        {Coll::ReduceScatter, "reduce_scatter=halving"},
        {Coll::ReduceScatterv, "reduce_scatter=halving"},
        {Coll::ReduceScatter, "reduce_scatter=ring"},
        {Coll::ReduceScatterv, "reduce_scatter=ring"},
        {Coll::Allgather, "allgather=ring"},
        {Coll::Allgather, "allgather=bruck"},
        {Coll::Allreduce, "allreduce=one_sided"},
        {Coll::Broadcast, "bcast=one_sided"},
        {Coll::Reduce, "reduce=one_sided"},
        {Coll::ReduceScatter, "reduce_scatter=one_sided"},
        {Coll::Allgather, "allgather=one_sided"},
        {Coll::Allreduce, "allreduce=one_sided", "keys"},
        {Coll::Broadcast, "bcast=one_sided", "keys"},
        {Coll::Reduce, "reduce=one_sided", "keys"},
        {Coll::ReduceScatterv, "reduce_scatter=one_sided", "keys"},
        {Coll::Allgather, "allgather=one_sided", "keys"},
    };
    const int p = mpitest::world_size();
    for (const Algo& a : algos) {
        chorus_comm_t comm = make_comm(a.setting, "16K", a.one_sided);
        const std::string label = a.one_sided ? chorus::cat(a.setting, " (", a.one_sided, ")") : a.setting;
        int n = 0;
        for (chorus_datatype_t dt : {CHORUS_INT8, CHORUS_BFLOAT16, CHORUS_FLOAT32, CHORUS_UINT64})
            for (chorus_op_t op : {CHORUS_SUM, CHORUS_MAX, CHORUS_AVG})
                for (size_t count : {size_t{7}, size_t{100003}})
                    for (bool in_place : {false, true}) {
                        if (!uses_op(a.coll) && op != CHORUS_SUM) continue;
                        Case k;
                        k.coll = a.coll;
                        k.dt = dt;
                        k.op = op;
                        k.count = count;
                        k.in_place = in_place;
                        k.root = (p - 1) * (n % 2);
                        k.stream = stream;
                        k.nonblocking = n % 2 == 1;
                        ++n;
                        check(t, k, comm, label.c_str());
                    }
        chorus_comm_destroy(comm);
    }
}

// Host and device (and managed) memory mixed across ranks and within a rank.
void mixed(Tally& t, chorus_comm_t comm, void* stream) {
    const int me = mpitest::world_rank(), p = mpitest::world_size();
    struct Placement {
        const char* name;
        Place send, recv;
    };
    const Place mine = me % 2 == 0 ? Place::Device : Place::Host;
    const Place other = me % 2 == 0 ? Place::Host : Place::Device;
    const Placement placements[] = {
        {"even ranks device, odd ranks host", mine, mine},
        {"send host, receive device", Place::Host, Place::Device},
        {"send device, receive host", Place::Device, Place::Host},
        {"across ranks and within a rank", mine, other},
        {"managed", Place::Managed, Place::Managed},
        {"managed send, device receive", Place::Managed, Place::Device},
        {"managed on even ranks, device on odd", me % 2 == 0 ? Place::Managed : Place::Device,
         me % 2 == 0 ? Place::Managed : Place::Device},
    };
    int n = 0;
    for (const Placement& pl : placements)
        for (Coll coll : kColls)
            for (chorus_datatype_t dt : {CHORUS_UINT8, CHORUS_FLOAT16, CHORUS_INT32, CHORUS_FLOAT64})
                for (size_t count : {size_t{1}, size_t{4099}, kBig})
                    for (bool in_place : {false, true}) {
                        // Large messages for two of the datatypes (one
                        // reduction op, one bitwise): enough to cross chunks.
                        if (count == kBig && dt != CHORUS_FLOAT16 && dt != CHORUS_INT32) continue;
                        Case k;
                        k.coll = coll;
                        k.dt = dt;
                        k.op = dt == CHORUS_INT32 ? CHORUS_BXOR : dt == CHORUS_FLOAT64 ? CHORUS_MIN : CHORUS_SUM;
                        k.count = count;
                        k.in_place = in_place;
                        k.send = pl.send;
                        k.recv = pl.recv;
                        k.root = n % p;
                        k.nonblocking = n % 2 == 1;
                        k.stream = n % 4 < 2 ? stream : nullptr;
                        ++n;
                        check(t, k, comm, pl.name);
                    }
}

// Every collective in flight at once on device buffers, completed in
// reverse order.
void overlapping(Tally& t, chorus_comm_t comm, void* stream) {
    const int p = mpitest::world_size(), me = mpitest::world_rank();
    const size_t n = 300007, w = 4, up = static_cast<size_t>(p);
    const uint64_t seed = 77;
    std::string err;
    try {
        std::vector<size_t> vc = v_counts(n, p);
        size_t vtotal = 0, voff = 0;
        for (int i = 0; i < p; ++i) {
            if (i == me) voff = vtotal;
            vtotal += vc[static_cast<size_t>(i)];
        }
        Buffer ar(Place::Device, n * w), bc(Place::Device, n * w), rd_in(Place::Device, n * w),
            rd(Place::Device, n * w), rs_in(Place::Device, n * up * w), rs(Place::Device, n * w),
            rv_in(Place::Device, vtotal * w), rv(Place::Device, vc[static_cast<size_t>(me)] * w),
            ag_in(Place::Device, n * w), ag(Place::Device, n * up * w);
        std::vector<char> h(n * up * w + vtotal * w + 1);
        ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, me, p, seed, h.data(), n);
        ar.put(h.data(), n * w, 0);
        ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, p - 1, p, seed + 1, h.data(), n);
        if (me == p - 1) bc.put(h.data(), n * w, 0);
        ref::fill_input(CHORUS_FLOAT32, CHORUS_MAX, me, p, seed + 2, h.data(), n);
        rd_in.put(h.data(), n * w, 0);
        ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, me, p, seed + 3, h.data(), n * up);
        rs_in.put(h.data(), n * up * w, 0);
        ref::fill_input(CHORUS_FLOAT32, CHORUS_PROD, me, p, seed + 4, h.data(), vtotal);
        rv_in.put(h.data(), vtotal * w, 0);
        ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, me, p, seed + 5, h.data(), n);
        ag_in.put(h.data(), n * w, 0);
        chorus_request_t q[6] = {};
        chorus_result_t rc[6];
        rc[0] = chorus_iallreduce(ar.data(), ar.data(), n, CHORUS_FLOAT32, CHORUS_SUM, comm, stream, &q[0]);
        rc[1] = chorus_ibroadcast(bc.data(), bc.data(), n, CHORUS_FLOAT32, p - 1, comm, stream, &q[1]);
        rc[2] = chorus_ireduce(rd_in.data(), rd.data(), n, CHORUS_FLOAT32, CHORUS_MAX, 0, comm, stream, &q[2]);
        rc[3] = chorus_ireduce_scatter(rs_in.data(), rs.data(), n, CHORUS_FLOAT32, CHORUS_SUM, comm, stream, &q[3]);
        rc[4] = chorus_ireduce_scatterv(rv_in.data(), rv.data(), vc.data(), CHORUS_FLOAT32, CHORUS_PROD, comm, stream,
                                        &q[4]);
        rc[5] = chorus_iallgather(ag_in.data(), ag.data(), n, CHORUS_FLOAT32, comm, stream, &q[5]);
        for (int i = 5; i >= 0; --i)
            if (rc[i] == CHORUS_SUCCESS) rc[i] = chorus_wait(q[i]);
        for (int i = 0; i < 6 && err.empty(); ++i)
            if (rc[i] != CHORUS_SUCCESS)
                err = chorus::cat("request ", i, ": ", chorus_get_error_string(rc[i]), ": ",
                                  chorus_comm_last_error(comm));
        std::vector<char> want(n * up * w + vtotal * w + 1);
        auto expect = [&](const Buffer& b, size_t elems, const char* what) {
            if (!err.empty()) return;
            const std::vector<unsigned char> got = b.get();
            err = compare(got.data(), want.data(), elems, w, what);
            if (err.empty()) err = guard_intact(got, b.bytes(), what);
        };
        ref::expected(CHORUS_FLOAT32, CHORUS_SUM, p, seed, want.data(), n);
        expect(ar, n, "allreduce");
        ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, p - 1, p, seed + 1, want.data(), n);
        expect(bc, n, "broadcast");
        ref::expected(CHORUS_FLOAT32, CHORUS_MAX, p, seed + 2, want.data(), n);
        if (me == 0) expect(rd, n, "reduce");
        ref::expected(CHORUS_FLOAT32, CHORUS_SUM, p, seed + 3, want.data(), n * up);
        std::memmove(want.data(), want.data() + static_cast<size_t>(me) * n * w, n * w);
        expect(rs, n, "reduce_scatter");
        ref::expected(CHORUS_FLOAT32, CHORUS_PROD, p, seed + 4, want.data(), vtotal);
        std::memmove(want.data(), want.data() + voff * w, vc[static_cast<size_t>(me)] * w);
        expect(rv, vc[static_cast<size_t>(me)], "reduce_scatterv");
        for (int r = 0; r < p; ++r)
            ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, r, p, seed + 5, want.data() + static_cast<size_t>(r) * n * w,
                            n);
        expect(ag, n * up, "allgather");
    } catch (const chorus::Error& e) {
        err = chorus::cat("threw: ", e.what());
    }
    if (!err.empty()) t.report("six nonblocking collectives in flight: " + err);
    t.agree(err.empty());
}

// The input of a collective is produced by device work queued on the user's
// stream just before the call (a long chain of large copies, then a kernel
// that writes the input), and the call gets that stream without any
// synchronization: Chorus must start only after that work. Blocking and
// nonblocking, for every collective.
void stream_order(Tally& t, chorus_comm_t comm, void* stream) {
    const int p = mpitest::world_size(), me = mpitest::world_rank();
    const size_t up = static_cast<size_t>(p);
    const size_t n = (size_t{1} << 22) + 5;  // uint32 elements of input (16 MiB)
    const size_t big = size_t{256} << 20;    // bytes copied back and forth before the kernel
    std::string err;
    try {
        Buffer pad_a(Place::Device, big), pad_b(Place::Device, big);
        Buffer mask(Place::Device, n * up * 4), masked(Place::Device, n * up * 4);
        int i = 0;
        for (Coll coll : kColls)
            for (bool nonblocking : {false, true}) {
                if (!err.empty()) break;
                const uint64_t seed = 500 + static_cast<uint64_t>(i++);
                const size_t count = coll == Coll::ReduceScatter ? n / up : n;
                std::vector<size_t> vc = v_counts(count / up, p);
                size_t in_elems = coll == Coll::ReduceScatter ? count * up : count, vtotal = 0, voff = 0;
                if (coll == Coll::ReduceScatterv) {
                    for (int r = 0; r < p; ++r) {
                        if (r == me) voff = vtotal;
                        vtotal += vc[static_cast<size_t>(r)];
                    }
                    in_elems = vtotal;
                }
                const size_t out_elems = coll == Coll::ReduceScatter    ? count
                                         : coll == Coll::ReduceScatterv ? vc[static_cast<size_t>(me)]
                                         : coll == Coll::Allgather      ? count * up
                                                                        : count;
                const int root = p - 1;
                const chorus_op_t op = coll == Coll::Reduce ? CHORUS_MAX : CHORUS_SUM;
                // input = mask ^ masked, both uploaded and settled beforehand.
                std::vector<uint32_t> input(in_elems + 1), m(in_elems + 1), x(in_elems + 1);
                const int who = coll == Coll::Broadcast ? root : me;
                ref::fill_input(CHORUS_UINT32, op, who, p, seed, input.data(), in_elems);
                for (size_t e = 0; e < in_elems; ++e) {
                    m[e] = static_cast<uint32_t>(seeds::bits(seed ^ 0xabcdef, me, e));
                    x[e] = m[e] ^ input[e];
                }
                mask.put(m.data(), in_elems * 4, 0);
                masked.put(x.data(), in_elems * 4, 0);
                Buffer in(Place::Device, in_elems * 4), out(Place::Device, out_elems * 4);
                gpu::synchronize_stream(nullptr);
                // The chain on the user's stream: several hundred MiB of
                // copies (milliseconds), then the kernel that writes `in`.
                for (int r = 0; r < 6; ++r) {
                    gpu::copy_async(pad_b.data(), pad_a.data(), big, stream);
                    gpu::copy_async(pad_a.data(), pad_b.data(), big, stream);
                }
                gpu::reduce_async(CHORUS_UINT32, CHORUS_BXOR, in.data(), mask.data(), masked.data(), in_elems, stream);
                Case k;
                k.coll = coll;
                k.dt = CHORUS_UINT32;
                k.op = op;
                k.count = coll == Coll::ReduceScatterv ? 0 : count;
                k.root = root;
                k.nonblocking = nonblocking;
                k.stream = stream;
                const bool has_out = coll != Coll::Reduce || me == root;
                const chorus_result_t rc = call(k, coll == Coll::Broadcast && me != root ? nullptr : in.data(),
                                                has_out ? out.data() : nullptr, vc.data(), comm, false);
                if (rc != CHORUS_SUCCESS) {
                    err = chorus::cat(coll_name(coll), ": ", chorus_get_error_string(rc), ": ",
                                      chorus_comm_last_error(comm));
                    break;
                }
                if (!has_out) continue;
                // The result is in `out` once the call returned (blocking) or
                // the request completed.
                std::vector<uint32_t> want(std::max(in_elems, out_elems) + 1);
                size_t off = 0;
                switch (coll) {
                    case Coll::Broadcast: want = input; break;
                    case Coll::Allgather:
                        for (int r = 0; r < p; ++r)
                            ref::fill_input(CHORUS_UINT32, op, r, p, seed, want.data() + static_cast<size_t>(r) * count,
                                            count);
                        break;
                    default:
                        ref::expected(CHORUS_UINT32, op, p, seed, want.data(), in_elems);
                        off = coll == Coll::ReduceScatter    ? count * static_cast<size_t>(me)
                              : coll == Coll::ReduceScatterv ? voff
                                                             : 0;
                        break;
                }
                const std::vector<unsigned char> got = out.get();
                err = compare(got.data(), want.data() + off, out_elems, 4, coll_name(coll));
                if (!err.empty()) err += nonblocking ? " (nonblocking)" : " (blocking)";
            }
    } catch (const chorus::Error& e) {
        err = chorus::cat("threw: ", e.what());
    }
    if (!err.empty()) t.report("input written on the user's stream right before the call: " + err);
    t.agree(err.empty());
}

// ---------------------------------------------------------------------------
// The data-movement collectives on device, managed and mixed buffers: every
// byte of each receive buffer (gaps between displaced blocks, and the guard)
// against MPI's own collective run on host copies of the same inputs.

enum class Move { Allgatherv, Alltoall, Alltoallv, Gather, Gatherv, Scatter, Scatterv, Barrier };
const Move kMoves[] = {Move::Allgatherv, Move::Alltoall, Move::Alltoallv, Move::Gather,
                       Move::Gatherv,    Move::Scatter,  Move::Scatterv,  Move::Barrier};

const char* move_name(Move m) {
    switch (m) {
        case Move::Allgatherv: return "allgatherv";
        case Move::Alltoall: return "alltoall";
        case Move::Alltoallv: return "alltoallv";
        case Move::Gather: return "gather";
        case Move::Gatherv: return "gatherv";
        case Move::Scatter: return "scatter";
        case Move::Scatterv: return "scatterv";
        default: return "barrier";
    }
}

uint32_t move_value(uint64_t seed, int rank, size_t i) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(rank) << 40) ^ i;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<uint32_t>(x);
}

// Blocks of these counts in reverse rank order, a gap of one element after
// each; returns the extent in elements.
size_t reversed(const std::vector<size_t>& counts, std::vector<size_t>* displs) {
    displs->assign(counts.size(), 0);
    size_t at = 0;
    for (size_t r = counts.size(); r-- > 0;) {
        (*displs)[r] = at;
        at += counts[r] + 1;
    }
    return at;
}

std::vector<int> as_int(const std::vector<size_t>& v) {
    return std::vector<int>(v.begin(), v.end());
}

// One case: `count` elements a block (irregular ones for the v forms, zeros
// included), send and receive buffers where `send_at` and `recv_at` say.
std::string run_move(Move m, size_t count, int root, Place send_at, Place recv_at, uint64_t seed, chorus_comm_t comm,
                     void* stream) {
    const int me = mpitest::world_rank(), p = mpitest::world_size();
    const bool is_root = me == root;
    auto irregular = [&](int r) { return r % 3 == 1 ? size_t(0) : count + static_cast<size_t>(r); };
    auto pair = [&](int s, int d) { return (s + 2 * d) % 3 == 0 ? size_t(0) : count + static_cast<size_t>(s + d); };
    std::vector<size_t> rc(p), rd, sc(p), sd;  // receive and send blocks (elements)
    size_t send_n = 0, recv_n = 0;
    switch (m) {
        case Move::Allgatherv:
            for (int r = 0; r < p; ++r) rc[r] = irregular(r);
            recv_n = reversed(rc, &rd);
            send_n = rc[me];
            break;
        case Move::Alltoall: send_n = recv_n = count * static_cast<size_t>(p); break;
        case Move::Alltoallv:
            for (int r = 0; r < p; ++r) {
                sc[r] = pair(me, r);
                rc[r] = pair(r, me);
            }
            send_n = reversed(sc, &sd);
            recv_n = reversed(rc, &rd);
            break;
        case Move::Gather:
            send_n = count;
            recv_n = is_root ? count * static_cast<size_t>(p) : 0;
            break;
        case Move::Gatherv:
            for (int r = 0; r < p; ++r) rc[r] = irregular(r);
            send_n = rc[me];
            recv_n = reversed(rc, &rd);
            if (!is_root) recv_n = 0;
            break;
        case Move::Scatter:
            send_n = is_root ? count * static_cast<size_t>(p) : 0;
            recv_n = count;
            break;
        case Move::Scatterv:
            for (int r = 0; r < p; ++r) sc[r] = irregular(r);
            send_n = reversed(sc, &sd);
            if (!is_root) send_n = 0;
            recv_n = sc[me];
            break;
        case Move::Barrier: break;
    }
    std::vector<uint32_t> in(send_n + 1);
    for (size_t i = 0; i < send_n; ++i) in[i] = move_value(seed, me, i);
    // MPI's result, from the same poison as the buffer under test.
    std::vector<uint32_t> want(recv_n + 1);
    std::memset(want.data(), kPoison, want.size() * 4);
    const MPI_Datatype u32 = MPI_UINT32_T;
    const std::vector<int> irc = as_int(rc), ird = as_int(rd), isc = as_int(sc), isd = as_int(sd);
    const int n = static_cast<int>(count);
    switch (m) {
        case Move::Allgatherv:
            MPI_Allgatherv(in.data(), static_cast<int>(send_n), u32, want.data(), irc.data(), ird.data(), u32,
                           MPI_COMM_WORLD);
            break;
        case Move::Alltoall: MPI_Alltoall(in.data(), n, u32, want.data(), n, u32, MPI_COMM_WORLD); break;
        case Move::Alltoallv:
            MPI_Alltoallv(in.data(), isc.data(), isd.data(), u32, want.data(), irc.data(), ird.data(), u32,
                          MPI_COMM_WORLD);
            break;
        case Move::Gather: MPI_Gather(in.data(), n, u32, want.data(), n, u32, root, MPI_COMM_WORLD); break;
        case Move::Gatherv:
            MPI_Gatherv(in.data(), static_cast<int>(send_n), u32, want.data(), irc.data(), ird.data(), u32, root,
                        MPI_COMM_WORLD);
            break;
        case Move::Scatter: MPI_Scatter(in.data(), n, u32, want.data(), n, u32, root, MPI_COMM_WORLD); break;
        case Move::Scatterv:
            MPI_Scatterv(in.data(), isc.data(), isd.data(), u32, want.data(), static_cast<int>(recv_n), u32, root,
                         MPI_COMM_WORLD);
            break;
        case Move::Barrier: break;
    }
    Buffer send(send_at, send_n * 4), recv(recv_at, recv_n * 4);
    send.put(in.data(), send_n * 4, 0);
    // Root-only buffers are NULL elsewhere.
    const void* sb = send_n ? send.data() : nullptr;
    void* rb = recv_n ? recv.data() : nullptr;
    const chorus_datatype_t dt = CHORUS_UINT32;
    chorus_result_t rcode = CHORUS_SUCCESS;
    switch (m) {
        case Move::Allgatherv: rcode = chorus_allgatherv(sb, send_n, rb, rc.data(), rd.data(), dt, comm, stream); break;
        case Move::Alltoall: rcode = chorus_alltoall(sb, rb, count, dt, comm, stream); break;
        case Move::Alltoallv:
            rcode = chorus_alltoallv(sb, sc.data(), sd.data(), rb, rc.data(), rd.data(), dt, comm, stream);
            break;
        case Move::Gather: rcode = chorus_gather(sb, rb, count, dt, root, comm, stream); break;
        case Move::Gatherv:
            rcode = chorus_gatherv(sb, send_n, rb, is_root ? rc.data() : nullptr, is_root ? rd.data() : nullptr, dt,
                                   root, comm, stream);
            break;
        case Move::Scatter: rcode = chorus_scatter(sb, rb, count, dt, root, comm, stream); break;
        case Move::Scatterv:
            rcode = chorus_scatterv(sb, is_root ? sc.data() : nullptr, is_root ? sd.data() : nullptr, rb, recv_n, dt,
                                    root, comm, stream);
            break;
        case Move::Barrier: rcode = chorus_barrier(comm, stream); break;
    }
    if (rcode != CHORUS_SUCCESS)
        return chorus::cat(move_name(m), ": ", chorus_get_error_string(rcode), ": ", chorus_comm_last_error(comm));
    if (stream) gpu::synchronize_stream(stream);
    const std::vector<unsigned char> got = recv.get();
    const auto* w = reinterpret_cast<const unsigned char*>(want.data());
    for (size_t i = 0; i < recv_n * 4; ++i)
        if (got[i] != w[i])
            return chorus::cat(move_name(m), " count ", count, " root ", root, " (", place_name(send_at), " -> ",
                               place_name(recv_at), "): byte ", i, " of ", recv_n * 4, " differs from MPI's");
    for (size_t i = recv_n * 4; i < got.size(); ++i)
        if (got[i] != kPoison) return chorus::cat(move_name(m), " count ", count, ": wrote past the buffer");
    return "";
}

void movement(Tally& t, chorus_comm_t comm, void* stream) {
    const int p = mpitest::world_size(), me = mpitest::world_rank();
    const std::pair<Place, Place> places[] = {
        {Place::Device, Place::Device},
        {Place::Managed, Place::Device},
        {me % 2 ? Place::Host : Place::Device, me % 2 ? Place::Device : Place::Host}};
    uint64_t seed = 300;
    for (Move m : kMoves)
        for (const auto& [send_at, recv_at] : places)
            for (size_t count : {size_t(0), size_t(1), size_t(1000), size_t(70000)})
                for (int root : {0, p - 1}) {
                    if (root && m != Move::Gather && m != Move::Gatherv && m != Move::Scatter && m != Move::Scatterv)
                        continue;
                    if (t.too_many()) return;
                    std::string err;
                    try {
                        err = run_move(m, count, root, send_at, recv_at, ++seed, comm, stream);
                    } catch (const chorus::Error& e) {
                        err = chorus::cat(move_name(m), " threw: ", e.what());
                    }
                    if (!err.empty()) t.report(err);
                    t.agree(err.empty());
                }
}

int run() {
    Tally t;
    t.rank = mpitest::world_rank();
    void* stream = g_host_only ? nullptr : gpu::create_stream();
    chorus_comm_t comm = make_comm(nullptr, nullptr);
    struct Part {
        const char* name;
        void (*fn)(Tally&, chorus_comm_t, void*);
    };
    const Part parts[] = {{"device grid", device_grid},
                          {"mixed placements", mixed},
                          {"nonblocking overlap", overlapping},
                          {"data movement", movement},
                          {"stream order", stream_order}};
    for (const Part& part : parts) {
        if (g_host_only && part.fn == stream_order) continue;  // needs device work to order after
        const long before_cases = t.cases, before_failed = t.failed;
        const double t0 = MPI_Wtime();
        part.fn(t, comm, stream);
        if (t.rank == 0)
            std::printf("%-22s %5ld cases, %ld failed, %.1f s\n", part.name, t.cases - before_cases,
                        t.failed - before_failed, MPI_Wtime() - t0);
    }
    chorus_comm_destroy(comm);
    {
        const long before_cases = t.cases, before_failed = t.failed;
        const double t0 = MPI_Wtime();
        every_algorithm(t, stream);
        if (t.rank == 0)
            std::printf("%-22s %5ld cases, %ld failed, %.1f s\n", "every algorithm", t.cases - before_cases,
                        t.failed - before_failed, MPI_Wtime() - t0);
    }
    gpu::destroy_stream(stream);
    if (t.rank == 0)
        std::printf("%s: %ld cases at np=%d, %ld failed\n", t.failed ? "FAILED" : "passed", t.cases,
                    mpitest::world_size(), t.failed);
    return t.failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    g_host_only = argc > 1 && std::string(argv[1]) == "--host";
    // Every rank must agree before any Chorus call: a rank without a GPU
    // would otherwise leave the others waiting in a collective.
    std::string why;
    const bool mine = g_host_only || gpu::available(&why);
    const bool all = mpitest::all_ranks(mine);
    if (!all) {
        if (!mine) std::printf("SKIP: rank %d: no usable GPU: %s\n", mpitest::world_rank(), why.c_str());
        MPI_Finalize();
        return 77;
    }
    int status = 1;
    try {
        status = run();
    } catch (const chorus::Error& e) {
        // Outside a case (creating the stream or a communicator): every rank
        // meets the same failure there, or the run ends in MPI_Abort.
        std::fprintf(stderr, "rank %d: FAILED: %s\n", mpitest::world_rank(), e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return status;
}
