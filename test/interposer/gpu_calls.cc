// An MPI program that hands device (and managed) buffers to the MPI
// collectives, run with libchorus_mpi.so preloaded over an MPI that is not
// CUDA-aware. The interposer must never give the real PMPI_* function a
// device pointer: calls it routes to Chorus take device buffers as they are;
// calls it passes through (CHORUS_MPI_INTERCEPT=none, ops and datatypes
// Chorus does not compute) reach MPI through host copies; derived datatypes
// are packed from host copies. The calls: the reductions, broadcast and
// all-gather, and the data-movement ones (all-to-all(v), gather(v),
// scatter(v), all-gatherv with irregular blocks and gaps, barrier). Every
// result is compared with a reference computed here.
//
//   interposer_gpu_calls pass     run with CHORUS_MPI_INTERCEPT=none: all passed through
//   interposer_gpu_calls chorus   the default policy: eligible calls through Chorus
//   ... --host                    every buffer in host memory (no GPU needed):
//                                 checks the checks themselves
//
// Buffers: device on every rank, then device on even ranks and host on odd
// ones, then managed memory; every call blocking, then as its nonblocking
// twin (MPI_I... + MPI_Wait: the staging lives until the request
// completes). Exits 77 (skipped) on every rank when any rank has no usable
// GPU.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "../seeds.h"
#include "cuda/cuda_runtime_api.h"
#include "mpi_checks.h"

namespace gpu = chorus::gpu;

namespace {

enum class Place { Host, Device, Managed };

int g_rank = 0, g_size = 1, g_failures = 0;
bool g_host_only = false;
bool g_pass = false;  // every call goes to MPI itself

// The root of the in-place MPI_Reduce: the last rank, except where MPI's own
// in-place reduce at a root other than 0 crashes and the call goes to MPI
// (MPICH 4.0 to 4.1.1, ranks on one host: pmodels/mpich#6540).
int in_place_reduce_root() {
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000 && MPICH_NUMVERSION < 40102000
    if (g_pass) return 0;
#endif
    return g_size - 1;
}

bool g_nonblocking = false;  // calls made as MPI_I... + MPI_Wait

// `blocking(args...)`, or `nonblocking(args..., &request)` and MPI_Wait.
template <typename Blocking, typename Nonblocking, typename... Args>
int call(Blocking blocking, Nonblocking nonblocking, Args... args) {
    if (!g_nonblocking) return blocking(args...);
    MPI_Request q = MPI_REQUEST_NULL;
    const int rc = nonblocking(args..., &q);
    return rc != MPI_SUCCESS ? rc : MPI_Wait(&q, MPI_STATUS_IGNORE);
}

void fail(const std::string& what) {
    std::fprintf(stderr, "rank %d: FAIL %s\n", g_rank, what.c_str());
    ++g_failures;
}

// `bytes` of memory at `place`, filled from the host and read back.
class Mem {
public:
    Mem(Place place, size_t bytes) : place_(g_host_only ? Place::Host : place) {
        const size_t n = bytes ? bytes : 1;
        p_ = place_ == Place::Device    ? gpu::alloc_device(n)
             : place_ == Place::Managed ? gpu::alloc_managed(n)
                                        : static_cast<void*>(new char[n]);
    }
    ~Mem() {
        if (place_ == Place::Device)
            gpu::free_device(p_);
        else if (place_ == Place::Managed)
            gpu::free_managed(p_);
        else
            delete[] static_cast<char*>(p_);
    }
    Mem(const Mem&) = delete;
    Mem& operator=(const Mem&) = delete;
    void* get() const { return p_; }
    template <typename T>
    void put(const std::vector<T>& v) {
        copy(p_, v.data(), v.size() * sizeof(T));
    }
    template <typename T>
    std::vector<T> read(size_t n) const {
        std::vector<T> v(n);
        copy(v.data(), p_, n * sizeof(T));
        return v;
    }

private:
    void copy(void* dst, const void* src, size_t n) const {
        if (n == 0) return;
        if (place_ == Place::Host) {
            std::memcpy(dst, src, n);
            return;
        }
        gpu::copy_async(dst, src, n, nullptr);
        gpu::synchronize_stream(nullptr);
    }
    Place place_;
    void* p_ = nullptr;
};

std::vector<int32_t> ints(uint64_t seed, int rank, size_t n) {
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(seeds::bits(seed, rank, i));
    return v;
}

// Small integers: sums of doubles are exact in any order.
std::vector<double> doubles(uint64_t seed, int rank, size_t n) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(static_cast<int>(seeds::bits(seed, rank, i) % 201) - 100);
    return v;
}

