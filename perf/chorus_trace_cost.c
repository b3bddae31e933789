/* chorus-trace-cost: what CHORUS_TRACE costs a small collective. Two
 * communicators in one run, one created with CHORUS_TRACE set and one
 * without; the same loop of all-reduces runs on each in alternating blocks,
 * so that both see the machine alike, and each block's time per call (the
 * slowest rank's) is kept. The report gives the medians, their ratio and the
 * traced communicator's overhead in percent.
 *
 * Usage: mpirun -np N chorus-trace-cost [-m BYTES] [-n CALLS] [-r ROUNDS] [-t DIR]
 *   -m  bytes per all-reduce (float32 sum; default 4)
 *   -n  calls per block (default 20000)
 *   -r  blocks of each kind (default 21); the medians are over the blocks
 *   -t  the trace directory (default /tmp/chorus-trace-cost; each rank
 *       writes its trace there when the communicator is destroyed) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_median.h"
#include "chorus.h"

typedef struct {
    long bytes, calls;
    int rounds;
    const char* dir;
} Options;

static int parse(int argc, char** argv, Options* o) {
    o->bytes = 4;
    o->calls = 20000;
    o->rounds = 21;
    o->dir = "/tmp/chorus-trace-cost";
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        if (i + 1 >= argc) return 0;
        if (strcmp(a, "-t") == 0) {
            o->dir = argv[++i];
            continue;
        }
        char* end = NULL;
        long v = strtol(argv[++i], &end, 10);
        if (*end != '\0' || v <= 0) return 0;
        if (strcmp(a, "-m") == 0 && v % 4 == 0)
            o->bytes = v;
        else if (strcmp(a, "-n") == 0)
            o->calls = v;
        else if (strcmp(a, "-r") == 0 && v < 1000)
            o->rounds = (int)v;
        else
            return 0;
    }
    return 1;
}

static int check(chorus_result_t rc, const char* what, chorus_comm_t comm) {
    if (rc == CHORUS_SUCCESS) return 1;
    fprintf(stderr, "chorus-trace-cost: %s: %s\n", what, chorus_comm_last_error(comm));
    return 0;
}

/* One block: the slowest rank's microseconds per call (0 on failure). */
static double block(chorus_comm_t comm, const float* in, float* out, size_t count, long calls) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < calls; ++i)
        if (!check(chorus_allreduce(in, out, count, CHORUS_FLOAT32, CHORUS_SUM, comm, NULL), "chorus_allreduce", comm))
            return 0;
    double mine = (MPI_Wtime() - t0) * 1e6 / (double)calls, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Options o;
    if (!parse(argc, argv, &o)) {
        if (rank == 0)
            fprintf(stderr, "usage: chorus-trace-cost [-m BYTES (a multiple of 4)] [-n CALLS] [-r ROUNDS] [-t DIR]\n");
        MPI_Finalize();
        return 2;
    }
    /* The traced communicator first, then the other, as every rank does. */
    chorus_comm_t traced = NULL, plain = NULL;
    setenv("CHORUS_TRACE", o.dir, 1);
    int ok = check(chorus_comm_create(MPI_COMM_WORLD, &traced), "chorus_comm_create (traced)", NULL);
    unsetenv("CHORUS_TRACE");
    ok = ok && check(chorus_comm_create(MPI_COMM_WORLD, &plain), "chorus_comm_create", NULL);
    const size_t count = (size_t)o.bytes / 4;
    float* in = malloc(count * sizeof *in);
    float* out = malloc(count * sizeof *out);
    double* t_traced = malloc((size_t)o.rounds * sizeof(double));
    double* t_plain = malloc((size_t)o.rounds * sizeof(double));
    for (size_t i = 0; i < count; ++i) in[i] = (float)(rank + 1);
    /* A warm-up block on each, then the rounds, the order alternating. */
    ok =
        ok && block(traced, in, out, count, o.calls / 10 + 1) > 0 && block(plain, in, out, count, o.calls / 10 + 1) > 0;
    for (int r = 0; ok && r < o.rounds; ++r) {
        chorus_comm_t first = r % 2 ? plain : traced, second = r % 2 ? traced : plain;
        double a = block(first, in, out, count, o.calls), b = block(second, in, out, count, o.calls);
        ok = a > 0 && b > 0;
        t_traced[r] = r % 2 ? b : a;
        t_plain[r] = r % 2 ? a : b;
    }
    /* The sum is exact: small integers. */
    const float expect = (float)size * (float)(size + 1) / 2;
    for (size_t i = 0; ok && i < count; ++i)
        if (out[i] != expect) {
            fprintf(stderr, "chorus-trace-cost: rank %d: element %zu is %g, not %g\n", rank, i, out[i], expect);
            ok = 0;
        }
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ok && rank == 0) {
        double p = chorus_perf_median(t_plain, o.rounds), t = chorus_perf_median(t_traced, o.rounds);
        printf(
            "# chorus-trace-cost: allreduce %ld B float32 sum, %d ranks, %d blocks of %ld calls each, "
            "medians of the blocks (the slowest rank's time per call)\n",
            o.bytes, size, o.rounds, o.calls);
        printf("%-22s %10s\n", "communicator", "us/call");
        printf("%-22s %10.4f\n", "untraced", p);
        printf("%-22s %10.4f\n", "CHORUS_TRACE", t);
        printf("traced/untraced %.3f (overhead %+.1f%%)\n", t / p, (t / p - 1) * 100);
    }
    if (traced) chorus_comm_destroy(traced);
    if (plain) chorus_comm_destroy(plain);
    free(in);
    free(out);
    free(t_traced);
    free(t_plain);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
