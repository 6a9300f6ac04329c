/*
 * srun's side at sizes no lab reaches: the node ranks srun hands the nodes
 * (DIST_BIND_NODE_RANKS, db_layout_hints) from a synthetic step layout of
 * 1,000, 10,000 and 100,000 nodes, 4 tasks each:
 *   block     Slurm's node order (the default layouts)
 *   topology  leaf switches of 32 nodes each, the switches in a shuffled
 *             order, the nodes of each in Slurm's order (what a topology
 *             plugin's node ranking does from Slurm 26.05)
 *   shuffled  every node in a shuffled order (nothing real does this: the
 *             worst case, where the value would not fit one environment
 *             string and srun refuses the step with one message)
 * One line per case: "HINTS nodes=N layout=L us=T bytes=B error=0|1",
 * the median time of building the value over the runs.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db_core.h"

enum { PER_NODE = 4, LEAF = 32, RUNS = 7 };

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A fixed xorshift sequence: the same layouts in every run. */
static uint32_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)*s;
}

static void shuffle(uint32_t *v, uint32_t n, uint64_t *seed) {
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = next(seed) % i, t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* order[k]: the node (in Slurm's order) that gets the k-th block of tasks. */
static void layout_order(const char *kind, uint32_t n, uint32_t *order) {
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (uint32_t i = 0; i < n; i++) order[i] = i;
    if (strcmp(kind, "shuffled") == 0) {
        shuffle(order, n, &seed);
    } else if (strcmp(kind, "topology") == 0) {
        uint32_t leaves = (n + LEAF - 1) / LEAF, k = 0, *leaf = malloc(leaves * sizeof *leaf);
        if (!leaf) abort();
        for (uint32_t i = 0; i < leaves; i++) leaf[i] = i;
        shuffle(leaf, leaves, &seed);
        for (uint32_t i = 0; i < leaves; i++)
            for (uint32_t j = leaf[i] * LEAF; j < n && j < (leaf[i] + 1) * LEAF; j++) order[k++] = j;
        free(leaf);
    }
}

static int one(uint32_t n, const char *kind) {
    uint16_t *tasks = malloc(n * sizeof *tasks);
    uint32_t **tids = malloc(n * sizeof *tids), *order = malloc(n * sizeof *order), *all;
    double times[RUNS];
    size_t bytes = 0;
    int error = 0;
    char err[DB_ERRLEN];

    all = malloc((size_t)n * PER_NODE * sizeof *all);
    if (!tasks || !tids || !order || !all) abort();
    layout_order(kind, n, order);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t node = order[k];
        tasks[node] = PER_NODE;
        tids[node] = all + (size_t)node * PER_NODE;
        for (uint32_t t = 0; t < PER_NODE; t++) tids[node][t] = k * PER_NODE + t;
    }
    for (int r = 0; r < RUNS; r++) {
        char *out = NULL;
        uint32_t rank0 = 0;
        double t0 = now_us();
        int rc = db_layout_hints(n, n * PER_NODE, tasks, (const uint32_t *const *)tids, &out, &rank0, err, sizeof err);
        times[r] = now_us() - t0;
        error = rc != 0;
        bytes = out ? strlen(DB_NODE_RANKS_HINT) + 1 + strlen(out) + 1 : 0;
        if (!error && rank0 != order[0]) {
            fprintf(stderr, "bench_hints: %s %u: rank 0's node %u, want %u\n", kind, n, rank0, order[0]);
            return 1;
        }
        free(out);
    }
    qsort(times, RUNS, sizeof times[0], cmp);
    printf("HINTS nodes=%u layout=%s us=%.1f bytes=%zu error=%d\n", n, kind, times[RUNS / 2], bytes, error);
    if (error) printf("HINTS-ERROR %s\n", err);
    free(tasks);
    free(tids);
    free(order);
    free(all);
    return 0;
}

int main(void) {
    static const uint32_t sizes[] = {1000, 10000, 100000};
    static const char *const kinds[] = {"block", "topology", "shuffled"};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            if (one(sizes[s], kinds[k]) != 0) return 1;
    return 0;
}
