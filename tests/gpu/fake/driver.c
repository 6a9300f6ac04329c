/*
 * libfakegpu.so: the fake driver behind the fake libcudart and libnccl
 * (see fakegpu.h and README.md).  How it models CUDA's enumeration:
 *   1. the node's GPUs from FAKEGPU_DEVICES (those of this host);
 *   2. only those whose device file this process can open: open() failing
 *      with EPERM or EACCES (a device cgroup, ConstrainDevices) or ENOENT
 *      hides a GPU, any other outcome (ENXIO for a node made with mknod
 *      and no driver behind it) keeps it;
 *   3. in PCI bus order;
 *   4. then CUDA_VISIBLE_DEVICES: indices into that list, GPU-/MIG- UUIDs
 *      (a unique prefix is enough); the list ends at the first entry that
 *      names no visible device, or names one a second time;
 *   5. a MIG-enabled GPU shows its first instance, and of the MIG
 *      instances listed a process uses only the first.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fakegpu.h"

struct gpu_desc {
    struct fg_dev dev;
    char file[256];
    int nmig;
    struct fg_dev mig[FG_MAX_MIG];
};

static struct gpu_desc node[FG_MAX_GPUS]; /* this host's GPUs, bus order */
static int n_node;
static struct fg_dev visible[FG_MAX_GPUS];
static int n_visible;
static int no_driver;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int has_ctx[FG_MAX_GPUS];
static int dev_pending[FG_MAX_GPUS];
static struct CUstream_st default_streams[FG_MAX_GPUS];
static __thread int current;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fakegpu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    _exit(97);
}

const char *fg_host(void) {
    static char host[256];
    if (!host[0] && gethostname(host, sizeof host - 1) != 0) strcpy(host, "?");
    return host;
}

static uint64_t fnv(const char *s, uint64_t h) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static void hash_uuid(const char *a, const char *b, unsigned char out[16]) {
    uint64_t h1 = fnv(b, fnv(a, 0xcbf29ce484222325ull)), h2 = fnv(a, fnv(b, 0x84222325cbf29ce4ull));
    memcpy(out, &h1, 8);
    memcpy(out + 8, &h2, 8);
}

