/*
 * slurmstepd side of --dist-bind=closest, once per node in user_init: find
 * slurmd's cached topology, ask lib/topo for every local task's GPUs and
 * hand the choice to the plan.  The tasks then only read the plan
 * (task_init never touches the topology).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "closest.h"
#include "db_topo.h"

/* slurmd caches its topology as SlurmdSpoolDir/hwloc_topo_whole.xml.  The
 * spool directory is in the slurm_conf that libslurmfull keeps in this very
 * process; SPANK refuses plugins built for another Slurm release, so the
 * struct layout in slurm.h is the one in memory.  NULL: discover live. */
static const char *cache_path(const db_node_plan *np, char *buf, size_t len) {
    const slurm_conf_t *conf = (const slurm_conf_t *)dlsym(RTLD_DEFAULT, "slurm_conf");
    char host[256] = "";

    if (!conf || !conf->slurmd_spooldir) return NULL;
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return db_topo_cache_path(conf->slurmd_spooldir, db_node_plan_node_name(np), host, buf, len) == 0 ? buf : NULL;
}

void db_remote_closest(spank_t sp, const db_node_input *in, db_node_plan *np) {
    char err[DB_ERRLEN], xml[4096];
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
    rq.cached_xml = cache_path(np, xml, sizeof xml);
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
