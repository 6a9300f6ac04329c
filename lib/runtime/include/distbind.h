/*
 * libdistbind: rank discovery, a small exchange among the ranks of a job
 * step, CUDA device choice and NCCL bring-up, for programs started by
 * `srun --dist-bind` (and also by plain srun, torchrun or a PMIx launcher).
 *
 *     distbind_t *h;
 *     if (distbind_init(&h) != DISTBIND_OK) {
 *         fprintf(stderr, "%s\n", distbind_last_error(NULL));
 *         exit(1);
 *     }
 *     ...distbind_rank(h), distbind_set_device(h, &dev), distbind_nccl_init(...)
 *     distbind_destroy(h);
 *
 * Conventions
 *   - Every function that can fail returns a distbind_status; DISTBIND_OK
 *     (0) is success.  After a failure, distbind_last_error() has one
 *     message ("dist-bind: ...") that names what was wrong and what to do.
 *   - Functions marked COLLECTIVE must be called by every rank of the step,
 *     in the same order.  Each of them waits at most DIST_BIND_TIMEOUT
 *     seconds; a timeout names the ranks that did not arrive where the
 *     bootstrap can tell.  Once a collective has failed, the exchange is
 *     unusable: later collectives fail at once with the same message.
 *   - What is bounded by DIST_BIND_TIMEOUT besides the collectives'
 *     waits: PMIx_Init and PMI2_Init (run on a helper thread), PMIx's
 *     queries of the job size and the task's place (PMIX_TIMEOUT), and
 *     resolving MASTER_ADDR (getaddrinfo, on a helper thread).  After a
 *     PMIx_Init, PMI2_Init or PMI2 collective timed out, its helper thread
 *     may still be inside that library, which is then refused for the rest
 *     of the process (DISTBIND_ERR_STATE).  NCCL's communicator set-up
 *     (on a helper thread, whatever the config) and every wait of
 *     distbind_nccl_allreduce_check are bounded too.  Not bounded by this
 *     library:
 *       - CUDA calls (distbind_set_device's cudaGetDeviceCount,
 *         cudaSetDevice, ...), which wait for the driver;
 *       - distbind_destroy: ncclCommDestroy (it waits for the
 *         communicator's queued work); PMIx_Finalize and PMI2_Finalize,
 *         at process exit;
 *       - loading libpmix, libpmi2, libcudart and libnccl (dlopen).
 *   - PMIx and PMI2 stay connected until the process exits (Slurm's PMI2
 *     cannot be initialised again after PMI2_Finalize; a PMIx server drops
 *     a finalising client from collectives other ranks have begun): a
 *     handle made after another was destroyed uses the same connection.
 *   - A handle is not thread-safe: use it from one thread at a time.
 *     Different handles on different threads share nothing unsynchronised.
 *   - The library loads libpmix, Slurm's libpmi2, libcudart and libnccl with
 *     dlopen when they are first needed, so it also loads on nodes that
 *     have none of them.
 *
 * Environment (read once, by distbind_create)
 *   RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK|GROUP_RANK
 *                         the task's place (set by the dist-bind plugin or
 *                         torchrun); else SLURM_PROCID, SLURM_LOCALID,
 *                         SLURM_STEP_NUM_TASKS, SLURM_STEP_TASKS_PER_NODE,
 *                         SLURM_NODEID; else PMIx.
 *   DIST_BIND_DEVICE      device ordinal to use (else the local rank)
 *   MASTER_ADDR MASTER_PORT  where rank 0 listens (TCP bootstrap)
 *   DIST_BIND_BOOTSTRAP   auto (default) | pmix | pmi2 | tcp
 *   DIST_BIND_TIMEOUT     seconds any wait may take (default 300)
 *   DIST_BIND_TCP_FANOUT  children per rank in the TCP tree (default 8)
 *   DIST_BIND_STEP_KEY    step identity checked by the TCP bootstrap
 *                         (default SLURM_JOB_ID.SLURM_STEP_ID)
 *   DIST_BIND_SECRET      the step's secret (64 hex digits, set by srun
 *                         --dist-bind): over TCP, both ends of every
 *                         connection prove they know it before anything
 *                         else is said.  distbind_create takes it out of
 *                         the process environment (so do not call it while
 *                         other threads read the environment); TCP without
 *                         it is DISTBIND_ERR_ENV
 *   DIST_BIND_TCP_INSECURE=1  TCP without the secret, on every rank: anyone
 *                         who can reach MASTER_PORT can join or break the
 *                         step (rank 0 warns on stderr)
 *   DIST_BIND_NCCL_RANKS_PER_ROOT  above this world size NCCL is brought up
 *                         with one unique id per block of this many ranks
 *                         (default 128)
 *   DIST_BIND_DEBUG=1     print each setting read and each step taken
 */
