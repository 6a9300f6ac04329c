/*
 * GPU test: a world of one rank picks device 0, checks it across the
 * (single-rank) step and brings up NCCL three ways, each followed by the
 * checked all-reduce where it can be bounded:
 *   - config NULL (NCCL's default, a blocking communicator);
 *   - config NULL after distbind_set_nccl_blocking(db, 0) (non-blocking),
 *     then distbind_nccl_allreduce_check and distbind_nccl_abort;
 *   - a config of an older nccl.h (NCCL 2.14's, smaller than today's),
 *     non-blocking, then the all-reduce check.
 * Exit 77 (skipped) without a usable GPU, unless DIST_BIND_GPU_REQUIRED is
 * set (tests/gpu/smoke.sh and the fake-driver tests set it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distbind.h"

extern char **environ;

/* ncclConfig_t as NCCL 2.14 laid it out. */
struct old_config {
    size_t size;
    unsigned magic, version;
    int blocking;
};

static const char **env;

static int skip_or_fail(const char *why) {
    if (getenv("DIST_BIND_GPU_REQUIRED")) {
        printf("FAIL: a GPU was required: %s\n", why);
        return 1;
    }
    printf("SKIP: no usable GPU: %s\n", why);
    return 77;
}

/* The process's environment (CUDA_VISIBLE_DEVICES, ...) with a place of
 * our own: rank 0 of 1. */
static void make_env(void) {
    static const char *mine[] = {"RANK=0",      "WORLD_SIZE=1",          "LOCAL_RANK=0",  "LOCAL_WORLD_SIZE=1",
                                 "NODE_RANK=0", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1", "DIST_BIND_BOOTSTRAP=tcp",
                                 NULL};
    size_t n = 0, k = 0;
    while (environ[n]) n++;
    env = calloc(n + 9, sizeof *env);
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (strncmp(e, "RANK=", 5) && strncmp(e, "DIST_BIND_DEVICE=", 17) && strncmp(e, "DIST_BIND_BOOTSTRAP=", 20))
            env[k++] = e;
    }
    for (size_t i = 0; mine[i]; i++) env[k++] = mine[i];
}

/* One bring-up: 0 when it went as expected, 77/1 as the test's result. */
static int one(const char *what, int blocking, const void *config, int check) {
    distbind_t *db = NULL;
    if (distbind_create_env(&db, env) != DISTBIND_OK || distbind_connect(db) != DISTBIND_OK) {
        printf("FAIL: %s: %s\n", what, distbind_last_error(db));
        return 1;
    }
    int dev = -1;
    distbind_status st = distbind_set_device(db, &dev);
    if (st == DISTBIND_ERR_NO_GPU || st == DISTBIND_ERR_UNAVAILABLE) {
        int rc = skip_or_fail(distbind_last_error(db));
        distbind_destroy(db);
        return rc;
    }
    char bus[64] = "";
    if (st != DISTBIND_OK || dev != 0 || distbind_gpu_bus_id(db, bus, sizeof bus) != DISTBIND_OK || strlen(bus) < 7) {
        printf("FAIL: %s: set_device: %s (device %d)\n", what, distbind_last_error(db), dev);
        return 1;
    }
    if (blocking >= 0 && distbind_set_nccl_blocking(db, blocking) != DISTBIND_OK) {
        printf("FAIL: %s: %s\n", what, distbind_last_error(db));
        return 1;
    }
    struct ncclComm *comm = NULL;
    if (distbind_nccl_init(db, config, &comm) != DISTBIND_OK || !comm) {
        printf("FAIL: %s: nccl_init: %s\n", what, distbind_last_error(db));
        return 1;
    }
    /* A second communicator on one handle is refused, not leaked. */
    struct ncclComm *again = NULL;
    if (distbind_nccl_init(db, NULL, &again) != DISTBIND_ERR_STATE || again) {
        printf("FAIL: %s: a second nccl_init was not refused\n", what);
        return 1;
    }
    double s = 0;
    if (check && distbind_nccl_allreduce_check(db, 1 << 20, 3, &s) != DISTBIND_OK) {
        printf("FAIL: %s: all-reduce check: %s\n", what, distbind_last_error(db));
        return 1;
    }
    if (check == 2 && distbind_nccl_abort(db) != DISTBIND_OK) {
        printf("FAIL: %s: abort: %s\n", what, distbind_last_error(db));
        return 1;
    }
    printf("ok: %s: device %d, bus %s, communicator %p%s\n", what, dev, bus, (void *)comm,
           check ? ", all-reduce checked" : "");
    distbind_destroy(db);
    return 0;
}

int main(void) {
    make_env();
    struct old_config old = {sizeof old, 0xcafebeef, 21403, 0};
    int rc = one("config NULL (blocking)", -1, NULL, 0);
    if (!rc) rc = one("config NULL, non-blocking", 0, NULL, 2);
    if (!rc) rc = one("an older nccl.h's config, non-blocking", -1, &old, 1);
    free(env);
    if (!rc) printf("passed\n");
    return rc;
}
