/* cg: a distributed conjugate-gradient solver for the 2D Poisson problem,
 * the inner loop of an implicit simulation.
 *
 *   -laplace(u) = f on the unit square, u = 0 on the boundary, discretized
 *   with the 5-point stencil on an N x N grid of interior points (h = 1/(N+1));
 *   f = 2 (x (1 - x) + y (1 - y)), whose solution u = x (1 - x) y (1 - y) the
 *   stencil reproduces exactly (so |x - u| measures the solver alone).
 *
 * The grid is cut into strips of whole rows, one per rank. Every iteration
 * applies the stencil (one halo row exchanged with each neighbour through
 * MPI_Sendrecv) and takes two dot products, each a local sum followed by an
 * all-reduce of one 8-byte double: the latency-bound collective of implicit
 * solvers. The same solve runs twice in one run, with the all-reduce done by
 * chorus_allreduce and by MPI_Allreduce, and both are printed side by side.
 *
 * --device puts the dot products' all-reduce in device memory: the local sum
 * is copied into a device double, chorus_allreduce reduces device to device
 * (Chorus's device path), and the result is copied back. The vectors and the
 * stencil stay on the host (this example has no kernels), so the device run
 * shows the path, not a speed-up. The MPI solve stays on the host (Open MPI
 * here is not CUDA-aware).
 *
 * Exit status: 0 when both solves converged to the tolerance (checked again
 * from the true residual |b - Ax|), took the same number of iterations and
 * agree on the final residual to a relative 1e-6; 1 otherwise; 2 on bad
 * options; 77 with --device when some rank has no usable GPU.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_device.h"
#include "chorus.h"

static const double kResidualAgreement = 1e-6; /* relative, Chorus vs MPI */

typedef struct {
    int n;        /* grid points per side */
    int max_iter; /* iteration limit */
    double tol;   /* stop when |r| <= tol |b| */
    int device;   /* --device */
} Options;

/* This rank's strip: rows [row0, row0 + rows) of the grid, stored with one
 * halo row above and below: (rows + 2) x n doubles, owned rows 1..rows. */
typedef struct {
    int n, rows, row0;
    int up, down; /* neighbour ranks, MPI_PROC_NULL at the edges */
    MPI_Comm comm;
} Strip;

/* How a dot product's local sum becomes the global one. */
typedef struct {
    const char* name;
    chorus_comm_t chorus; /* NULL: MPI_Allreduce */
    MPI_Comm mpi;
    double* d_send; /* device scalars with --device, else NULL */
    double* d_recv;
    double seconds; /* time spent in the all-reduce */
    long calls;
} Reducer;

typedef struct {
    int iterations;
    double residual;      /* |r| / |b| at exit, from CG's recurrence */
    double true_residual; /* |b - Ax| / |b|, recomputed */
    double seconds;
    double allreduce_us;
} Result;

static void die(const char* what, chorus_result_t rc, chorus_comm_t comm) {
    fprintf(stderr, "cg: %s: %s: %s\n", what, chorus_get_error_string(rc), chorus_comm_last_error(comm));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static double global_sum(Reducer* red, double local) {
    double global = 0;
    double t0 = MPI_Wtime();
    if (!red->chorus) {
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, red->mpi);
    } else if (red->d_send) {
        if (cg_device_put(red->d_send, &local, sizeof local)) die("copy to the device", CHORUS_ERR_CUDA, NULL);
        chorus_result_t rc =
            chorus_allreduce(red->d_send, red->d_recv, 1, CHORUS_FLOAT64, CHORUS_SUM, red->chorus, NULL);
        if (rc != CHORUS_SUCCESS) die("chorus_allreduce (device)", rc, red->chorus);
        if (cg_device_get(&global, red->d_recv, sizeof global)) die("copy from the device", CHORUS_ERR_CUDA, NULL);
    } else {
        chorus_result_t rc = chorus_allreduce(&local, &global, 1, CHORUS_FLOAT64, CHORUS_SUM, red->chorus, NULL);
        if (rc != CHORUS_SUCCESS) die("chorus_allreduce", rc, red->chorus);
    }
    red->seconds += MPI_Wtime() - t0;
    red->calls++;
    return global;
}

static double dot(const Strip* s, Reducer* red, const double* a, const double* b) {
    double local = 0;
    for (size_t i = (size_t)s->n; i < (size_t)(s->rows + 1) * s->n; i++) local += a[i] * b[i];
    return global_sum(red, local);
}

