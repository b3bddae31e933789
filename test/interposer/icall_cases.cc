// The nonblocking collectives of the interposer's tests (icall_cases.h).
// Inputs come from per-rank seeds; reductions use integers (and floating
// values that are small integers, so every sum is exact in any order), so
// the call under test and MPI's own must agree bit for bit. Inputs, counts
// and displacements live in the case (shared), as long as its calls run.
#include "icall_cases.h"

#include <cstdint>
#include <cstring>

#include "../seeds.h"

namespace icalls {

namespace {

using Ints = std::shared_ptr<std::vector<int>>;

// The call under test (k = 0) or MPI's own (k = 1) of the same arguments.
#define EITHER(k, fn, ...) ((k) ? P##fn(__VA_ARGS__) : fn(__VA_ARGS__))

using Start = std::function<int(int k, unsigned char* out, MPI_Request* request)>;

void add(std::vector<Case>& v, std::string what, bool eligible, const Bytes& initial, Start start) {
    Case c;
    c.what = std::move(what);
    c.eligible = eligible;
    c.out = std::make_shared<std::array<Bytes, 2>>();
    (*c.out)[0] = (*c.out)[1] = initial;
    auto out = c.out;
    c.start = [out, start](int k, MPI_Request* r) { return start(k, (*out)[k].data(), r); };
    v.push_back(std::move(c));
}

// `n` int32 values of rank `r` (small ones when `small`), as bytes (one
// more byte, so that no buffer is empty).
Bytes ints(uint64_t seed, int r, size_t n, bool small = false) {
    Bytes b(n * 4 + 1, 0);
    for (size_t i = 0; i < n; ++i) {
        const uint64_t x = seeds::bits(seed, r, i);
        const int32_t v = small ? static_cast<int32_t>(x % 201) - 100 : static_cast<int32_t>(x);
        std::memcpy(&b[i * 4], &v, 4);
    }
    return b;
}

Bytes doubles(uint64_t seed, int r, size_t n) {
    Bytes b(n * 8 + 1, 0);
    for (size_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(static_cast<int>(seeds::bits(seed, r, i) % 2001) - 1000);
        std::memcpy(&b[i * 8], &v, 8);
    }
    return b;
}

std::shared_ptr<Bytes> shared(Bytes b) {
    return std::make_shared<Bytes>(std::move(b));
}

Bytes sentinel(size_t bytes) {
    return Bytes(bytes + 1, 0xee);
}

// Irregular blocks: rank r's count, zeros included.
int irregular(int r, int p) {
    return p == 1 ? 4 : (r % 3 == 1 ? 0 : r + 2);
}

// Per-rank counts and displacements in reverse rank order with a gap of one
// element after each block; returns the span in elements.
int layout(int p, const std::function<int(int)>& count, std::vector<int>* counts, std::vector<int>* displs) {
    counts->assign(p, 0);
    displs->assign(p, 0);
    int span = 0;
    for (int r = p; r-- > 0;) {
        (*counts)[r] = count(r);
        (*displs)[r] = span;
        span += (*counts)[r] + 1;
    }
    return span;
}

struct Types {
    MPI_Datatype strided = MPI_DATATYPE_NULL;  // ints 0, 2 and 4 of 5
    MPI_Datatype pair = MPI_DATATYPE_NULL;     // two ints
    MPI_Op user_sum = MPI_OP_NULL;
};

void user_sum(void* in, void* inout, int* len, MPI_Datatype*) {
    const int* a = static_cast<const int*>(in);
    int* b = static_cast<int*>(inout);
    for (int i = 0; i < *len; ++i) b[i] = static_cast<int>(static_cast<unsigned>(a[i]) + static_cast<unsigned>(b[i]));
}

Types& types() {
    static Types t = [] {
        Types x;
        MPI_Type_vector(3, 1, 2, MPI_INT, &x.strided);
        MPI_Type_contiguous(2, MPI_INT, &x.pair);
        MPI_Type_commit(&x.strided);
        MPI_Type_commit(&x.pair);
        MPI_Op_create(user_sum, 1, &x.user_sum);
        return x;
    }();
    return t;
}

void reductions(std::vector<Case>& v, MPI_Comm comm, int p, int me, uint64_t& seed) {
    {
        auto in = shared(ints(++seed, me, 1000));
        add(v, "MPI_Iallreduce int sum 1000", true, sentinel(4000), [=](int k, unsigned char* out, MPI_Request* r) {
            return EITHER(k, MPI_Iallreduce, in->data(), out, 1000, MPI_INT, MPI_SUM, comm, r);
        });
    }
    add(v, "MPI_Iallreduce double sum 5 in place", true, doubles(++seed, me, 5),
        [=](int k, unsigned char* out, MPI_Request* r) {
            return EITHER(k, MPI_Iallreduce, MPI_IN_PLACE, out, 5, MPI_DOUBLE, MPI_SUM, comm, r);
        });
    {
        auto in = shared(ints(++seed, me, 1));
        add(v, "MPI_Iallreduce int max count 0", true, sentinel(4), [=](int k, unsigned char* out, MPI_Request* r) {
            return EITHER(k, MPI_Iallreduce, in->data(), out, 0, MPI_INT, MPI_MAX, comm, r);
        });
    }
    {
        const size_t n = size_t{1} << 18;  // 2 MiB: pipelined, several steps in flight
        auto in = shared(doubles(++seed, me, n));
        add(v, "MPI_Iallreduce double sum 2 MiB", true, sentinel(n * 8),
            [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Iallreduce, in->data(), out, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm, r);
            });
    }
    {  // MPI_MAXLOC and a user-defined op: MPI's to compute
        Bytes pairs = ints(++seed, me, 6, true);
        for (int i = 0; i < 3; ++i) std::memcpy(&pairs[(2 * i + 1) * 4], &me, 4);
        auto in = shared(pairs);
        add(v, "MPI_Iallreduce MPI_2INT maxloc", false, sentinel(24), [=](int k, unsigned char* out, MPI_Request* r) {
            return EITHER(k, MPI_Iallreduce, in->data(), out, 3, MPI_2INT, MPI_MAXLOC, comm, r);
        });
        auto in2 = shared(ints(++seed, me, 9));
        const MPI_Op op = types().user_sum;
        add(v, "MPI_Iallreduce user-defined op", false, sentinel(36), [=](int k, unsigned char* out, MPI_Request* r) {
            return EITHER(k, MPI_Iallreduce, in2->data(), out, 9, MPI_INT, op, comm, r);
        });
    }
    for (int root : {0, p - 1}) {
        const bool here = root == p - 1 && me == root;  // in place at the root, at root p - 1
        auto in = shared(ints(++seed, me, 17));
        add(v, "MPI_Ireduce int sum root " + std::to_string(root) + (here ? " in place" : ""), true,
            here ? *in : sentinel(68), [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Ireduce, here ? MPI_IN_PLACE : in->data(), me == root ? out : nullptr, 17, MPI_INT,
                              MPI_SUM, root, comm, r);
            });
    }
    for (bool ip : {false, true}) {
        const int block = 3;
        auto in = shared(doubles(++seed, me, block * p));
        add(v, std::string("MPI_Ireduce_scatter_block double sum") + (ip ? " in place" : ""), true,
            ip ? *in : sentinel(block * 8), [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Ireduce_scatter_block, ip ? MPI_IN_PLACE : in->data(), out, block, MPI_DOUBLE,
                              MPI_SUM, comm, r);
            });
    }
    {
        auto counts = std::make_shared<std::vector<int>>(p);
        int total = 0;
        for (int r = 0; r < p; ++r) total += (*counts)[r] = irregular(r, p);
        auto in = shared(ints(++seed, me, total));
        add(v, "MPI_Ireduce_scatter int sum irregular", true, sentinel((*counts)[me] * 4),
            [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Ireduce_scatter, in->data(), out, counts->data(), MPI_INT, MPI_SUM, comm, r);
            });
    }
}