#ifndef DISTBIND_H
#define DISTBIND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DISTBIND_API __attribute__((visibility("default")))
#else
#define DISTBIND_API
#endif

/* DISTBIND_VERSION_MAJOR/MINOR/PATCH and DISTBIND_VERSION_STRING: the release
 * this header belongs to (generated from the source tree's VERSION, installed
 * beside distbind.h); distbind_version() gives the library's at run time. */
#include "distbind_version.h"

typedef struct distbind distbind_t;

typedef enum distbind_status {
    DISTBIND_OK = 0,
    DISTBIND_ERR_ARG,         /* a bad argument to a function */
    DISTBIND_ERR_ENV,         /* a missing or malformed environment variable */
    DISTBIND_ERR_TIMEOUT,     /* ranks did not arrive within DIST_BIND_TIMEOUT */
    DISTBIND_ERR_PEER,        /* another rank failed, left, or disagrees
                                 (world size, step, message size) */
    DISTBIND_ERR_SYSTEM,      /* the OS refused: socket, port in use, ... */
    DISTBIND_ERR_UNAVAILABLE, /* the bootstrap, CUDA or NCCL is not available */
    DISTBIND_ERR_NO_GPU,      /* CUDA works but sees no GPU, or has no driver */
    DISTBIND_ERR_DEVICE,      /* bad device ordinal, two ranks on one GPU, or
                                 a CUDA error */
    DISTBIND_ERR_NCCL,        /* NCCL failed */
    DISTBIND_ERR_STATE,       /* wrong call order, or the exchange failed before */
    DISTBIND_ERR_INTERNAL     /* out of memory, or a bug */
} distbind_status;

/* Name of a status ("DISTBIND_ERR_TIMEOUT"). Never NULL. */
DISTBIND_API const char *distbind_status_name(distbind_status status);

/* Library version, "MAJOR.MINOR.PATCH". */
DISTBIND_API const char *distbind_version(void);

/* --- life cycle ------------------------------------------------------------ */

/* Read the environment and find this task's place in the step.  Does not
 * touch the network (unless the place has to come from PMIx).  On failure
 * *out is NULL and distbind_last_error(NULL) says why. */
DISTBIND_API distbind_status distbind_create(distbind_t **out);

/* As distbind_create, but reads the NULL-terminated NAME=VALUE array `env`
 * instead of the process environment (for launchers and tests).  PMIx and
 * PMI2 still use the process's own connection to their server. */
DISTBIND_API distbind_status distbind_create_env(distbind_t **out, const char *const *env);

/* Override DIST_BIND_BOOTSTRAP before distbind_connect: "auto", "pmix",
 * "pmi2" or "tcp". */
DISTBIND_API distbind_status distbind_set_bootstrap(distbind_t *h, const char *name);

/* Override DIST_BIND_TIMEOUT before distbind_connect (seconds, > 0). */
DISTBIND_API distbind_status distbind_set_timeout(distbind_t *h, double seconds);

/* Seconds each wait of this handle may take (DIST_BIND_TIMEOUT, or what
 * distbind_set_timeout set); -1 when h is NULL. */
DISTBIND_API double distbind_timeout(const distbind_t *h);

/* COLLECTIVE.  Bring up the exchange (PMIx, PMI2 or TCP) and check that
 * every rank agrees on the world size and the step. */
