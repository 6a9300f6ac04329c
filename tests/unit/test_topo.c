/*
 * lib/topo on its own: Slurm's task layout over CPU-only synthetic shapes,
 * SLURM_DISTRIBUTION, the spool path, and the node-level entry point the
 * plugin calls in user_init: the cached XML or live discovery, broken and
 * hostile cache files, the step's GPU numbers, GPUs per task, the NVIDIA
 * driver's device minors, and every way closest falls back to rank.
 */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_topo.h"
#include "fake_nvidia.h"
#include "unit.h"

/* --- task layout on synthetic topologies -------------------------------------------------- */

struct model_row {
    const char *name;
    const char *shape;
    const char *cores;
    uint32_t ntasks, cpt;
    const char *dist;
    const char *want; /* lines joined by '|', or NULL */
    const char *err;
};

/* "pack:2 numa:2 core:4 pu:2": 16 cores; package 0 = cores 0-7 (NUMA 0:
 * cores 0-3 = PUs 0-7, NUMA 1: cores 4-7 = PUs 8-15), package 1 = cores
 * 8-15 (NUMA 2: PUs 16-23, NUMA 3: PUs 24-31). */
#define SHAPE "pack:2 numa:2 core:4 pu:2"

static const struct model_row model_rows[] = {
    {"block, 2 cores each", SHAPE, "0-15", 4, 4, "block:block",
     "task 0 cpus 0-3 numa 0|task 1 cpus 4-7 numa 0|"
     "task 2 cpus 8-11 numa 1|task 3 cpus 12-15 numa 1",
     NULL},
    /* cyclic: consecutive tasks on consecutive packages. */
    {"cyclic (default), 2 cores each", SHAPE, "0-15", 4, 4, NULL,
     "task 0 cpus 0-3 numa 0|task 1 cpus 16-19 numa 2|"
     "task 2 cpus 4-7 numa 0|task 3 cpus 20-23 numa 2",
     NULL},
    {"block:cyclic", SHAPE, "0-15", 2, 2, "block:cyclic", "task 0 cpus 0-1 numa 0|task 1 cpus 16-17 numa 2", NULL},
    /* fcyclic: each task's cores alternate packages; NUMA ties go low. */
    {"fcyclic", SHAPE, "0-15", 2, 4, "cyclic:fcyclic", "task 0 cpus 0-1,16-17 numa 0|task 1 cpus 2-3,18-19 numa 0",
     NULL},
    /* Package 1 holds one step core: task 1 fits on neither package alone
     * and takes a core from each, starting where cyclic would. */
    {"cyclic task spills over packages", SHAPE, "0-2,8", 2, 4, NULL,
     "task 0 cpus 0-3 numa 0|task 1 cpus 4-5,16-17 numa 0", NULL},
    /* Unknown CPUs per task: the step's cores shared out. */
    {"cores shared out", SHAPE, "0-7", 4, 0, NULL,
     "task 0 cpus 0-3 numa 0|task 1 cpus 4-7 numa 0|task 2 cpus 8-11 numa 1|task 3 cpus 12-15 numa 1", NULL},
    /* Hyperthreads as CPUs: more tasks than cores share them in order. */
    {"more tasks than cores", SHAPE, "0-1", 4, 1, NULL,
     "task 0 cpus 0-1 numa 0|task 1 cpus 0-1 numa 0|task 2 cpus 2-3 numa 0|task 3 cpus 2-3 numa 0", NULL},
    /* 1 CPU per task on 2-thread cores is still a core each. */
    {"one CPU is one core", SHAPE, "4,12", 2, 1, NULL, "task 0 cpus 8-9 numa 1|task 1 cpus 24-25 numa 3", NULL},
    /* --cpus-per-task larger than the step's share: the share wins. */
    {"cpus-per-task too large", SHAPE, "0-3", 2, 16, "block:block", "task 0 cpus 0-3 numa 0|task 1 cpus 4-7 numa 0",
     NULL},
    {"plane first level", SHAPE, "0-15", 2, 2, "plane=4", "task 0 cpus 0-1 numa 0|task 1 cpus 16-17 numa 2", NULL},
    {"Pack suffix", SHAPE, "0-15", 2, 2, "cyclic:block,Pack", "task 0 cpus 0-1 numa 0|task 1 cpus 2-3 numa 0", NULL},
    /* Without a Core level PUs stand for cores. */
    {"no cores in topology", "pack:2 pu:4", "0-7", 2, 0, "block:block", "task 0 cpus 0-3 numa 0|task 1 cpus 4-7 numa 0",
     NULL},
    {"core outside", SHAPE, "0-16", 1, 1, NULL, NULL, "step core 16 is outside the machine (16 cores)"},
    {"garbage cores", SHAPE, "0-x", 1, 1, NULL, NULL, "step cores=\"0-x\"&not N or N-M"},
    {"reversed range", SHAPE, "3-1", 1, 1, NULL, NULL, "\"3-1\""},
    {"duplicate core", SHAPE, "1,1", 1, 1, NULL, NULL, "listed twice"},
    {"empty core list", SHAPE, "", 1, 1, NULL, NULL, "empty"},
    {"bad distribution", SHAPE, "0-3", 1, 1, "block:diagonal", NULL,
     "SLURM_DISTRIBUTION=\"block:diagonal\"&unknown distribution \"diagonal\""},
    {"bad first level", SHAPE, "0-3", 1, 1, "zigzag", NULL, "SLURM_DISTRIBUTION=\"zigzag\""},
    {"bad shape", "pack:0", "0", 1, 1, NULL, NULL, "synthetic topology \"pack:0\""},
};