static void format_uuid(const char *prefix, const unsigned char u[16], char *out, size_t n) {
    snprintf(out, n, "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", prefix, u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6" -> its 16 bytes; other forms
 * (old MIG names "MIG-GPU-.../1/0") get bytes from a hash of the name. */
static void parse_uuid(const char *s, unsigned char out[16]) {
    const char *p = strchr(s, '-');
    int k = 0;
    for (p = p ? p + 1 : s; *p && k < 32; p++) {
        if (*p == '-') continue;
        if (!isxdigit((unsigned char)*p)) break;
        int v = isdigit((unsigned char)*p) ? *p - '0' : tolower((unsigned char)*p) - 'a' + 10;
        out[k / 2] = (unsigned char)(k % 2 ? out[k / 2] | v : v << 4);
        k++;
    }
    if (k != 32 || *p) hash_uuid(s, "uuid", out);
}

/* "0000:3b:00.0" or "00000000:3B:00.0" -> "0000:3B:00.0". */
static void parse_bus(const char *s, char out[16]) {
    unsigned dom, bus, dev, fn;
    char end;
    if (sscanf(s, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &end) != 4 || bus > 255 || dev > 31 || fn > 7)
        die("FAKEGPU_DEVICES: bus=%s is not a PCI bus id (DDDD:BB:DD.F)", s);
    snprintf(out, 16, "%04X:%02X:%02X.%X", dom & 0xffff, bus, dev, fn);
}

static int host_matches(const char *list) {
    char copy[256], *tok, *save = NULL;
    snprintf(copy, sizeof copy, "%s", list);
    for (tok = strtok_r(copy, "+", &save); tok; tok = strtok_r(NULL, "+", &save))
        if (strcmp(tok, fg_host()) == 0) return 1;
    return 0;
}

/* One device of the description: "bus=...,uuid=...,file=...,mode=...,mig=...,host=...";
 * `index` replaces %i in the file name.  Returns 0 when the device is
 * for another host. */
static int parse_device(const char *attrs, int index, struct gpu_desc *g) {
    char copy[2048], *tok, *save = NULL, bus[64] = "", uuid[64] = "", mig[1024] = "";
    memset(g, 0, sizeof *g);
    g->dev.mode = FG_MODE_DEFAULT;
    snprintf(copy, sizeof copy, "%s", attrs);
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) die("FAKEGPU_DEVICES: \"%s\" is not key=value", tok);
        *eq = '\0';
        const char *v = eq + 1;
        if (!strcmp(tok, "bus"))
            snprintf(bus, sizeof bus, "%s", v);
        else if (!strcmp(tok, "uuid"))
            snprintf(uuid, sizeof uuid, "%s", v);
        else if (!strcmp(tok, "mig"))
            snprintf(mig, sizeof mig, "%s", v);
        else if (!strcmp(tok, "mem"))
            g->dev.mem = strtoull(v, NULL, 10);
        else if (!strcmp(tok, "host")) {
            if (!host_matches(v)) return 0;
        } else if (!strcmp(tok, "mode")) {
            if (!strcmp(v, "default"))
                g->dev.mode = FG_MODE_DEFAULT;
            else if (!strcmp(v, "exclusive"))
                g->dev.mode = FG_MODE_EXCLUSIVE;
            else if (!strcmp(v, "prohibited"))
                g->dev.mode = FG_MODE_PROHIBITED;
            else
                die("FAKEGPU_DEVICES: mode=%s: expected default, exclusive or prohibited", v);
        } else if (!strcmp(tok, "file")) {
            char *o = g->file, *end = g->file + sizeof g->file - 12;
            for (const char *p = v; *p && o < end; p++) {
                if (p[0] == '%' && p[1] == 'i') {
                    o += sprintf(o, "%d", index);
                    p++;
                } else {
                    *o++ = *p;
                }
            }
            *o = '\0';
        } else {
            die("FAKEGPU_DEVICES: unknown key \"%s\" (bus, uuid, file, mode, mig, mem, host)", tok);
        }
    }
    if (bus[0])
        parse_bus(bus, g->dev.bus);
    else
        snprintf(g->dev.bus, sizeof g->dev.bus, "0000:%02X:00.0", 0x10 + n_node);
    if (uuid[0]) {
        if (strncmp(uuid, "GPU-", 4)) die("FAKEGPU_DEVICES: uuid=%s does not start with GPU-", uuid);
        snprintf(g->dev.uuid_str, sizeof g->dev.uuid_str, "%s", uuid);
        parse_uuid(uuid, g->dev.uuid);
    } else {
        hash_uuid(fg_host(), g->dev.bus, g->dev.uuid);
        format_uuid("GPU-", g->dev.uuid, g->dev.uuid_str, sizeof g->dev.uuid_str);
    }
    if (mig[0]) {
        char *mt, *ms = NULL;
        if (isdigit((unsigned char)mig[0])) {
            int n = atoi(mig);
            if (n < 1 || n > FG_MAX_MIG) die("FAKEGPU_DEVICES: mig=%s: 1 to %d instances", mig, FG_MAX_MIG);
            for (int i = 0; i < n; i++) {
                char k[16];
                snprintf(k, sizeof k, "mig%d", i);
                hash_uuid(g->dev.uuid_str, k, g->mig[i].uuid);
                format_uuid("MIG-", g->mig[i].uuid, g->mig[i].uuid_str, sizeof g->mig[i].uuid_str);
            }
            g->nmig = n;
        } else {
            for (mt = strtok_r(mig, "+", &ms); mt; mt = strtok_r(NULL, "+", &ms)) {
                if (g->nmig == FG_MAX_MIG) die("FAKEGPU_DEVICES: more than %d MIG instances", FG_MAX_MIG);
                if (strncmp(mt, "MIG-", 4)) die("FAKEGPU_DEVICES: mig %s does not start with MIG-", mt);
                struct fg_dev *m = &g->mig[g->nmig++];
                snprintf(m->uuid_str, sizeof m->uuid_str, "%s", mt);
                parse_uuid(mt, m->uuid);
            }
        }
        for (int i = 0; i < g->nmig; i++) {
            memcpy(g->mig[i].bus, g->dev.bus, sizeof g->dev.bus);
            g->mig[i].mode = g->dev.mode;
            g->mig[i].mem = g->dev.mem;
        }
    }
    return 1;
}

static void parse_description(const char *desc) {
    char copy[16384], *entry, *save = NULL;
    if (strlen(desc) >= sizeof copy) die("FAKEGPU_DEVICES is too long");
    snprintf(copy, sizeof copy, "%s", desc);
    for (entry = strtok_r(copy, ";", &save); entry; entry = strtok_r(NULL, ";", &save)) {
        int count = 1;
        const char *attrs = entry;
        char *star = strchr(entry, '*');
        if (isdigit((unsigned char)entry[0]) && (star || strspn(entry, "0123456789") == strlen(entry))) {
            count = atoi(entry);
            attrs = star ? star + 1 : "";
        }
        for (int i = 0; i < count; i++) {
            if (n_node == FG_MAX_GPUS) die("FAKEGPU_DEVICES: more than %d GPUs", FG_MAX_GPUS);
            if (parse_device(attrs, i, &node[n_node])) n_node++;
        }
    }
}

