// All-gather of irregular blocks, all-to-all(v), gather(v), scatter(v) and
// barrier under the interposer: irregular counts with zeros, blocks out of
// order with gaps (which must stay untouched), the MPI_IN_PLACE forms,
// root-only arguments left invalid away from the root, and derived
// datatypes that differ between ranks. References come from per-rank seeds.
#include <time.h>

#include <algorithm>
#include <string>
#include <vector>

#include "check_util.h"

namespace checks {

namespace {

using Bytes = std::vector<unsigned char>;

// Blocks of counts[i] elements in reverse rank order, each followed by a gap
// of one element: the displacements, and the span in elements.
struct Plan {
    std::vector<int> counts, displs;
    size_t span = 0;
};

Plan reversed(std::vector<int> counts) {
    Plan pl;
    pl.displs.resize(counts.size());
    for (size_t i = counts.size(); i-- > 0;) {
        pl.displs[i] = (int)pl.span;
        pl.span += counts[i] + 1;
    }
    pl.counts = std::move(counts);
    return pl;
}

// Blocks in rank order, each followed by a gap of `gap` elements.
Plan forward(std::vector<int> counts, int gap) {
    Plan pl;
    pl.displs.resize(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) {
        pl.displs[i] = (int)pl.span;
        pl.span += counts[i] + gap;
    }
    pl.counts = std::move(counts);
    return pl;
}

// Irregular counts with zeros: 0 for ranks 1, 4, ...; r + 2 otherwise.
std::vector<int> irregular(int p) {
    std::vector<int> v(p);
    for (int r = 0; r < p; ++r) v[r] = r % 3 == 1 ? 0 : r + 2;
    return v;
}

// The data rank `from` sends to rank `to` (n elements of es bytes).
Bytes piece(uint64_t seed, int p, int from, int to, size_t n, int es) {
    return seeded_bytes(seed, from * p + to, n * es);
}

void put(Bytes& buf, size_t at_elem, int es, const Bytes& b, size_t n) {
    std::copy(b.begin(), b.begin() + n * es, buf.begin() + at_elem * es);
}

const char* in_place_note(bool ip) {
    return ip ? " in place" : "";
}

void predefined(Ctx& c, const std::string& name, MPI_Datatype type, int es) {
    const int p = c.size, me = c.rank;
    const std::string at = " " + name + " (np " + std::to_string(p) + ")";
    for (bool ip : {false, true}) {  // MPI_Allgatherv
        const uint64_t seed = ++c.seed;
        const Plan pl = reversed(irregular(p));
        Bytes recv((pl.span + 1) * es, 0xee), want = recv;
        for (int r = 0; r < p; ++r) put(want, pl.displs[r], es, piece(seed, p, r, 0, pl.counts[r], es), pl.counts[r]);
        const Bytes mine = piece(seed, p, me, 0, pl.counts[me], es);
        if (ip) put(recv, pl.displs[me], es, mine, pl.counts[me]);
        int rc = MPI_Allgatherv(ip ? MPI_IN_PLACE : mine.data(), pl.counts[me], type, recv.data(), pl.counts.data(),
                                pl.displs.data(), type, MPI_COMM_WORLD);
        c.check(rc, std::string("MPI_Allgatherv") + in_place_note(ip) + at, recv, want, recv.size(), true);
    }
    {  // MPI_Allgatherv with negative displacements: recvbuf past every block
        const uint64_t seed = ++c.seed;
        const Plan pl = forward(irregular(p), 1);
        Bytes recv((pl.span + 1) * es, 0xee), want = recv;
        std::vector<int> before(p);
        for (int r = 0; r < p; ++r) {
            put(want, pl.displs[r], es, piece(seed, p, r, 0, pl.counts[r], es), pl.counts[r]);
            before[r] = pl.displs[r] - static_cast<int>(pl.span);
        }
        const Bytes mine = piece(seed, p, me, 0, pl.counts[me], es);
        int rc = MPI_Allgatherv(mine.data(), pl.counts[me], type, recv.data() + pl.span * es, pl.counts.data(),
                                before.data(), type, MPI_COMM_WORLD);
        c.check(rc, "MPI_Allgatherv, negative displacements" + at, recv, want, recv.size(), true);
    }
    for (int count : {0, 1, 5}) {  // MPI_Alltoall
        for (bool ip : {false, true}) {
            const uint64_t seed = ++c.seed;
            Bytes send(p * count * es + 1), recv(p * count * es + 1, 0xee), want = recv;
            for (int j = 0; j < p; ++j) put(send, j * count, es, piece(seed, p, me, j, count, es), count);
            for (int i = 0; i < p; ++i) put(want, i * count, es, piece(seed, p, i, me, count, es), count);
            if (ip) std::copy(send.begin(), send.end() - 1, recv.begin());
            int rc =
                MPI_Alltoall(ip ? MPI_IN_PLACE : send.data(), count, type, recv.data(), count, type, MPI_COMM_WORLD);
            c.check(rc, "MPI_Alltoall count " + std::to_string(count) + in_place_note(ip) + at, recv, want, recv.size(),
                    true);
        }
    }
    for (bool ip : {false, true}) {  // MPI_Alltoallv: rank i sends f(i, j) elements to j
        const uint64_t seed = ++c.seed;
        auto f = [&](int i, int j) { return ip ? (i + j + 1) % 3 : (i + 2 * j) % 3 * 2; };  // symmetric in place
        std::vector<int> sc(p), rcounts(p);
        for (int j = 0; j < p; ++j) sc[j] = f(me, j), rcounts[j] = f(j, me);
        const Plan sp = reversed(sc);
        const Plan rp = forward(rcounts, 2);
        Bytes send((sp.span + 1) * es), recv((rp.span + 1) * es, 0xee), want = recv;
        for (int j = 0; j < p; ++j) put(send, sp.displs[j], es, piece(seed, p, me, j, sc[j], es), sc[j]);
        for (int i = 0; i < p; ++i) put(want, rp.displs[i], es, piece(seed, p, i, me, rcounts[i], es), rcounts[i]);
        if (ip)
            for (int j = 0; j < p; ++j) put(recv, rp.displs[j], es, piece(seed, p, me, j, sc[j], es), sc[j]);
        int rc = MPI_Alltoallv(ip ? MPI_IN_PLACE : send.data(), sp.counts.data(), sp.displs.data(), type, recv.data(),
                               rp.counts.data(), rp.displs.data(), type, MPI_COMM_WORLD);
        c.check(rc, std::string("MPI_Alltoallv") + in_place_note(ip) + at, recv, want, recv.size(), true);
    }
    for (int root : {0, p - 1}) {
        const std::string r_at = " root " + std::to_string(root) + at;
        const bool is_root = me == root;
        for (bool ip : {false, true}) {
            const bool here = ip && is_root;
            {  // MPI_Gather of 3 elements; away from the root, the receive arguments are invalid
                const uint64_t seed = ++c.seed;
                const int count = 3;
                Bytes recv(p * count * es + 1, 0xee), want = recv;
                for (int i = 0; i < p; ++i) put(want, i * count, es, piece(seed, p, i, root, count, es), count);
                const Bytes mine = piece(seed, p, me, root, count, es);
                if (here) put(recv, me * count, es, mine, count);
                int rc =
                    is_root ? MPI_Gather(here ? MPI_IN_PLACE : mine.data(), count, type, recv.data(), count, type, root,
                                         MPI_COMM_WORLD)
                            : MPI_Gather(mine.data(), count, type, nullptr, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
                c.check(rc, std::string("MPI_Gather") + in_place_note(ip) + r_at, recv, want, is_root ? recv.size() : 0,
                        true);
            }
            {  // MPI_Gatherv
                const uint64_t seed = ++c.seed;
                const Plan pl = reversed(irregular(p));
                Bytes recv((pl.span + 1) * es, 0xee), want = recv;
                for (int i = 0; i < p; ++i)
                    put(want, pl.displs[i], es, piece(seed, p, i, root, pl.counts[i], es), pl.counts[i]);
                const Bytes mine = piece(seed, p, me, root, pl.counts[me], es);
                if (here) put(recv, pl.displs[me], es, mine, pl.counts[me]);
                int rc = is_root ? MPI_Gatherv(here ? MPI_IN_PLACE : mine.data(), pl.counts[me], type, recv.data(),
                                               pl.counts.data(), pl.displs.data(), type, root, MPI_COMM_WORLD)
                                 : MPI_Gatherv(mine.data(), pl.counts[me], type, nullptr, nullptr, nullptr,
                                               MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
                c.check(rc, std::string("MPI_Gatherv") + in_place_note(ip) + r_at, recv, want,
                        is_root ? recv.size() : 0, true);
            }
            {  // MPI_Scatter of 4 elements
                const uint64_t seed = ++c.seed;
                const int count = 4;
                Bytes send(p * count * es + 1), recv(count * es + 1, 0xee);
                for (int j = 0; j < p; ++j) put(send, j * count, es, piece(seed, p, root, j, count, es), count);
                Bytes want = recv;
                put(want, 0, es, piece(seed, p, root, me, count, es), count);
                int rc = is_root ? MPI_Scatter(send.data(), count, type, here ? MPI_IN_PLACE : recv.data(), count, type,
                                               root, MPI_COMM_WORLD)
                                 : MPI_Scatter(nullptr, 0, MPI_DATATYPE_NULL, recv.data(), count, type, root,
                                               MPI_COMM_WORLD);
                Bytes got = recv;
                if (here) std::copy(send.begin() + me * count * es, send.begin() + (me + 1) * count * es, got.begin());
                c.check(rc, std::string("MPI_Scatter") + in_place_note(ip) + r_at, got, want, got.size(), true);
            }
            {  // MPI_Scatterv
                const uint64_t seed = ++c.seed;
                const Plan pl = reversed(irregular(p));
                Bytes send((pl.span + 1) * es, 0x55), recv((pl.counts[me] + 1) * es, 0xee);
                for (int j = 0; j < p; ++j)
                    put(send, pl.displs[j], es, piece(seed, p, root, j, pl.counts[j], es), pl.counts[j]);
                Bytes want = recv;
                put(want, 0, es, piece(seed, p, root, me, pl.counts[me], es), pl.counts[me]);
                const Bytes before = send;
                int rc =
                    is_root ? MPI_Scatterv(send.data(), pl.counts.data(), pl.displs.data(), type,
                                           here ? MPI_IN_PLACE : recv.data(), pl.counts[me], type, root, MPI_COMM_WORLD)
                            : MPI_Scatterv(nullptr, nullptr, nullptr, MPI_DATATYPE_NULL, recv.data(), pl.counts[me],
                                           type, root, MPI_COMM_WORLD);
                Bytes got = recv;
                if (here) put(got, 0, es, Bytes(send.begin() + pl.displs[me] * es, send.end()), pl.counts[me]);
                c.check(rc, std::string("MPI_Scatterv") + in_place_note(ip) + r_at, got, want, got.size(), true);
                if (is_root && send != before) c.fail("MPI_Scatterv wrote its send buffer" + r_at);
            }
        }
    }
}

// Derived datatypes: the ranks that receive see their data through one
// type, the ranks that send through another, and only the signatures match.
// `gapped` is ints 0 and 2 of 3 (extent 3 ints); `pair` two ints.
void derived(Ctx& c) {
    const int p = c.size, me = c.rank;
    const std::string at = " (np " + std::to_string(p) + ")";
    MPI_Datatype pair, gapped;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_vector(2, 1, 2, MPI_INT, &gapped);
    MPI_Type_commit(&pair);
    MPI_Type_commit(&gapped);
    auto v = [&](int from, int to, int k) { return (int)(bits(c.seed, from * p + to, k) % 100000); };
    // Element e of a gapped block at displacement d: ints 3 (d + e) and 3 (d + e) + 2.
    auto put_gapped = [](std::vector<int>& buf, int d, int e, int a, int b) {
        buf[3 * (d + e)] = a;
        buf[3 * (d + e) + 2] = b;
    };
    for (bool ip : {false, true}) {  // MPI_Allgatherv: MPI_INT x 2n sent, n gapped elements received
        ++c.seed;
        const Plan pl = reversed(irregular(p));
        std::vector<int> mine(2 * pl.counts[me] + 1), recv(3 * pl.span + 1, -1), want = recv;
        for (int k = 0; k < 2 * pl.counts[me]; ++k) mine[k] = v(me, 0, k);
        for (int r = 0; r < p; ++r)
            for (int e = 0; e < pl.counts[r]; ++e)
                put_gapped(want, pl.displs[r], e, v(r, 0, 2 * e), v(r, 0, 2 * e + 1));
        if (ip)
            for (int e = 0; e < pl.counts[me]; ++e) put_gapped(recv, pl.displs[me], e, mine[2 * e], mine[2 * e + 1]);
        int rc = ip ? MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), pl.counts.data(),
                                     pl.displs.data(), gapped, MPI_COMM_WORLD)
                    : MPI_Allgatherv(mine.data(), 2 * pl.counts[me], MPI_INT, recv.data(), pl.counts.data(),
                                     pl.displs.data(), gapped, MPI_COMM_WORLD);
        c.check(rc, std::string("MPI_Allgatherv into gapped") + in_place_note(ip) + at, recv, want, recv.size(), true);
    }
    for (bool ip : {false, true}) {  // MPI_Alltoall: 2 ints per block sent, one pair received (or gapped in place)
        ++c.seed;
        std::vector<int> send(2 * p + 1), recv(3 * p + 1, -1), want = recv;
        for (int j = 0; j < p; ++j) send[2 * j] = v(me, j, 0), send[2 * j + 1] = v(me, j, 1);
        for (int i = 0; i < p; ++i) {
            if (ip)
                put_gapped(want, i, 0, v(i, me, 0), v(i, me, 1));
            else
                want[2 * i] = v(i, me, 0), want[2 * i + 1] = v(i, me, 1);
        }
        if (ip)
            for (int j = 0; j < p; ++j) put_gapped(recv, j, 0, send[2 * j], send[2 * j + 1]);
        int rc = ip ? MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), 1, gapped, MPI_COMM_WORLD)
                    : MPI_Alltoall(send.data(), 2, MPI_INT, recv.data(), 1, pair, MPI_COMM_WORLD);
        c.check(rc, std::string(ip ? "MPI_Alltoall gapped in place" : "MPI_Alltoall MPI_INT x2 into pairs") + at, recv,
                want, recv.size(), true);
    }
    {  // MPI_Alltoallv: rank i sends (i + j) % 3 gapped elements to j; j receives them as pairs
        ++c.seed;
        std::vector<int> sc(p), rcounts(p);
        for (int j = 0; j < p; ++j) sc[j] = (me + j) % 3, rcounts[j] = (j + me) % 3;
        const Plan sp = reversed(sc), rp = forward(rcounts, 1);
        std::vector<int> send(3 * sp.span + 1, -7), recv(2 * rp.span + 1, -1), want = recv;
        for (int j = 0; j < p; ++j)
            for (int e = 0; e < sc[j]; ++e) put_gapped(send, sp.displs[j], e, v(me, j, 2 * e), v(me, j, 2 * e + 1));
        for (int i = 0; i < p; ++i)
            for (int k = 0; k < 2 * rcounts[i]; ++k) want[2 * rp.displs[i] + k] = v(i, me, k);
        int rc = MPI_Alltoallv(send.data(), sp.counts.data(), sp.displs.data(), gapped, recv.data(), rp.counts.data(),
                               rp.displs.data(), pair, MPI_COMM_WORLD);
        c.check(rc, "MPI_Alltoallv gapped into pairs" + at, recv, want, recv.size(), true);
    }
    for (int root : {0, p - 1}) {
        const bool is_root = me == root;
        const std::string r_at = " root " + std::to_string(root) + at;
        for (bool ip : {false, true}) {  // MPI_Gatherv: pairs sent, gapped at the root
            ++c.seed;
            const bool here = ip && is_root;
            const Plan pl = reversed(irregular(p));
            std::vector<int> mine(2 * pl.counts[me] + 1), recv(3 * pl.span + 1, -1), want = recv;
            for (int k = 0; k < 2 * pl.counts[me]; ++k) mine[k] = v(me, root, k);
            for (int r = 0; r < p; ++r)
                for (int e = 0; e < pl.counts[r]; ++e)
                    put_gapped(want, pl.displs[r], e, v(r, root, 2 * e), v(r, root, 2 * e + 1));
            if (here)
                for (int e = 0; e < pl.counts[me]; ++e)
                    put_gapped(recv, pl.displs[me], e, mine[2 * e], mine[2 * e + 1]);
            int rc = MPI_Gatherv(here ? MPI_IN_PLACE : mine.data(), pl.counts[me], pair, recv.data(), pl.counts.data(),
                                 pl.displs.data(), gapped, root, MPI_COMM_WORLD);
            c.check(rc, std::string("MPI_Gatherv pairs into gapped") + in_place_note(ip) + r_at, recv, want,
                    is_root ? recv.size() : 0, true);
        }
        {  // MPI_Gather: one pair per rank at the root, MPI_INT x2 sent
            ++c.seed;
            std::vector<int> mine = {v(me, root, 0), v(me, root, 1)}, recv(2 * p + 1, -1), want = recv;
            for (int r = 0; r < p; ++r) want[2 * r] = v(r, root, 0), want[2 * r + 1] = v(r, root, 1);
            int rc = MPI_Gather(mine.data(), 2, MPI_INT, recv.data(), 1, pair, root, MPI_COMM_WORLD);
            c.check(rc, "MPI_Gather MPI_INT x2 into pairs" + r_at, recv, want, is_root ? recv.size() : 0, true);
        }
        {  // MPI_Scatter and MPI_Scatterv: gapped at the root, received as MPI_INT
            ++c.seed;
            const Plan pl = reversed(irregular(p));
            std::vector<int> send(3 * pl.span + 1, -7), recv(2 * pl.counts[me] + 1, -1), want = recv;
            for (int j = 0; j < p; ++j)
                for (int e = 0; e < pl.counts[j]; ++e)
                    put_gapped(send, pl.displs[j], e, v(root, j, 2 * e), v(root, j, 2 * e + 1));
            for (int k = 0; k < 2 * pl.counts[me]; ++k) want[k] = v(root, me, k);
            int rc = MPI_Scatterv(send.data(), pl.counts.data(), pl.displs.data(), gapped, recv.data(),
                                  2 * pl.counts[me], MPI_INT, root, MPI_COMM_WORLD);
            c.check(rc, "MPI_Scatterv gapped into MPI_INT" + r_at, recv, want, recv.size(), true);
            std::vector<int> one(3 * p, -7), got(3, -1), w = {-1, -1, -1};
            for (int j = 0; j < p; ++j) put_gapped(one, j, 0, v(root, j, 5), v(root, j, 6));
            w[0] = v(root, me, 5), w[1] = v(root, me, 6);
            rc = MPI_Scatter(one.data(), 1, gapped, got.data(), 1, pair, root, MPI_COMM_WORLD);
            c.check(rc, "MPI_Scatter gapped into a pair" + r_at, got, w, got.size(), true);
        }
    }
    MPI_Type_free(&pair);
    MPI_Type_free(&gapped);
}

