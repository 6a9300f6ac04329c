/* An MPI program as a user writes it, built by the lab tests with each MPI's
 * own compiler wrapper (mpicc.openmpi, mpicc.mpich): its world rank and
 * size, its rank and size in the node's shared-memory communicator
 * (MPI_COMM_TYPE_SHARED), one MPI_Allreduce, and the variables dist-bind
 * set, on one line.  With "distbind" it also brings up libdistbind in the
 * same process (both PMIx or PMI2 clients of the same server), before MPI
 * ("distbind-first") or after it ("distbind"), and checks its exchange with
 * an allgather of the MPI world ranks.
 *
 *   MPI rank=R size=N local=L lsize=LS sum=S host=H env_rank=.. env_local=..
 *       env_lws=.. [db_rank=.. db_local=.. db_lws=.. db_boot=.. db_gather=ok|bad]
 */
#include <distbind.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v ? v : "unset";
}

static distbind_t *distbind_up(void) {
    distbind_t *h = NULL;
    if (distbind_init(&h) != DISTBIND_OK) {
        fprintf(stderr, "mpi_probe: %s\n", distbind_last_error(NULL));
        exit(2);
    }
    return h;
}

int main(int argc, char **argv) {
    int with_db = argc > 1 && strncmp(argv[1], "distbind", 8) == 0;
    int db_first = argc > 1 && strcmp(argv[1], "distbind-first") == 0;
    distbind_t *h = db_first ? distbind_up() : NULL;

    MPI_Init(&argc, &argv);
    int rank, size, local, lsize, one, sum = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &lsize);
    one = rank + 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    char host[64] = "";
    gethostname(host, sizeof host - 1);
    char extra[512] = "";
    if (with_db) {
        if (!h) h = distbind_up();
        int n = distbind_world_size(h), ok = n == size;
        int *all = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
        if (ok && distbind_allgather(h, &rank, sizeof rank, all) != DISTBIND_OK) {
            fprintf(stderr, "mpi_probe: %s\n", distbind_last_error(h));
            ok = 0;
        }
        for (int r = 0; ok && r < n; r++) ok = all[r] == r;
        free(all);
        snprintf(extra, sizeof extra, " db_rank=%d db_local=%d db_lws=%d db_boot=%s db_gather=%s",
                 distbind_rank(h), distbind_local_rank(h), distbind_local_world_size(h), distbind_bootstrap(h),
                 ok ? "ok" : "bad");
    }
    /* Every rank is still in both worlds: a barrier in each before leaving. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (h && distbind_barrier(h) != DISTBIND_OK) fprintf(stderr, "mpi_probe: %s\n", distbind_last_error(h));
    printf("MPI rank=%d size=%d local=%d lsize=%d sum=%d host=%s env_rank=%s env_local=%s env_lws=%s%s\n", rank,
           size, local, lsize, sum, host, env("RANK"), env("LOCAL_RANK"), env("LOCAL_WORLD_SIZE"), extra);
    fflush(stdout);
    MPI_Comm_free(&node);
    MPI_Finalize();
    if (h) distbind_destroy(h);
    return 0;
}