void movement(std::vector<Case>& v, MPI_Comm comm, int p, int me, uint64_t& seed) {
    for (int root : {p - 1, 0}) {
        Bytes data = ints(++seed, root, 100);
        add(v, "MPI_Ibcast int root " + std::to_string(root), true, me == root ? data : sentinel(400),
            [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Ibcast, out, 100, MPI_INT, root, comm, r);
            });
    }
    {  // derived: packed around the call, unpacked when it completes
        const MPI_Datatype t = types().strided;
        Bytes data = ints(++seed, 0, 4 * 5 + 1);
        add(v, "MPI_Ibcast strided ints", true, me == 0 ? data : sentinel(4 * 5 * 4 + 4),
            [=](int k, unsigned char* out, MPI_Request* r) { return EITHER(k, MPI_Ibcast, out, 4, t, 0, comm, r); });
    }
    for (bool ip : {false, true}) {
        auto in = shared(ints(++seed, me, 5));
        Bytes recv = sentinel(5 * 4 * p);
        if (ip) std::memcpy(&recv[me * 20], in->data(), 20);
        add(v, std::string("MPI_Iallgather int") + (ip ? " in place" : ""), true, recv,
            [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Iallgather, ip ? MPI_IN_PLACE : in->data(), 5, MPI_INT, out, 5, MPI_INT, comm, r);
            });
    }
    {  // six ints sent, received as three pairs
        auto in = shared(ints(++seed, me, 6));
        const MPI_Datatype pair = types().pair;
        add(v, "MPI_Iallgather ints into pairs", true, sentinel(24 * p),
            [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Iallgather, in->data(), 6, MPI_INT, out, 3, pair, comm, r);
            });
    }
    {
        auto counts = std::make_shared<std::vector<int>>(), displs = std::make_shared<std::vector<int>>();
        const int span = layout(
            p, [&](int r) { return irregular(r, p); }, counts.get(), displs.get());
        auto in = shared(ints(++seed, me, (*counts)[me]));
        add(v, "MPI_Iallgatherv int irregular", true, sentinel(span * 4),
            [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Iallgatherv, in->data(), (*counts)[me], MPI_INT, out, counts->data(),
                              displs->data(), MPI_INT, comm, r);
            });
    }
    for (bool ip : {false, true}) {
        auto in = shared(ints(++seed, me, 3 * p));
        add(v, std::string("MPI_Ialltoall int") + (ip ? " in place" : ""), true, ip ? *in : sentinel(12 * p),
            [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Ialltoall, ip ? MPI_IN_PLACE : in->data(), 3, MPI_INT, out, 3, MPI_INT, comm, r);
            });
    }
    {  // rank i sends (i + 2j) % 3 ints to rank j
        auto sc = std::make_shared<std::vector<int>>(), sd = std::make_shared<std::vector<int>>();
        auto rc = std::make_shared<std::vector<int>>(), rd = std::make_shared<std::vector<int>>();
        const int sspan = layout(
            p, [&](int j) { return (me + 2 * j) % 3; }, sc.get(), sd.get());
        const int rspan = layout(
            p, [&](int i) { return (i + 2 * me) % 3; }, rc.get(), rd.get());
        auto in = shared(ints(++seed, me, sspan));
        add(v, "MPI_Ialltoallv int irregular", true, sentinel(rspan * 4),
            [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Ialltoallv, in->data(), sc->data(), sd->data(), MPI_INT, out, rc->data(),
                              rd->data(), MPI_INT, comm, r);
            });
    }
}

