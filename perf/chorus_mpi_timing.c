/* chorus-mpi-timing: a plain MPI program (mpi.h only, no Chorus), OSU-style,
 * to run with and without libchorus_mpi.so preloaded; tools/interposer-report.sh
 * runs it both ways and compares. For every collective and every size from
 * 4 B doubling up to the maximum: a warm-up, then `reps` blocks of calls, each
 * block timed as a whole; the time of a block is the slowest rank's, and the
 * row gives the median over blocks of the mean time per call.
 *
 * Every size is validated after its timing: the output is overwritten with a
 * sentinel, one more call runs, and every element is compared with a
 * reference computed locally from every rank's input (small integers, so
 * float sums are exact in any order). A wrong element prints FAIL and the
 * program exits 1. The results and times are gathered with point-to-point
 * messages, never with a collective under test.
 *
 * Sizes: the message for allreduce, bcast, reduce; each rank's input for
 * reduce_scatter (MPI_Reduce_scatter_block, recvcount = bytes / 4 / ranks);
 * the block one rank sends to or receives from one peer for allgather,
 * allgatherv, alltoall, gather, scatter. Data are MPI_FLOAT (SUM for the
 * reductions); roots are rank 0. Buffers are allocated and touched once.
 *
 * Nonblocking (-n), as the OSU osu_i... benchmarks: each call is the
 * MPI_I... form followed by MPI_Wait (validated the same way), and the row
 * adds the overlap with computation: the same calls with a compute loop
 * (a spin on MPI_Wtime, no MPI call) between start and wait, as long as one
 * start + wait took on this rank; overall_us is that per call, compute_us
 * the loop's own time, and overlap_pct = 100 (1 - (overall - compute) /
 * median_us), clamped to 0..100 (times: the slowest rank's, medians over
 * blocks). Run plain and preloaded, it puts Chorus's overlap beside MPI's.
 *
 * Same-run comparison (-p, blocking calls): every timed block of MPI_X
 * calls alternates with one of PMPI_X, the MPI library's own entry point,
 * and the row adds pmpi_us (their median). Plain, both are MPI's; with
 * libchorus_mpi.so preloaded, MPI_X is the interposer's and PMPI_X still
 * MPI's, so one run compares the two under the same conditions.
 *
 * Usage: mpirun -np N chorus-mpi-timing [-m MAX] [-c LIST] [-r REPS] [-i SCALE] [-n | -p]
 *   -m  largest size in bytes, suffix K or M allowed (default 16M)
 *   -c  comma-separated collectives (default all): allreduce, bcast, reduce,
 *       reduce_scatter, allgather, alltoall, gather, scatter, allgatherv, barrier
 *   -r  timed blocks per size (default 7)
 *   -i  scale of the iterations per block (default 1)
 *   -n  the nonblocking calls, with the overlap
 *   -p  also time PMPI_X in alternating blocks (pmpi_us)
 * Self-test: CHORUS_MPI_TIMING_CORRUPT=1 makes one rank alter one element of
 * every output before the check, which must then fail. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    kAllreduce,
    kBcast,
    kReduce,
    kReduceScatter,
    kAllgather,
    kAlltoall,
    kGather,
    kScatter,
    kAllgatherv,
    kBarrier,
    kCollectives
} Kind;

static const char* const kNames[kCollectives] = {"allreduce", "bcast",  "reduce",  "reduce_scatter", "allgather",
                                                 "alltoall",  "gather", "scatter", "allgatherv",     "barrier"};

typedef struct {
    size_t max_bytes;
    int reps;
    double scale;
    int nonblocking;
    int pmpi;
    int wanted[kCollectives];
} Options;

typedef struct {
    int rank, size;
    float* send; /* every rank's input, never written after setup */
    float* recv; /* output (and bcast's buffer) */
    int* counts; /* allgatherv */
    int* displs;
    int count; /* count argument of the call */
    int corrupt;
    int nonblocking;   /* MPI_I... + MPI_Wait */
    int pmpi;          /* -p: this block calls PMPI_X */
    double compute_us; /* -n: the compute loop between start and wait (0: none) */
} Job;

