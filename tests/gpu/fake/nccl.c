/*
 * A fake libnccl.so.2 (test code, never installed): communicators whose
 * ranks meet through files in FAKEGPU_STATE (every rank of a test runs on
 * this one machine, the lab's two "nodes" included), with NCCL's own
 * signatures, result codes and rules:
 *   - the device is the calling thread's current one (cudaGetDevice);
 *   - config: NCCL_CONFIG_INITIALIZER checked; NCCL_COMM_BLOCKING=0|1 in
 *     the environment overrides config->blocking either way (NCCL's
 *     envConfigOverride); non-blocking calls return ncclInProgress and
 *     ncclCommGetAsyncError says when they are done;
 *   - ncclCommInitRankScalable: id i must come from the first rank of
 *     root i's block, blocks split as NCCL splits them;
 *   - two ranks on one GPU: "Duplicate GPU detected";
 *   - a rank that aborted or exited fails the others' waits
 *     (ncclRemoteError), and ncclCommAbort ends this rank's waits.
 * An all-reduce adds the ranks' real buffers (float, double, int32, int64
 * sums), in rank order.  Failures and delays come from FAKEGPU_NCCL
 * (README.md).  FAKE_NO_SCALABLE builds an NCCL without
 * ncclCommInitRankScalable (as before 2.23).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nccl.h>

#include "fakegpu.h"

#ifdef FAKE_NO_SCALABLE
#define FAKE_VERSION 22204
#else
#define FAKE_VERSION NCCL_VERSION_CODE
#endif

struct fake_id {
    char magic[8];
    uint64_t token;
    int32_t pid;
    char host[64];
};
_Static_assert(sizeof(struct fake_id) <= NCCL_UNIQUE_ID_BYTES, "fake id too big");

struct op {
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t type;
    struct CUstream_st *stream;
    int seq;
    struct op *next;
};

struct ncclComm {
    unsigned magic;
    int nranks, rank, dev, blocking;
    char uuid[64];
    char dir[512];
    volatile int abort;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ncclResult_t async;
    char err[512];
    int *pids;
    pthread_t init_thread, worker;
    int init_running, worker_running, busy;
    struct op *head, *tail;
    int seq;
    uint64_t ids_hash;
    int n_ids;
    struct fake_id ids[];
};
#define COMM_MAGIC 0xc0441u

static __thread char last_err[512];

static void set_err(struct ncclComm *c, const char *fmt, ...) {
    va_list ap;
    char buf[512];
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    snprintf(last_err, sizeof last_err, "%s", buf);
    if (c) {
        pthread_mutex_lock(&c->mu);
        snprintf(c->err, sizeof c->err, "%s", buf);
        pthread_mutex_unlock(&c->mu);
    }
}

static void set_async(struct ncclComm *c, ncclResult_t r) {
    pthread_mutex_lock(&c->mu);
    /* An error stays. */
    if (c->async == ncclSuccess || c->async == ncclInProgress) c->async = r;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void write_file(struct ncclComm *c, const char *name, const void *data, size_t len) {
    char tmp[700], path[700];
    snprintf(tmp, sizeof tmp, "%s/.tmp.%d.%d", c->dir, c->rank, (int)getpid());
    snprintf(path, sizeof path, "%s/%s", c->dir, name);
    int fd = open(tmp, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        fprintf(stderr, "fake nccl: cannot write %s: %s\n", tmp, strerror(errno));
        _exit(97);
    }
    for (const char *p = data; len;) {
        ssize_t w = write(fd, p, len);
        if (w <= 0) {
            fprintf(stderr, "fake nccl: write %s: %s\n", tmp, strerror(errno));
            _exit(97);
        }
        p += w;
        len -= (size_t)w;
    }
    close(fd);
    rename(tmp, path);
}

/* Until `name` (made by rank `peer`) exists: ncclSuccess; an error when
 * this rank aborts, or the peer aborted or exited. */