void rooted(std::vector<Case>& v, MPI_Comm comm, int p, int me, uint64_t& seed) {
    for (int root : {p - 1, 0}) {
        const bool here = root == 0 && me == root;  // in place at root 0
        const std::string at = " root " + std::to_string(root);
        {
            auto in = shared(ints(++seed, me, 3));
            Bytes recv = sentinel(12 * p);
            if (here) std::memcpy(&recv[me * 12], in->data(), 12);
            add(v, "MPI_Igather int" + at + (here ? " in place" : ""), true, recv,
                [=](int k, unsigned char* out, MPI_Request* r) {
                    return EITHER(k, MPI_Igather, here ? MPI_IN_PLACE : in->data(), 3, MPI_INT,
                                  me == root ? out : nullptr, 3, MPI_INT, root, comm, r);
                });
        }
        {
            auto counts = std::make_shared<std::vector<int>>(), displs = std::make_shared<std::vector<int>>();
            const int span = layout(
                p, [&](int r) { return irregular(r, p); }, counts.get(), displs.get());
            auto in = shared(ints(++seed, me, (*counts)[me]));
            add(v, "MPI_Igatherv int irregular" + at, true, sentinel(span * 4),
                [=](int k, unsigned char* out, MPI_Request* r) {
                    const bool is_root = me == root;
                    return EITHER(k, MPI_Igatherv, in->data(), (*counts)[me], MPI_INT, is_root ? out : nullptr,
                                  is_root ? counts->data() : nullptr, is_root ? displs->data() : nullptr, MPI_INT, root,
                                  comm, r);
                });
        }
        {
            auto in = shared(ints(++seed, root, 4 * p));
            const bool ip = root == p - 1 && me == root && p > 1;  // in place at root p - 1
            add(v, "MPI_Iscatter int" + at + (ip ? " in place" : ""), true, sentinel(16),
                [=](int k, unsigned char* out, MPI_Request* r) {
                    return EITHER(k, MPI_Iscatter, me == root ? in->data() : nullptr, 4, MPI_INT,
                                  ip ? MPI_IN_PLACE : out, 4, MPI_INT, root, comm, r);
                });
        }
        {
            auto counts = std::make_shared<std::vector<int>>(), displs = std::make_shared<std::vector<int>>();
            const int span = layout(
                p, [&](int r) { return irregular(r, p); }, counts.get(), displs.get());
            auto in = shared(ints(++seed, root, span));
            add(v, "MPI_Iscatterv int irregular" + at, true, sentinel((*counts)[me] * 4),
                [=](int k, unsigned char* out, MPI_Request* r) {
                    const bool is_root = me == root;
                    return EITHER(k, MPI_Iscatterv, is_root ? in->data() : nullptr, is_root ? counts->data() : nullptr,
                                  is_root ? displs->data() : nullptr, MPI_INT, out, (*counts)[me], MPI_INT, root, comm,
                                  r);
                });
        }
    }
    add(v, "MPI_Ibarrier", true, Bytes(1, 0),
        [=](int k, unsigned char*, MPI_Request* r) { return EITHER(k, MPI_Ibarrier, comm, r); });
}

}  // namespace