/* Rank r's input element k: a small integer, distinct across nearby ranks. */
static float input(int r, size_t k) {
    return (float)((long)((k * 7 + (size_t)r * 13) % 61) - 30);
}

static size_t parse_size(const char* s) {
    char* end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return 0;
    if (*end == 'K' || *end == 'k') {
        v <<= 10;
        ++end;
    } else if (*end == 'M' || *end == 'm') {
        v <<= 20;
        ++end;
    }
    return *end == '\0' ? (size_t)v : 0;
}

static int parse_list(char* list, int* wanted) {
    for (char* name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        int k = 0;
        while (k < kCollectives && strcmp(name, kNames[k]) != 0) ++k;
        if (k == kCollectives) return 0;
        wanted[k] = 1;
    }
    return 1;
}

static int parse(int argc, char** argv, Options* o) {
    o->max_bytes = 16u << 20;
    o->reps = 7;
    o->scale = 1;
    o->nonblocking = 0;
    o->pmpi = 0;
    int any = 0;
    memset(o->wanted, 0, sizeof o->wanted);
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        if (strcmp(a, "-n") == 0) {
            o->nonblocking = 1;
            continue;
        }
        if (strcmp(a, "-p") == 0) {
            o->pmpi = 1;
            continue;
        }
        if (i + 1 >= argc) return 0;
        char* v = argv[++i];
        char* end = NULL;
        if (strcmp(a, "-m") == 0) {
            o->max_bytes = parse_size(v);
            if (o->max_bytes < 4 || o->max_bytes > (1u << 30)) return 0;
        } else if (strcmp(a, "-c") == 0) {
            if (!parse_list(v, o->wanted)) return 0;
            any = 1;
        } else if (strcmp(a, "-r") == 0) {
            o->reps = (int)strtol(v, &end, 10);
            if (*end != '\0' || o->reps < 1 || o->reps > 1000) return 0;
        } else if (strcmp(a, "-i") == 0) {
            o->scale = strtod(v, &end);
            if (*end != '\0' || !(o->scale > 0) || o->scale > 1000) return 0;
        } else {
            return 0;
        }
    }
    if (!any)
        for (int k = 0; k < kCollectives; ++k) o->wanted[k] = 1;
    return !(o->pmpi && o->nonblocking);
}

/* Computation that makes no MPI call: a spin on the clock for `us`. */
static void compute(double us) {
    const double end = MPI_Wtime() + us * 1e-6;
    while (MPI_Wtime() < end) {
    }
}

/* The blocking calls through the entry points of PREFIX: MPI_ (the
 * interposer's, when preloaded) or PMPI_ (the MPI library's own). */
#define BLOCKING_CALLS(PREFIX)                                                                                   \
    switch (k) {                                                                                                 \
        case kAllreduce: PREFIX##Allreduce(j->send, j->recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;      \
        case kBcast: PREFIX##Bcast(j->recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;                             \
        case kReduce: PREFIX##Reduce(j->send, j->recv, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;         \
        case kReduceScatter:                                                                                     \
            PREFIX##Reduce_scatter_block(j->send, j->recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);               \
            break;                                                                                               \
        case kAllgather: PREFIX##Allgather(j->send, n, MPI_FLOAT, j->recv, n, MPI_FLOAT, MPI_COMM_WORLD); break; \
        case kAlltoall: PREFIX##Alltoall(j->send, n, MPI_FLOAT, j->recv, n, MPI_FLOAT, MPI_COMM_WORLD); break;   \
        case kGather: PREFIX##Gather(j->send, n, MPI_FLOAT, j->recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;    \
        case kScatter: PREFIX##Scatter(j->send, n, MPI_FLOAT, j->recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;  \
        case kAllgatherv:                                                                                        \
            PREFIX##Allgatherv(j->send, n, MPI_FLOAT, j->recv, j->counts, j->displs, MPI_FLOAT, MPI_COMM_WORLD); \
            break;                                                                                               \
        case kBarrier:                                                                                           \
        case kCollectives: PREFIX##Barrier(MPI_COMM_WORLD); break;                                               \
    }

