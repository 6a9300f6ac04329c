/*
 * Helper of the GPU test scripts (not a test by itself): one rank of a
 * step, from the environment, through libdistbind's public API:
 *
 *   gpu_nccl_rank MODE [--thread] [--check BYTES ITERS] [--abort]
 *
 * MODE is how distbind_nccl_init is called:
 *   null         config NULL (NCCL's default, blocking)
 *   nonblocking  config NULL after distbind_set_nccl_blocking(db, 0)
 *   config-nb    a config of an older nccl.h (NCCL 2.14's four fields:
 *   config-b     smaller than today's), blocking = 0 or 1
 *   config-bad   a config not made with NCCL_CONFIG_INITIALIZER
 *   config-size  a config whose size field is too small for any NCCL
 *   none         no NCCL: set the device only
 *   hold         set the device, then keep it (and its context) until
 *                stdin closes: a process outside the step using the GPU
 * --thread: distbind_nccl_init runs on a second thread (its device is
 * whatever that thread has: 0 unless the library sets it).
 * --check: distbind_nccl_allreduce_check(BYTES, ITERS); --abort:
 * distbind_nccl_abort afterwards.
 *
 * Prints, as it goes, "DEVICE d BUS b", "COMM device=d" (NCCL's own
 * ncclCommCuDevice), "CHECK seconds=s", then "OK"; or "ERR <status>
 * <message>" and exits 1.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distbind.h"

/* ncclConfig_t as NCCL 2.14 laid it out (size, magic, version, blocking). */
struct old_config {
    size_t size;
    unsigned magic, version;
    int blocking;
};

static distbind_t *db;
static const void *config;
static struct ncclComm *comm;
static distbind_status init_st;

static int fail(distbind_status st) {
    printf("ERR %s %s\n", distbind_status_name(st), distbind_last_error(db));
    distbind_destroy(db);
    return 1;
}

static void *init_thread(void *arg) {
    (void)arg;
    init_st = distbind_nccl_init(db, config, &comm);
    return NULL;
}

/* The device NCCL put the communicator on, asked of NCCL itself. */
static int comm_device(void) {
    void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    int (*cu_device)(void *, int *) = nccl ? (int (*)(void *, int *))dlsym(nccl, "ncclCommCuDevice") : NULL;
    int dev = -1;
    if (!cu_device || cu_device(comm, &dev) != 0) dev = -1;
    return dev;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "usage: gpu_nccl_rank null|nonblocking|config-nb|config-b|config-bad|config-size|none|hold "
                "[--thread] "
                "[--check BYTES ITERS] [--abort]\n");
        return 2;
    }
    const char *mode = argv[1];
    int thread = 0, abort_after = 0, iters = 0;
    size_t bytes = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--thread"))
            thread = 1;
        else if (!strcmp(argv[i], "--abort"))
            abort_after = 1;
        else if (!strcmp(argv[i], "--check") && i + 2 < argc) {
            bytes = strtoul(argv[++i], NULL, 10);
            iters = atoi(argv[++i]);
        } else {
            fprintf(stderr, "gpu_nccl_rank: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    struct old_config old = {sizeof old, 0xcafebeef, 21403, 0};
    distbind_status st = distbind_init(&db);
    if (st != DISTBIND_OK) {
        printf("ERR %s %s\n", distbind_status_name(st), distbind_last_error(NULL));
        return 1;
    }
    int dev = -1;
    char bus[64] = "";
    st = distbind_set_device(db, &dev);
    if (st == DISTBIND_OK) st = distbind_gpu_bus_id(db, bus, sizeof bus);
    if (st != DISTBIND_OK) return fail(st);
    printf("DEVICE %d BUS %s\n", dev, bus);
    fflush(stdout);
    if (!strcmp(mode, "none") || !strcmp(mode, "hold")) {
        printf("OK\n");
        fflush(stdout);
        if (!strcmp(mode, "hold"))
            while (getchar() != EOF) {}
        distbind_destroy(db);
        return 0;
    }
    if (!strcmp(mode, "nonblocking")) {
        st = distbind_set_nccl_blocking(db, 0);
        if (st != DISTBIND_OK) return fail(st);
    } else if (!strncmp(mode, "config", 6)) {
        old.blocking = !strcmp(mode, "config-b");
        if (!strcmp(mode, "config-bad")) old.magic = 0;
        if (!strcmp(mode, "config-size")) old.size = 4;
        config = &old;
    } else if (strcmp(mode, "null")) {
        fprintf(stderr, "gpu_nccl_rank: unknown mode %s\n", mode);
        return 2;
    }
    if (thread) {
        pthread_t t;
        pthread_create(&t, NULL, init_thread, NULL);
        pthread_join(t, NULL);
    } else {
        init_thread(NULL);
    }
    if (init_st != DISTBIND_OK) return fail(init_st);
    printf("COMM device=%d\n", comm_device());
    fflush(stdout);
    if (iters > 0) {
        double s = 0;
        st = distbind_nccl_allreduce_check(db, bytes, iters, &s);
        if (st != DISTBIND_OK) return fail(st);
        printf("CHECK seconds=%g\n", s);
    }
    if (abort_after) {
        st = distbind_nccl_abort(db);
        if (st != DISTBIND_OK) return fail(st);
        if (distbind_nccl_abort(db) != DISTBIND_ERR_STATE) {
            printf("ERR a second abort was not refused\n");
            return 1;
        }
    }
    printf("OK\n");
    distbind_destroy(db);
    return 0;
}
