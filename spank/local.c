/*
 * srun side, after the step exists and before launch.  srun draws the
 * step's secret for libdistbind's TCP bootstrap (DIST_BIND_SECRET: 256 bits
 * from getrandom, new for every step).  For the two cases where the nodes
 * cannot tell rank 0's address themselves (arbitrary distribution;
 * master_addr=addr), srun asks slurmctld once per step.  Both reach the
 * tasks through srun's environment, which srun merges into the step's
 * after this callback.
 *
 * The Slurm API is looked up with dlsym (db_slurm_api): srun always has
 * libslurm loaded, and the plugin does not link against it (slurmstepd
 * loads it too).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <slurm/slurm.h>

#include "glue.h"

extern char **environ;

typedef slurm_step_layout_t *(*layout_get_f)(slurm_step_id_t *);
typedef void (*layout_free_f)(slurm_step_layout_t *);
typedef int (*load_node_f)(node_info_msg_t **, char *, uint16_t);
typedef void (*free_node_f)(node_info_msg_t *);

void *db_slurm_api(const char *name, const char *older) {
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f && older) f = dlsym(RTLD_DEFAULT, older);
    return f;
}

void db_local_say(const db_request *eff, const char *fmt, ...) {
    char msg[DB_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (eff->verbose)
        slurm_spank_log(DB_PREFIX "%s", msg);
    else
        slurm_verbose(DB_PREFIX "%s", msg);
}

/* A Slurm API function srun cannot do without for this step. */
static void *api(const char *name) {
    void *f = db_slurm_api(name, NULL);
    if (!f) slurm_error(DB_PREFIX "Slurm API %s not found in this process", name);
    return f;
}

/* The name of the node that runs task 0, from the step's layout. */
static int rank0_node(uint32_t job, uint32_t step, char *name, size_t len) {
    layout_get_f get = (layout_get_f)api("slurm_job_step_layout_get");
    /* Public, unlike slurm_step_layout_destroy, which it calls. */
    layout_free_f release = (layout_free_f)api("slurm_job_step_layout_free");
    char err[DB_ERRLEN];
    slurm_step_id_t id;
    slurm_step_layout_t *l;
    int node = -1, rc = -1;
    uint32_t n, t;

    if (!get || !release) return -1;
    /* Named fields: from 24.11 the struct starts with a sluid, left 0
     * (Slurm's own initializer's value) so slurmctld finds the step by
     * job and step id. */
    id = (slurm_step_id_t){.job_id = job, .step_het_comp = NO_VAL, .step_id = step};
    l = get(&id);
    if (!l) {
        slurm_error(DB_PREFIX "cannot get the layout of step %u.%u from slurmctld", job, step);
        return -1;
    }
    for (n = 0; n < l->node_cnt && node < 0; n++)
        for (t = 0; l->tids && l->tids[n] && t < l->tasks[n]; t++)
            if (l->tids[n][t] == 0) node = (int)n;
    if (node < 0 || !l->node_list)
        slurm_error(DB_PREFIX "task 0 not found in the layout of step %u.%u", job, step);
    else if (db_hostlist_nth(l->node_list, (size_t)node, name, len, err, sizeof err) != 0)
        slurm_error(DB_PREFIX "%s", err);
    else
        rc = 0;
    release(l);
    return rc;
}

static int node_addr(const char *name, char *out, size_t len) {
    load_node_f load = (load_node_f)api("slurm_load_node_single");
    free_node_f release = (free_node_f)api("slurm_free_node_info_msg");
    node_info_msg_t *msg = NULL;
    int rc = -1;

    if (!load || !release) return -1;
    if (load(&msg, (char *)name, SHOW_ALL) != 0 || !msg || msg->record_count < 1) {
        slurm_error(DB_PREFIX "cannot get NodeAddr of node %s from slurmctld", name);
    } else if (!msg->node_array[0].node_addr || strlen(msg->node_array[0].node_addr) >= len) {
        slurm_error(DB_PREFIX "node %s has no usable NodeAddr", name);
    } else {
        strcpy(out, msg->node_array[0].node_addr);
        rc = 0;
    }
    if (msg) release(msg);
    return rc;
}

/* A new secret for this step in srun's environment (so also in every
 * task's), replacing one an enclosing step's srun left there. */
static int draw_secret(void) {
    unsigned char key[32];
    char hex[2 * sizeof key + 1];
    size_t got = 0, i;
    int rc = -1;

    while (got < sizeof key) {
        ssize_t n = getrandom(key + got, sizeof key - got, 0);
        if (n > 0) {
            got += (size_t)n;
        } else if (n < 0 && errno != EINTR) {
            slurm_error(DB_PREFIX "cannot draw the step's secret: getrandom: %s", strerror(errno));
            goto out;
        }
    }
    for (i = 0; i < sizeof key; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
    if (setenv(DB_SECRET_VAR, hex, 1) != 0) {
        slurm_error(DB_PREFIX "cannot set %s in srun", DB_SECRET_VAR);
        goto out;
    }
    rc = 0;
out:
    explicit_bzero(key, sizeof key);
    explicit_bzero(hex, sizeof hex);
    return rc;
}

int db_local_user_init(spank_t sp, const struct db_glue *g) {
    char err[DB_ERRLEN], name[256], addr[256], value[512];
    uint32_t job = 0, step = 0;
    db_request eff;

    if (!g->cfg_ok) return -1;
    eff = db_glue_effective(g);
    db_local_devices_hint(sp, &eff);
    if (eff.mode != DB_MODE_OFF && draw_secret() != 0) return -1;
    if (!db_srun_needs_rank0(&g->cfg, &eff, (const char *const *)environ)) return 0;
    if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
        slurm_error(DB_PREFIX "cannot read the job and step id in srun");
        return -1;
    }
    /* The step's layout names rank 0's node also for arbitrary
     * distributions, and for steps on part of the allocation. */
    if (rank0_node(job, step, name, sizeof name) != 0) return -1;
    addr[0] = '\0';
    if (g->cfg.addr_kind == DB_ADDR_NODEADDR && node_addr(name, addr, sizeof addr) != 0) return -1;
    if (db_format_master_addr(&g->cfg, name, addr, value, sizeof value, err, sizeof err) != 0) {
        slurm_error(DB_PREFIX "%s", err);
        return -1;
    }
    if (setenv(DB_RANK0_HINT, value, 1) != 0) {
        slurm_error(DB_PREFIX "cannot set %s in srun", DB_RANK0_HINT);
        return -1;
    }
    return 0;
}