DISTBIND_API distbind_status distbind_connect(distbind_t *h);

/* distbind_create followed by distbind_connect.  On failure *out is NULL
 * and distbind_last_error(NULL) says why. */
DISTBIND_API distbind_status distbind_init(distbind_t **out);

/* Close the exchange and free the handle, and the NCCL communicator made
 * by distbind_nccl_init if any.  Not collective.  NULL is ignored. */
DISTBIND_API void distbind_destroy(distbind_t *h);

/* --- the task's place ------------------------------------------------------- */

/* Each returns -1 when h is NULL. */
DISTBIND_API int distbind_rank(const distbind_t *h);
DISTBIND_API int distbind_world_size(const distbind_t *h);
DISTBIND_API int distbind_local_rank(const distbind_t *h);
DISTBIND_API int distbind_local_world_size(const distbind_t *h);
DISTBIND_API int distbind_node_rank(const distbind_t *h);
/* The device ordinal this task should use: DIST_BIND_DEVICE, else the
 * local rank.  Not yet checked against the GPUs (distbind_set_device). */
DISTBIND_API int distbind_device(const distbind_t *h);

/* Where the place came from: "dist-bind" (the plugin's variables), "env"
 * (RANK, WORLD_SIZE, ... without the plugin, e.g. torchrun), "slurm"
 * (SLURM_PROCID, ...) or "pmix". */
DISTBIND_API const char *distbind_source(const distbind_t *h);

/* 1 when a launcher re-ranked this process under an srun --dist-bind task
 * (torchrun's workers: RANK,LOCAL_RANK,WORLD_SIZE differ from the place
 * that opens the plugin's record, DIST_BIND_SET): the place is the launcher's (source "env"), the
 * device the local-rank-th of the task's GPUs, and SLURM_PROCID and
 * SLURM_LOCALID are the launcher task's.  0 otherwise, and for h NULL. */
DISTBIND_API int distbind_relaunched(const distbind_t *h);

/* The exchange in use: "pmix", "pmi2" or "tcp"; NULL before
 * distbind_connect. */
DISTBIND_API const char *distbind_bootstrap(const distbind_t *h);

/* --- exchange (all COLLECTIVE, after distbind_connect) -------------------- */

/* The most bytes one collective carries: len for a broadcast, world_size *
 * len for an allgather (1 GiB).  More is DISTBIND_ERR_ARG, refused before
 * anything is sent, so the exchange stays usable. */
#define DISTBIND_MAX_EXCHANGE_BYTES ((size_t)1 << 30)

/* Copy `len` bytes from rank `root`'s buf into every rank's buf.  Every
 * rank must pass the same len and root; len is at most
 * DISTBIND_MAX_EXCHANGE_BYTES. */
DISTBIND_API distbind_status distbind_broadcast(distbind_t *h, void *buf, size_t len, int root);

/* Every rank contributes `len` bytes; recv (world_size * len bytes) gets
 * rank r's bytes at offset r * len.  Every rank must pass the same len;
 * world_size * len is at most DISTBIND_MAX_EXCHANGE_BYTES. */
DISTBIND_API distbind_status distbind_allgather(distbind_t *h, const void *send, size_t len, void *recv);

/* Return once every rank has entered the barrier. */
DISTBIND_API distbind_status distbind_barrier(distbind_t *h);

/* --- GPU --------------------------------------------------------------------- */

/* COLLECTIVE.  Check distbind_device() against the devices CUDA sees on
 * every rank, then that no two ranks would use one GPU (by the GPU's UUID,
 * so two machines with one host name, or one machine under two, are told
 * apart; the error names both ranks and the host), and only then make it
 * the calling thread's CUDA device (cudaSetDevice, which opens a context:
 * on a GPU in exclusive-process mode the error says that another process
 * holds it).  *device (may be NULL) gets the ordinal.  Every rank gets the
 * same status: DISTBIND_ERR_NO_GPU when CUDA sees no GPU on some rank (the
 * message says which), DISTBIND_ERR_UNAVAILABLE when the library was built
 * without CUDA or libcudart cannot be loaded. */