static ncclResult_t wait_file(struct ncclComm *c, const char *name, int peer) {
    char path[700], gone[700];
    snprintf(path, sizeof path, "%s/%s", c->dir, name);
    snprintf(gone, sizeof gone, "%s/aborted.%d", c->dir, peer);
    for (;;) {
        if (exists(path)) return ncclSuccess;
        if (c->abort) {
            set_err(c, "fake NCCL: communicator aborted");
            return ncclInternalError;
        }
        if (exists(gone)) {
            set_err(c, "fake NCCL: rank %d aborted its communicator", peer);
            return ncclRemoteError;
        }
        if (c->pids && c->pids[peer] > 0 && kill(c->pids[peer], 0) != 0 && errno == ESRCH) {
            set_err(c, "fake NCCL: rank %d (pid %d) exited", peer, c->pids[peer]);
            return ncclRemoteError;
        }
        fg_sleep(0.002, NULL);
    }
}

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h) {
    for (const unsigned char *b = p; n--; b++) h = (h ^ *b) * 0x100000001b3ull;
    return h;
}

/* NCCL's split of ranks among roots (bootstrap.cc). */
static int first_rank_of_root(int root, int nranks, int nroots) {
    int q = nranks / nroots, r = nranks % nroots;
    return root * q + (root < r ? root : r);
}

/* Every rank in, then NCCL's checks on what they brought. */
static ncclResult_t join(struct ncclComm *c) {
    double s = 0;
    char line[256];
    if (fg_inject("delay-init", c->rank, &s)) fg_sleep(s, &c->abort);
    if (c->abort) return ncclInternalError;
    if (fg_inject("fail-init", c->rank, NULL)) {
        set_err(c, "fake NCCL: injected init failure on rank %d", c->rank);
        return ncclSystemError;
    }
    int n = snprintf(line, sizeof line, "%d %s %s %d %d %llx\n", (int)getpid(), fg_host(), c->uuid, c->nranks, c->n_ids,
                     (unsigned long long)c->ids_hash);
    char name[64];
    snprintf(name, sizeof name, "rank.%d", c->rank);
    write_file(c, name, line, (size_t)n);
    for (int r = 0; r < c->nranks; r++) {
        snprintf(name, sizeof name, "rank.%d", r);
        ncclResult_t res = wait_file(c, name, r);
        if (res != ncclSuccess) return res;
        char path[700], host[128], uuid[128];
        int pid, nranks, n_ids;
        unsigned long long hash;
        snprintf(path, sizeof path, "%s/%s", c->dir, name);
        FILE *f = fopen(path, "r");
        int got = f ? fscanf(f, "%d %127s %127s %d %d %llx", &pid, host, uuid, &nranks, &n_ids, &hash) : 0;
        if (f) fclose(f);
        if (got != 6) {
            set_err(c, "fake NCCL: unreadable %s", path);
            return ncclInternalError;
        }
        c->pids[r] = pid;
        if (nranks != c->nranks || n_ids != c->n_ids || hash != c->ids_hash) {
            set_err(c, "fake NCCL: rank %d has %d ranks and %d ids (hash %llx), rank %d has %d and %d (hash %llx)", r,
                    nranks, n_ids, hash, c->rank, c->nranks, c->n_ids, (unsigned long long)c->ids_hash);
            return ncclInvalidUsage;
        }
        if (r != c->rank && !strcmp(uuid, c->uuid)) {
            set_err(c, "Duplicate GPU detected : rank %d and rank %d both on CUDA device %s", r < c->rank ? r : c->rank,
                    r < c->rank ? c->rank : r, c->uuid);
            return ncclInvalidUsage;
        }
    }
    return ncclSuccess;
}

static void *init_main(void *arg) {
    struct ncclComm *c = arg;
    ncclResult_t r = join(c);
    set_async(c, r);
    return NULL;
}

