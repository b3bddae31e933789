/* Legal MPI programs the interposer's nonblocking path must run as MPI does.
 * Plain C against mpi.h only: run with and without the preload, the results
 * are checked against values each rank computes itself.
 *
 *   freed-types  a derived datatype (and a user-defined op, a duplicated
 *                communicator) freed right after the nonblocking call that
 *                uses it, before the wait: MPI says the call completes
 *                normally.
 *   mixed-wait   nonblocking collectives and the program's own point-to-point
 *                requests (and persistent and generalized ones, and
 *                MPI_REQUEST_NULL) completed together by every member of the
 *                wait and test families.
 *   freed-comm   the same with the communicator freed too, and a rank that
 *                blocks in point-to-point after freeing it.
 *   window N     N calls, kWindow at a time in flight on several communicators,
 *                point-to-point among them, completed by a method drawn at
 *                random each turn.
 *   stress N     N iterations of both, completed in random order (MPI_Waitany,
 *                MPI_Testsome and the rest), with the handles freed early
 *                (stress-comm-free: a communicator too, every 50th). MPI forbids
 *                MPI_Request_free on a collective's request, so only the
 *                persistent point-to-point ones are freed.
 *
 * A watchdog turns a hang into a failure that names the step. Exit status 0
 * on every rank, or the first failure printed and MPI_Abort. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank, g_size;
static volatile const char* g_step = "start";

static void on_alarm(int sig) {
    (void)sig;
    char text[256];
    int n = snprintf(text, sizeof text, "rank %d: FAIL: hung in %s\n", g_rank, (const char*)g_step);
    if (n > 0) (void)!write(2, text, (size_t)n);
    _exit(3);
}

static void fail(const char* what, long a, long b) {
    fprintf(stderr, "rank %d: FAIL: %s (%ld, expected %ld)\n", g_rank, what, a, b);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void check(int ok, const char* what) {
    if (!ok) fail(what, 0, 1);
}

static void check_rc(int rc, const char* what) {
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        fprintf(stderr, "rank %d: FAIL: %s returned %d: %s\n", g_rank, what, rc, text);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* A value every rank can compute for (rank, index, iteration). */
static int val(int rank, int i, int it) {
    return rank * 1000003 + i * 31 + it * 7 + 1;
}

/* A small deterministic generator (every rank its own stream). */
static unsigned g_seed;
static unsigned next_rand(void) {
    g_seed = g_seed * 1103515245u + 12345u;
    return (g_seed >> 16) & 0x7fff;
}

/* A user-defined op: elementwise sum of ints (commutative). */
static void int_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
    (void)type;
    const int* a = (const int*)in;
    int* b = (int*)inout;
    for (int i = 0; i < *len; ++i) b[i] += a[i];
}

/* ------------------------------------------------------------------------- */
/* freed-types */