std::vector<Case> all_cases(MPI_Comm comm, MPI_Comm inter, uint64_t seed) {
    int p = 0, me = 0;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    std::vector<Case> v;
    reductions(v, comm, p, me, seed);
    movement(v, comm, p, me, seed);
    rooted(v, comm, p, me, seed);
    if (inter != MPI_COMM_NULL) {  // every rank of both groups reduces the other group's ints
        auto in = shared(ints(++seed, me, 4));
        add(v, "MPI_Iallreduce on an intercommunicator", false, sentinel(16),
            [=](int k, unsigned char* out, MPI_Request* r) {
                return EITHER(k, MPI_Iallreduce, in->data(), out, 4, MPI_INT, MPI_SUM, inter, r);
            });
    }
    return v;
}

std::vector<Case> quick_cases(MPI_Comm comm, uint64_t seed) {
    int p = 0, me = 0;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    std::vector<Case> v;
    auto in = shared(ints(++seed, me, 64));
    add(v, "MPI_Iallreduce int sum 64", true, sentinel(256), [=](int k, unsigned char* out, MPI_Request* r) {
        return EITHER(k, MPI_Iallreduce, in->data(), out, 64, MPI_INT, MPI_SUM, comm, r);
    });
    const int root = static_cast<int>(seed % static_cast<uint64_t>(p));
    Bytes data = ints(++seed, root, 300);
    add(v, "MPI_Ibcast int 300", true, me == root ? data : sentinel(1200),
        [=](int k, unsigned char* out, MPI_Request* r) {
            return EITHER(k, MPI_Ibcast, out, 300, MPI_INT, root, comm, r);
        });
    auto all = shared(ints(++seed, me, 2 * p));
    add(v, "MPI_Ialltoall int 2", true, sentinel(8 * p), [=](int k, unsigned char* out, MPI_Request* r) {
        return EITHER(k, MPI_Ialltoall, all->data(), 2, MPI_INT, out, 2, MPI_INT, comm, r);
    });
    add(v, "MPI_Ibarrier", true, Bytes(1, 0),
        [=](int k, unsigned char*, MPI_Request* r) { return EITHER(k, MPI_Ibarrier, comm, r); });
    return v;
}

void free_types() {
    Types& t = types();
    MPI_Type_free(&t.strided);
    MPI_Type_free(&t.pair);
    MPI_Op_free(&t.user_sum);
}

}  // namespace icalls