DISTBIND_API distbind_status distbind_set_device(distbind_t *h, int *device);

/* The PCI bus id of the device chosen by distbind_set_device, as CUDA
 * writes it ("0000:3B:00.0"). */
DISTBIND_API distbind_status distbind_gpu_bus_id(const distbind_t *h, char *buf, size_t len);

/* What CUDA says about this rank's device (distbind_gpu_query). */
typedef struct distbind_gpu_info {
    distbind_status status; /* DISTBIND_OK when the device exists and CUDA
                               described it; else why not (NO_GPU,
                               UNAVAILABLE, DEVICE), explained in message */
    int device;             /* the ordinal asked about (distbind_device) */
    int count;              /* devices CUDA sees; -1 when CUDA cannot tell
                               (no driver, no libcudart) */
    int numa;               /* the GPU's NUMA node (sysfs); -1 when unknown */
    char bus_id[32];        /* "0000:3B:00.0"; "" when unknown */
    char uuid[48];          /* "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
                               CUDA's UUID of the device (a MIG instance's
                               own); "" when unknown */
    char message[400];      /* why status is not DISTBIND_OK */
} distbind_gpu_info;

/* NOT collective.  Fill *info about distbind_device() without making it
 * current (no cudaSetDevice, so no CUDA context is made).  Returns
 * DISTBIND_OK when *info was filled in, whatever CUDA said (that is
 * info->status), DISTBIND_ERR_ARG when info is NULL. */
DISTBIND_API distbind_status distbind_gpu_query(distbind_t *h, distbind_gpu_info *info);

struct ncclComm;

/* Before distbind_nccl_init with config NULL: 1 asks NCCL for a blocking
 * communicator (NCCL's default), 0 for a non-blocking one.  As with any
 * config, NCCL_COMM_BLOCKING=0 or 1 in the process's environment overrides
 * this (NCCL's own rule). */
DISTBIND_API distbind_status distbind_set_nccl_blocking(distbind_t *h, int blocking);

/* COLLECTIVE, after distbind_set_device.  Create an NCCL communicator over
 * all ranks of the step: rank 0 makes the unique id, or, when the world is
 * larger than DIST_BIND_NCCL_RANKS_PER_ROOT, the first rank of each block
 * makes one id each (ncclCommInitRankScalable, blocks split as NCCL splits
 * them); only a status per rank and the ids travel over the exchange.
 * *comm is an ncclComm_t owned by the handle: distbind_destroy destroys
 * it, do not destroy it yourself (distbind_nccl_abort aborts it).
 *
 * The communicator is on the device distbind_set_device chose, whichever
 * thread calls this.  NCCL's set-up runs on a helper thread that is waited
 * for at most DIST_BIND_TIMEOUT, then DISTBIND_ERR_TIMEOUT: a non-blocking
 * communicator is aborted; a blocking one leaves NCCL waiting on that
 * thread, so end the process.
 *
 * `config` is an ncclConfig_t * (made with NCCL_CONFIG_INITIALIZER from
 * your nccl.h), copied at its own size (NCCL reads no further) for that
 * thread, or NULL for NCCL's defaults (a blocking communicator unless
 * distbind_set_nccl_blocking(h, 0)).  NCCL_COMM_BLOCKING=0|1 in the
 * environment overrides the blocking mode of either (NCCL's rule); calls on
 * a non-blocking communicator may return ncclInProgress (see NCCL's
 * "non-blocking communicators"). */
DISTBIND_API distbind_status distbind_nccl_init(distbind_t *h, const void *config, struct ncclComm **comm);

/* NOT collective.  Abort the handle's communicator (ncclCommAbort): this
 * rank's unfinished NCCL work ends, and so do the other ranks' waits on
 * it.  The handle has no communicator afterwards.  DISTBIND_ERR_STATE when
 * it has none. */
DISTBIND_API distbind_status distbind_nccl_abort(distbind_t *h);

