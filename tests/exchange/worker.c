/*
 * One rank of an exchange test, started many times by the tests and the
 * benchmarks (tests/exchange/t_*.py, tests/bench/b_*.py, lab tests).
 *
 *   xchg_worker roundtrip       init, broadcasts, allgather, barrier; check all
 *   xchg_worker root-exits      rank 0 leaves right after init; the rest barrier
 *   xchg_worker late SECS RANKS the ranks in RANKS (a,b,..) sleep SECS before
 *                               the barrier
 *   xchg_worker badlen          rank 1 passes another size to allgather
 *   xchg_worker toobig          every rank broadcasts 1 byte over the limit
 *                               (refused, ARG), then a barrier
 *   xchg_worker twice [SECS]    barrier, destroy the handle, make a new one
 *                               (must use the same bootstrap), barrier; with
 *                               SECS the last rank waits that long before it
 *                               destroys, so the others' second set-up is
 *                               under way when it does
 *   xchg_worker again SECS RANK rank RANK sleeps SECS before a barrier; the
 *                               others' barrier must time out, then they
 *                               destroy and init again, and print how the
 *                               second init went
 *   xchg_worker bench ITERS     ITERS x (128-byte id from rank 0 + barrier);
 *                               every rank prints when its set-up began
 *                               (CLOCK_MONOTONIC), how long it took and the
 *                               CPU time it used
 *
 * With XCHG_START_FD=N every rank waits for end-of-file on fd N before
 * distbind_init (the launcher closes it once all run), so rank 0's init_us
 * is the whole set-up.
 *
 * Prints one line on stdout: "OK rank=R world=W bootstrap=B source=S
 * peak=N init_us=T secret_env=0|1", "BENCH ..." (rank 0 of bench), or
 * "ERR <STATUS> <message>" (exit 1).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "distbind.h"

static distbind_t *db;

static void die(distbind_status st, const char *what) {
    printf("ERR %s %s\n", distbind_status_name(st), distbind_last_error(db));
    fflush(stdout);
    if (what) fprintf(stderr, "%s failed\n", what);
    exit(1);
}

static void check(distbind_status st, const char *what) {
    if (st != DISTBIND_OK) die(st, what);
}

static void wrong(const char *fmt, int a, int b) {
    printf("ERR WRONG ");
    printf(fmt, a, b);
    printf("\n");
    exit(2);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* This process's CPU time (user and system), for the set-up's cost beside
 * its wall time: on a loaded machine the two tell waiting from work. */
static double cpu_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct who {
    int32_t rank;
    int32_t pid;
    char host[56];
};

static void roundtrip(void) {
    int rank = distbind_rank(db), world = distbind_world_size(db);
    unsigned char id[128];
    for (int i = 0; i < 128; i++) id[i] = rank == 0 ? (unsigned char)(i * 7 + 3) : 0;
    check(distbind_broadcast(db, id, sizeof id, 0), "broadcast");
    for (int i = 0; i < 128; i++)
        if (id[i] != (unsigned char)(i * 7 + 3)) wrong("broadcast byte %d is %d", i, id[i]);

    struct who me = {rank, (int32_t)getpid(), ""};
    gethostname(me.host, sizeof me.host - 1);
    struct who *all = calloc((size_t)world, sizeof *all);
    check(distbind_allgather(db, &me, sizeof me, all), "allgather");
    for (int r = 0; r < world; r++)
        if (all[r].rank != r) wrong("allgather slot %d holds rank %d", r, all[r].rank);
    free(all);

    /* From the last rank: data has to climb to rank 0 first. */
    int32_t v = rank == world - 1 ? 424242 + world : -1;
    check(distbind_broadcast(db, &v, sizeof v, world - 1), "broadcast from the last rank");
    if (v != 424242 + world) wrong("broadcast from rank %d gave %d", world - 1, v);

    /* Bigger than one PMI2 value: travels in chunks there. */
    enum { kBig = 1500 };
    unsigned char *big = malloc(kBig), *bigs = malloc((size_t)world * kBig);
    for (int i = 0; i < kBig; i++) big[i] = (unsigned char)(rank * 31 + i);
    check(distbind_allgather(db, big, kBig, bigs), "large allgather");
    for (int r = 0; r < world; r++)
        for (int i = 0; i < kBig; i++)
            if (bigs[(size_t)r * kBig + i] != (unsigned char)(r * 31 + i))
                wrong("large allgather: rank %d byte %d", r, i);
    free(big);
    free(bigs);

    /* Zero bytes is legal. */
    check(distbind_allgather(db, NULL, 0, NULL), "empty allgather");
    check(distbind_barrier(db), "barrier");
}

static void late(double secs, const char *ranks) {
    int rank = distbind_rank(db);
    char *copy = strdup(ranks), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (atoi(t) == rank) usleep((useconds_t)(secs * 1e6));
    free(copy);
    check(distbind_barrier(db), "barrier");
}