START_TEST(model_row) {
    const struct model_row *r = &model_rows[_i];
    char err[DB_ERRLEN] = "", *out = NULL;
    db_topo_dry_run a;
    memset(&a, 0, sizeof a);
    a.synthetic = r->shape;
    a.step_cores = r->cores;
    a.ntasks = r->ntasks;
    a.cpus_per_task = r->cpt;
    a.distribution = r->dist;
    a.cpus_only = 1;
    int rc = db_topo_dry_run_text(&a, &out, err, sizeof err);
    if (r->err) {
        ck_assert_msg(rc != 0, "%s: expected an error, got:\n%s", r->name, out ? out : "");
        assert_contains_all(r->name, err, r->err);
    } else {
        char want[1024];
        ck_assert_msg(rc == 0, "%s: %s", r->name, err);
        snprintf(want, sizeof want, "%s\n", r->want);
        for (char *p = want; *p; p++)
            if (*p == '|') *p = '\n';
        ck_assert_msg(strcmp(out, want) == 0, "%s:\n--- got\n%s--- want\n%s", r->name, out, want);
    }
    free(out);
}
END_TEST

/* Explicit CPU lists: checked against the machine. */
START_TEST(task_cpu_lists) {
    char err[DB_ERRLEN] = "", *out = NULL;
    db_topo_dry_run a;
    memset(&a, 0, sizeof a);
    a.synthetic = SHAPE;
    a.cpus_only = 1;
    a.task_cpus = "0-1;30-31";
    ck_assert_msg(db_topo_dry_run_text(&a, &out, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(out, "task 0 cpus 0-1 numa 0\ntask 1 cpus 30-31 numa 3\n");
    free(out);
    a.task_cpus = "0;32";
    ck_assert(db_topo_dry_run_text(&a, &out, err, sizeof err) != 0);
    assert_contains_all("CPU 32", err, "task 1 CPUs: CPU 32 is not in the machine (CPUs 0-31)");
    a.task_cpus = "0;;1";
    ck_assert(db_topo_dry_run_text(&a, &out, err, sizeof err) != 0);
    assert_contains_all("empty task", err, "task 1 CPUs&empty");
    /* Both ways of giving CPUs at once is a usage error. */
    a.step_cores = "0";
    a.ntasks = 1;
    ck_assert(db_topo_dry_run_text(&a, &out, err, sizeof err) != 0);
    assert_contains_all("both", err, "either");
    /* A synthetic shape has no GPUs: the GPU dry run says so. */
    a.task_cpus = NULL;
    a.cpus_only = 0;
    ck_assert(db_topo_dry_run_text(&a, &out, err, sizeof err) != 0);
    assert_contains_all("no GPUs", err, "the topology shows no GPUs");
}
END_TEST

/* Live discovery works on whatever runs the tests. */
START_TEST(live_discovery) {
    char err[DB_ERRLEN] = "", *out = NULL;
    db_topo_dry_run a;
    memset(&a, 0, sizeof a);
    a.cpus_only = 1;
    a.task_cpus = "0";
    ck_assert_msg(db_topo_dry_run_text(&a, &out, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(strncmp(out, "task 0 cpus 0 numa ", 19) == 0, "got %s", out);
    free(out);
}
END_TEST

/* --- the cache's path (plugstack topology_cache=) ---------------------------------------- */

struct path_row {
    const char *tmpl, *node, *host;
    const char *want; /* NULL: refused */
};

static const struct path_row path_rows[] = {
    {"/var/spool/slurmd/hwloc_topo_whole.xml", "n1", "h1", "/var/spool/slurmd/hwloc_topo_whole.xml"},
    {"/lab/%n/spool/hwloc_topo_whole.xml", "node1", "h1", "/lab/node1/spool/hwloc_topo_whole.xml"},
    {"/s/%h-%n.xml", "node1", "host.example.org", "/s/host.example.org-node1.xml"},
    {"/s/100%%.xml", "n", "h", "/s/100%.xml"},
    {"/a/very/long/spool/directory/name/that/does/not/fit/in/sixty-four", "n", "h", NULL},
    {"", "n", "h", NULL},
    {NULL, "n", "h", NULL},
    /* A node name that climbs out of the directory. */
    {"/s/%n/x.xml", "../../..", "h", NULL},
    {"/s/%n/x.xml", "a/b", "h", NULL},
    {"/s/%n/x.xml", "..", "h", NULL},
    {"/s/%n/x.xml", ".", "h", NULL},
    {"/s/%n/x.xml", "", "h", NULL},
    {"/s/%n/x.xml", "n1\n", "h", NULL},
    {"/s/%h/x.xml", "n1", NULL, NULL},
    {"/s/x.xml", "../..", "h", "/s/x.xml"}, /* a name not used is not checked */
    {"/s/%u.xml", "n", "h", NULL},
    {"/s/100%", "n", "h", NULL},
};

START_TEST(path_row) {
    const struct path_row *r = &path_rows[_i];
    char buf[64] = "";
    int rc = db_topo_cache_path(r->tmpl, r->node, r->host, buf, sizeof buf);
    if (!r->want) {
        ck_assert_msg(rc == -1, "\"%s\" with node \"%s\": accepted as %s", r->tmpl, r->node, buf);
    } else {
        ck_assert_msg(rc == 0, "\"%s\": refused", r->tmpl);
        ck_assert_str_eq(buf, r->want);
    }
}
END_TEST

/* --- the node's choice, as user_init asks for it --------------------------------------------- */

struct node_row {
    const char *name;
    const char *cache; /* file in the XML dir, or "@missing", "@garbage", "@truncated", "@fifo", "@dir", "@noio" */
    const char *env;   /* step environment */
    const char *gpus;  /* the plan's list */
    uint32_t ntasks;
    const char *cores;
    uint32_t cpt;
    const char *minors; /* fake NVIDIA driver: "BUS=MINOR/UUID,..." */
    const char *want;   /* per task "gpus/numa/nics" joined by ';' (positions), or NULL: fall back */
    const char *text;   /* '&'-parts of the source (chosen) or the fallback reason */
};

#define TIOGA "eas-tioga.xml"
#define DGX2 "nvidiaDGX2.xml"

static const struct node_row node_rows[] = {
    /* Tioga, 2 tasks on NUMA 0 and 3, all 8 GCDs: positions = Slurm's numbers. */
    {"cached XML", TIOGA, "SLURM_STEP_GPUS=0,1,2,3,4,5,6,7", "0,1,2,3,4,5,6,7", 2, "0-15,48-63", 32, NULL,
     "4/0/hsi2;0/3/hsi0",
     "topology from &hwloc_topo_whole.xml&GPUs matched by PCI bus order&"
     "task CPUs cyclic over cores 0-15,48-63"},
    /* cgroup-local numbering in the plan's list: SLURM_STEP_GPUS has the
     * node's numbers (4,5 are NUMA 0's GCDs), positions stay the plan's. */
    {"SLURM_STEP_GPUS numbering", TIOGA, "SLURM_STEP_GPUS=0,4,5|SLURM_GPUS_PER_TASK=2", "0,1,2", 1, "0-3", 8, NULL,
     "1,2/0/hsi2", NULL},
    /* Each task spans two NUMA nodes equally (0+1, 2+3): it takes a whole
     * pair from the first of them in bus order (NUMA 1's 2,3 and NUMA 3's
     * 0,1); its NUMA node is the lower of the tie. */
    {"GPUs per task from srun", TIOGA, "SLURM_GPUS_PER_TASK=2", "0,1,2,3,4,5,6,7", 2, "0-63", 64, NULL,
     "2,3/0/hsi1;0,1/2/hsi0", NULL},
    {"GPUs per task with a type", TIOGA, "SLURM_GPUS_PER_TASK=mi250x:2", "0,1,2,3,4,5,6,7", 1, "16", 2, NULL,
     "2,3/1/hsi1", NULL},
    /* 23.11 and later: only SLURM_TRES_PER_TASK says it. */
    {"GPUs per task from SLURM_TRES_PER_TASK", TIOGA, "SLURM_TRES_PER_TASK=cpu=32,gres/gpu=2", "0,1,2,3,4,5,6,7", 2,
     "0-63", 64, NULL, "2,3/0/hsi1;0,1/2/hsi0", NULL},
    {"typed GPUs per task from SLURM_TRES_PER_TASK", TIOGA, "SLURM_TRES_PER_TASK=gres/gpu:mi250x=2", "0,1,2,3,4,5,6,7",
     1, "16", 2, NULL, "2,3/1/hsi1", NULL},
    /* 25.05+: --gpus-per-task=TYPE:N,TYPE:M gives each task N+M GPUs. */
    {"GPUs per task of two types", TIOGA, "SLURM_GPUS_PER_TASK=mi250x:1,mi300:1", "0,1,2,3,4,5,6,7", 2, "0-63", 64,
     NULL, "2,3/0/hsi1;0,1/2/hsi0", NULL},
    {"GPUs per task of two types from SLURM_TRES_PER_TASK", TIOGA,
     "SLURM_TRES_PER_TASK=cpu=32,gres/gpu:mi250x=1,gres/gpu:mi300=1", "0,1,2,3,4,5,6,7", 2, "0-63", 64, NULL,
     "2,3/0/hsi1;0,1/2/hsi0", NULL},
    {"SLURM_TRES_PER_TASK without GPUs", TIOGA, "SLURM_TRES_PER_TASK=cpu=2,gres/gpuish=3", "0,4", 1, "0", 1, NULL,
     "1,0/0/hsi2,hsi0", NULL},
    /* A node's only task without --gpus-per-task owns all its GPUs, nearest first. */
    {"only task owns all", TIOGA, "", "0,4", 1, "0", 1, NULL, "1,0/0/hsi2,hsi0", NULL},
    {"distribution from srun", TIOGA, "SLURM_DISTRIBUTION=block:block", "0,1,2,3,4,5,6,7", 2, "0-31", 32, NULL,
     "4/0/hsi2;2/1/hsi1", "task CPUs block over cores 0-31"},
    /* By bus id: the driver's minors 0..3 are DGX-2 GPUs b7 (socket 1),
     * 34, bc, 36 (socket 0, 1, 0). Task 0 on core 0 (socket 0). */
    {"NVIDIA device minors", DGX2, "", "0,1,2,3", 2, "0-3", 2,
     "0000:b7:00.0=0,0000:34:00.0=1,0000:bc:00.0=2,0000:36:00.0=3", "1/0/;0/1/",
     "GPUs matched by PCI bus id (NVIDIA device minors)"},
    {"NVIDIA UUIDs", DGX2, "", "GPU-3,GPU-0", 2, "0-3", 2,
     "0000:b7:00.0=0,0000:34:00.0=1,0000:bc:00.0=2,0000:36:00.0=3", "0/0/;1/1/", "by PCI bus id"},

    /* --- fallbacks: closest acts as rank, and says why ----------------------------------------------- */
    {"too many tasks", TIOGA, "", "0,1", 3, "0-2", 1, NULL, NULL,
     "3 tasks with 1 GPU each need 3 GPUs, but there are 2"},
    {"GPU beyond the topology", TIOGA, "", "7,8", 2, "0-1", 1, NULL, NULL,
     "Slurm's GPU 8, but the topology shows only 8 GPUs"},
    {"UUIDs without the driver", TIOGA, "", "GPU-aa,GPU-bb", 2, "0-1", 1, NULL, NULL, "\"GPU-aa\" is not a number"},
    {"minor the driver does not list", DGX2, "", "0,7", 2, "0-1", 1, "0000:34:00.0=0", NULL,
     "Slurm's GPU 7 is not one of the NVIDIA driver's GPUs"},
    {"driver's GPU not in the topology", DGX2, "", "0", 1, "0", 1, "0000:99:00.0=0", NULL,
     "GPU 0 (PCI 0000:99:00.0) is not in the topology"},
    {"no step cores", TIOGA, "", "0,1", 2, NULL, 1, NULL, NULL, "S_STEP_ALLOC_CORES"},
    {"garbage step cores", TIOGA, "", "0,1", 2, "\xff\xfe\x01", 1, NULL, NULL, "S_STEP_ALLOC_CORES=\""},
    {"step core outside", TIOGA, "", "0,1", 2, "0,64", 1, NULL, NULL, "step core 64 is outside the machine (64 cores)"},
    {"bad GPUs per task", TIOGA, "SLURM_GPUS_PER_TASK=two", "0,1", 2, "0-1", 1, NULL, NULL,
     "SLURM_GPUS_PER_TASK=\"two\"&expected a count"},
    {"bad SLURM_TRES_PER_TASK", TIOGA, "SLURM_TRES_PER_TASK=gres/gpu=two", "0,1", 2, "0-1", 1, NULL, NULL,
     "SLURM_TRES_PER_TASK=\"gres/gpu=two\"&expected a GPU count"},
    {"bad second GPU type count", TIOGA, "SLURM_GPUS_PER_TASK=a100:1,v100:x", "0,1", 2, "0-1", 1, NULL, NULL,
     "SLURM_GPUS_PER_TASK=\"a100:1,v100:x\"&expected a count"},
    {"bad distribution", TIOGA, "SLURM_DISTRIBUTION=block:sideways", "0,1", 2, "0-1", 1, NULL, NULL,
     "SLURM_DISTRIBUTION=\"block:sideways\""},
    /* Broken or hostile cache files: live discovery instead (whatever it
     * finds here), and the reason is in the source or the fallback. */
    {"missing cache", "@missing", "", "0", 1, "0", 1, NULL, NULL,
     "topology by live discovery (no &hwloc_topo_whole.xml)"},
    {"garbage cache", "@garbage", "", "0", 1, "0", 1, NULL, NULL,
     "cached topology unusable: &hwloc_topo_whole.xml: not an hwloc XML topology"},
    {"truncated cache", "@truncated", "", "0", 1, "0", 1, NULL, NULL, "not an hwloc XML topology"},
    {"FIFO as cache", "@fifo", "", "0", 1, "0", 1, NULL, NULL, "hwloc_topo_whole.xml: not a regular file"},
    {"directory as cache", "@dir", "", "0", 1, "0", 1, NULL, NULL, "hwloc_topo_whole.xml: not a regular file"},
    /* A cache anyone but root or slurmd's user could have put
     * there is not read (the Tioga export in it would be chosen from). */
    {"symbolic link as cache", "@symlink", "", "0", 1, "0", 1, NULL, NULL,
     "hwloc_topo_whole.xml is a symbolic link: not used"},
    {"group-writable cache", "@groupwritable", "", "0", 1, "0", 1, NULL, NULL,
     "hwloc_topo_whole.xml is writable by group or others: not used"},
    {"world-writable cache", "@worldwritable", "", "0", 1, "0", 1, NULL, NULL,
     "hwloc_topo_whole.xml is writable by group or others: not used"},
    {"cache owned by a user", "@otherowner", "", "0", 1, "0", 1, NULL, NULL,
     "hwloc_topo_whole.xml is owned by uid 4242, not by root or slurmd's user: not used"},
    /* slurmd 22.05 writes its cache with hwloc's default filters: no PCI. */
    {"cache without I/O, as slurmd writes it", "@noio", "", "0", 1, "0", 1, NULL, NULL,
     "topology by live discovery (cached topology &hwloc_topo_whole.xml has no I/O devices)"},
};

static void sh(const char *fmt, const char *a, const char *b) {
    char cmd[1500];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

START_TEST(node_row) {
    const struct node_row *r = &node_rows[_i];
    char tmpl[] = "/tmp/dist-bind-cache.XXXXXX", *dir = mkdtemp(tmpl), cache[600], envspec[600], err[DB_ERRLEN];
    char *nv = r->minors ? fake_nvidia(r->minors) : NULL, **env, **ids;
    db_topo_node_request rq;
    db_topo_node_result *res = NULL;
    const db_closest_input *c;

    ck_assert(dir != NULL);
    snprintf(cache, sizeof cache, "%s/hwloc_topo_whole.xml", dir);
    if (r->cache[0] != '@') {
        char src[600];
        snprintf(src, sizeof src, "%s/%s", DB_TEST_XML_DIR, r->cache);
        sh("cp '%s' '%s'", src, cache);
    } else if (!strcmp(r->cache, "@garbage")) {
        sh("printf 'not <xml at all%s' > '%s'", "", cache);
    } else if (!strcmp(r->cache, "@truncated")) {
        sh("head -c 5000 '%s' > '%s'", DB_TEST_XML_DIR "/" TIOGA, cache);
    } else if (!strcmp(r->cache, "@fifo")) {
        ck_assert(mkfifo(cache, 0600) == 0);
    } else if (!strcmp(r->cache, "@dir")) {
        ck_assert(mkdir(cache, 0700) == 0);
    } else if (!strcmp(r->cache, "@symlink")) {
        sh("ln -s '%s' '%s'", DB_TEST_XML_DIR "/" TIOGA, cache);
    } else if (!strcmp(r->cache, "@groupwritable")) {
        sh("cp '%s' '%s'", DB_TEST_XML_DIR "/" TIOGA, cache);
        ck_assert(chmod(cache, 0664) == 0);
    } else if (!strcmp(r->cache, "@worldwritable")) {
        sh("cp '%s' '%s'", DB_TEST_XML_DIR "/" TIOGA, cache);
        ck_assert(chmod(cache, 0646) == 0);
    } else if (!strcmp(r->cache, "@otherowner")) {
        /* Only root can give a file away: the lab and CI run as root. */
        ck_assert_msg(geteuid() == 0, "%s: needs root", r->name);
        sh("cp '%s' '%s'", DB_TEST_XML_DIR "/" TIOGA, cache);
        ck_assert(chown(cache, 4242, (gid_t)-1) == 0 && chmod(cache, 0644) == 0);
    } else if (!strcmp(r->cache, "@noio")) {
        sh("lstopo-no-graphics --input '%s' --no-io --of xml '%s'", DB_TEST_XML_DIR "/" TIOGA, cache);
    }
    snprintf(envspec, sizeof envspec, "%s%s%s%s", r->env, nv ? "|" DB_TOPO_NVIDIA_ENV "=" : "", nv ? nv : "",
             nv ? "" : "|" DB_TOPO_NVIDIA_ENV "=/nonexistent");
    env = make_env(envspec);
    {
        char *copy = strdup(r->gpus), *tok, *save = NULL;
        size_t n = 0;
        ids = calloc(16, sizeof *ids);
        for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) ids[n++] = strdup(tok);
        free(copy);
        memset(&rq, 0, sizeof rq);
        rq.ngpus = n;
    }
    rq.env = (const char *const *)env;
    rq.gpus = (const char *const *)ids;
    rq.ntasks = r->ntasks;
    rq.step_cores = r->cores;
    rq.cpus_per_task = r->cpt;
    rq.cached_xml = cache;

    ck_assert_msg(db_topo_node_choose(&rq, &res, err, sizeof err) == 0, "%s: %s", r->name, err);
    c = db_topo_node_closest(res);
    if (r->want) {
        char got[512] = "";
        ck_assert_msg(c->fallback == NULL, "%s: fell back: %s", r->name, c->fallback);
        ck_assert_uint_eq(c->ntasks, r->ntasks);
        for (size_t t = 0; t < c->ntasks; t++) {
            char one[128] = "";
            for (size_t g = 0; g < c->tasks[t].ngpus; g++)
                snprintf(one + strlen(one), sizeof one - strlen(one), "%s%zu", g ? "," : "", c->tasks[t].gpus[g]);
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s/%d/%s", t ? ";" : "", one, c->tasks[t].numa,
                     c->tasks[t].nics ? c->tasks[t].nics : "");
        }
        ck_assert_msg(strcmp(got, r->want) == 0, "%s: got %s, want %s", r->name, got, r->want);
        if (r->text) assert_contains_all(r->name, c->source, r->text);
        ck_assert_msg(db_topo_node_load_ms(res) > 0, "%s: load time not measured", r->name);
    } else {
        /* A live topology here may or may not show GPUs: the reason for
         * going live must show either way. */
        const char *said = c->fallback ? c->fallback : c->source;
        ck_assert_msg(said != NULL, "%s: neither a choice nor a reason", r->name);
        assert_contains_all(r->name, said, r->text);
        if (r->cache[0] != '@') ck_assert_msg(c->fallback != NULL, "%s: expected a fallback", r->name);
    }
    db_topo_node_result_free(res);
    for (size_t i = 0; ids[i]; i++) free(ids[i]);
    free(ids);
    free_env(env);
    sh("rm -rf '%s'%s", dir, "");
    if (nv) {
        sh("rm -rf '%s'%s", nv, "");
        free(nv);
    }
}
END_TEST

START_TEST(null_arguments) {
    char err[DB_ERRLEN] = "";
    db_topo_node_result *res = (db_topo_node_result *)1;
    ck_assert_int_eq(db_topo_node_choose(NULL, &res, err, sizeof err), -1);
    ck_assert_ptr_null(res);
    ck_assert_ptr_null(db_topo_node_closest(NULL));
    db_topo_node_result_free(NULL);
    ck_assert_int_eq(db_topo_dry_run_text(NULL, NULL, err, sizeof err), -1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("topo");
    TCase *tc = tcase_create("all");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, model_row, 0, (int)(sizeof model_rows / sizeof model_rows[0]));
    tcase_add_test(tc, task_cpu_lists);
    tcase_add_test(tc, live_discovery);
    tcase_add_loop_test(tc, path_row, 0, (int)(sizeof path_rows / sizeof path_rows[0]));
    tcase_add_loop_test(tc, node_row, 0, (int)(sizeof node_rows / sizeof node_rows[0]));
    tcase_add_test(tc, null_arguments);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
