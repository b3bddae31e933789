/* Checks, from inside an MPI job on tools/vcluster.sh, that the virtual
 * cluster looks like a real one (plain MPI, nothing of Chorus):
 *
 *   - each rank's hostname is vc-hH for the host H the layout puts it on
 *     (ranks fill the hosts in order), so ranks on one host share a name and
 *     ranks on different hosts do not;
 *   - MPI agrees: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups exactly
 *     the ranks of one host, and OMPI_COMM_WORLD_LOCAL_SIZE says the same;
 *   - MPI_Allreduce is exact across hosts (small and large messages);
 *   - with --bytes N, traffic goes where it should, measured on the host's
 *     link (the byte counters of IFACE in /proc/net/dev, which belong to the
 *     host's own network namespace): a phase of N-byte messages between
 *     ranks of one host moves (almost) nothing over the link, and a phase in
 *     which every rank sends N bytes to a rank on another host moves at least
 *     those bytes over the sender's and the receiver's links.
 *
 * Usage: vc_check --layout 2,1,1 [--bytes N[K|M]] [--iface eth0]
 * Exit status 0 when every check passes on every rank.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_HOSTS 256
#define NAME_LEN 64

static int rank, size, failures;

#define CHECK(cond, ...)                                 \
    do {                                                 \
        if (!(cond)) {                                   \
            fprintf(stderr, "vc_check rank %d: ", rank); \
            fprintf(stderr, __VA_ARGS__);                \
            fputc('\n', stderr);                         \
            ++failures;                                  \
        }                                                \
    } while (0)

static long long parse_bytes(const char* s) {
    char* end = NULL;
    long long v = strtoll(s, &end, 10);
    if (*end == 'K' || *end == 'k') v <<= 10, ++end;
    else if (*end == 'M' || *end == 'm') v <<= 20, ++end;
    else if (*end == 'G' || *end == 'g') v <<= 30, ++end;
    return *end ? -1 : v;
}

/* Bytes received and sent on IFACE in this process's network namespace. */
static int link_bytes(const char* iface, unsigned long long* rx, unsigned long long* tx) {
    FILE* f = fopen("/proc/net/dev", "r");
    char line[512];
    size_t n = strlen(iface);
    int found = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        char* p = line;
        while (*p == ' ') ++p;
        if (strncmp(p, iface, n) == 0 && p[n] == ':') {
            unsigned long long v[9];
            if (sscanf(p + n + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                       &v[4], &v[5], &v[6], &v[7], &v[8]) == 9) {
                *rx = v[0];
                *tx = v[8];
                found = 1;
            }
        }
    }
    fclose(f);
    return found;
}