static void blocking(Kind k, Job* j) {
    const int n = j->count;
    if (j->pmpi) {
        BLOCKING_CALLS(PMPI_)
    } else {
        BLOCKING_CALLS(MPI_)
    }
}

/* The nonblocking form: start, the compute loop, wait. */
static void nonblocking(Kind k, Job* j) {
    const int n = j->count;
    MPI_Request r = MPI_REQUEST_NULL;
    switch (k) {
        case kAllreduce: MPI_Iallreduce(j->send, j->recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r); break;
        case kBcast: MPI_Ibcast(j->recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD, &r); break;
        case kReduce: MPI_Ireduce(j->send, j->recv, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD, &r); break;
        case kReduceScatter:
            MPI_Ireduce_scatter_block(j->send, j->recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
            break;
        case kAllgather: MPI_Iallgather(j->send, n, MPI_FLOAT, j->recv, n, MPI_FLOAT, MPI_COMM_WORLD, &r); break;
        case kAlltoall: MPI_Ialltoall(j->send, n, MPI_FLOAT, j->recv, n, MPI_FLOAT, MPI_COMM_WORLD, &r); break;
        case kGather: MPI_Igather(j->send, n, MPI_FLOAT, j->recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD, &r); break;
        case kScatter: MPI_Iscatter(j->send, n, MPI_FLOAT, j->recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD, &r); break;
        case kAllgatherv:
            MPI_Iallgatherv(j->send, n, MPI_FLOAT, j->recv, j->counts, j->displs, MPI_FLOAT, MPI_COMM_WORLD, &r);
            break;
        case kBarrier:
        case kCollectives: MPI_Ibarrier(MPI_COMM_WORLD, &r); break;
    }
    if (j->compute_us > 0) compute(j->compute_us);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static void run(Kind k, Job* j) {
    if (j->nonblocking)
        nonblocking(k, j);
    else
        blocking(k, j);
}

/* Elements of this rank's output that the check covers (0: none). */
static size_t out_elems(Kind k, const Job* j) {
    const size_t n = (size_t)j->count, p = (size_t)j->size;
    switch (k) {
        case kReduce:
        case kGather: return j->rank == 0 ? (k == kGather ? n * p : n) : 0;
        case kAllgather:
        case kAlltoall:
        case kAllgatherv: return n * p;
        case kBarrier:
        case kCollectives: return 0;
        default: return n;
    }
}

/* The expected output element e of this rank. */
static float expected(Kind k, const Job* j, size_t e) {
    const size_t n = (size_t)j->count;
    const int me = j->rank;
    long sum = 0;
    switch (k) {
        case kAllreduce:
        case kReduce:
            for (int r = 0; r < j->size; ++r) sum += (long)input(r, e);
            return (float)sum;
        case kReduceScatter:
            for (int r = 0; r < j->size; ++r) sum += (long)input(r, (size_t)me * n + e);
            return (float)sum;
        case kBcast: return input(0, e);
        case kAllgather:
        case kAllgatherv:
        case kGather: return input((int)(e / n), e % n);
        case kAlltoall: return input((int)(e / n), (size_t)me * n + e % n);
        case kScatter: return input(0, (size_t)me * n + e);
        default: return 0;
    }
}

/* Bcast's root starts from its input; every other output from a sentinel. */
static void prepare(Kind k, Job* j, size_t elems) {
    if (k == kBcast && j->rank == 0)
        for (size_t e = 0; e < (size_t)j->count; ++e) j->recv[e] = input(0, e);
    else
        for (size_t e = 0; e < elems; ++e) j->recv[e] = -1000.0f;
}

/* One more call on a sentinel output; returns the number of wrong elements. */
static size_t validate(Kind k, Job* j) {
    const size_t elems = out_elems(k, j);
    prepare(k, j, elems);
    run(k, j);
    /* The self-test alters a rank that has an output: the root or the last. */
    const int victim = k == kReduce || k == kGather ? 0 : j->size - 1;
    if (j->corrupt && elems > 0 && j->rank == victim) j->recv[elems / 2] += 1.0f;
    size_t bad = 0;
    for (size_t e = 0; e < elems; ++e) bad += j->recv[e] != expected(k, j, e);
    return bad;
}

/* Rank 0 gets, element by element, the maximum over ranks of v[0..n) and
 * (in v[n]) the sum of the wrong-element counts, by point-to-point messages. */
static void gather_to_root(const Job* j, double* v, int n) {
    if (j->rank != 0) {
        MPI_Send(v, n + 1, MPI_DOUBLE, 0, 77, MPI_COMM_WORLD);
        return;
    }
    double* other = malloc(sizeof(double) * (size_t)(n + 1));
    for (int r = 1; r < j->size; ++r) {
        MPI_Recv(other, n + 1, MPI_DOUBLE, r, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; ++i)
            if (other[i] > v[i]) v[i] = other[i];
        v[n] += other[n];
    }
    free(other);
}

static int compare(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

/* Iterations per block: many for small messages, at least 10 for large. */
static long iterations(size_t bytes, double scale) {
    long it = (long)((64u << 20) / (bytes ? bytes : 4));
    if (it > 2000) it = 2000;
    if (it < 10) it = 10;
    it = (long)(it * scale);
    return it < 1 ? 1 : it;
}

/* Per-call microseconds of `reps` blocks of `iters` calls each, into t;
 * with `pmpi`, each block is followed (even r) or preceded (odd r) by one of
 * PMPI_X calls, into tp. */
static void time_blocks(Kind k, Job* j, long iters, int reps, double* t, double* tp) {
    for (int r = 0; r < reps; ++r)
        for (int half = 0; half < (tp ? 2 : 1); ++half) {
            j->pmpi = tp && (half ^ (r & 1));
            PMPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            for (long i = 0; i < iters; ++i) run(k, j);
            (j->pmpi ? tp : t)[r] = (MPI_Wtime() - t0) / (double)iters * 1e6;
        }
    j->pmpi = 0;
}

/* Sorts v[0..m) and returns its median. */
static double median_of(double* v, int m) {
    qsort(v, (size_t)m, sizeof *v, compare);
    return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

/* Times and validates one size; returns 1 when the check failed. `times`
 * holds 3 reps + 1 values: the start + wait blocks, with -n the blocks with
 * computation and the compute loop's alone, and the wrong elements. */
static int one_size(Kind k, Job* j, size_t bytes, const Options* o, double* times) {
    const long iters = iterations(bytes, o->scale);
    const int m = o->reps;
    double* overall = times + m;
    double* spent = times + 2 * m;
    prepare(k, j, out_elems(k, j));
    j->compute_us = 0;
    for (long w = 0; w < iters / 10 + 2; ++w) run(k, j);
    double* pmpi = o->pmpi ? times + m : NULL;
    if (pmpi) {
        j->pmpi = 1;
        for (long w = 0; w < iters / 10 + 2; ++w) run(k, j);
        j->pmpi = 0;
    }
    time_blocks(k, j, iters, m, times, pmpi);
    int n = pmpi ? 2 * m : m;
    if (j->nonblocking) {
        /* As long as this rank's own start + wait took. */
        memcpy(overall, times, sizeof(double) * (size_t)m);
        j->compute_us = median_of(overall, m);
        time_blocks(k, j, iters, m, overall, NULL);
        for (int r = 0; r < m; ++r) {
            const double t0 = MPI_Wtime();
            for (long i = 0; i < iters; ++i) compute(j->compute_us);
            spent[r] = (MPI_Wtime() - t0) / (double)iters * 1e6;
        }
        j->compute_us = 0;
        n = 3 * m;
    }
    times[n] = (double)validate(k, j);
    gather_to_root(j, times, n);
    int failed = 0;
    if (j->rank == 0) {
        failed = times[n] != 0;
        const double median = median_of(times, m);
        printf("%-15s %10zu %7ld %12.3f %12.3f %12.3f", kNames[k], bytes, iters, median, times[0], times[m - 1]);
        if (pmpi) printf(" %12.3f", median_of(pmpi, m));
        if (j->nonblocking) {
            const double all = median_of(overall, m), busy = median_of(spent, m);
            double pct = median > 0 ? 100.0 * (1.0 - (all - busy) / median) : 0;
            pct = pct < 0 ? 0 : pct > 100 ? 100 : pct;
            printf(" %12.3f %12.3f %11.1f", all, busy, pct);
        }
        printf(" %s\n", failed ? "FAIL" : "Pass");
        fflush(stdout);
    }
    return failed;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    Job j;
    memset(&j, 0, sizeof j);
    MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &j.size);
    Options o;
    if (!parse(argc, argv, &o)) {
        if (j.rank == 0)
            fprintf(stderr,
                    "usage: mpirun -np N chorus-mpi-timing [-m MAX] [-c LIST] [-r REPS] [-i SCALE] [-n | -p]\n"
                    "  LIST: comma-separated, from allreduce,bcast,reduce,reduce_scatter,allgather,\n"
                    "        alltoall,gather,scatter,allgatherv,barrier (default all)\n");
        MPI_Finalize();
        return 2;
    }
    const char* corrupt = getenv("CHORUS_MPI_TIMING_CORRUPT");
    j.corrupt = corrupt && *corrupt && strcmp(corrupt, "0") != 0;
    j.nonblocking = o.nonblocking;

    /* The largest buffers any collective needs: a block per rank. */
    const size_t max_elems = o.max_bytes / sizeof(float) * (size_t)j.size;
    if (max_elems > (size_t)INT_MAX) {
        if (j.rank == 0) fprintf(stderr, "chorus-mpi-timing: -m %zu x %d ranks is too large\n", o.max_bytes, j.size);
        MPI_Finalize();
        return 2;
    }
    j.send = malloc(max_elems * sizeof(float));
    j.recv = malloc(max_elems * sizeof(float));
    j.counts = malloc(sizeof(int) * (size_t)j.size);
    j.displs = malloc(sizeof(int) * (size_t)j.size);
    double* times = malloc(sizeof(double) * (size_t)(3 * o.reps + 1)); /* -n: 3 series; -p: 2 */
    if (!j.send || !j.recv || !j.counts || !j.displs || !times) {
        fprintf(stderr, "rank %d: cannot allocate 2 x %zu bytes\n", j.rank, max_elems * sizeof(float));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t e = 0; e < max_elems; ++e) j.send[e] = input(j.rank, e);
    memset(j.recv, 0, max_elems * sizeof(float));

    if (j.rank == 0) {
        printf("# chorus-mpi-timing: %d ranks, MPI_FLOAT (SUM), %d blocks per size; us per call, slowest rank;\n",
               j.size, o.reps);
        printf("# median, min and max over blocks%s\n",
               o.nonblocking ? "; nonblocking: MPI_I... + MPI_Wait, then with computation in between (overlap)" : "");
        printf("%-15s %10s %7s %12s %12s %12s", "collective", "bytes", "iters", "median_us", "min_us", "max_us");
        if (o.nonblocking) printf(" %12s %12s %11s", "overall_us", "compute_us", "overlap_pct");
        if (o.pmpi) printf(" %12s", "pmpi_us");
        printf(" %s\n", "check");
    }
    int failed = 0;
    for (int k = 0; k < kCollectives; ++k) {
        if (!o.wanted[k]) continue;
        if (k == kBarrier) {
            j.count = 0;
            failed |= one_size(kBarrier, &j, 0, &o, times);
            continue;
        }
        for (size_t bytes = 4; bytes <= o.max_bytes; bytes *= 2) {
            size_t count = bytes / sizeof(float);
            if (k == kReduceScatter) count /= (size_t)j.size;
            if (count == 0) continue;
            j.count = (int)count;
            for (int r = 0; r < j.size; ++r) {
                j.counts[r] = j.count;
                j.displs[r] = r * j.count;
            }
            failed |= one_size((Kind)k, &j, bytes, &o, times);
        }
    }
    /* Rank 0's verdict to every rank, so that each exits with it. */
    if (j.rank == 0)
        for (int r = 1; r < j.size; ++r) MPI_Send(&failed, 1, MPI_INT, r, 78, MPI_COMM_WORLD);
    else
        MPI_Recv(&failed, 1, MPI_INT, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(times);
    free(j.displs);
    free(j.counts);
    free(j.recv);
    free(j.send);
    MPI_Finalize();
    return failed;
}