static int by_bus(const void *a, const void *b) {
    return strcmp(((const struct gpu_desc *)a)->dev.bus, ((const struct gpu_desc *)b)->dev.bus);
}

static int openable(const struct gpu_desc *g) {
    if (!g->file[0]) return 1;
    int fd = open(g->file, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return 1;
    }
    return !(errno == EPERM || errno == EACCES || errno == ENOENT);
}

/* Entry `e` of CUDA_VISIBLE_DEVICES among the enumerated GPUs: 1 with the
 * GPU and MIG instance (-1: the GPU itself), 0 when it names none. */
static int lookup(const char *e, const int *en, int n_en, int *gpu, int *mig) {
    size_t len = strlen(e);
    if (len && len < 7 && strspn(e, "0123456789") == len) {
        int idx = atoi(e);
        if (idx >= n_en) return 0;
        *gpu = en[idx];
        *mig = -1;
        return 1;
    }
    int found = 0;
    for (int i = 0; i < n_en; i++) {
        const struct gpu_desc *g = &node[en[i]];
        if (!strncasecmp(e, "GPU-", 4) && !strncasecmp(g->dev.uuid_str, e, len)) {
            found++;
            *gpu = en[i];
            *mig = -1;
        }
        for (int m = 0; m < g->nmig; m++)
            if (!strncasecmp(e, "MIG-", 4) && !strncasecmp(g->mig[m].uuid_str, e, len)) {
                found++;
                *gpu = en[i];
                *mig = m;
            }
    }
    return found == 1;
}

static void enumerate(void) {
    const char *desc = getenv("FAKEGPU_DEVICES");
    if (!desc) {
        no_driver = 1;
        return;
    }
    parse_description(desc);
    qsort(node, (size_t)n_node, sizeof node[0], by_bus);
    for (int i = 0; i < n_node; i++) {
        node[i].dev.gpu = i;
        for (int m = 0; m < node[i].nmig; m++) node[i].mig[m].gpu = i;
        for (int j = 0; j < i; j++)
            if (!strcmp(node[i].dev.bus, node[j].dev.bus) || !strcmp(node[i].dev.uuid_str, node[j].dev.uuid_str))
                die("FAKEGPU_DEVICES: two GPUs with bus %s or uuid %s", node[i].dev.bus, node[i].dev.uuid_str);
    }
    int en[FG_MAX_GPUS], n_en = 0;
    for (int i = 0; i < n_node; i++)
        if (openable(&node[i])) en[n_en++] = i;

    int sel_gpu[FG_MAX_GPUS], sel_mig[FG_MAX_GPUS], n_sel = 0;
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd) {
        for (int i = 0; i < n_en; i++) {
            sel_gpu[n_sel] = en[i];
            sel_mig[n_sel++] = -1;
        }
    } else {
        char copy[8192], *e, *save = NULL;
        snprintf(copy, sizeof copy, "%s", cvd);
        /* strtok would skip empty entries; an empty entry names nothing. */
        for (e = copy; e && n_sel < FG_MAX_GPUS; e = save) {
            save = strchr(e, ',');
            if (save) *save++ = '\0';
            int gpu, mig, dup = 0;
            if (!lookup(e, en, n_en, &gpu, &mig)) break;
            for (int k = 0; k < n_sel; k++) dup |= sel_gpu[k] == gpu && sel_mig[k] == mig;
            if (dup) break;
            sel_gpu[n_sel] = gpu;
            sel_mig[n_sel++] = mig;
        }
    }
    /* Of the MIG instances, only the first listed stays. */
    int kept = 0, seen_mig = 0;
    for (int k = 0; k < n_sel; k++) {
        if (sel_mig[k] < 0 && node[sel_gpu[k]].nmig > 0) sel_mig[k] = 0;
        if (sel_mig[k] >= 0 && seen_mig++) continue;
        sel_gpu[kept] = sel_gpu[k];
        sel_mig[kept++] = sel_mig[k];
    }
    n_sel = kept;
    for (int k = 0; k < n_sel; k++) {
        const struct gpu_desc *g = &node[sel_gpu[k]];
        visible[k] = sel_mig[k] >= 0 ? g->mig[sel_mig[k]] : g->dev;
    }
    n_visible = n_sel;
    for (int d = 0; d < FG_MAX_GPUS; d++) {
        default_streams[d].magic = FG_STREAM_MAGIC;
        default_streams[d].dev = d;
    }
}