int main(int argc, char** argv) {
    const char* layout_arg = NULL;
    const char* iface = "eth0";
    long long bytes = 0;
    int layout[MAX_HOSTS], nhosts = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--layout") && i + 1 < argc) layout_arg = argv[++i];
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = parse_bytes(argv[++i]);
        else if (!strcmp(argv[i], "--iface") && i + 1 < argc) iface = argv[++i];
        else {
            if (rank == 0) fprintf(stderr, "usage: vc_check --layout 2,1,1 [--bytes N[K|M|G]] [--iface eth0]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (!layout_arg || bytes < 0) {
        if (rank == 0) fprintf(stderr, "vc_check: --layout is required and --bytes must be a size\n");
        MPI_Finalize();
        return 2;
    }
    for (const char* p = layout_arg; *p && nhosts < MAX_HOSTS;) {
        char* end = NULL;
        layout[nhosts] = (int)strtol(p, &end, 10);
        if (end == p || layout[nhosts] <= 0) break;
        ++nhosts;
        p = *end == ',' ? end + 1 : end;
    }

    /* the host each rank should be on: the layout, filled in rank order */
    int* host_of = malloc(sizeof(int) * size);
    int total = 0;
    for (int h = 0; h < nhosts; ++h)
        for (int k = 0; k < layout[h] && total < size; ++k) host_of[total++] = h;
    {
        int sum = 0;
        for (int h = 0; h < nhosts; ++h) sum += layout[h];
        if (sum != size) {
            if (rank == 0) fprintf(stderr, "vc_check: layout %s has %d ranks, the job %d\n", layout_arg, sum, size);
            MPI_Finalize();
            return 2;
        }
    }
    const int my_host = host_of[rank];

    /* hostnames */
    char name[NAME_LEN] = {0}, want[NAME_LEN];
    gethostname(name, sizeof name - 1);
    snprintf(want, sizeof want, "vc-h%d", my_host);
    CHECK(strcmp(name, want) == 0, "hostname is '%s', expected '%s'", name, want);
    char* names = calloc((size_t)size, NAME_LEN);
    MPI_Allgather(name, NAME_LEN, MPI_CHAR, names, NAME_LEN, MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) {
        int same_name = strcmp(names + (size_t)r * NAME_LEN, name) == 0;
        int same_host = host_of[r] == my_host;
        CHECK(same_name == same_host, "rank %d is on '%s', this rank on '%s': %s host expected", r,
              names + (size_t)r * NAME_LEN, name, same_host ? "the same" : "a different");
    }

    /* MPI's idea of a node */
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int lrank, lsize;
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    CHECK(lsize == layout[my_host], "MPI_COMM_TYPE_SHARED has %d ranks, host vc-h%d has %d", lsize, my_host,
          layout[my_host]);
    char* lnames = calloc((size_t)lsize, NAME_LEN);
    MPI_Allgather(name, NAME_LEN, MPI_CHAR, lnames, NAME_LEN, MPI_CHAR, local);
    for (int r = 0; r < lsize; ++r)
        CHECK(strcmp(lnames + (size_t)r * NAME_LEN, name) == 0, "shared-memory peer %d is on '%s', not '%s'", r,
              lnames + (size_t)r * NAME_LEN, name);
    const char* ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (ls) CHECK(atoi(ls) == layout[my_host], "OMPI_COMM_WORLD_LOCAL_SIZE is %s, expected %d", ls, layout[my_host]);

    /* all-reduce across hosts: small, then 4 MiB of int64 */
    {
        long long mine = rank + 1, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == (long long)size * (size + 1) / 2, "MPI_Allreduce of 1 value gave %lld", sum);
        const size_t n = (size_t)4 << 17;
        int64_t* a = malloc(n * sizeof *a);
        int64_t* b = malloc(n * sizeof *b);
        for (size_t i = 0; i < n; ++i) a[i] = (int64_t)i * (rank + 1) + rank;
        MPI_Allreduce(a, b, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        size_t bad = 0;
        const int64_t ranks_sum = (int64_t)size * (size - 1) / 2, weights = (int64_t)size * (size + 1) / 2;
        for (size_t i = 0; i < n; ++i) bad += b[i] != (int64_t)i * weights + ranks_sum;
        CHECK(bad == 0, "MPI_Allreduce of %zu int64: %zu wrong", n, bad);
        free(a);
        free(b);
    }

    /* traffic: same-host phase, then cross-host phase, counted on the link */
    if (bytes > 0) {
        char* sbuf = malloc((size_t)bytes);
        char* rbuf = malloc((size_t)bytes);
        memset(sbuf, rank + 1, (size_t)bytes);
        unsigned long long rx[3] = {0}, tx[3] = {0};
        int have = 1;
        double t0, t1;

        /* Each phase: every rank done with what came before (so its bytes
         * have arrived), counters read, every rank past reading them. */
        MPI_Barrier(MPI_COMM_WORLD);
        have &= link_bytes(iface, &rx[0], &tx[0]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (lsize > 1)
            MPI_Sendrecv(sbuf, (int)bytes, MPI_CHAR, (lrank + 1) % lsize, 1, rbuf, (int)bytes, MPI_CHAR,
                         (lrank + lsize - 1) % lsize, 1, local, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        have &= link_bytes(iface, &rx[1], &tx[1]);
        MPI_Barrier(MPI_COMM_WORLD);

        /* a shift that takes every rank to another host */
        int shift = 0;
        for (int s = 1; s < size && !shift; ++s) {
            int ok = 1;
            for (int r = 0; r < size && ok; ++r) ok = host_of[r] != host_of[(r + s) % size];
            if (ok) shift = s;
        }
        t0 = MPI_Wtime();
        if (shift)
            MPI_Sendrecv(sbuf, (int)bytes, MPI_CHAR, (rank + shift) % size, 2, rbuf, (int)bytes, MPI_CHAR,
                         (rank + size - shift) % size, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t1 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        have &= link_bytes(iface, &rx[2], &tx[2]);
        if (shift) {
            const char expect = (char)((rank + size - shift) % size + 1);
            size_t bad = 0;
            for (long long i = 0; i < bytes; ++i) bad += rbuf[i] != expect;
            CHECK(bad == 0, "cross-host message: %zu bytes wrong", bad);
        }

        CHECK(have, "no counters for '%s' in /proc/net/dev", iface);
        double secs = t1 - t0, slowest = 0;
        MPI_Reduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (have && lrank == 0) {
            /* every rank of this host sent and received one message */
            const unsigned long long local_moved = (rx[1] - rx[0]) + (tx[1] - tx[0]);
            const unsigned long long sent = tx[2] - tx[1], received = rx[2] - rx[1];
            const unsigned long long expect = shift ? (unsigned long long)lsize * (unsigned long long)bytes : 0;
            printf("vc_check %s (%d ranks): same-host phase moved %llu bytes over %s; cross-host phase sent %llu "
                   "and received %llu bytes (at least %llu expected)\n",
                   name, lsize, local_moved, iface, sent, received, expect);
            CHECK(lsize == 1 || local_moved < (unsigned long long)bytes / 8,
                  "same-host messages of %lld bytes moved %llu bytes over %s: they did not stay on the host", bytes,
                  local_moved, iface);
            CHECK(sent >= expect && received >= expect,
                  "cross-host messages: %s sent %llu and received %llu bytes, at least %llu expected", iface, sent,
                  received, expect);
        }
        if (rank == 0 && shift)
            printf("vc_check: cross-host phase: %lld bytes per rank in %.3f s (%.2f Gbit/s per rank)\n", bytes,
                   slowest, slowest > 0 ? bytes * 8.0 / slowest / 1e9 : 0.0);
        free(sbuf);
        free(rbuf);
    }

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0) printf("vc_check: OK: %d ranks on %d hosts (layout %s)\n", size, nhosts, layout_arg);
        else printf("vc_check: FAILED: %d failed checks\n", all);
    }
    fflush(stdout);
    MPI_Comm_free(&local);
    free(lnames);
    free(names);
    free(host_of);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
