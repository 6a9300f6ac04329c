/*
 * Helper of tests/gpu/smoke.sh (not a test by itself): NCCL set-up of a
 * world of one through libdistbind (distbind_nccl_init, config NULL) next
 * to bare NCCL (ncclGetUniqueId + ncclCommInitRank), in the same process,
 * interleaved, N rounds each after one untimed round of each; both on
 * device 0, made current beforehand; destroying is not timed.  Prints
 *   INIT rounds=N distbind_ms=MEDIAN bare_ms=MEDIAN ratio=R
 * or "ERR <message>".  Loads libcudart and libnccl as libdistbind does,
 * from the loader's path, without their headers.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distbind.h"

extern char **environ;

typedef struct {
    char internal[128];
} unique_id;
static int (*set_device)(int);
static int (*get_unique_id)(unique_id *);
static int (*comm_init_rank)(void **, int, unique_id, int);
static int (*comm_destroy)(void *);

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int load(void) {
    static const char *cudart[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11", "libcudart.so"};
    void *cu = NULL, *nc = dlopen("libnccl.so.2", RTLD_NOW);
    for (size_t i = 0; i < sizeof cudart / sizeof cudart[0] && !cu; i++) cu = dlopen(cudart[i], RTLD_NOW);
    if (!cu || !nc) return 0;
    set_device = (int (*)(int))dlsym(cu, "cudaSetDevice");
    get_unique_id = (int (*)(unique_id *))dlsym(nc, "ncclGetUniqueId");
    comm_init_rank = (int (*)(void **, int, unique_id, int))dlsym(nc, "ncclCommInitRank");
    comm_destroy = (int (*)(void *))dlsym(nc, "ncclCommDestroy");
    return set_device && get_unique_id && comm_init_rank && comm_destroy;
}

/* One bare set-up: ms, or -1. */
static double bare(void) {
    unique_id id;
    void *comm = NULL;
    double t0 = now_ms();
    if (get_unique_id(&id) != 0 || comm_init_rank(&comm, 1, id, 0) != 0) return -1;
    double t = now_ms() - t0;
    comm_destroy(comm);
    return t;
}

/* One set-up through libdistbind, on a handle already at set_device: ms,
 * or -1 with the message printed. */
static double through(const char *const *env) {
    distbind_t *db = NULL;
    struct ncclComm *comm = NULL;
    if (distbind_create_env(&db, env) != DISTBIND_OK || distbind_connect(db) != DISTBIND_OK ||
        distbind_set_device(db, NULL) != DISTBIND_OK) {
        printf("ERR %s\n", distbind_last_error(db));
        distbind_destroy(db);
        return -1;
    }
    double t0 = now_ms();
    distbind_status st = distbind_nccl_init(db, NULL, &comm);
    double t = now_ms() - t0;
    if (st != DISTBIND_OK) printf("ERR %s\n", distbind_last_error(db));
    distbind_destroy(db);
    return st == DISTBIND_OK ? t : -1;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    static const char *mine[] = {"RANK=0",
                                 "WORLD_SIZE=1",
                                 "LOCAL_RANK=0",
                                 "LOCAL_WORLD_SIZE=1",
                                 "NODE_RANK=0",
                                 "MASTER_ADDR=127.0.0.1",
                                 "MASTER_PORT=1",
                                 "DIST_BIND_BOOTSTRAP=tcp",
                                 "DIST_BIND_DEVICE=0",
                                 NULL};
    if (n < 1 || !load() || set_device(0) != 0) {
        printf("ERR cannot load libcudart/libnccl from the loader's path, or no device 0\n");
        return 1;
    }
    size_t k = 0, e = 0;
    while (environ[e]) e++;
    const char **env = calloc(e + 10, sizeof *env);
    for (size_t i = 0; i < e; i++)
        if (strncmp(environ[i], "RANK=", 5) && strncmp(environ[i], "DIST_BIND_", 10)) env[k++] = environ[i];
    for (size_t i = 0; mine[i]; i++) env[k++] = mine[i];
    double *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
    if (through(env) < 0 || bare() < 0) return 1;
    for (int i = 0; i < n; i++) {
        /* Alternate which goes first, so neither always gets a warm cache. */
        if (i % 2) {
            a[i] = through(env);
            b[i] = bare();
        } else {
            b[i] = bare();
            a[i] = through(env);
        }
        if (a[i] < 0 || b[i] < 0) return 1;
    }
    qsort(a, (size_t)n, sizeof *a, cmp);
    qsort(b, (size_t)n, sizeof *b, cmp);
    double ma = a[n / 2], mb = b[n / 2];
    printf("INIT rounds=%d distbind_ms=%.3f bare_ms=%.3f ratio=%.3f\n", n, ma, mb, mb > 0 ? ma / mb : 0);
    free(a);
    free(b);
    free(env);
    return 0;
}