static void bench(int iters) {
    int rank = distbind_rank(db);
    double *t = calloc((size_t)iters, sizeof *t);
    unsigned char id[128];
    for (int i = 0; i < iters; i++) {
        memset(id, rank == 0 ? i : 0, sizeof id);
        double t0 = now_us();
        check(distbind_broadcast(db, id, sizeof id, 0), "broadcast");
        check(distbind_barrier(db), "barrier");
        t[i] = now_us() - t0;
        if (id[5] != (unsigned char)i) wrong("iteration %d got id byte %d", i, id[5]);
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    if (rank == 0)
        printf("BENCH world=%d bootstrap=%s median_us=%.0f min_us=%.0f peak=%ld\n", distbind_world_size(db),
               distbind_bootstrap(db), t[iters / 2], t[0], distbind_peak_connections(db));
    free(t);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "roundtrip";
    /* Benchmarks start every rank's set-up at one moment: when the pipe
     * XCHG_START_FD reaches end-of-file (its writer closes it once every
     * rank runs), so init_us is the set-up itself, not process start-up. */
    const char *gate = getenv("XCHG_START_FD");
    if (gate) {
        char c;
        int fd = atoi(gate);
        while (read(fd, &c, 1) > 0 || errno == EINTR) {}
        close(fd);
    }
    double c0 = cpu_us(), t0 = now_us();
    distbind_status st = distbind_init(&db);
    if (st != DISTBIND_OK) die(st, "init");
    double init_us = now_us() - t0, init_cpu_us = cpu_us() - c0;
    int rank = distbind_rank(db);

    if (!strcmp(mode, "roundtrip")) {
        roundtrip();
    } else if (!strcmp(mode, "root-exits")) {
        if (rank == 0) _exit(0);
        check(distbind_barrier(db), "barrier");
    } else if (!strcmp(mode, "late") && argc > 3) {
        late(atof(argv[2]), argv[3]);
    } else if (!strcmp(mode, "badlen")) {
        char buf[64] = "", *all = calloc((size_t)distbind_world_size(db), 64);
        check(distbind_allgather(db, buf, rank == 1 ? 48 : 32, all), "allgather");
        free(all);
    } else if (!strcmp(mode, "toobig")) {
        /* Refused on every rank before anything is sent: the exchange
         * stays usable. */
        size_t n = DISTBIND_MAX_EXCHANGE_BYTES + 1;
        char *big = malloc(n);
        if (!big) die(DISTBIND_ERR_INTERNAL, "malloc");
        st = distbind_broadcast(db, big, n, 0);
        free(big);
        if (st != DISTBIND_ERR_ARG) {
            printf("ERR %s broadcast of %zu bytes was not refused: %s\n", distbind_status_name(st), n,
                   distbind_last_error(db));
            return 1;
        }
        fprintf(stderr, "%s\n", distbind_last_error(db));
        check(distbind_barrier(db), "barrier after the refused broadcast");
    } else if (!strcmp(mode, "twice")) {
        char first[16];
        snprintf(first, sizeof first, "%s", distbind_bootstrap(db));
        check(distbind_barrier(db), "barrier");
        if (argc > 2 && rank == distbind_world_size(db) - 1) usleep((useconds_t)(atof(argv[2]) * 1e6));
        distbind_destroy(db);
        db = NULL;
        st = distbind_init(&db);
        if (st != DISTBIND_OK) die(st, "the second init");
        if (strcmp(first, distbind_bootstrap(db))) {
            printf("ERR WRONG first handle over %s, the second over %s\n", first, distbind_bootstrap(db));
            return 2;
        }
        check(distbind_barrier(db), "barrier of the second handle");
    } else if (!strcmp(mode, "again") && argc > 3) {
        if (rank == atoi(argv[3])) {
            usleep((useconds_t)(atof(argv[2]) * 1e6));
            check(distbind_barrier(db), "barrier");
        } else {
            st = distbind_barrier(db);
            if (st != DISTBIND_ERR_TIMEOUT) {
                printf("ERR WRONG the barrier ended with %s: %s\n", distbind_status_name(st), distbind_last_error(db));
                return 2;
            }
            distbind_destroy(db);
            db = NULL;
            st = distbind_init(&db);
            if (st != DISTBIND_OK) die(st, "init after a timeout");
        }
    } else if (!strcmp(mode, "bench") && argc > 2) {
        bench(atoi(argv[2]));
        printf("INIT rank=%d world=%d t0_us=%.0f init_us=%.0f cpu_us=%.0f\n", rank, distbind_world_size(db), t0,
               init_us, init_cpu_us);
        distbind_destroy(db);
        return 0;
    } else {
        fprintf(stderr,
                "usage: xchg_worker roundtrip|root-exits|late SECS RANKS|badlen|toobig|twice [SECS]|"
                "again SECS RANK|bench ITERS\n");
        return 2;
    }
    /* secret_env: whether DIST_BIND_SECRET is still in this process's environment. */
    printf("OK rank=%d world=%d bootstrap=%s source=%s peak=%ld init_us=%.0f secret_env=%d\n", rank,
           distbind_world_size(db), distbind_bootstrap(db), distbind_source(db), distbind_peak_connections(db), init_us,
           getenv("DIST_BIND_SECRET") != NULL);
    distbind_destroy(db);
    return 0;
}