/* A vector type of `count` ints with a stride of 2: every other int. */
static MPI_Datatype strided(int count) {
    MPI_Datatype t;
    MPI_Type_vector(count, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

static void freed_types(int it, int n, int free_comm) {
    const int p = g_size, me = g_rank;
    /* Igather to root it % p with a duplicated contiguous type and a
     * strided receive type, both freed before the wait. */
    {
        const int root = it % p;
        MPI_Datatype dup, rtype;
        MPI_Type_dup(MPI_INT, &dup);
        rtype = strided(n);
        int* send = malloc(sizeof(int) * (size_t)n);
        int* recv = calloc((size_t)(2 * n * p), sizeof(int));
        for (int i = 0; i < n; ++i) send[i] = val(me, i, it);
        MPI_Aint lb, extent;
        MPI_Type_get_extent(rtype, &lb, &extent);
        /* One strided block per rank, laid end to end: resize the extent. */
        MPI_Datatype block;
        MPI_Type_create_resized(rtype, 0, (MPI_Aint)(2 * n) * (MPI_Aint)sizeof(int), &block);
        MPI_Type_commit(&block);
        MPI_Type_free(&rtype);
        MPI_Request r;
        g_step = "MPI_Igather with freed datatypes";
        check_rc(MPI_Igather(send, n, dup, recv, 1, block, root, MPI_COMM_WORLD, &r), "MPI_Igather");
        MPI_Type_free(&dup);
        MPI_Type_free(&block);
        check(dup == MPI_DATATYPE_NULL && block == MPI_DATATYPE_NULL, "MPI_Type_free sets the handle to null");
        check_rc(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait (Igather)");
        if (me == root)
            for (int q = 0; q < p; ++q)
                for (int i = 0; i < n; ++i) {
                    if (recv[q * 2 * n + 2 * i] != val(q, i, it)) fail("Igather: a gathered element", recv[q * 2 * n + 2 * i], val(q, i, it));
                    if (recv[q * 2 * n + 2 * i + 1] != 0) fail("Igather: a gap was written", recv[q * 2 * n + 2 * i + 1], 0);
                }
        free(send);
        free(recv);
    }
    /* Iallgather and Ialltoall with a strided send type and a duplicated
     * receive type; Ibcast with a strided type; all freed before the waits,
     * completed together. */
    {
        MPI_Datatype s1 = strided(n), s2 = strided(n), s3 = strided(n), d1, d2;
        MPI_Type_dup(MPI_INT, &d1);
        MPI_Type_dup(MPI_INT, &d2);
        int* ag_send = calloc((size_t)(2 * n), sizeof(int));
        int* ag_recv = calloc((size_t)(n * p), sizeof(int));
        int* aa_send = calloc((size_t)(2 * n * p), sizeof(int));
        int* aa_recv = calloc((size_t)(n * p), sizeof(int));
        int* bc = calloc((size_t)(2 * n), sizeof(int));
        for (int i = 0; i < n; ++i) ag_send[2 * i] = val(me, i, it);
        MPI_Datatype s2r;
        MPI_Type_create_resized(s2, 0, (MPI_Aint)(2 * n) * (MPI_Aint)sizeof(int), &s2r);
        MPI_Type_commit(&s2r);
        MPI_Type_free(&s2);
        for (int q = 0; q < p; ++q)
            for (int i = 0; i < n; ++i) aa_send[q * 2 * n + 2 * i] = val(me, i, it) + q;
        const int root = (it + 1) % p;
        if (me == root)
            for (int i = 0; i < n; ++i) bc[2 * i] = val(root, i, it) * 3;
        MPI_Request r[3];
        g_step = "MPI_Iallgather, MPI_Ialltoall, MPI_Ibcast with freed datatypes";
        check_rc(MPI_Iallgather(ag_send, 1, s1, ag_recv, n, d1, MPI_COMM_WORLD, &r[0]), "MPI_Iallgather");
        check_rc(MPI_Ialltoall(aa_send, 1, s2r, aa_recv, n, d2, MPI_COMM_WORLD, &r[1]), "MPI_Ialltoall");
        check_rc(MPI_Ibcast(bc, 1, s3, root, MPI_COMM_WORLD, &r[2]), "MPI_Ibcast");
        MPI_Type_free(&s1);
        MPI_Type_free(&s2r);
        MPI_Type_free(&s3);
        MPI_Type_free(&d1);
        MPI_Type_free(&d2);
        check_rc(MPI_Waitall(3, r, MPI_STATUSES_IGNORE), "MPI_Waitall (freed datatypes)");
        for (int q = 0; q < p; ++q)
            for (int i = 0; i < n; ++i) {
                if (ag_recv[q * n + i] != val(q, i, it)) fail("Iallgather: an element", ag_recv[q * n + i], val(q, i, it));
                if (aa_recv[q * n + i] != val(q, i, it) + me) fail("Ialltoall: an element", aa_recv[q * n + i], val(q, i, it) + me);
            }
        for (int i = 0; i < n; ++i) {
            if (bc[2 * i] != val(root, i, it) * 3) fail("Ibcast: an element", bc[2 * i], val(root, i, it) * 3);
            if (me != root && bc[2 * i + 1] != 0) fail("Ibcast: a gap was written", bc[2 * i + 1], 0);
        }
        free(ag_send);
        free(ag_recv);
        free(aa_send);
        free(aa_recv);
        free(bc);
    }
    /* Iallreduce and Ireduce with a user-defined op and a duplicated type,
     * on a duplicated communicator; the op and the type freed before the
     * wait, and with `free_comm` the communicator too (Open MPI 4.1's own
     * nonblocking collectives crash on that one: see main). */
    {
        MPI_Op op;
        MPI_Op_create(int_sum, 1, &op);
        MPI_Datatype d;
        MPI_Type_dup(MPI_INT, &d);
        /* A communicator of its own each time only when it is to be freed
         * (a new one costs a Chorus communicator's creation). */
        static MPI_Comm kept = MPI_COMM_NULL;
        MPI_Comm comm;
        if (free_comm) {
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        } else {
            if (kept == MPI_COMM_NULL) MPI_Comm_dup(MPI_COMM_WORLD, &kept);
            comm = kept;
        }
        int* a = malloc(sizeof(int) * (size_t)n);
        int* b = calloc((size_t)n, sizeof(int));
        int* c = calloc((size_t)n, sizeof(int));
        int* e = calloc((size_t)n, sizeof(int));
        for (int i = 0; i < n; ++i) a[i] = val(me, i, it) % 1000;
        MPI_Request r[3];
        g_step = "MPI_Iallreduce, MPI_Ireduce, MPI_Ibcast with a freed op and type";
        check_rc(MPI_Iallreduce(a, b, n, d, op, comm, &r[0]), "MPI_Iallreduce (user op)");
        check_rc(MPI_Ireduce(a, c, n, MPI_INT, MPI_SUM, 0, comm, &r[1]), "MPI_Ireduce");
        if (me == 0)
            for (int i = 0; i < n; ++i) e[i] = i - it;
        check_rc(MPI_Ibcast(e, n, d, 0, comm, &r[2]), "MPI_Ibcast");
        MPI_Op_free(&op);
        MPI_Type_free(&d);
        check(op == MPI_OP_NULL && d == MPI_DATATYPE_NULL, "freeing sets the handles to null");
        if (free_comm) {
            g_step = "MPI_Comm_free with calls in flight";
            MPI_Comm_free(&comm);
            check(comm == MPI_COMM_NULL, "MPI_Comm_free sets the handle to null");
        }
        g_step = "MPI_Waitall on calls whose op, type (and communicator) were freed";
        check_rc(MPI_Waitall(3, r, MPI_STATUSES_IGNORE), "MPI_Waitall (freed op, type, communicator)");
        for (int i = 0; i < n; ++i) {
            int sum = 0;
            for (int q = 0; q < p; ++q) sum += val(q, i, it) % 1000;
            if (b[i] != sum) fail("Iallreduce (user op): an element", b[i], sum);
            if (me == 0 && c[i] != sum) fail("Ireduce: an element", c[i], sum);
            if (e[i] != i - it) fail("Ibcast: an element", e[i], i - it);
        }
        free(a);
        free(b);
        free(c);
        free(e);
    }
}

/* A communicator freed while a nonblocking collective on it is in flight,
 * and a rank that then blocks in point-to-point before it waits: MPI_Comm_free
 * is local, so it must not wait for the peers' part of the collective. */
static void freed_comm_then_p2p(int it, int n) {
    const int p = g_size, me = g_rank;
    if (p < 2) return;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int* buf = calloc((size_t)n, sizeof(int));
    if (me == 0)
        for (int i = 0; i < n; ++i) buf[i] = val(0, i, it);
    MPI_Request r;
    g_step = "MPI_Ibcast, then MPI_Comm_free, then MPI_Send/MPI_Recv";
    check_rc(MPI_Ibcast(buf, n, MPI_INT, 0, comm, &r), "MPI_Ibcast");
    int token = it;
    if (me == 0) {
        MPI_Comm_free(&comm);
        for (int q = 1; q < p; ++q) check_rc(MPI_Send(&token, 1, MPI_INT, q, 3, MPI_COMM_WORLD), "MPI_Send");
    } else {
        check_rc(MPI_Recv(&token, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        MPI_Comm_free(&comm);
    }
    check_rc(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait (Ibcast on a freed communicator)");
    for (int i = 0; i < n; ++i)
        if (buf[i] != val(0, i, it)) fail("Ibcast on a freed communicator: an element", buf[i], val(0, i, it));
    free(buf);
}

/* ------------------------------------------------------------------------- */
/* mixed-wait */

enum { kWaitall, kWaitany, kWaitsome, kTestall, kTestany, kTestsome, kWaitEach, kTestEach, kGetStatus, kMethods };
static const char* const kMethodNames[kMethods] = {"MPI_Waitall", "MPI_Waitany", "MPI_Waitsome",
                                                   "MPI_Testall", "MPI_Testany", "MPI_Testsome",
                                                   "MPI_Wait",    "MPI_Test",    "MPI_Request_get_status"};

/* A generalized request that a later step of the same rank completes. */
static int gq_query(void* extra, MPI_Status* st) {
    (void)extra;
    MPI_Status_set_elements(st, MPI_BYTE, 0);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
static int gq_free(void* extra) {
    (void)extra;
    return MPI_SUCCESS;
}
static int gq_cancel(void* extra, int complete) {
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

/* Completes every request of q[0..n) with `method` (persistent ones stay
 * allocated but inactive: `active` tracks what is left). `greq`, a
 * generalized request among them, is completed by the program after a few
 * turns of the testing methods, or before a waiting one blocks. */
static void complete_all(MPI_Request* q, int n, int method, int random_order, MPI_Request greq) {
    int greq_pending = greq != MPI_REQUEST_NULL;
    int active[64], left = 0;
    for (int i = 0; i < n; ++i) {
        active[i] = q[i] != MPI_REQUEST_NULL;
        left += active[i];
    }
    int idx[64];
    MPI_Status st[64];
    int spins = 0;
    while (left > 0) {
        const int waits = method == kWaitall || method == kWaitany || method == kWaitsome || method == kWaitEach;
        if (greq_pending && (waits || ++spins > 3)) {
            MPI_Grequest_complete(greq);
            greq_pending = 0;
        }
        int flag = 0, index = MPI_UNDEFINED, out = 0;
        switch (method) {
            case kWaitall:
                check_rc(MPI_Waitall(n, q, random_order ? MPI_STATUSES_IGNORE : st), "MPI_Waitall");
                left = 0;
                break;
            case kTestall:
                check_rc(MPI_Testall(n, q, &flag, st), "MPI_Testall");
                if (flag) left = 0;
                break;
            case kWaitany:
            case kTestany:
                if (method == kWaitany)
                    check_rc(MPI_Waitany(n, q, &index, random_order ? MPI_STATUS_IGNORE : &st[0]), "MPI_Waitany");
                else
                    check_rc(MPI_Testany(n, q, &index, &flag, &st[0]), "MPI_Testany");
                if (method == kWaitany) check(index != MPI_UNDEFINED, "MPI_Waitany with active requests returns one");
                if (index != MPI_UNDEFINED) {
                    check(index >= 0 && index < n && active[index], "MPI_Wait/Testany returns an active request");
                    active[index] = 0;
                    --left;
                }
                break;
            case kWaitsome:
            case kTestsome:
                if (method == kWaitsome)
                    check_rc(MPI_Waitsome(n, q, &out, idx, st), "MPI_Waitsome");
                else
                    check_rc(MPI_Testsome(n, q, &out, idx, random_order ? MPI_STATUSES_IGNORE : st), "MPI_Testsome");
                check(out != MPI_UNDEFINED, "MPI_Wait/Testsome with active requests");
                if (method == kWaitsome) check(out > 0, "MPI_Waitsome completes some");
                for (int j = 0; j < out; ++j) {
                    check(idx[j] >= 0 && idx[j] < n && active[idx[j]], "MPI_Wait/Testsome returns active requests");
                    active[idx[j]] = 0;
                    --left;
                }
                break;
            case kWaitEach: {
                const int order = random_order ? (int)(next_rand() % (unsigned)n) : 0;
                for (int k = 0; k < n; ++k) {
                    const int i = (order + k) % n;
                    if (!active[i]) continue;
                    check_rc(MPI_Wait(&q[i], MPI_STATUS_IGNORE), "MPI_Wait");
                    active[i] = 0;
                    --left;
                }
                break;
            }
            case kTestEach:
            case kGetStatus:
                for (int i = 0; i < n; ++i) {
                    if (!active[i]) continue;
                    if (method == kTestEach) {
                        check_rc(MPI_Test(&q[i], &flag, MPI_STATUS_IGNORE), "MPI_Test");
                    } else {
                        check_rc(MPI_Request_get_status(q[i], &flag, MPI_STATUS_IGNORE), "MPI_Request_get_status");
                        if (flag) check_rc(MPI_Wait(&q[i], MPI_STATUS_IGNORE), "MPI_Wait after MPI_Request_get_status");
                    }
                    if (flag) {
                        active[i] = 0;
                        --left;
                    }
                }
                break;
        }
    }
    if (greq_pending) MPI_Grequest_complete(greq);
}

/* One round: collectives in flight with a ring exchange (Isend/Irecv both
 * ways, a persistent pair), a generalized request and MPI_REQUEST_NULLs,
 * completed by `method`. `freed`: the collectives' requests of one kind
 * are MPI_Request_free'd at once (their buffers read only after a
 * barrier-like exchange that orders them). */
static void mixed_round(int it, int n, int method, int random_order) {
    const int p = g_size, me = g_rank;
    const int right = (me + 1) % p, left = (me + p - 1) % p;
    int* ar_in = malloc(sizeof(int) * (size_t)n);
    int* ar_out = calloc((size_t)n, sizeof(int));
    int* ag_out = calloc((size_t)(n * p), sizeof(int));
    int* bc = calloc((size_t)n, sizeof(int));
    int* to_right = malloc(sizeof(int) * (size_t)n);
    int* from_left = calloc((size_t)n, sizeof(int));
    int* to_left = malloc(sizeof(int) * (size_t)n);
    int* from_right = calloc((size_t)n, sizeof(int));
    int pers_out = me * 10 + it, pers_in = -1;
    for (int i = 0; i < n; ++i) {
        ar_in[i] = val(me, i, it) % 997;
        to_right[i] = val(me, i, it) + 5;
        to_left[i] = val(me, i, it) + 9;
        if (me == it % p) bc[i] = val(me, i, it) + 2;
    }
    MPI_Request q[12];
    int k = 0;
    MPI_Request pers[2];
    MPI_Send_init(&pers_out, 1, MPI_INT, right, 77, MPI_COMM_WORLD, &pers[0]);
    MPI_Recv_init(&pers_in, 1, MPI_INT, left, 77, MPI_COMM_WORLD, &pers[1]);
    MPI_Request greq;
    MPI_Grequest_start(gq_query, gq_free, gq_cancel, NULL, &greq);
    /* The order of the calls varies with the iteration: collectives first,
     * point-to-point first, or mixed. */
    const int p2p_first = it % 3 == 1;
    if (p2p_first) {
        MPI_Irecv(from_left, n, MPI_INT, left, 5, MPI_COMM_WORLD, &q[k++]);
        MPI_Isend(to_right, n, MPI_INT, right, 5, MPI_COMM_WORLD, &q[k++]);
    }
    check_rc(MPI_Iallreduce(ar_in, ar_out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[k++]), "MPI_Iallreduce");
    q[k++] = MPI_REQUEST_NULL;
    if (!p2p_first) {
        MPI_Irecv(from_left, n, MPI_INT, left, 5, MPI_COMM_WORLD, &q[k++]);
        MPI_Isend(to_right, n, MPI_INT, right, 5, MPI_COMM_WORLD, &q[k++]);
    }
    check_rc(MPI_Ibcast(bc, n, MPI_INT, it % p, MPI_COMM_WORLD, &q[k++]), "MPI_Ibcast");
    MPI_Startall(2, pers);
    q[k++] = pers[0];
    q[k++] = pers[1];
    check_rc(MPI_Iallgather(ar_in, n, MPI_INT, ag_out, n, MPI_INT, MPI_COMM_WORLD, &q[k++]), "MPI_Iallgather");
    MPI_Irecv(from_right, n, MPI_INT, right, 6, MPI_COMM_WORLD, &q[k++]);
    MPI_Isend(to_left, n, MPI_INT, left, 6, MPI_COMM_WORLD, &q[k++]);
    q[k++] = greq;
    MPI_Request barrier;
    const int with_barrier = it % 2 == 0;
    if (with_barrier) check_rc(MPI_Ibarrier(MPI_COMM_WORLD, &barrier), "MPI_Ibarrier");
    /* Shuffle the array: completion must not depend on the order. */
    if (random_order)
        for (int i = k - 1; i > 0; --i) {
            int j = (int)(next_rand() % (unsigned)(i + 1));
            MPI_Request t = q[i];
            q[i] = q[j];
            q[j] = t;
        }
    g_step = kMethodNames[method];
    complete_all(q, k, method, random_order, greq);
    if (with_barrier) check_rc(MPI_Wait(&barrier, MPI_STATUS_IGNORE), "MPI_Wait (Ibarrier)");
    MPI_Request_free(&pers[0]);
    MPI_Request_free(&pers[1]);
    for (int i = 0; i < n; ++i) {
        int sum = 0;
        for (int q2 = 0; q2 < p; ++q2) sum += val(q2, i, it) % 997;
        if (ar_out[i] != sum) fail("mixed: Iallreduce element", ar_out[i], sum);
        for (int q2 = 0; q2 < p; ++q2)
            if (ag_out[q2 * n + i] != val(q2, i, it) % 997) fail("mixed: Iallgather element", ag_out[q2 * n + i], val(q2, i, it) % 997);
        if (bc[i] != val(it % p, i, it) + 2) fail("mixed: Ibcast element", bc[i], val(it % p, i, it) + 2);
        if (from_left[i] != val(left, i, it) + 5) fail("mixed: Irecv from the left", from_left[i], val(left, i, it) + 5);
        if (from_right[i] != val(right, i, it) + 9) fail("mixed: Irecv from the right", from_right[i], val(right, i, it) + 9);
    }
    if (pers_in != left * 10 + it) fail("mixed: persistent receive", pers_in, left * 10 + it);
    free(ar_in);
    free(ar_out);
    free(ag_out);
    free(bc);
    free(to_right);
    free(from_left);
    free(to_left);
    free(from_right);
}

/* The generalized request slot is completed by complete_all's caller: the
 * program completes its own before waiting (as a program that uses one for
 * work done elsewhere would). */
static void mixed_wait(int iterations, int random_order) {
    static const int sizes[] = {1, 64, 4096, 70000};
    for (int it = 0; it < iterations; ++it)
        for (int m = 0; m < kMethods; ++m) {
            const int n = sizes[(it + m) % 4];
            mixed_round(it * kMethods + m, n, random_order ? (int)(next_rand() % kMethods) : m, random_order);
        }
}

/* ------------------------------------------------------------------------- */
/* window: many calls in flight on several communicators at once */

enum { kWindow = 16, kComms = 4, kWinCount = 12 };

/* One call in flight: what it was and its buffers. */
struct Slot {
    int kind; /* -1: none */
    MPI_Comm comm;
    int seq;
    int* send;
    int* recv;
};

/* Every rank draws the same sequence of calls: the posting order, and so
 * the order of the collectives on each communicator, agrees. */
static unsigned g_post;
static unsigned draw_post(void) {
    g_post = g_post * 2654435761u + 97u;
    return g_post >> 8;
}

/* kWinScan and kWinUserOp are calls the interposer hands to MPI: their
 * progress is MPI's, beside Chorus's. */
enum { kWinAllreduce, kWinBcast, kWinIgather, kWinAlltoall, kWinAllgatherv, kWinBarrier, kWinP2p, kWinScan, kWinUserOp,
       kWinKinds };

static void window_start(struct Slot* s, MPI_Comm* comms, int seq, MPI_Request* req) {
    const int p = g_size, me = g_rank, n = kWinCount;
    const unsigned d = draw_post();
    s->kind = (int)(d % kWinKinds);
    s->comm = comms[(d / kWinKinds) % kComms];
    s->seq = seq;
    s->send = calloc((size_t)(n * p), sizeof(int));
    s->recv = calloc((size_t)(n * p), sizeof(int));
    *req = MPI_REQUEST_NULL;
    for (int i = 0; i < n * p; ++i) s->send[i] = val(me, i, seq);
    switch (s->kind) {
        case kWinAllreduce: check_rc(MPI_Iallreduce(s->send, s->recv, n, MPI_INT, MPI_SUM, s->comm, req), "MPI_Iallreduce"); break;
        case kWinBcast: check_rc(MPI_Ibcast(s->send, n, MPI_INT, seq % p, s->comm, req), "MPI_Ibcast"); break;
        case kWinIgather: {
            /* A duplicated type, freed before the wait. */
            MPI_Datatype t;
            MPI_Type_dup(MPI_INT, &t);
            check_rc(MPI_Igather(s->send, n, MPI_INT, s->recv, n, t, seq % p, s->comm, req), "MPI_Igather");
            MPI_Type_free(&t);
            break;
        }
        case kWinAlltoall: check_rc(MPI_Ialltoall(s->send, n, MPI_INT, s->recv, n, MPI_INT, s->comm, req), "MPI_Ialltoall"); break;
        case kWinAllgatherv: {
            int counts[64], displs[64];
            for (int q = 0; q < p; ++q) {
                counts[q] = 1 + (q + seq) % n;
                displs[q] = q * n;
            }
            check_rc(MPI_Iallgatherv(s->send, counts[me], MPI_INT, s->recv, counts, displs, MPI_INT, s->comm, req),
                     "MPI_Iallgatherv");
            break;
        }
        case kWinBarrier: check_rc(MPI_Ibarrier(s->comm, req), "MPI_Ibarrier"); break;
        case kWinScan: check_rc(MPI_Iscan(s->send, s->recv, n, MPI_INT, MPI_SUM, s->comm, req), "MPI_Iscan"); break;
        case kWinUserOp: {
            MPI_Op op;
            MPI_Op_create(int_sum, 1, &op);
            check_rc(MPI_Iallreduce(s->send, s->recv, n, MPI_INT, op, s->comm, req), "MPI_Iallreduce (user op)");
            MPI_Op_free(&op);
            break;
        }
        case kWinP2p:
            /* Pairs (0,1), (2,3), ...; a last odd rank sits out. */
            if (me % 2 == 0 && me + 1 < p)
                check_rc(MPI_Isend(s->send, n, MPI_INT, me + 1, 9, s->comm, req), "MPI_Isend");
            else if (me % 2 == 1)
                check_rc(MPI_Irecv(s->recv, n, MPI_INT, me - 1, 9, s->comm, req), "MPI_Irecv");
            break;
    }
}

static void window_check(struct Slot* s) {
    const int p = g_size, me = g_rank, n = kWinCount, seq = s->seq;
    switch (s->kind) {
        case kWinAllreduce:
        case kWinUserOp:
        case kWinScan:
            for (int i = 0; i < n; ++i) {
                int sum = 0;
                for (int q = 0; q < (s->kind == kWinScan ? me + 1 : p); ++q) sum += val(q, i, seq);
                if (s->recv[i] != sum) fail("window: Iallreduce or Iscan element", s->recv[i], sum);
            }
            break;
        case kWinBcast:
            for (int i = 0; i < n; ++i)
                if (s->send[i] != val(seq % p, i, seq)) fail("window: Ibcast element", s->send[i], val(seq % p, i, seq));
            break;
        case kWinIgather:
            if (me == seq % p)
                for (int q = 0; q < p; ++q)
                    for (int i = 0; i < n; ++i)
                        if (s->recv[q * n + i] != val(q, i, seq)) fail("window: Igather element", s->recv[q * n + i], val(q, i, seq));
            break;
        case kWinAlltoall:
            for (int q = 0; q < p; ++q)
                for (int i = 0; i < n; ++i)
                    if (s->recv[q * n + i] != val(q, me * n + i, seq))
                        fail("window: Ialltoall element", s->recv[q * n + i], val(q, me * n + i, seq));
            break;
        case kWinAllgatherv:
            for (int q = 0; q < p; ++q)
                for (int i = 0; i < 1 + (q + seq) % n; ++i)
                    if (s->recv[q * n + i] != val(q, i, seq)) fail("window: Iallgatherv element", s->recv[q * n + i], val(q, i, seq));
            break;
        case kWinP2p:
            if (me % 2 == 1)
                for (int i = 0; i < n; ++i)
                    if (s->recv[i] != val(me - 1, i, seq)) fail("window: Irecv element", s->recv[i], val(me - 1, i, seq));
            break;
    }
    free(s->send);
    free(s->recv);
    s->kind = -1;
}

/* Keeps kWindow calls in flight over kComms communicators, completing them
 * with a method drawn at random each turn (the same draw on every rank, as
 * the calls are; which requests finish differs between ranks). */
static void window(int calls) {
    MPI_Comm comms[kComms];
    for (int c = 0; c < kComms; ++c) MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]);
    struct Slot slots[kWindow];
    MPI_Request reqs[kWindow];
    int posted = 0, completed = 0;
    g_post = 0x5eedu;
    for (int i = 0; i < kWindow; ++i) window_start(&slots[i], comms, posted++, &reqs[i]);
    unsigned turn = 0x1234u;
    while (completed < calls) {
        turn = turn * 1103515245u + 12345u;
        const int method = (int)((turn >> 16) % kMethods);
        int idx[kWindow], out = 0, index = MPI_UNDEFINED, flag = 0;
        g_step = kMethodNames[method];
        switch (method) {
            case kWaitall:
                check_rc(MPI_Waitall(kWindow, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
                for (int i = 0; i < kWindow; ++i) idx[out++] = i;
                break;
            case kTestall:
                check_rc(MPI_Testall(kWindow, reqs, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
                if (flag)
                    for (int i = 0; i < kWindow; ++i) idx[out++] = i;
                break;
            case kWaitany:
            case kTestany:
                if (method == kWaitany)
                    check_rc(MPI_Waitany(kWindow, reqs, &index, MPI_STATUS_IGNORE), "MPI_Waitany");
                else
                    check_rc(MPI_Testany(kWindow, reqs, &index, &flag, MPI_STATUS_IGNORE), "MPI_Testany");
                if (index != MPI_UNDEFINED) idx[out++] = index;
                break;
            case kWaitsome:
            case kTestsome:
                if (method == kWaitsome)
                    check_rc(MPI_Waitsome(kWindow, reqs, &out, idx, MPI_STATUSES_IGNORE), "MPI_Waitsome");
                else
                    check_rc(MPI_Testsome(kWindow, reqs, &out, idx, MPI_STATUSES_IGNORE), "MPI_Testsome");
                if (out == MPI_UNDEFINED) out = 0;
                break;
            case kWaitEach:
            case kTestEach:
            case kGetStatus: {
                const int i = (int)((turn >> 4) % kWindow);
                if (method == kWaitEach) {
                    check_rc(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE), "MPI_Wait");
                    flag = 1;
                } else if (method == kTestEach) {
                    check_rc(MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE), "MPI_Test");
                } else {
                    check_rc(MPI_Request_get_status(reqs[i], &flag, MPI_STATUS_IGNORE), "MPI_Request_get_status");
                    if (flag) check_rc(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE), "MPI_Wait after MPI_Request_get_status");
                }
                if (flag) idx[out++] = i;
                break;
            }
        }
        for (int k = 0; k < out; ++k) {
            const int i = idx[k];
            check(reqs[i] == MPI_REQUEST_NULL, "a completed request is MPI_REQUEST_NULL");
            if (slots[i].kind < 0) continue;
            window_check(&slots[i]);
            ++completed;
            if (posted < calls) window_start(&slots[i], comms, posted++, &reqs[i]);
        }
    }
    check_rc(MPI_Waitall(kWindow, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall (the last)");
    for (int i = 0; i < kWindow; ++i)
        if (slots[i].kind >= 0) window_check(&slots[i]);
    for (int c = 0; c < kComms; ++c) MPI_Comm_free(&comms[c]);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char* mode = argc > 1 ? argv[1] : "";
    const int iterations = argc > 2 ? atoi(argv[2]) : 1;
    signal(SIGALRM, on_alarm);
    alarm(argc > 3 ? (unsigned)atoi(argv[3]) : 90);
    g_seed = 12345u + (unsigned)g_rank * 7919u;
    if (strcmp(mode, "freed-types") == 0) {
        for (int it = 0; it < iterations; ++it) {
            freed_types(it, 1 + it % 3, 0);
            freed_types(it, 20000 + it, 0);
        }
    } else if (strcmp(mode, "freed-comm") == 0) {
        /* Not run on plain Open MPI 4.1: its own nonblocking collectives
         * crash (SIGSEGV in libnbc's progress) when their communicator is
         * freed before the wait. */
        for (int it = 0; it < iterations; ++it) {
            freed_types(it, 1 + it % 3, 1);
            freed_types(it, 20000 + it, 1);
            freed_comm_then_p2p(it, 1 + it);
            freed_comm_then_p2p(it, 300000 + it);
        }
    } else if (strcmp(mode, "window") == 0) {
        window(iterations);
    } else if (strcmp(mode, "mixed-wait") == 0) {
        mixed_wait(iterations, 0);
    } else if (strcmp(mode, "stress") == 0 || strcmp(mode, "stress-comm-free") == 0) {
        const int comm_free = strcmp(mode, "stress-comm-free") == 0;
        for (int it = 0; it < iterations; ++it) {
            g_step = "stress";
            freed_types(it, 1 + it % 5, comm_free && it % 50 == 0);
            mixed_round(it, 1 + it % 7, (int)(next_rand() % kMethods), 1);
            if (it % 1000 == 999 && g_rank == 0) printf("stress: %d iterations\n", it + 1);
        }
    } else {
        if (g_rank == 0) fprintf(stderr, "usage: %s freed-types|freed-comm|mixed-wait|window|stress|stress-comm-free [iterations [watchdog seconds]]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    g_step = "MPI_Finalize";
    MPI_Finalize();
    if (g_rank == 0) printf("%s: passed at np=%d\n", mode, g_size);
    return 0;
}