/* COLLECTIVE, after distbind_nccl_init with a non-blocking communicator.
 * A checked, timed all-reduce: every rank sums `bytes` (at least 4) of
 * 1.0f; the first result must equal the world size everywhere; then
 * `iters` (at least 1) timed rounds.  Every wait is bounded by the
 * handle's timeout; a round that does not finish aborts the communicator.
 * Every rank gets the same status and message, naming the rank whose own
 * failure stopped the check (DISTBIND_ERR_NCCL; DISTBIND_ERR_STATE for a
 * blocking communicator, whose waits could not be bounded), except a rank
 * that failed and then could not reach the others: it reports its own
 * failure.  *seconds (may be NULL) gets this rank's time per timed
 * round. */
DISTBIND_API distbind_status distbind_nccl_allreduce_check(distbind_t *h, size_t bytes, int iters, double *seconds);

/* --- the dry run of --dist-bind=closest --------------------------------------- */

/* What --dist-bind=closest would choose on a node, from its topology and
 * each task's CPUs, without Slurm or a job (dist-bind-check --plan).  Zero
 * it, then set what you know. */
typedef struct distbind_plan_args {
    const char *topology;     /* the node's hwloc XML file; NULL: discover this machine */
    const char *task_cpus;    /* each task's CPUs, "LIST;LIST;..." in OS numbering ("0-3,8"), */
    const char *step_cores;   /* or the step's cores in Slurm's numbering (S_STEP_ALLOC_CORES) */
    unsigned ntasks;          /*   with this many tasks laid out over them as task/affinity does, */
    unsigned cpus_per_task;   /*   this many CPUs each (0: the cores shared out), */
    const char *distribution; /*   and this SLURM_DISTRIBUTION (NULL: block:cyclic) */
    const char *gpus;         /* the step's GPUs in Slurm's numbering ("0,1"); NULL: every GPU shown */
    unsigned gpus_per_task;   /* 0 means 1 */
    const char *nvidia_proc;  /* number GPUs by device minor from DIR/<bus id>/information (as in
                                 /proc/driver/nvidia/gpus); NULL: in PCI bus order */
} distbind_plan_args;

/* NOT collective, no handle.  On success *text (free() it) holds one line
 * per task: "task N cpus LIST gpus LIST numa N[ nics LIST]\n".  On failure
 * *text is NULL and distbind_last_error(NULL) says why: DISTBIND_ERR_ARG
 * for NULL arguments and for input that cannot be planned (an unreadable or
 * broken topology, a bad CPU list, more tasks than GPUs, ...),
 * DISTBIND_ERR_INTERNAL when memory runs out. */
DISTBIND_API distbind_status distbind_plan_dry_run(const distbind_plan_args *args, char **text);

/* NOT collective, no handle.  The variables dist-bind's plugin set in this
 * task (it records them in DIST_BIND_SET) whose value in this process's
 * environment is no longer the one it set: something that ran after the
 * plugin changed them, e.g. a container plugin (pyxis) later in
 * plugstack.conf copying an image's environment over the task's.  *names
 * (free() it): the names, comma-separated, "" when none or when the plugin
 * recorded nothing.  DISTBIND_ERR_ENV for a malformed DIST_BIND_SET,
 * DISTBIND_ERR_ARG for names NULL. */
DISTBIND_API distbind_status distbind_env_overwritten(char **names);

/* --- errors and diagnostics -------------------------------------------------- */

/* The message of the last failed call on h, or, with h NULL, of the last
 * failed distbind_create / distbind_create_env / distbind_init /
 * distbind_plan_dry_run in this thread.  "" when there was none.  Valid
 * until the next call on h (or, for NULL, the next of those calls in this
 * thread). */
DISTBIND_API const char *distbind_last_error(const distbind_t *h);

/* The largest number of lasting connections to other ranks this rank held
 * open at once (TCP bootstrap; 0 for PMIx and PMI2): with the tree, at most
 * DIST_BIND_TCP_FANOUT children and a parent.  Not counted: the short
 * connections of the set-up (registrations, of which rank 0 serves up to
 * 256 not yet proven at a time). */
DISTBIND_API long distbind_peak_connections(const distbind_t *h);

#ifdef __cplusplus
}
#endif
#endif
