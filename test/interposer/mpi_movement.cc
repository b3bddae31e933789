// Broadcast and all-gather on every datatype (predefined and derived, with
// layouts that differ between ranks), derived and freed communicators, and
// the calls that must pass through to MPI.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "check_util.h"

namespace checks {

namespace {

using Bytes = std::vector<unsigned char>;

void movement_of(Ctx& c, const char* name, MPI_Datatype type) {
    const int p = c.size, me = c.rank;
    int es = 0;
    MPI_Type_size(type, &es);
    for (int root : {0, p - 1}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{1000}}) {
            const uint64_t seed = ++c.seed;
            const Bytes want = seeded_bytes(seed, root, count * es);
            Bytes buf = me == root ? want : Bytes(count * es + 1, 0xee);
            int rc = MPI_Bcast(buf.data(), (int)count, type, root, MPI_COMM_WORLD);
            c.check(rc, std::string("MPI_Bcast ") + name + " root " + std::to_string(root) + " count " +
                            std::to_string(count), buf, want, count * es, true);
        }
    }
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}}) {
        for (bool in_place : {false, true}) {
            const uint64_t seed = ++c.seed;
            const size_t block = count * es;
            Bytes want(block * p + 1), recv(block * p + 1, 0xee);
            for (int r = 0; r < p; ++r) {
                Bytes b = seeded_bytes(seed, r, block);
                std::copy(b.begin(), b.begin() + block, want.begin() + r * block);
            }
            const Bytes mine = seeded_bytes(seed, me, block);
            int rc;
            if (in_place) {
                std::copy(mine.begin(), mine.begin() + block, recv.begin() + me * block);
                rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), (int)count, type, MPI_COMM_WORLD);
            } else {
                rc = MPI_Allgather(mine.data(), (int)count, type, recv.data(), (int)count, type, MPI_COMM_WORLD);
            }
            c.check(rc, std::string("MPI_Allgather ") + name + " count " + std::to_string(count) +
                            (in_place ? " in place" : ""), recv, want, block * p, true);
        }
    }
}

// Derived datatypes: only the type signatures must match across ranks, so
// ranks may describe the same data differently.
void derived(Ctx& c) {
    const int p = c.size, me = c.rank, root = p - 1;
    const std::string at = " (np " + std::to_string(p) + ")";
    MPI_Datatype pair, strided, rec, gapped;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &strided);  // 4 doubles, one every other, extent 7 doubles
    int lens[2] = {1, 1};
    MPI_Aint disps[2] = {0, 8};
    MPI_Datatype members[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, lens, disps, members, &rec);  // int, 4 bytes of padding, double
    MPI_Type_vector(2, 1, 2, MPI_INT, &gapped);            // ints 0 and 2 of 3
    for (MPI_Datatype* t : {&pair, &strided, &rec, &gapped}) MPI_Type_commit(t);

    {  // The root sends 6 ints; the others receive 3 pairs of ints.
        std::vector<int> want(7), buf(7, -1);
        for (int i = 0; i < 6; ++i) want[i] = (int)bits(++c.seed, root, i);
        if (me == root) buf = want;
        int rc = me == root ? MPI_Bcast(buf.data(), 6, MPI_INT, root, MPI_COMM_WORLD)
                            : MPI_Bcast(buf.data(), 3, pair, root, MPI_COMM_WORLD);
        c.check(rc, "MPI_Bcast MPI_INT x6 at the root, contiguous pairs x3 elsewhere" + at, buf, want, 6, true);
    }
    {  // The root sends from a strided layout; the others receive 8 doubles.
        std::vector<double> from(14), buf(9, -1.0), want(9, -1.0);
        for (int i = 0; i < 14; ++i) from[i] = i * 1.5 + 100 * c.seed;
        for (int k = 0; k < 8; ++k) want[k] = from[(k / 4) * 7 + (k % 4) * 2];
        int rc = me == root ? MPI_Bcast(from.data(), 2, strided, root, MPI_COMM_WORLD)
                            : MPI_Bcast(buf.data(), 8, MPI_DOUBLE, root, MPI_COMM_WORLD);
        c.check(rc, "MPI_Bcast strided at the root, MPI_DOUBLE x8 elsewhere" + at, me == root ? want : buf, want, 8,
                true);
    }
    {  // Records with padding: the padding must stay as it was.
        const uint64_t seed = ++c.seed;
        const Bytes src = seeded_bytes(seed, root, 48);
        Bytes buf = me == root ? src : Bytes(49, 0xee), want = buf;
        for (int e = 0; e < 3; ++e)
            for (int b = 0; b < 16; ++b)
                if (b < 4 || b >= 8) want[e * 16 + b] = src[e * 16 + b];
        int rc = MPI_Bcast(buf.data(), 3, rec, root, MPI_COMM_WORLD);
        c.check(rc, "MPI_Bcast struct {int; double} x3" + at, buf, want, 48, true);
    }
    {  // Send 2 ints, receive one pair per rank.
        std::vector<int> mine = {me * 10 + 1, me * 10 + 2}, recv(2 * p + 1, -1), want(2 * p + 1, -1);
        for (int r = 0; r < p; ++r) want[2 * r] = r * 10 + 1, want[2 * r + 1] = r * 10 + 2;
        int rc = MPI_Allgather(mine.data(), 2, MPI_INT, recv.data(), 1, pair, MPI_COMM_WORLD);
        c.check(rc, "MPI_Allgather MPI_INT x2 into pairs" + at, recv, want, 2 * p, true);
    }
    {  // Send one pair, receive 2 ints per rank.
        std::vector<int> mine = {me * 10 + 3, me * 10 + 4}, recv(2 * p + 1, -1), want(2 * p + 1, -1);
        for (int r = 0; r < p; ++r) want[2 * r] = r * 10 + 3, want[2 * r + 1] = r * 10 + 4;
        int rc = MPI_Allgather(mine.data(), 1, pair, recv.data(), 2, MPI_INT, MPI_COMM_WORLD);
        c.check(rc, "MPI_Allgather one pair into MPI_INT x2" + at, recv, want, 2 * p, true);
    }
    {  // In place into a gapped layout: block r at ints 3r and 3r+2.
        std::vector<int> recv(3 * p + 1, -1), want(3 * p + 1, -1);
        for (int r = 0; r < p; ++r) want[3 * r] = r * 7 + 1, want[3 * r + 2] = r * 7 + 2;
        recv[3 * me] = me * 7 + 1;
        recv[3 * me + 2] = me * 7 + 2;
        int rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), 1, gapped, MPI_COMM_WORLD);
        c.check(rc, "MPI_Allgather in place, gapped receive type" + at, recv, want, 3 * p, true);
    }
    for (MPI_Datatype* t : {&pair, &strided, &rec, &gapped}) MPI_Type_free(t);
}