static ncclResult_t start(ncclComm_t *out, int nranks, int rank, int n_ids, const ncclUniqueId *ids,
                          ncclConfig_t *config) {
    *out = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks || n_ids < 1 || n_ids > nranks) {
        set_err(NULL, "fake NCCL: bad arguments: nranks %d rank %d nId %d", nranks, rank, n_ids);
        return ncclInvalidArgument;
    }
    int blocking = 1;
    if (config) {
        if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int)) {
            set_err(NULL, "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
            return ncclInvalidArgument;
        }
        if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1) {
            set_err(NULL, "Invalid config blocking attribute value %d", config->blocking);
            return ncclInvalidArgument;
        }
        if (config->blocking == 0) blocking = 0;
    }
    const char *env = getenv("NCCL_COMM_BLOCKING");
    if (env && (!strcmp(env, "0") || !strcmp(env, "1"))) blocking = atoi(env);

    int n;
    if (fg_count(&n) != FG_OK || n == 0 || fg_need_context() != FG_OK) {
        set_err(NULL, "fake NCCL: no usable CUDA device on this thread");
        return ncclUnhandledCudaError;
    }
    const struct fake_id *fid = (const struct fake_id *)ids;
    for (int i = 0; i < n_ids; i++) {
        const struct fake_id *id = (const struct fake_id *)&ids[i];
        if (memcmp(id->magic, "FAKENCCL", 8)) {
            set_err(NULL, "fake NCCL: id %d was not made by the fake ncclGetUniqueId", i);
            return ncclInvalidArgument;
        }
        /* The first rank of root i's block serves id i, so it must have made it. */
        if (n_ids > 1 && first_rank_of_root(i, nranks, n_ids) == rank &&
            (id->pid != getpid() || strncmp(id->host, fg_host(), sizeof id->host))) {
            set_err(NULL,
                    "fake NCCL: rank %d is the first rank of root %d's block, but id %d was made by pid %d on %.64s",
                    rank, i, i, id->pid, id->host);
            return ncclInvalidUsage;
        }
    }
    struct ncclComm *c = calloc(1, sizeof *c + (size_t)n_ids * sizeof(struct fake_id));
    c->pids = calloc((size_t)nranks, sizeof *c->pids);
    c->magic = COMM_MAGIC;
    c->nranks = nranks;
    c->rank = rank;
    c->dev = fg_current();
    c->blocking = blocking;
    c->n_ids = n_ids;
    c->async = ncclInProgress;
    memcpy(c->ids, ids, (size_t)n_ids * sizeof(struct fake_id));
    c->ids_hash = hash_bytes(ids, (size_t)n_ids * sizeof(ncclUniqueId), 0xcbf29ce484222325ull);
    snprintf(c->uuid, sizeof c->uuid, "%s", fg_device(c->dev)->uuid_str);
    snprintf(c->dir, sizeof c->dir, "%s/nccl-%016llx", fg_state_dir(), (unsigned long long)fid->token);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (mkdir(c->dir, 0777) != 0 && errno != EEXIST) {
        set_err(NULL, "fake NCCL: cannot make %s: %s", c->dir, strerror(errno));
        free(c->pids);
        free(c);
        return ncclSystemError;
    }
    if (blocking) {
        ncclResult_t r = join(c);
        if (r != ncclSuccess) {
            free(c->pids);
            free(c);
            return r;
        }
        c->async = ncclSuccess;
        *out = c;
        return ncclSuccess;
    }
    c->init_running = 1;
    pthread_create(&c->init_thread, NULL, init_main, c);
    *out = c;
    return ncclInProgress;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config) {
    return start(comm, nranks, rank, 1, &commId, config);
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
    return start(comm, nranks, rank, 1, &commId, NULL);
}

#ifndef FAKE_NO_SCALABLE
ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
                                      ncclConfig_t *config) {
    return start(comm, nranks, myrank, nId, commIds, config);
}
#endif

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
    /* The id does not know its maker's rank: the RANK variable does. */
    const char *rank = getenv("RANK");
    if (fg_inject("fail-uniqueid", rank ? atoi(rank) : -1, NULL)) {
        set_err(NULL, "fake NCCL: injected ncclGetUniqueId failure");
        return ncclSystemError;
    }
    struct fake_id id;
    memset(&id, 0, sizeof id);
    memcpy(id.magic, "FAKENCCL", 8);
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, &id.token, sizeof id.token) != (ssize_t)sizeof id.token) {
        set_err(NULL, "fake NCCL: /dev/urandom: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return ncclSystemError;
    }
    close(fd);
    id.pid = (int32_t)getpid();
    snprintf(id.host, sizeof id.host, "%s", fg_host());
    memset(uniqueId, 0, sizeof *uniqueId);
    memcpy(uniqueId, &id, sizeof id);
    return ncclSuccess;
}

