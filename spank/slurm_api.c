/*
 * Slurm as this process holds it: its API and its configuration, looked
 * up with dlsym.  srun and slurmstepd always have libslurm (libslurmfull
 * in Debian's build) loaded, and the plugin does not link against it.
 *
 * Asking slurmctld costs every site on every srun (it is the one daemon
 * that does not scale out), so what Slurm has already read is taken from
 * memory instead:
 *   - srun: its own configuration (slurm.conf as srun read it, also when it
 *     fetched it from slurmctld in configless mode): TaskPlugin, the
 *     topology and, for master_addr=addr, NodeAddr;
 *   - slurmstepd: the node's own configuration, which slurmd hands it
 *     (cgroup.conf too, also in configless mode): whether this node
 *     confines the devices of a task Slurm binds per task.
 * That configuration is not in Slurm's public API: the struct slurm_conf
 * has the public type slurm_conf_t, but its variable, and
 * cgroup_get_conf_list, slurm_conf_get_nodeaddr, get_extra_conf_path and
 * slurm_xfree, are libslurm's own.  Their signatures are the same from
 * 22.05 to 26.05 (read in each release's src/common/read_config.h and
 * src/interfaces/cgroup.h); tests/unit/t_slurm_api.sh checks that each
 * release at hand exports them, and the lab runs them on every release.
 * Each lookup that fails leaves the fact unknown, never guessed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_version.h>

#include "slurm_api.h"

/* Public: their types come from the release's own slurm.h. */
typedef __typeof__(&slurm_print_key_pairs) print_pairs_f;
typedef __typeof__(&slurm_list_destroy) list_destroy_f;

/* libslurm's own (src/common/read_config.h, src/interfaces/cgroup.h). */
typedef void *(*conf_list_f)(void);
typedef char *(*nodeaddr_f)(const char *);
typedef char *(*extra_path_f)(const char *);
typedef void (*xfree_f)(void **);

void *db_slurm_api(const char *name, const char *older) {
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f && older) f = dlsym(RTLD_DEFAULT, older);
    return f;
}

void *db_slurm_internal(const char *name) { return dlsym(RTLD_DEFAULT, name); }

static const slurm_conf_t *conf(void) { return (const slurm_conf_t *)db_slurm_internal("slurm_conf"); }

const char *db_slurm_task_plugins(void) {
    const slurm_conf_t *c = conf();
    return c ? c->task_plugin : NULL;
}

int db_slurm_node_devices(void) {
    conf_list_f list = (conf_list_f)db_slurm_internal("cgroup_get_conf_list");
    print_pairs_f print = (print_pairs_f)db_slurm_api("slurm_print_key_pairs", NULL);
    list_destroy_f destroy = (list_destroy_f)db_slurm_api("slurm_list_destroy", NULL);
    const char *plugins = db_slurm_task_plugins();
    char *text = NULL;
    size_t len = 0;
    void *pairs;
    FILE *mem;
    int rc = DB_DEVICES_UNKNOWN;

    if (!plugins) return DB_DEVICES_UNKNOWN;
    /* Without task/cgroup no device is confined, whatever cgroup.conf says. */
    if (!db_task_plugin_cgroup(plugins)) return DB_DEVICES_OPEN;
    if (!list || !print || !destroy || !(pairs = list())) return DB_DEVICES_UNKNOWN;
    mem = open_memstream(&text, &len);
    if (mem) {
        print(mem, pairs, (char *)"");
        fclose(mem);
        rc = db_devices_from_conf(plugins, text ? text : "");
    }
    free(text);
    destroy(pairs);
    return rc;
}

int db_slurm_topology_may_rank(void) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
    /* From 26.05 a topology plugin may order a step's nodes, and the block
     * layout then starts on the lowest-ranked node: every plugin but
     * topology/flat does, and a topology.yaml (which replaces TopologyPlugin)
     * may even for flat (alpha_step_rank).  read_config makes an unset,
     * "none" or "default" TopologyPlugin topology/flat. */
    const slurm_conf_t *c = conf();
    extra_path_f extra = (extra_path_f)db_slurm_internal("get_extra_conf_path");
    xfree_f xfree_ = (xfree_f)db_slurm_internal("slurm_xfree");
    char *yaml;
    int present;

    if (!c || !extra || !xfree_) return -1;
    if (!c->topology_plugin || strcmp(c->topology_plugin, "topology/flat") != 0) return 1;
    /* In configless mode the path is the copy srun fetched from slurmctld. */
    if (!(yaml = extra("topology.yaml"))) return -1;
    present = access(yaml, F_OK) == 0;
    xfree_((void **)&yaml);
    return present;
#else
    return 0;
#endif
}

int db_slurm_node_addr(const char *name, char *out, size_t len) {
    nodeaddr_f lookup = (nodeaddr_f)db_slurm_internal("slurm_conf_get_nodeaddr");
    xfree_f xfree_ = (xfree_f)db_slurm_internal("slurm_xfree");
    char *addr;
    int rc = -1;

    if (!lookup || !xfree_ || !(addr = lookup(name))) return -1;
    if (strlen(addr) < len) {
        strcpy(out, addr);
        rc = 0;
    }
    xfree_((void **)&addr);
    return rc;
}