std::vector<int32_t> int_sum(uint64_t seed, size_t n) {
    std::vector<uint32_t> acc(n, 0);
    for (int r = 0; r < g_size; ++r) {
        const std::vector<int32_t> v = ints(seed, r, n);
        for (size_t i = 0; i < n; ++i) acc[i] += static_cast<uint32_t>(v[i]);
    }
    std::vector<int32_t> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(acc[i]);
    return out;
}

std::vector<double> double_sum(uint64_t seed, size_t n) {
    std::vector<double> acc(n, 0);
    for (int r = 0; r < g_size; ++r) {
        const std::vector<double> v = doubles(seed, r, n);
        for (size_t i = 0; i < n; ++i) acc[i] += v[i];
    }
    return acc;
}

template <typename T>
void expect(int rc, const std::string& what, const std::vector<T>& got, const std::vector<T>& want) {
    if (rc != MPI_SUCCESS) {
        fail(what + ": " + checks::returned(rc));
        return;
    }
    if (got.size() != want.size()) {
        fail(what + ": size differs");
        return;
    }
    for (size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
            fail(what + ": element " + std::to_string(i) + " differs");
            return;
        }
}

struct Pair {
    double value;
    int index;
};

// The data-movement calls, MPI_INT: all-to-all, gather and scatter to and
// from the last rank, and their v forms with irregular blocks (zeros
// included) in reverse rank order with a gap after each (the gaps keep
// their -7), and the barrier.
void movement_calls(Place place, uint64_t seed, size_t n, const std::string& tag, const std::string& at) {
    const int p = g_size, me = g_rank, root = g_size - 1;
    const size_t up = static_cast<size_t>(p);
    auto block = [&](int r) { return r % 3 == 1 ? size_t(0) : n / 2 + static_cast<size_t>(r); };
    // Counts and displacements (elements) of blocks of block(r), reversed, a gap after each.
    std::vector<int> counts(up), displs(up);
    size_t span = 0;
    for (int r = p; r-- > 0;) {
        counts[r] = static_cast<int>(block(r));
        displs[r] = static_cast<int>(span);
        span += block(r) + 1;
    }
    auto laid_out = [&](const std::function<int32_t(int, size_t)>& value) {
        std::vector<int32_t> v(span, -7);
        for (int r = 0; r < p; ++r)
            for (size_t i = 0; i < block(r); ++i) v[static_cast<size_t>(displs[r]) + i] = value(r, i);
        return v;
    };
    const std::vector<int32_t> mine = ints(seed, me, n * up);
    {  // MPI_Alltoall: block d of rank s is ints(seed, s)[d * n ...]
        Mem in(place, n * up * 4), out(place, n * up * 4);
        in.put(mine);
        const int rc = call(MPI_Alltoall, MPI_Ialltoall, in.get(), static_cast<int>(n), MPI_INT, out.get(),
                            static_cast<int>(n), MPI_INT, MPI_COMM_WORLD);
        std::vector<int32_t> want;
        for (int r = 0; r < p; ++r) {
            const std::vector<int32_t> v = ints(seed, r, n * up);
            want.insert(want.end(), v.begin() + static_cast<long>(n * static_cast<size_t>(me)),
                        v.begin() + static_cast<long>(n * static_cast<size_t>(me + 1)));
        }
        expect(rc, tag + "MPI_Alltoall" + at, out.read<int32_t>(n * up), want);
    }
    {  // MPI_Gather and MPI_Scatter, root the last rank
        Mem in(place, n * 4), out(place, n * up * 4);
        in.put(ints(seed + 1, me, n));
        int rc = call(MPI_Gather, MPI_Igather, in.get(), static_cast<int>(n), MPI_INT, me == root ? out.get() : nullptr,
                      static_cast<int>(n), MPI_INT, root, MPI_COMM_WORLD);
        if (me == root) {
            std::vector<int32_t> want;
            for (int r = 0; r < p; ++r) {
                const std::vector<int32_t> v = ints(seed + 1, r, n);
                want.insert(want.end(), v.begin(), v.end());
            }
            expect(rc, tag + "MPI_Gather" + at, out.read<int32_t>(n * up), want);
        }
        if (me == root) out.put(ints(seed + 2, root, n * up));
        rc = call(MPI_Scatter, MPI_Iscatter, me == root ? out.get() : nullptr, static_cast<int>(n), MPI_INT, in.get(),
                  static_cast<int>(n), MPI_INT, root, MPI_COMM_WORLD);
        const std::vector<int32_t> all = ints(seed + 2, root, n * up);
        expect(rc, tag + "MPI_Scatter" + at, in.read<int32_t>(n),
               std::vector<int32_t>(all.begin() + static_cast<long>(n * static_cast<size_t>(me)),
                                    all.begin() + static_cast<long>(n * static_cast<size_t>(me + 1))));
    }
    {  // MPI_Gatherv, MPI_Scatterv, MPI_Allgatherv: rank r's block of block(r) elements
        auto value = [&](int r, size_t i) { return static_cast<int32_t>(seeds::bits(seed + 3, r, i)); };
        std::vector<int32_t> own(block(me) + 1);
        for (size_t i = 0; i < block(me); ++i) own[i] = value(me, i);
        Mem in(place, own.size() * 4), out(place, span * 4 + 4);
        in.put(own);
        const std::vector<int32_t> gaps(span, -7), want = laid_out(value);
        out.put(gaps);
        int rc = call(MPI_Allgatherv, MPI_Iallgatherv, in.get(), counts[me], MPI_INT, out.get(), counts.data(),
                      displs.data(), MPI_INT, MPI_COMM_WORLD);
        expect(rc, tag + "MPI_Allgatherv" + at, out.read<int32_t>(span), want);
        out.put(gaps);
        rc = call(MPI_Gatherv, MPI_Igatherv, in.get(), counts[me], MPI_INT, me == root ? out.get() : nullptr,
                  counts.data(), displs.data(), MPI_INT, root, MPI_COMM_WORLD);
        if (me == root) expect(rc, tag + "MPI_Gatherv" + at, out.read<int32_t>(span), want);
        // The root scatters the same layout back.
        if (me == root) out.put(want);
        in.put(std::vector<int32_t>(own.size(), -9));
        rc = call(MPI_Scatterv, MPI_Iscatterv, me == root ? out.get() : nullptr, counts.data(), displs.data(), MPI_INT,
                  in.get(), counts[me], MPI_INT, root, MPI_COMM_WORLD);
        std::vector<int32_t> back = own;
        back.back() = -9;
        expect(rc, tag + "MPI_Scatterv" + at, in.read<int32_t>(own.size()), back);
    }
    {  // MPI_Alltoallv: s sends d block(s + d) elements, in reverse order with gaps on both sides
        auto pair = [&](int s, int d) { return (s + 2 * d) % 3 == 0 ? 0 : static_cast<int>(n / 3) + s + d; };
        std::vector<int> sc(up), sd(up), rc_(up), rd(up);
        int sat = 0, rat = 0;
        for (int r = p; r-- > 0;) {
            sc[r] = pair(me, r);
            sd[r] = sat;
            sat += sc[r] + 1;
            rc_[r] = pair(r, me);
            rd[r] = rat;
            rat += rc_[r] + 1;
        }
        auto value = [&](int s, int d, int i) { return static_cast<int32_t>(seeds::bits(seed + 4 + s, d, i)); };
        std::vector<int32_t> send(static_cast<size_t>(sat) + 1, -5), want(static_cast<size_t>(rat) + 1, -7);
        for (int d = 0; d < p; ++d)
            for (int i = 0; i < sc[d]; ++i) send[static_cast<size_t>(sd[d] + i)] = value(me, d, i);
        for (int s = 0; s < p; ++s)
            for (int i = 0; i < rc_[s]; ++i) want[static_cast<size_t>(rd[s] + i)] = value(s, me, i);
        Mem in(place, send.size() * 4), out(place, want.size() * 4);
        in.put(send);
        out.put(std::vector<int32_t>(want.size(), -7));
        const int rc = call(MPI_Alltoallv, MPI_Ialltoallv, in.get(), sc.data(), sd.data(), MPI_INT, out.get(),
                            rc_.data(), rd.data(), MPI_INT, MPI_COMM_WORLD);
        expect(rc, tag + "MPI_Alltoallv" + at, out.read<int32_t>(want.size()), want);
    }
    expect(call(MPI_Barrier, MPI_Ibarrier, MPI_COMM_WORLD), tag + "MPI_Barrier" + at, std::vector<int>{},
           std::vector<int>{});
}