ncclResult_t ncclGetVersion(int *version) {
    *version = FAKE_VERSION;
    return ncclSuccess;
}

static int valid(ncclComm_t c) { return c && c->magic == COMM_MAGIC; }

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
    if (!valid(comm)) return ncclInvalidArgument;
    pthread_mutex_lock(&comm->mu);
    *asyncError = comm->async;
    pthread_mutex_unlock(&comm->mu);
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
    if (!valid(comm)) return ncclInvalidArgument;
    *device = comm->dev;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    if (!valid(comm)) return ncclInvalidArgument;
    *count = comm->nranks;
    return ncclSuccess;
}

static size_t type_size(ncclDataType_t t) {
    switch (t) {
    case ncclInt32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclFloat64: return 8;
    default: return 0;
    }
}

static void add(void *acc, const void *x, size_t count, ncclDataType_t t) {
    for (size_t i = 0; i < count; i++) switch (t) {
        case ncclInt32: ((int32_t *)acc)[i] += ((const int32_t *)x)[i]; break;
        case ncclInt64: ((int64_t *)acc)[i] += ((const int64_t *)x)[i]; break;
        case ncclFloat32: ((float *)acc)[i] += ((const float *)x)[i]; break;
        default: ((double *)acc)[i] += ((const double *)x)[i]; break;
        }
}