double now() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);  // one clock for every process on the host
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// No rank leaves the barrier before the last one (which arrives late) has
// entered it. The ranks share a host, and so the clock.
void barrier(Ctx& c, MPI_Comm comm, const std::string& label) {
    int p = 0, me = 0;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    for (int late : {0, p - 1}) {
        if (me == late) {
            const timespec nap = {0, 20 * 1000 * 1000};
            nanosleep(&nap, nullptr);
        }
        const double entered = now();
        const int rc = MPI_Barrier(comm);
        const double left = now();
        double times[2] = {-entered, left}, agreed[2];
        PMPI_Allreduce(times, agreed, 2, MPI_DOUBLE, MPI_MIN, comm);  // the latest entry, the earliest exit
        c.check(rc, "MPI_Barrier on " + label, std::vector<int>{-agreed[0] <= agreed[1]}, std::vector<int>{1}, 1, true);
    }
}

}  // namespace

void vector_movement(Ctx& c) {
    predefined(c, "MPI_CHAR", MPI_CHAR, 1);
    predefined(c, "MPI_SHORT", MPI_SHORT, 2);
    predefined(c, "MPI_INT", MPI_INT, 4);
    predefined(c, "MPI_DOUBLE", MPI_DOUBLE, 8);
    derived(c);
    barrier(c, MPI_COMM_WORLD, "MPI_COMM_WORLD");
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, c.rank % 2, -c.rank, &half);
    barrier(c, half, "a split communicator");
    MPI_Comm_free(&half);
}

}  // namespace checks