/* q = A p on the owned rows; p's halo rows are filled first. */
static void apply_laplacian(const Strip* s, double* p, double* q) {
    const int n = s->n, rows = s->rows;
    MPI_Sendrecv(p + n, n, MPI_DOUBLE, s->up, 0, p + (size_t)(rows + 1) * n, n, MPI_DOUBLE, s->down, 0, s->comm,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(p + (size_t)rows * n, n, MPI_DOUBLE, s->down, 1, p, n, MPI_DOUBLE, s->up, 1, s->comm,
                 MPI_STATUS_IGNORE);
    for (int i = 1; i <= rows; i++) {
        const double* c = p + (size_t)i * n;
        double* out = q + (size_t)i * n;
        for (int j = 0; j < n; j++) {
            double left = j > 0 ? c[j - 1] : 0, right = j < n - 1 ? c[j + 1] : 0;
            out[j] = 4 * c[j] - left - right - c[j - n] - c[j + n];
        }
    }
}

/* The right-hand side h^2 f on the owned rows; halo rows (and the grid's
 * edges, where MPI_PROC_NULL leaves them) stay zero: the boundary. */
static void fill_rhs(const Strip* s, double* b) {
    const double h = 1.0 / (s->n + 1);
    for (int i = 1; i <= s->rows; i++)
        for (int j = 0; j < s->n; j++) {
            double x = (j + 1) * h, y = (s->row0 + i) * h;
            b[(size_t)i * s->n + j] = h * h * 2 * (x * (1 - x) + y * (1 - y));
        }
}

static Result solve(const Strip* s, const Options* o, Reducer* red, double* x) {
    const size_t len = (size_t)(s->rows + 2) * s->n;
    double* b = calloc(len, sizeof(double));
    double* r = calloc(len, sizeof(double));
    double* p = calloc(len, sizeof(double));
    double* q = calloc(len, sizeof(double));
    if (!b || !r || !p || !q) die("out of memory", CHORUS_ERR_OUT_OF_MEMORY, NULL);
    fill_rhs(s, b);
    memset(x, 0, len * sizeof(double));
    memcpy(r, b, len * sizeof(double)); /* r = b - A 0 */
    memcpy(p, r, len * sizeof(double));
    for (int i = 0; i < 10; i++) global_sum(red, 1.0); /* warm-up: first calls set up connections */
    red->seconds = 0;
    red->calls = 0;

    MPI_Barrier(s->comm);
    double t0 = MPI_Wtime();
    const double bnorm = sqrt(dot(s, red, b, b));
    double rr = dot(s, red, r, r);
    int it = 0;
    while (it < o->max_iter && sqrt(rr) > o->tol * bnorm) {
        apply_laplacian(s, p, q);
        const double alpha = rr / dot(s, red, p, q);
        for (size_t i = (size_t)s->n; i < len - (size_t)s->n; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        const double rr_new = dot(s, red, r, r);
        const double beta = rr_new / rr;
        for (size_t i = (size_t)s->n; i < len - (size_t)s->n; i++) p[i] = r[i] + beta * p[i];
        rr = rr_new;
        it++;
    }
    double elapsed = MPI_Wtime() - t0;

    /* The true residual, through MPI whatever the reducer: an independent check. */
    memcpy(p, x, len * sizeof(double));
    apply_laplacian(s, p, q);
    double local = 0, global = 0;
    for (size_t i = (size_t)s->n; i < len - (size_t)s->n; i++) local += (b[i] - q[i]) * (b[i] - q[i]);
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, s->comm);

    Result res = {it, sqrt(rr) / bnorm, sqrt(global) / bnorm, elapsed, 1e6 * red->seconds / (double)red->calls};
    MPI_Allreduce(MPI_IN_PLACE, &res.seconds, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    MPI_Allreduce(MPI_IN_PLACE, &res.allreduce_us, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    free(b), free(r), free(p), free(q);
    return res;
}

/* max |x - u| over the grid. */
static double solution_error(const Strip* s, const double* x) {
    const double h = 1.0 / (s->n + 1);
    double e = 0;
    for (int i = 1; i <= s->rows; i++)
        for (int j = 0; j < s->n; j++) {
            double px = (j + 1) * h, py = (s->row0 + i) * h;
            e = fmax(e, fabs(x[(size_t)i * s->n + j] - px * (1 - px) * py * (1 - py)));
        }
    MPI_Allreduce(MPI_IN_PLACE, &e, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    return e;
}

static int parse(int argc, char** argv, Options* o) {
    *o = (Options){.n = 256, .max_iter = 2000, .tol = 1e-8, .device = 0};
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--device")) {
            o->device = 1;
        } else if (!strcmp(a, "--n") && v) {
            o->n = atoi(v), i++;
        } else if (!strcmp(a, "--max-iter") && v) {
            o->max_iter = atoi(v), i++;
        } else if (!strcmp(a, "--tol") && v) {
            o->tol = atof(v), i++;
        } else {
            return 0;
        }
    }
    return o->n > 0 && o->max_iter > 0 && o->tol > 0;
}

static void print_row(const char* name, const Result* r) {
    printf("%-22s %10d %14.6e %14.6e %14.2f %14.2f\n", name, r->iterations, r->residual, r->true_residual,
           1e6 * r->seconds / (r->iterations > 0 ? r->iterations : 1), r->allreduce_us);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    Options o;
    if (!parse(argc, argv, &o)) {
        if (me == 0) fprintf(stderr, "usage: cg [--n N] [--max-iter K] [--tol T] [--device]\n");
        MPI_Finalize();
        return 2;
    }
    if (o.n < np) {
        if (me == 0) fprintf(stderr, "cg: --n %d gives some of the %d ranks no rows\n", o.n, np);
        MPI_Finalize();
        return 2;
    }

    Strip s = {.n = o.n, .comm = MPI_COMM_WORLD};
    s.row0 = (int)((long)o.n * me / np);
    s.rows = (int)((long)o.n * (me + 1) / np) - s.row0;
    s.up = me > 0 ? me - 1 : MPI_PROC_NULL;
    s.down = me < np - 1 ? me + 1 : MPI_PROC_NULL;

    chorus_comm_t comm;
    chorus_result_t rc = chorus_comm_create(MPI_COMM_WORLD, &comm);
    if (rc != CHORUS_SUCCESS) die("chorus_comm_create", rc, NULL);
    Reducer chorus = {.name = "chorus_allreduce", .chorus = comm, .mpi = MPI_COMM_WORLD};
    Reducer mpi = {.name = "MPI_Allreduce", .mpi = MPI_COMM_WORLD};

    if (o.device) {
        /* Every rank agrees, or every rank skips. */
        MPI_Comm node;
        int local_rank, usable, all_usable;
        char why[256] = "";
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &local_rank);
        MPI_Comm_free(&node);
        usable = cg_device_init(local_rank, why, sizeof why);
        if (usable) {
            chorus.d_send = cg_device_alloc(sizeof(double));
            chorus.d_recv = cg_device_alloc(sizeof(double));
            if (!chorus.d_send || !chorus.d_recv) usable = 0, snprintf(why, sizeof why, "cudaMalloc failed");
        }
        MPI_Allreduce(&usable, &all_usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!usable) fprintf(stderr, "cg: rank %d: --device: %s\n", me, why);
        if (!all_usable) {
            if (me == 0) printf("cg: --device: skipped, not every rank has a usable GPU\n");
            chorus_comm_destroy(comm);
            MPI_Finalize();
            return 77;
        }
    }

    const size_t len = (size_t)(s.rows + 2) * s.n;
    double* x_chorus = calloc(len, sizeof(double));
    double* x_mpi = calloc(len, sizeof(double));
    if (!x_chorus || !x_mpi) die("out of memory", CHORUS_ERR_OUT_OF_MEMORY, NULL);

    Result rc_chorus = solve(&s, &o, &chorus, x_chorus);
    Result rc_mpi = solve(&s, &o, &mpi, x_mpi);

    double dx = 0;
    for (size_t i = (size_t)s.n; i < len - (size_t)s.n; i++) dx = fmax(dx, fabs(x_chorus[i] - x_mpi[i]));
    MPI_Allreduce(MPI_IN_PLACE, &dx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double err = solution_error(&s, x_mpi);

    const double agreement = fabs(rc_chorus.residual - rc_mpi.residual) / rc_mpi.residual;
    const int converged = rc_chorus.residual <= o.tol && rc_mpi.residual <= o.tol &&
                          rc_chorus.true_residual <= 2 * o.tol && rc_mpi.true_residual <= 2 * o.tol;
    const int same = rc_chorus.iterations == rc_mpi.iterations && agreement <= kResidualAgreement;
    if (me == 0) {
        printf("cg: 2D Poisson, %d x %d grid (%ld unknowns), %d ranks (strips of ~%d rows), tol %.1e, %s\n", o.n, o.n,
               (long)o.n * o.n, np, o.n / np, o.tol,
               o.device ? "dot products' all-reduce on device memory" : "host memory");
        printf("%-22s %10s %14s %14s %14s %14s\n", "all-reduce", "iterations", "residual", "true residual",
               "us/iteration", "us/allreduce");
        print_row(chorus.name, &rc_chorus);
        print_row(mpi.name, &rc_mpi);
        printf("max |x_chorus - x_mpi| = %.3e%s; max |x - u| = %.3e\n", dx, dx == 0 ? " (bit-identical)" : "", err);
        if (!converged)
            printf("FAIL: a solve did not reach the tolerance %.1e (true residual <= %.1e)\n", o.tol, 2 * o.tol);
        if (!same)
            printf("FAIL: Chorus and MPI differ: %d vs %d iterations, residuals %.3e apart (relative; allowed %.0e)\n",
                   rc_chorus.iterations, rc_mpi.iterations, agreement, kResidualAgreement);
        if (converged && same)
            printf("PASS: both converged in %d iterations; residuals agree to %.1e relative (allowed %.0e)\n",
                   rc_mpi.iterations, agreement, kResidualAgreement);
    }

    if (chorus.d_send) cg_device_free(chorus.d_send);
    if (chorus.d_recv) cg_device_free(chorus.d_recv);
    free(x_chorus), free(x_mpi);
    rc = chorus_comm_destroy(comm);
    if (rc != CHORUS_SUCCESS) die("chorus_comm_destroy", rc, NULL);
    MPI_Finalize();
    return converged && same ? 0 : 1;
}