// World ranks of `comm`'s members, by their rank in `comm`.
std::vector<int> world_ranks(MPI_Comm comm) {
    MPI_Group g, w;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    int n = 0;
    MPI_Group_size(g, &n);
    std::vector<int> local(n), world(n);
    for (int i = 0; i < n; ++i) local[i] = i;
    MPI_Group_translate_ranks(g, n, local.data(), w, world.data());
    MPI_Group_free(&g);
    MPI_Group_free(&w);
    return world;
}

// Every collective once on `comm`, against references from world-rank seeds.
void on_comm(Ctx& c, MPI_Comm comm, const std::string& label) {
    const std::vector<int> members = world_ranks(comm);
    const int n = (int)members.size();
    int me = 0;
    MPI_Comm_rank(comm, &me);
    const uint64_t seed = ++c.seed;
    const int count = 10;
    auto value = [&](int sub_rank, int i) { return (int)(bits(seed, members[sub_rank], i) % 1000); };
    std::vector<int> in(count + 1), sum(count + 1, 0), out(count + 1, -1);
    for (int i = 0; i < count; ++i) {
        in[i] = value(me, i);
        for (int r = 0; r < n; ++r) sum[i] += value(r, i);
    }
    c.check(MPI_Allreduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, comm), "MPI_Allreduce on " + label, out, sum,
            count, true);
    std::vector<int> red(count + 1, -1);
    c.check(MPI_Reduce(in.data(), red.data(), count, MPI_INT, MPI_SUM, n - 1, comm), "MPI_Reduce on " + label, red, sum,
            me == n - 1 ? count : 0, true);
    std::vector<int> bc = in, root_in(count + 1);
    for (int i = 0; i < count; ++i) root_in[i] = value(0, i);
    c.check(MPI_Bcast(bc.data(), count, MPI_INT, 0, comm), "MPI_Bcast on " + label, bc, root_in, count, true);
    std::vector<int> all(n * 2 + 1, -1), want(n * 2 + 1, -1);
    for (int r = 0; r < n; ++r) want[2 * r] = value(r, 0), want[2 * r + 1] = value(r, 1);
    c.check(MPI_Allgather(in.data(), 2, MPI_INT, all.data(), 2, MPI_INT, comm), "MPI_Allgather on " + label, all, want,
            2 * n, true);
}

}  // namespace

