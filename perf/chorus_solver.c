/* chorus-solver: the collective pattern of an implicit solver's iteration
 * (conjugate gradients): a little local work, an 8-byte all-reduce (a dot
 * product), more local work, another 8-byte all-reduce (a norm). The same
 * loop runs through MPI_Allreduce and through chorus_allreduce, in
 * alternating blocks in one run, and each block's time per iteration is
 * kept; the report gives the medians and their ratio.
 *
 * A third loop calls PMPI_Allreduce, the MPI library's own entry point: run
 * as is, MPI_Allreduce is the same call; with libchorus_mpi.so preloaded,
 * MPI_Allreduce is the interposer's, so one run compares the MPI library,
 * the interposer and the C API under the same conditions. Every iteration's two sums are checked against the exact
 * values (the inputs are small integers, so every order of summation gives
 * the same double).
 *
 * Usage: mpirun -np N chorus-solver [-n ITERATIONS] [-w ELEMENTS] [-r ROUNDS]
 *   -n  iterations per block (default 20000)
 *   -w  local elements per rank touched by each half of the work (default
 *       256: about 0.1 us of work, as in a solver with a small subdomain)
 *   -r  blocks of each kind (default 11); the medians are over the blocks */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_median.h"
#include "chorus.h"

typedef struct {
    long iterations;
    long elements;
    int rounds;
} Options;

static int parse(int argc, char** argv, Options* o) {
    o->iterations = 20000;
    o->elements = 256;
    o->rounds = 11;
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        if (i + 1 >= argc) return 0;
        char* end = NULL;
        long v = strtol(argv[++i], &end, 10);
        if (*end != '\0' || v <= 0) return 0;
        if (strcmp(a, "-n") == 0)
            o->iterations = v;
        else if (strcmp(a, "-w") == 0)
            o->elements = v;
        else if (strcmp(a, "-r") == 0 && v < 1000)
            o->rounds = (int)v;
        else
            return 0;
    }
    return 1;
}

typedef struct {
    double* x;
    double* p;
    long n;
    int rank, size;
    chorus_comm_t comm;
} Work;

enum { kMpi, kPmpi, kChorus, kModes };

static void sum(const Work* w, int mode, double* local, double* global) {
    if (mode == kChorus)
        chorus_allreduce(local, global, 1, CHORUS_FLOAT64, CHORUS_SUM, w->comm, NULL);
    else if (mode == kPmpi)
        PMPI_Allreduce(local, global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Allreduce(local, global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

/* One block of `iterations` solver iterations through `mode`. Returns the
 * seconds per iteration, or -1 on a wrong sum. */
static double block(Work* w, long iterations, int mode) {
    /* x[i] = rank + 1, p[i] = 1: the dot product sums to n * size(size+1)/2
     * and the norm to n * sum((r+1)^2). */
    const double dot_want = (double)w->n * w->size * (w->size + 1) / 2;
    const double norm_want = (double)w->n * w->size * (w->size + 1) * (2.0 * w->size + 1) / 6;
    int bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (long it = 0; it < iterations; ++it) {
        double local = 0, global = 0;
        for (long i = 0; i < w->n; ++i) local += w->x[i] * w->p[i];
        sum(w, mode, &local, &global);
        bad |= global != dot_want;
        local = 0;
        for (long i = 0; i < w->n; ++i) local += w->x[i] * w->x[i];
        sum(w, mode, &local, &global);
        bad |= global != norm_want;
    }
    const double t = (MPI_Wtime() - t0) / (double)iterations;
    return bad ? -1 : t;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    Work w;
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    Options o;
    if (!parse(argc, argv, &o)) {
        if (w.rank == 0)
            fprintf(stderr, "usage: mpirun -np N chorus-solver [-n ITERATIONS] [-w ELEMENTS] [-r ROUNDS]\n");
        MPI_Finalize();
        return 2;
    }
    if (chorus_comm_create(MPI_COMM_WORLD, &w.comm) != CHORUS_SUCCESS) {
        fprintf(stderr, "rank %d: chorus_comm_create: %s\n", w.rank, chorus_comm_last_error(NULL));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    w.n = o.elements;
    w.x = malloc(sizeof(double) * (size_t)w.n);
    w.p = malloc(sizeof(double) * (size_t)w.n);
    for (long i = 0; i < w.n; ++i) {
        w.x[i] = w.rank + 1;
        w.p[i] = 1;
    }
    double* times[kModes];
    for (int m = 0; m < kModes; ++m) times[m] = malloc(sizeof(double) * (size_t)o.rounds);
    int failed = 0;
    /* Warm-up of each, then rounds of one block each, the order rotating
     * from round to round. */
    for (int m = 0; m < kModes; ++m) failed |= block(&w, o.iterations / 10 + 1, m) < 0;
    for (int r = 0; r < o.rounds; ++r)
        for (int k = 0; k < kModes; ++k) {
            const int mode = (r + k) % kModes;
            double t = block(&w, o.iterations, mode);
            if (t < 0) failed = 1;
            /* Every rank's time is the slowest rank's. */
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            times[mode][r] = t;
        }
    int any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (w.rank == 0) {
        const double mpi = chorus_perf_median(times[kMpi], o.rounds) * 1e6,
                     pmpi = chorus_perf_median(times[kPmpi], o.rounds) * 1e6;
        const double chorus = chorus_perf_median(times[kChorus], o.rounds) * 1e6;
        printf("# chorus-solver: %d ranks, %ld elements of local work, %ld iterations x %d blocks each\n", w.size, w.n,
               o.iterations, o.rounds);
        printf("# per iteration: local work, 8-byte all-reduce, local work, 8-byte all-reduce (medians)\n");
        printf("PMPI_Allreduce    %10.3f us   (the MPI library)\n", pmpi);
        printf("MPI_Allreduce     %10.3f us   (the interposer, if preloaded)\n", mpi);
        printf("chorus_allreduce  %10.3f us\n", chorus);
        printf("PMPI/Chorus       %10.2f\n", pmpi / chorus);
        printf("PMPI/MPI          %10.2f\n", pmpi / mpi);
        printf("validation        %s\n", any_failed ? "FAIL" : "pass");
    }
    for (int m = 0; m < kModes; ++m) free(times[m]);
    free(w.x);
    free(w.p);
    chorus_comm_destroy(w.comm);
    MPI_Finalize();
    return any_failed ? 1 : 0;
}