static void init(void) { pthread_once(&once, enumerate); }

int fg_count(int *n) {
    init();
    if (no_driver) return FG_NO_DRIVER;
    *n = n_visible;
    return FG_OK;
}

const struct fg_dev *fg_device(int ordinal) {
    init();
    return ordinal >= 0 && ordinal < n_visible ? &visible[ordinal] : NULL;
}

const struct fg_dev *fg_node_gpus(int *n) {
    static struct fg_dev all[FG_MAX_GPUS];
    init();
    *n = 0;
    if (no_driver) return NULL;
    for (int i = 0; i < n_node; i++) all[i] = node[i].dev;
    *n = n_node;
    return all;
}

int fg_current(void) { return current; }

static int context(int ordinal) {
    int rc = FG_OK;
    pthread_mutex_lock(&mu);
    if (!has_ctx[ordinal]) {
        const struct fg_dev *d = &visible[ordinal];
        if (d->mode == FG_MODE_PROHIBITED) {
            rc = FG_UNAVAILABLE;
        } else if (d->mode == FG_MODE_EXCLUSIVE) {
            /* One process at a time: a lock held until this process exits. */
            char path[512];
            snprintf(path, sizeof path, "%s/ctx-%s.lock", fg_state_dir(), d->uuid_str);
            int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0666);
            if (fd < 0) die("cannot open %s: %s", path, strerror(errno));
            if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
                close(fd);
                rc = FG_UNAVAILABLE;
            }
        }
        if (rc == FG_OK) has_ctx[ordinal] = 1;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

int fg_set_current(int ordinal) {
    init();
    if (no_driver) return FG_NO_DRIVER;
    if (n_visible == 0) return FG_NO_DEVICE;
    if (ordinal < 0 || ordinal >= n_visible) return FG_INVALID_DEVICE;
    int rc = context(ordinal);
    if (rc == FG_OK) current = ordinal;
    return rc;
}

int fg_need_context(void) {
    init();
    if (no_driver) return FG_NO_DRIVER;
    if (n_visible == 0) return FG_NO_DEVICE;
    return context(current);
}

void fg_work_begin(struct CUstream_st *s) {
    pthread_mutex_lock(&mu);
    s->pending++;
    dev_pending[s->dev]++;
    pthread_mutex_unlock(&mu);
}

void fg_work_end(struct CUstream_st *s) {
    pthread_mutex_lock(&mu);
    s->pending--;
    dev_pending[s->dev]--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

int fg_stream_busy(struct CUstream_st *s) {
    pthread_mutex_lock(&mu);
    int busy = s->pending > 0;
    pthread_mutex_unlock(&mu);
    return busy;
}

void fg_stream_wait(struct CUstream_st *s) {
    pthread_mutex_lock(&mu);
    while (s->pending > 0) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

void fg_device_wait(int dev) {
    pthread_mutex_lock(&mu);
    while (dev_pending[dev] > 0) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

struct CUstream_st *fg_default_stream(int dev) {
    init();
    return &default_streams[dev];
}

static char state_dir[400];

static void make_state_dir(void) {
    const char *d = getenv("FAKEGPU_STATE");
    snprintf(state_dir, sizeof state_dir, "%s", d && *d ? d : "/tmp/fakegpu-state");
    if (mkdir(state_dir, 0777) != 0 && errno != EEXIST)
        die("cannot make FAKEGPU_STATE %s: %s", state_dir, strerror(errno));
}

const char *fg_state_dir(void) {
    static pthread_once_t made = PTHREAD_ONCE_INIT;
    pthread_once(&made, make_state_dir);
    return state_dir;
}

int fg_inject(const char *key, int rank, double *seconds) {
    const char *spec = getenv("FAKEGPU_NCCL");
    char copy[1024], *tok, *save = NULL;
    if (!spec) return 0;
    snprintf(copy, sizeof copy, "%s", spec);
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (eq) *eq = '\0';
        if (strcmp(tok, key) != 0) continue;
        const char *v = eq ? eq + 1 : "*";
        const char *colon = strchr(v, ':');
        if (v[0] != '*' && atoi(v) != rank) continue;
        if (seconds) *seconds = colon ? atof(colon + 1) : 0;
        return 1;
    }
    return 0;
}

void fg_sleep(double s, volatile int *stop) {
    struct timespec step = {0, 10 * 1000 * 1000};
    for (double slept = 0; slept < s && !(stop && *stop); slept += 0.01) nanosleep(&step, NULL);
}