/* One all-reduce: this rank's buffer out, everyone's in, summed in rank order. */
static ncclResult_t run_op(struct ncclComm *c, struct op *o) {
    size_t bytes = o->count * type_size(o->type);
    char name[64], path[700];
    if (fg_inject("hang-allreduce", c->rank, NULL)) {
        while (!c->abort) fg_sleep(0.01, &c->abort);
        set_err(c, "fake NCCL: communicator aborted");
        return ncclInternalError;
    }
    snprintf(name, sizeof name, "ar.%d.%d", o->seq, c->rank);
    write_file(c, name, o->send, bytes);
    void *sum = calloc(1, bytes ? bytes : 1), *part = malloc(bytes ? bytes : 1);
    ncclResult_t r = ncclSuccess;
    for (int p = 0; p < c->nranks && r == ncclSuccess; p++) {
        snprintf(name, sizeof name, "ar.%d.%d", o->seq, p);
        r = wait_file(c, name, p);
        if (r != ncclSuccess) break;
        snprintf(path, sizeof path, "%s/%s", c->dir, name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t got = fd >= 0 ? read(fd, part, bytes) : -1;
        if (fd >= 0) close(fd);
        if (got != (ssize_t)bytes) {
            set_err(c, "fake NCCL: rank %d sent %zd bytes, rank %d expected %zu", p, got, c->rank, bytes);
            r = ncclInvalidUsage;
            break;
        }
        add(sum, part, o->count, o->type);
    }
    if (r == ncclSuccess) {
        if (fg_inject("wrong-sum", c->rank, NULL) && o->count) add(sum, sum, 1, o->type);
        memcpy(o->recv, sum, bytes);
        /* Every rank has written this round, so every rank has read the last. */
        snprintf(path, sizeof path, "%s/ar.%d.%d", c->dir, o->seq - 1, c->rank);
        unlink(path);
    }
    free(sum);
    free(part);
    return r;
}

static void *worker_main(void *arg) {
    struct ncclComm *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        while (!c->head && !c->abort) pthread_cond_wait(&c->cv, &c->mu);
        struct op *o = c->head;
        if (o) {
            c->head = o->next;
            if (!c->head) c->tail = NULL;
            c->busy = 1;
        }
        int failed = c->async != ncclSuccess && c->async != ncclInProgress;
        if (c->async == ncclInProgress) c->async = ncclSuccess; /* taken in */
        pthread_mutex_unlock(&c->mu);
        if (!o) return NULL; /* aborted, nothing left */
        ncclResult_t r = failed || c->abort ? ncclInternalError : run_op(c, o);
        if (r != ncclSuccess && !failed) set_async(c, r);
        fg_work_end(o->stream);
        free(o);
        pthread_mutex_lock(&c->mu);
        c->busy = 0;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    if (!valid(comm)) return ncclInvalidArgument;
    if (op != ncclSum || !type_size(datatype)) {
        set_err(comm, "fake NCCL: only sums of int32, int64, float and double");
        return ncclInvalidArgument;
    }
    ncclResult_t state;
    ncclCommGetAsyncError(comm, &state);
    if (state == ncclInProgress) {
        set_err(comm, "fake NCCL: the communicator is not ready (ncclInProgress)");
        return ncclInvalidUsage;
    }
    if (state != ncclSuccess) return state;
    if (fg_inject("fail-allreduce", comm->rank, NULL)) {
        set_err(comm, "fake NCCL: injected all-reduce failure on rank %d", comm->rank);
        return ncclSystemError;
    }
    struct CUstream_st *s = stream ? stream : fg_default_stream(comm->dev);
    if (s->magic != FG_STREAM_MAGIC) return ncclInvalidArgument;
    struct op *o = calloc(1, sizeof *o);
    *o = (struct op){sendbuff, recvbuff, count, datatype, s, 0, NULL};
    fg_work_begin(s);
    pthread_mutex_lock(&comm->mu);
    o->seq = ++comm->seq;
    if (comm->tail)
        comm->tail->next = o;
    else
        comm->head = o;
    comm->tail = o;
    if (!comm->worker_running) {
        comm->worker_running = 1;
        pthread_create(&comm->worker, NULL, worker_main, comm);
    }
    /* A non-blocking communicator takes the call in the background. */
    if (!comm->blocking) comm->async = ncclInProgress;
    pthread_cond_broadcast(&comm->cv);
    pthread_mutex_unlock(&comm->mu);
    return comm->blocking ? ncclSuccess : ncclInProgress;
}

static void stop(ncclComm_t c) {
    c->abort = 1;
    pthread_mutex_lock(&c->mu);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (c->init_running) pthread_join(c->init_thread, NULL);
    if (c->worker_running) pthread_join(c->worker, NULL);
    for (struct op *o = c->head, *next; o; o = next) {
        next = o->next;
        fg_work_end(o->stream);
        free(o);
    }
    char path[700];
    for (int s = c->seq - 1; s <= c->seq; s++) {
        snprintf(path, sizeof path, "%s/ar.%d.%d", c->dir, s, c->rank);
        unlink(path);
    }
    c->magic = 0;
    free(c->pids);
    free(c);
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    double s = 0;
    if (!comm) return ncclSuccess;
    if (!valid(comm)) return ncclInvalidArgument;
    if (fg_inject("slow-abort", comm->rank, &s)) fg_sleep(s, NULL);
    char name[64];
    snprintf(name, sizeof name, "aborted.%d", comm->rank);
    write_file(comm, name, "", 0);
    stop(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (!comm) return ncclSuccess;
    if (!valid(comm)) return ncclInvalidArgument;
    /* Queued work finishes first, as in NCCL. */
    pthread_mutex_lock(&comm->mu);
    while (comm->head || comm->busy) pthread_cond_wait(&comm->cv, &comm->mu);
    pthread_mutex_unlock(&comm->mu);
    if (comm->init_running) pthread_join(comm->init_thread, NULL);
    comm->init_running = 0;
    stop(comm);
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm) {
    if (valid(comm)) {
        static __thread char copy[512];
        pthread_mutex_lock(&comm->mu);
        snprintf(copy, sizeof copy, "%s", comm->err[0] ? comm->err : last_err);
        pthread_mutex_unlock(&comm->mu);
        return copy;
    }
    return last_err;
}