void all_movement(Ctx& c) {
    const struct {
        const char* name;
        MPI_Datatype type;
    } types[] = {
        {"MPI_CHAR", MPI_CHAR},           {"MPI_SIGNED_CHAR", MPI_SIGNED_CHAR},
        {"MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR}, {"MPI_BYTE", MPI_BYTE},
        {"MPI_SHORT", MPI_SHORT},         {"MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT},
        {"MPI_INT", MPI_INT},             {"MPI_UNSIGNED", MPI_UNSIGNED},
        {"MPI_LONG", MPI_LONG},           {"MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG},
        {"MPI_LONG_LONG", MPI_LONG_LONG}, {"MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG},
        {"MPI_INT8_T", MPI_INT8_T},       {"MPI_UINT8_T", MPI_UINT8_T},
        {"MPI_INT16_T", MPI_INT16_T},     {"MPI_UINT16_T", MPI_UINT16_T},
        {"MPI_INT32_T", MPI_INT32_T},     {"MPI_UINT32_T", MPI_UINT32_T},
        {"MPI_INT64_T", MPI_INT64_T},     {"MPI_UINT64_T", MPI_UINT64_T},
        {"MPI_FLOAT", MPI_FLOAT},         {"MPI_DOUBLE", MPI_DOUBLE},
        {"MPI_C_BOOL", MPI_C_BOOL},
    };
    for (const auto& t : types) movement_of(c, t.name, t.type);
    derived(c);
    // A broadcast large enough to be pipelined.
    const Bytes want = seeded_bytes(++c.seed, 0, 1 << 22);
    Bytes buf = c.rank == 0 ? want : Bytes(want.size(), 0);
    c.check(MPI_Bcast(buf.data(), 1 << 22, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast of 4 MiB", buf, want, 1 << 22,
            true);
}

void communicators(Ctx& c) {
    for (int round = 0; round < 3; ++round) {  // freed, then made again
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        on_comm(c, dup, "a duplicate of MPI_COMM_WORLD, round " + std::to_string(round));
        on_comm(c, MPI_COMM_WORLD, "MPI_COMM_WORLD between uses of a duplicate");
        on_comm(c, dup, "the same duplicate again");
        MPI_Comm_free(&dup);
    }
    MPI_Comm half;  // even and odd ranks, in reverse order
    MPI_Comm_split(MPI_COMM_WORLD, c.rank % 2, -c.rank, &half);
    on_comm(c, half, "a split communicator");
    MPI_Comm quarter;
    MPI_Comm_split(half, c.rank % 4 < 2 ? 0 : 1, c.rank, &quarter);
    on_comm(c, quarter, "a split of a split communicator");
    MPI_Comm_free(&quarter);
    on_comm(c, half, "the split communicator after freeing its split");
    MPI_Comm_free(&half);
    on_comm(c, MPI_COMM_SELF, "MPI_COMM_SELF");
}

namespace {
void int_sum(void* in, void* inout, int* len, MPI_Datatype*) {
    for (int i = 0; i < *len; ++i) static_cast<int*>(inout)[i] += static_cast<int*>(in)[i];
}
}  // namespace

void pass_through(Ctx& c) {
    const int p = c.size, me = c.rank;
    {  // MPI_MAXLOC
        struct {
            int value, index;
        } in = {(me * 3) % 5, me}, out = {-1, -1}, want = {-1, -1};
        for (int r = 0; r < p; ++r)
            if ((r * 3) % 5 > want.value) want = {(r * 3) % 5, r};
        int rc = MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
        c.check(rc, "MPI_Allreduce MPI_2INT MPI_MAXLOC", std::vector<int>{out.value, out.index},
                std::vector<int>{want.value, want.index}, 2, false);
    }
    {  // MPI_MINLOC on MPI_DOUBLE_INT through MPI_Reduce
        struct {
            double value;
            int index;
        } in = {double((me * 3) % 5), me}, out = {-1, -1};
        double want = 10;
        for (int r = 0; r < p; ++r) want = std::min(want, double((r * 3) % 5));
        int rc = MPI_Reduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MINLOC, 0, MPI_COMM_WORLD);
        c.check(rc, "MPI_Reduce MPI_DOUBLE_INT MPI_MINLOC", std::vector<double>{me == 0 ? out.value : want},
                std::vector<double>{want}, 1, false);
    }
    {  // A user-defined op
        MPI_Op op;
        MPI_Op_create(int_sum, 1, &op);
        std::vector<int> in = {me, 2 * me, 1}, out(3, -1), want = {p * (p - 1) / 2, p * (p - 1), p};
        c.check(MPI_Allreduce(in.data(), out.data(), 3, MPI_INT, op, MPI_COMM_WORLD), "MPI_Allreduce user op", out,
                want, 3, false);
        MPI_Op_free(&op);
    }
    {  // MPI_BYTE takes no reduction in Chorus; long double is not mapped
        std::vector<unsigned char> in = {(unsigned char)(1 << (me % 8)), 0x80}, out(2, 0), want = {0, 0x80};
        for (int r = 0; r < p; ++r) want[0] |= (unsigned char)(1 << (r % 8));
        c.check(MPI_Allreduce(in.data(), out.data(), 2, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD), "MPI_Allreduce MPI_BYTE bor",
                out, want, 2, false);
        long double x = me + 1, sum = 0;
        int rc = MPI_Allreduce(&x, &sum, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        c.check(rc, "MPI_Allreduce MPI_LONG_DOUBLE sum", std::vector<double>{(double)sum},
                std::vector<double>{p * (p + 1) / 2.0}, 1, false);
    }
    if (p >= 2) {  // An intercommunicator between even and odd ranks
        MPI_Comm local, inter;
        MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, me % 2 ? 0 : 1, 77, &inter);
        int in = me + 1, out = -1, want = 0;
        for (int r = 0; r < p; ++r)
            if (r % 2 != me % 2) want += r + 1;  // an intercommunicator reduces the other group
        int rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, inter);
        c.check(rc, "MPI_Allreduce on an intercommunicator", std::vector<int>{out}, std::vector<int>{want}, 1, false);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
    }
}

}  // namespace checks
