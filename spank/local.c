/*
 * srun side, after the step exists and before launch.  srun draws the
 * step's secret for libdistbind's TCP bootstrap (DIST_BIND_SECRET: 256 bits
 * from getrandom, new for every step).  Where the nodes cannot tell rank
 * 0's node and each node's NODE_RANK (the order of the lowest rank each
 * runs) from Slurm's node order, srun reads the step's layout from
 * slurmctld (or its stepmgr), once: -m arbitrary, and from Slurm 26.05 a
 * topology plugin's node ranking.  master_addr=addr needs rank 0's node
 * name too, and its NodeAddr from srun's own configuration (slurmctld is
 * asked only for a node that configuration does not name).  On every other
 * layout (block, cyclic, plane) srun asks slurmctld nothing: the nodes go
 * by Slurm's node order and check it against their own ranks.  The hints
 * reach the tasks through srun's environment, which srun merges into the
 * step's after this callback.
 *
 * The Slurm API is looked up with dlsym (slurm_api.c): srun always has
 * libslurm loaded, and the plugin does not link against it (slurmstepd
 * loads it too).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <slurm/slurm.h>

#include "local.h"
#include "slurm_api.h"
#include "srun_devices.h"

extern char **environ;

typedef slurm_step_layout_t *(*layout_get_f)(slurm_step_id_t *);
typedef void (*layout_free_f)(slurm_step_layout_t *);
typedef int (*load_node_f)(node_info_msg_t **, char *, uint16_t);
typedef void (*free_node_f)(node_info_msg_t *);

DB_API_TYPE(slurm_job_step_layout_get, layout_get_f);
DB_API_TYPE(slurm_job_step_layout_free, layout_free_f);
DB_API_TYPE(slurm_load_node_single, load_node_f);
DB_API_TYPE(slurm_free_node_info_msg, free_node_f);

/* What srun learns from the step's layout. */
struct layout_hints {
    char *node_ranks; /* DB_NODE_RANKS_HINT's value (malloc'ed) */
    char rank0[256];  /* the name of the node that runs rank 0 */
};

/* 0; -1 with the reason in `why` where srun could not get the layout; -2
 * where it got one it cannot pass to the nodes (too irregular a node order
 * for one environment variable, or not a layout). */
static int read_layout(uint32_t job, uint32_t step, struct layout_hints *h, char *why, size_t len) {
    layout_get_f get = (layout_get_f)db_slurm_api("slurm_job_step_layout_get", NULL);
    layout_free_f release = (layout_free_f)db_slurm_api("slurm_job_step_layout_free", NULL);
    char err[DB_ERRLEN];
    slurm_step_id_t id;
    slurm_step_layout_t *l;
    uint32_t node = 0;
    int rc = -1;

    if (!get || !release) {
        snprintf(why, len, "srun has no %s", get ? "slurm_job_step_layout_free" : "slurm_job_step_layout_get");
        return -1;
    }
    /* Named fields: from 24.11 the struct starts with a sluid, left 0
     * (Slurm's own initializer's value) so slurmctld finds the step by
     * job and step id. */
    id = (slurm_step_id_t){.job_id = job, .step_het_comp = NO_VAL, .step_id = step};
    l = get(&id);
    if (!l) {
        snprintf(why, len, "cannot get the layout of step %u.%u from slurmctld", job, step);
        return -1;
    }
    if (db_layout_hints(l->node_cnt, l->task_cnt, l->tasks, (const uint32_t *const *)l->tids, &h->node_ranks, &node,
                        err, sizeof err) != 0) {
        snprintf(why, len, "step %u.%u: %.400s", job, step, err);
        rc = -2;
    } else if (!l->node_list)
        snprintf(why, len, "the layout of step %u.%u names no nodes", job, step);
    else if (db_hostlist_nth(l->node_list, node, h->rank0, sizeof h->rank0, err, sizeof err) != 0)
        snprintf(why, len, "%s", err);
    else
        rc = 0;
    release(l);
    if (rc != 0) {
        free(h->node_ranks);
        h->node_ranks = NULL;
    }
    return rc;
}

/* NodeAddr of node `name`: from srun's own configuration, else (a dynamic
 * node, which slurm.conf does not list) from slurmctld. */
static int node_addr(const db_request *eff, const char *name, char *out, size_t len) {
    load_node_f load = (load_node_f)db_slurm_api("slurm_load_node_single", NULL);
    free_node_f release = (free_node_f)db_slurm_api("slurm_free_node_info_msg", NULL);
    node_info_msg_t *msg = NULL;
    int rc = -1;

    if (db_slurm_node_addr(name, out, len) == 0) return 0;
    db_local_say(eff, "srun's configuration names no NodeAddr of node %s: asking slurmctld", name);
    if (!load || !release) {
        slurm_error(DB_PREFIX "srun has no slurm_load_node_single: cannot get NodeAddr of node %s", name);
        return -1;
    }
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
 * task's, whatever --export says: db_srun_pass), replacing one an
 * enclosing step's srun left there. */
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
    if (db_srun_pass(DB_CARRIED(DB_SECRET_VAR), hex) != 0) {
        slurm_error(DB_PREFIX "cannot set %s in srun", DB_SECRET_VAR);
        goto out;
    }
    rc = 0;
out:
    explicit_bzero(key, sizeof key);
    explicit_bzero(hex, sizeof hex);
    return rc;
}

/* Rank 0's address and the node ranks for the step's tasks, where only the
 * layout tells them.  Where the nodes could tell rank 0's address
 * themselves, failing to read the layout only costs the hints: the nodes
 * then go by Slurm's node order and stop the step if their own ranks do
 * not fit it. */
