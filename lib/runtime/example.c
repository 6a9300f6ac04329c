/* A program started by `srun --dist-bind`: where am I, who else is there,
 * my GPU, an NCCL communicator.
 *
 *   cc example.c -o example $(pkg-config --cflags --libs distbind)
 *   srun -N2 -n8 --gpus-per-task=1 --dist-bind ./example
 */
#include <distbind.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
    distbind_t *h;
    if (distbind_init(&h) != DISTBIND_OK) {
        fprintf(stderr, "%s\n", distbind_last_error(NULL));
        return 1;
    }
    int rank = distbind_rank(h), n = distbind_world_size(h);
    printf("rank %d/%d local %d/%d node %d device %d (place from %s, exchange over %s)\n", rank, n,
           distbind_local_rank(h), distbind_local_world_size(h), distbind_node_rank(h), distbind_device(h),
           distbind_source(h), distbind_bootstrap(h));

    /* Every rank's host name, through the step's own exchange. */
    char host[64] = "", *hosts = calloc((size_t)n, sizeof host);
    gethostname(host, sizeof host - 1);
    distbind_status st = distbind_allgather(h, host, sizeof host, hosts);
    if (st == DISTBIND_OK && rank == 0)
        for (int r = 0; r < n; r++) printf("rank %d runs on %s\n", r, hosts + r * sizeof host);
    free(hosts);

    /* The GPU, checked across the step, then NCCL. */
    int dev;
    if (st == DISTBIND_OK) st = distbind_set_device(h, &dev);
    if (st == DISTBIND_OK) {
        struct ncclComm *comm; /* an ncclComm_t, owned by h */
        st = distbind_nccl_init(h, NULL, &comm);
        if (st == DISTBIND_OK) printf("rank %d: NCCL ready on device %d\n", rank, dev);
    } else if (st == DISTBIND_ERR_NO_GPU || st == DISTBIND_ERR_UNAVAILABLE) {
        if (rank == 0) printf("no GPU: %s\n", distbind_last_error(h));
        st = DISTBIND_OK;
    }
    if (st != DISTBIND_OK) fprintf(stderr, "%s\n", distbind_last_error(h));
    distbind_destroy(h);
    return st == DISTBIND_OK ? 0 : 1;
}
