/*
 * slurmstepd side of --dist-bind=closest, once per node in user_init: find
 * the node's cached topology, ask lib/topo for every local task's GPUs and
 * hand the choice to the plan.  The tasks then only read the plan
 * (task_init never touches the topology).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "closest.h"
#include "db_topo.h"

/* The admin's topology_cache= for this node, or NULL (then `why` says why,
 * for verbose).  Its %n and %h come from this host's name as the kernel
 * has it, never from the job's environment, which is the user's: %n is
 * the name up to its first '.', the usual NodeName.  A name that could
 * leave the directory is refused (db_topo_cache_path). */
static const char *cache_path(const char *tmpl, char *buf, size_t len, char *why, size_t whylen) {
    char host[256] = "", node[256];

    if (!tmpl[0]) {
        snprintf(why, whylen, "no topology cache configured (topology_cache=none)");
        return NULL;
    }
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    snprintf(node, sizeof node, "%.*s", (int)strcspn(host, "."), host);
    if (db_topo_cache_path(tmpl, node, host, buf, len) != 0) {
        snprintf(why, whylen, "topology_cache=%s does not make a usable path on host \"%s\"", tmpl, host);
        return NULL;
    }
    return buf;
}

void db_remote_closest(spank_t sp, const db_node_input *in, db_node_plan *np, const char *topology_cache) {
    char err[DB_ERRLEN], xml[DB_PATH_MAX + 512], why[DB_PATH_MAX + 512] = "";
    const char **ids = NULL;
    char *cores = NULL;
    uint32_t cpt = 0;
    size_t i, n = db_node_plan_gpu_count(np);
    db_topo_node_request rq;
    db_topo_node_result *res = NULL;
    const db_closest_input *c;

    if (n == 0) return; /* no GPUs: only the rank variables */
    ids = calloc(n, sizeof *ids);
    if (!ids) {
        slurm_error(DB_PREFIX "closest: out of memory, choosing as rank");
        return;
    }
    for (i = 0; i < n; i++) ids[i] = db_node_plan_gpu_id(np, i);
    if (spank_get_item(sp, S_STEP_ALLOC_CORES, &cores) != ESPANK_SUCCESS) cores = NULL;
    if (spank_get_item(sp, S_STEP_CPUS_PER_TASK, &cpt) != ESPANK_SUCCESS) cpt = 0;

    memset(&rq, 0, sizeof rq);
    rq.env = in->env;
    rq.gpus = ids;
    rq.ngpus = n;
    rq.ntasks = in->local_ntasks;
    rq.step_cores = cores;
    rq.cpus_per_task = cpt;
    rq.cached_xml = cache_path(topology_cache, xml, sizeof xml, why, sizeof why);
    rq.no_cache = why;
    if (db_topo_node_choose(&rq, &res, err, sizeof err) != 0) {
        slurm_error(DB_PREFIX "%s, choosing as rank", err);
        goto out;
    }
    c = db_topo_node_closest(res);
    if (db_node_plan_set_closest(np, c, err, sizeof err) != 0)
        slurm_error(DB_PREFIX "%s (a bug: please report it), choosing as rank", err);
    else if (c->fallback)
        slurm_verbose(DB_PREFIX "closest: choosing as rank: %s", c->fallback);
    else
        slurm_verbose(DB_PREFIX "closest: %s (topology loaded in %.1f ms)", c->source, db_topo_node_load_ms(res));
out:
    db_topo_node_result_free(res);
    free(ids);
}