static int layout_hints(spank_t sp, const struct db_glue *g, const db_request *eff) {
    /* All read srun's environment before setenv() below may move it. */
    const char *const *env = (const char *const *)environ;
    const int needed = db_srun_needs_rank0(&g->cfg, eff, env);
    const int wanted = db_srun_wants_rank0(&g->cfg, eff, env);
    const int reads = db_srun_reads_layout(&g->cfg, eff, env, db_slurm_topology_may_rank());
    struct layout_hints h = {NULL, ""};
    char why[DB_ERRLEN], err[DB_ERRLEN], addr[256], value[512];
    uint32_t job = 0, step = 0;
    int rc = -1;

    if (!reads) return 0;
    if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
        snprintf(why, sizeof why, "cannot read the job and step id in srun");
    } else {
        rc = read_layout(job, step, &h, why, sizeof why);
    }
    if (rc != 0) {
        /* A node order srun read but cannot pass would leave the nodes
         * unable to tell their NODE_RANK: one message here, not one per
         * node. */
        if (rc == -2) {
            slurm_error(DB_PREFIX "%s", why);
            return -1;
        }
        if (needed) {
            slurm_error(DB_PREFIX "%s: rank 0's node is needed for MASTER_ADDR", why);
            return -1;
        }
        db_local_say(eff, "%s: the nodes go by Slurm's node order (%s and %s not passed)", why, DB_NODE_RANKS_HINT,
                     DB_RANK0_HINT);
        return 0;
    }
    rc = -1;
    if (db_srun_pass(DB_CARRIED(DB_NODE_RANKS_HINT), h.node_ranks) != 0) {
        slurm_error(DB_PREFIX "cannot set %s in srun", DB_NODE_RANKS_HINT);
        goto out;
    }
    if (wanted) {
        addr[0] = '\0';
        if (g->cfg.addr_kind == DB_ADDR_NODEADDR && node_addr(eff, h.rank0, addr, sizeof addr) != 0) goto out;
        if (db_format_master_addr(&g->cfg, h.rank0, addr, value, sizeof value, err, sizeof err) != 0) {
            slurm_error(DB_PREFIX "%s", err);
            goto out;
        }
        if (db_srun_pass(DB_CARRIED(DB_RANK0_HINT), value) != 0) {
            slurm_error(DB_PREFIX "cannot set %s in srun", DB_RANK0_HINT);
            goto out;
        }
    }
    rc = 0;
out:
    free(h.node_ranks);
    return rc;
}

int db_local_user_init(spank_t sp, const struct db_glue *g) {
    db_request eff;

    if (!g->cfg_ok) return -1;
    eff = db_glue_effective(g);
    /* Never pass on a value from the user's or an enclosing task's
     * environment. */
    db_srun_drop(DB_CARRIED(DB_RANK0_HINT));
    db_srun_drop(DB_CARRIED(DB_NODE_RANKS_HINT));
    if (eff.mode == DB_MODE_OFF) return 0;
    return layout_hints(sp, g, &eff);
}

/* Slurm 26.05's `srun --async` hands the step to the stepmgr and skips
 * slurm_spank_local_user_init: no secret, no rank 0, no node ranks would
 * reach the tasks.  Refused before anything is allocated.  srun exports
 * nothing for --async, so its command line says. */
static int refuse_async(const struct db_glue *g, const db_request *eff, const struct db_cmdline *cl) {
    if (!db_srun_async(cl->argc, cl->argv)) return 0;
    slurm_error(DB_PREFIX
                "%s%s cannot run with srun --async: srun does not prepare an asynchronous step's tasks "
                "for dist-bind (the step's secret, rank 0's node and the node ranks would never reach "
                "them). Drop --async, or add --dist-bind=off to run this step without dist-bind",
                g->opt_given ? "--dist-bind=" : "the site's default --dist-bind=", db_mode_name(eff->mode));
    return -1;
}

/* Everything here runs before any component of the step exists: what srun
 * exports in local_user_init, which runs once for a whole heterogeneous
 * step (srun A : B), reaches one of its components only (measured on 22.05
 * and 26.05); what it exports now reaches all of them. */
int db_local_post_opt(const struct db_glue *g) {
    struct db_cmdline cl;
    db_request eff;
    int rc = 0;

    /* Never pass on a value from the user's or an enclosing task's
     * environment. */
    db_srun_drop(DB_CARRIED(DB_SRUN_VERSION_HINT));
    unsetenv(DB_CARRIED(DB_SECRET_VAR)); /* DB_SECRET_VAR itself as before: draw_secret replaces it */
    if (db_glue_refused(g)) {
        db_srun_devices_hint(g, NULL); /* clears one from the environment */
        /* A bad plugstack.conf fails the command here when the plugin is
         * required; the option callback already refused --dist-bind. */
        return g->cfg_ok ? 0 : -1;
    }
    eff = db_glue_effective(g);
    if (eff.mode == DB_MODE_OFF) {
        /* Most steps where the site's default is off: nothing to read. */
        db_srun_devices_hint(g, NULL); /* clears one from the environment */
        return 0;
    }
    db_cmdline_read(&cl);
    db_srun_words_route(&cl);
    /* The nodes name both versions where theirs differs and srun's word
     * is missing or not what they read. */
    if (db_srun_pass(DB_CARRIED(DB_SRUN_VERSION_HINT), DB_VERSION) != 0)
        slurm_verbose(DB_PREFIX "cannot set %s in srun", DB_SRUN_VERSION_HINT);
    rc = refuse_async(g, &eff, &cl);
    if (rc == 0) db_srun_devices_hint(g, &cl);
    db_cmdline_free(&cl);
    return rc == 0 ? draw_secret() : rc;
}