// Every intercepted function, in and out of place: MPI_INT and MPI_DOUBLE
// SUM (through Chorus unless the policy says none), MPI_MAXLOC on
// MPI_DOUBLE_INT (never through Chorus), and a strided vector type in
// MPI_Bcast (packed around Chorus, or passed through).
void all_calls(Place place, uint64_t seed, const char* label) {
    const int p = g_size, me = g_rank;
    const size_t up = static_cast<size_t>(p);
    const std::string tag = std::string(label) + ": ";
    for (size_t n : {size_t{1}, size_t{1000}, size_t{300001}}) {
        const std::string at = " (" + std::to_string(n) + " elements)";
        seed += 17;
        {  // MPI_Allreduce, MPI_INT SUM, out of place and in place
            Mem in(place, n * 4), out(place, n * 4);
            in.put(ints(seed, me, n));
            int rc = call(MPI_Allreduce, MPI_Iallreduce, in.get(), out.get(), static_cast<int>(n), MPI_INT, MPI_SUM,
                          MPI_COMM_WORLD);
            expect(rc, tag + "MPI_Allreduce" + at, out.read<int32_t>(n), int_sum(seed, n));
            expect(MPI_SUCCESS, tag + "MPI_Allreduce input unchanged" + at, in.read<int32_t>(n), ints(seed, me, n));
            rc = call(MPI_Allreduce, MPI_Iallreduce, MPI_IN_PLACE, in.get(), static_cast<int>(n), MPI_INT, MPI_SUM,
                      MPI_COMM_WORLD);
            expect(rc, tag + "MPI_Allreduce in place" + at, in.read<int32_t>(n), int_sum(seed, n));
        }
        {  // MPI_Allreduce MPI_MAXLOC on MPI_DOUBLE_INT: Chorus has no pair types
            std::vector<Pair> mine(n);
            const std::vector<double> v = doubles(seed + 1, me, n);
            for (size_t i = 0; i < n; ++i) mine[i] = {v[i], me};
            const size_t k = std::min<size_t>(n, 1000);  // elements checked
            std::vector<double> wv(k, -1e300);
            std::vector<int> wi(k, 0);
            for (int r = 0; r < p; ++r) {
                const std::vector<double> x = doubles(seed + 1, r, k);
                for (size_t i = 0; i < k; ++i)
                    if (x[i] > wv[i]) {  // ties: the lowest rank, as MPI_MAXLOC
                        wv[i] = x[i];
                        wi[i] = r;
                    }
            }
            Mem in(place, n * sizeof(Pair)), out(place, n * sizeof(Pair));
            in.put(mine);
            const int rc = call(MPI_Allreduce, MPI_Iallreduce, in.get(), out.get(), static_cast<int>(n), MPI_DOUBLE_INT,
                                MPI_MAXLOC, MPI_COMM_WORLD);
            const std::vector<Pair> got = out.read<Pair>(n);
            std::vector<double> gv(k);
            std::vector<int> gi(k);
            for (size_t i = 0; i < k; ++i) {
                gv[i] = got[i].value;
                gi[i] = got[i].index;
            }
            expect(rc, tag + "MPI_Allreduce MAXLOC values" + at, gv, wv);
            expect(rc, tag + "MPI_Allreduce MAXLOC ranks" + at, gi, wi);
        }
        {  // MPI_Reduce MPI_DOUBLE SUM to the last rank; in place there
            int root = p - 1;
            Mem in(place, n * 8), out(place, n * 8);
            in.put(doubles(seed + 2, me, n));
            int rc = call(MPI_Reduce, MPI_Ireduce, in.get(), me == root ? out.get() : nullptr, static_cast<int>(n),
                          MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
            if (me == root) expect(rc, tag + "MPI_Reduce" + at, out.read<double>(n), double_sum(seed + 2, n));
            root = in_place_reduce_root();
            rc = call(MPI_Reduce, MPI_Ireduce, me == root ? MPI_IN_PLACE : in.get(), me == root ? in.get() : nullptr,
                      static_cast<int>(n), MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
            if (me == root)
                expect(rc, tag + "MPI_Reduce in place" + at, in.read<double>(n), double_sum(seed + 2, n));
            else
                expect(rc, tag + "MPI_Reduce input unchanged" + at, in.read<double>(n), doubles(seed + 2, me, n));
        }
        {  // MPI_Reduce_scatter_block and MPI_Reduce_scatter (irregular), MPI_INT SUM
            Mem in(place, n * up * 4), out(place, n * 4);
            in.put(ints(seed + 3, me, n * up));
            int rc = call(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, in.get(), out.get(), static_cast<int>(n),
                          MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            std::vector<int32_t> all = int_sum(seed + 3, n * up);
            expect(rc, tag + "MPI_Reduce_scatter_block" + at, out.read<int32_t>(n),
                   std::vector<int32_t>(all.begin() + static_cast<long>(n * static_cast<size_t>(me)),
                                        all.begin() + static_cast<long>(n * static_cast<size_t>(me + 1))));
            std::vector<int> counts(up);
            size_t off = 0;
            for (int r = 0; r < p; ++r) {
                counts[static_cast<size_t>(r)] = r % 2 ? 0 : static_cast<int>(n);
                if (r < me) off += static_cast<size_t>(counts[static_cast<size_t>(r)]);
            }
            rc = call(MPI_Reduce_scatter, MPI_Ireduce_scatter, in.get(), out.get(), counts.data(), MPI_INT, MPI_SUM,
                      MPI_COMM_WORLD);
            const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(me)]);
            std::vector<int32_t> sum = int_sum(seed + 3, n * up);
            expect(rc, tag + "MPI_Reduce_scatter" + at, out.read<int32_t>(mine),
                   std::vector<int32_t>(sum.begin() + static_cast<long>(off),
                                        sum.begin() + static_cast<long>(off + mine)));
        }
        {  // MPI_Bcast from rank 0: MPI_INT, and a strided vector type (packed)
            Mem buf(place, n * 8);
            const std::vector<int32_t> root_data = ints(seed + 4, 0, 2 * n);
            buf.put(me == 0 ? root_data : ints(seed + 5, me, 2 * n));
            int rc = call(MPI_Bcast, MPI_Ibcast, buf.get(), static_cast<int>(n), MPI_INT, 0, MPI_COMM_WORLD);
            std::vector<int32_t> want = me == 0 ? root_data : ints(seed + 5, me, 2 * n);
            std::copy(root_data.begin(), root_data.begin() + static_cast<long>(n), want.begin());
            expect(rc, tag + "MPI_Bcast" + at, buf.read<int32_t>(2 * n), want);
            // Every other int: the gaps keep this rank's own values.
            MPI_Datatype every_other;
            MPI_Type_vector(static_cast<int>(n), 1, 2, MPI_INT, &every_other);
            MPI_Type_commit(&every_other);
            const std::vector<int32_t> mine = ints(seed + 6, me, 2 * n), root2 = ints(seed + 6, 0, 2 * n);
            buf.put(mine);
            rc = call(MPI_Bcast, MPI_Ibcast, buf.get(), 1, every_other, 0, MPI_COMM_WORLD);
            want = mine;
            for (size_t i = 0; i < 2 * n; i += 2) want[i] = root2[i];
            expect(rc, tag + "MPI_Bcast of a vector type" + at, buf.read<int32_t>(2 * n), want);
            MPI_Type_free(&every_other);
        }
        {  // MPI_Allgather: MPI_DOUBLE, in place, and into a vector type
            Mem in(place, n * 8), out(place, n * up * 8);
            in.put(doubles(seed + 7, me, n));
            int rc = call(MPI_Allgather, MPI_Iallgather, in.get(), static_cast<int>(n), MPI_DOUBLE, out.get(),
                          static_cast<int>(n), MPI_DOUBLE, MPI_COMM_WORLD);
            std::vector<double> want;
            for (int r = 0; r < p; ++r) {
                const std::vector<double> v = doubles(seed + 7, r, n);
                want.insert(want.end(), v.begin(), v.end());
            }
            expect(rc, tag + "MPI_Allgather" + at, out.read<double>(n * up), want);
            std::vector<double> start(n * up, -7.0);
            const std::vector<double> v = doubles(seed + 7, me, n);
            std::copy(v.begin(), v.end(), start.begin() + static_cast<long>(n * static_cast<size_t>(me)));
            out.put(start);
            rc = call(MPI_Allgather, MPI_Iallgather, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out.get(), static_cast<int>(n),
                      MPI_DOUBLE, MPI_COMM_WORLD);
            expect(rc, tag + "MPI_Allgather in place" + at, out.read<double>(n * up), want);
        }
        movement_calls(place, seed + 100, n, tag, at);
    }
}

using Counter = unsigned long long (*)();

unsigned long long count_of(const char* name) {
    Counter c = reinterpret_cast<Counter>(dlsym(RTLD_DEFAULT, name));
    return c ? c() : ~0ull;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const std::string mode = argc > 1 ? argv[1] : "";
    g_host_only = argc > 2 && std::string(argv[2]) == "--host";
    g_pass = mode == "pass";
    std::string why;
    const int mine = g_host_only || gpu::available(&why) ? 1 : 0;
    int all = 0;
    PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (!mine) std::printf("SKIP: rank %d: no usable GPU: %s\n", g_rank, why.c_str());
        MPI_Finalize();
        return 77;
    }
    if (mode != "pass" && mode != "chorus") {
        if (g_rank == 0) std::fprintf(stderr, "usage: %s pass|chorus\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    if (count_of("chorus_mpi_intercepted_calls") == ~0ull) fail("libchorus_mpi.so is not loaded");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    try {
        for (bool nb : {false, true}) {
            g_nonblocking = nb;
            all_calls(Place::Device, 100, nb ? "device, nonblocking" : "device");
            all_calls(g_rank % 2 == 0 ? Place::Device : Place::Host, 200,
                      nb ? "even ranks device, odd ranks host, nonblocking" : "even ranks device, odd ranks host");
            all_calls(Place::Managed, 300, nb ? "managed, nonblocking" : "managed");
        }
    } catch (const std::exception& e) {
        fail(std::string("threw: ") + e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const unsigned long long in = count_of("chorus_mpi_intercepted_calls");
    const unsigned long long passed = count_of("chorus_mpi_passed_calls");
    if (mode == "pass" && in != 0) fail("CHORUS_MPI_INTERCEPT=none, yet " + std::to_string(in) + " calls intercepted");
    if (mode == "chorus" && (in == 0 || passed == 0))
        fail("expected calls both through Chorus and passed through; got " + std::to_string(in) + " and " +
             std::to_string(passed));
    int local = g_failures, total = 0;
    PMPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        std::printf("%s at np=%d: %s (%llu calls through Chorus, %llu passed to MPI on rank 0)\n", mode.c_str(), g_size,
                    total ? "FAILED" : "passed", in, passed);
    MPI_Finalize();
    return total ? 1 : 0;
}
