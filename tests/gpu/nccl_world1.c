/*
 * GPU test: a world of one rank picks device 0, checks it across the
 * (single-rank) step and brings up an NCCL communicator with
 * ncclCommInitRankConfig.  Exit 77 (skipped) without a usable GPU, unless
 * DIST_BIND_GPU_REQUIRED is set (tests/gpu/run-on-gpu.sh sets it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distbind.h"

extern char **environ;

static int skip_or_fail(const char *why) {
    if (getenv("DIST_BIND_GPU_REQUIRED")) {
        printf("FAIL: a GPU was required: %s\n", why);
        return 1;
    }
    printf("SKIP: no usable GPU: %s\n", why);
    return 77;
}

int main(void) {
    /* The process's environment (CUDA_VISIBLE_DEVICES, ...) with a place of
     * our own: rank 0 of 1. */
    static const char *mine[] = {"RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1", "NODE_RANK=0",
                                 "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1", "DIST_BIND_BOOTSTRAP=tcp", NULL};
    size_t n = 0;
    while (environ[n]) n++;
    const char **env = calloc(n + 9, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (strncmp(e, "RANK=", 5) && strncmp(e, "DIST_BIND_DEVICE=", 17) && strncmp(e, "DIST_BIND_BOOTSTRAP=", 20))
            env[k++] = e;
    }
    for (size_t i = 0; mine[i]; i++) env[k++] = mine[i];

    distbind_t *db = NULL;
    if (distbind_create_env(&db, env) != DISTBIND_OK || distbind_connect(db) != DISTBIND_OK) {
        printf("FAIL: %s\n", distbind_last_error(db));
        return 1;
    }
    int dev = -1;
    distbind_status st = distbind_set_device(db, &dev);
    if (st == DISTBIND_ERR_NO_GPU || st == DISTBIND_ERR_UNAVAILABLE) return skip_or_fail(distbind_last_error(db));
    if (st != DISTBIND_OK || dev != 0) {
        printf("FAIL: set_device: %s (device %d)\n", distbind_last_error(db), dev);
        return 1;
    }
    char bus[64] = "";
    if (distbind_gpu_bus_id(db, bus, sizeof bus) != DISTBIND_OK || strlen(bus) < 7) {
        printf("FAIL: no bus id: %s\n", distbind_last_error(db));
        return 1;
    }
    struct ncclComm *comm = NULL;
    st = distbind_nccl_init(db, NULL, &comm);
    if (st != DISTBIND_OK || !comm) {
        printf("FAIL: nccl_init: %s\n", distbind_last_error(db));
        return 1;
    }
    /* A second communicator on one handle is refused, not leaked. */
    struct ncclComm *again = NULL;
    if (distbind_nccl_init(db, NULL, &again) != DISTBIND_ERR_STATE || again) {
        printf("FAIL: a second nccl_init was not refused\n");
        return 1;
    }
    printf("ok: device %d, bus %s, NCCL communicator %p\n", dev, bus, (void *)comm);
    distbind_destroy(db);
    free(env);
    return 0;
}
