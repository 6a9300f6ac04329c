/*
 * libdistbind's discovery and settings, table-driven through the public
 * API (distbind_create_env): every source, and every malformed or missing
 * value giving one error that names it.
 */
#include "distbind.h"
#include "runtime_hooks.h"
#include "unit.h"

/* A parser that allocates for what a short string claims shows up as an
 * error here, not as a slow success. */
const char *__asan_default_options(void) { return "allocator_may_return_null=1:max_allocation_size_mb=16"; }

#define PLUGIN "RANK=4|WORLD_SIZE=5|LOCAL_RANK=1|LOCAL_WORLD_SIZE=2|NODE_RANK=1|GROUP_RANK=1|DIST_BIND_MODE=rank"
#define SECRET "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF"
/* A node's only task, as torchrun's agent: no DIST_BIND_DEVICE (its device
 * is 0); dist-bind 0.1.0 set DIST_BIND_DEVICE=0 there (AGENT_010). */
#define AGENT "|NODE_RANK=1|DIST_BIND_MODE=rank|DIST_BIND_SET=1,0,2;|DIST_BIND_GPUS=0,1,2"
#define AGENT_010 AGENT "|DIST_BIND_DEVICE=0"
#define SLURM "SLURM_PROCID=4|SLURM_LOCALID=1|SLURM_NODEID=1|SLURM_STEP_NUM_TASKS=5|SLURM_STEP_TASKS_PER_NODE=3,2"

struct place_row {
    const char *env;
    distbind_status st;
    int rank, world, local, local_world, node, device;
    const char *source;
    const char *err; /* '&'-separated substrings */
};

static const struct place_row place_rows[] = {
    /* The plugin's variables. */
    {PLUGIN, DISTBIND_OK, 4, 5, 1, 2, 1, 1, "dist-bind", NULL},
    {PLUGIN "|DIST_BIND_DEVICE=0", DISTBIND_OK, 4, 5, 1, 2, 1, 0, "dist-bind", NULL},
    {PLUGIN "|" SLURM "|SLURM_PROCID=9", DISTBIND_OK, 4, 5, 1, 2, 1, 1, "dist-bind", NULL},
    /* torchrun: the same names, GROUP_RANK only, no plugin. */
    {"RANK=0|WORLD_SIZE=1|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|GROUP_RANK=0", DISTBIND_OK, 0, 1, 0, 1, 0, 0, "env", NULL},
    /* torchrun's workers under srun --dist-bind: the plugin set the agent up
     * (its record, DIST_BIND_SET, opens with its place), torchrun re-ranked the workers.  The
     * workers' own ranks, GROUP_RANK over the agent's NODE_RANK, and device
     * = the agent's first (DIST_BIND_DEVICE, none: 0) + the worker's
     * LOCAL_RANK. */
    {"RANK=5|WORLD_SIZE=6|LOCAL_RANK=2|LOCAL_WORLD_SIZE=3|GROUP_RANK=1" AGENT, DISTBIND_OK, 5, 6, 2, 3, 1, 2, "env",
     NULL},
    {"RANK=5|WORLD_SIZE=6|LOCAL_RANK=2|LOCAL_WORLD_SIZE=3|GROUP_RANK=1" AGENT_010, DISTBIND_OK, 5, 6, 2, 3, 1, 2, "env",
     NULL},
    {"RANK=1|WORLD_SIZE=6|LOCAL_RANK=1|LOCAL_WORLD_SIZE=3|GROUP_RANK=0" AGENT, DISTBIND_OK, 1, 6, 1, 3, 0, 1, "env",
     NULL},
    /* The second agent of a node (rank mode: its GPUs are devices 2 and 3). */
    {"RANK=3|WORLD_SIZE=6|LOCAL_RANK=1|LOCAL_WORLD_SIZE=2|GROUP_RANK=1|NODE_RANK=0|DIST_BIND_MODE=rank|"
     "DIST_BIND_SET=1,1,3;|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2,3",
     DISTBIND_OK, 3, 6, 1, 2, 1, 3, "env", NULL},
    /* Not re-ranked: the plugin's place and device. */
    {PLUGIN "|DIST_BIND_SET=4,1,5;RANK:340ca71c|DIST_BIND_DEVICE=1", DISTBIND_OK, 4, 5, 1, 2, 1, 1, "dist-bind", NULL},
    {"RANK=3|WORLD_SIZE=8|LOCAL_RANK=3|LOCAL_WORLD_SIZE=4|GROUP_RANK=0" AGENT, DISTBIND_ERR_DEVICE, 0, 0, 0, 0, 0, 0,
     NULL, "LOCAL_RANK=3&owns 3 GPUs (DIST_BIND_GPUS=\"0,1,2\")&--nproc-per-node=3"},
    {"RANK=3|WORLD_SIZE=8|LOCAL_RANK=3|LOCAL_WORLD_SIZE=4|GROUP_RANK=0" AGENT_010, DISTBIND_ERR_DEVICE, 0, 0, 0, 0, 0,
     0, NULL, "LOCAL_RANK=3&owns 3 GPUs (DIST_BIND_GPUS=\"0,1,2\")&--nproc-per-node=3"},
    {PLUGIN "|DIST_BIND_SET=4,1;", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "DIST_BIND_SET=\"4,1;\"&expected RANK,LOCAL_RANK,WORLD_SIZE;"},
    {PLUGIN "|DIST_BIND_SET=4,x,5;", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "DIST_BIND_SET=\"4,x,5;\""},
    {PLUGIN "|DIST_BIND_SET=RANK:340ca71c", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "DIST_BIND_SET=\"RANK:340ca71c\"&(set by srun --dist-bind)"},
    /* Slurm's own. */
    {SLURM, DISTBIND_OK, 4, 5, 1, 2, 1, 1, "slurm", NULL},
    {SLURM "|DIST_BIND_DEVICE=3", DISTBIND_OK, 4, 5, 1, 2, 1, 3, "slurm", NULL},
    {"SLURM_PROCID=5|SLURM_LOCALID=1|SLURM_NODEID=2|SLURM_STEP_NUM_TASKS=7|SLURM_STEP_TASKS_PER_NODE=2(x3),1",
     DISTBIND_OK, 5, 7, 1, 2, 2, 1, "slurm", NULL},
    {"SLURM_PROCID=0|SLURM_LOCALID=0|SLURM_NODEID=0|SLURM_NTASKS=2|SLURM_TASKS_PER_NODE=2", DISTBIND_OK, 0, 2, 0, 2, 0,
     0, "slurm", NULL},

    /* Malformed and missing values. */
    {"RANK=abc|WORLD_SIZE=5|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "RANK=\"abc\"&expected a whole number"},
    {"RANK=-1|WORLD_SIZE=5|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "RANK=\"-1\""},
    {"RANK= 1|WORLD_SIZE=5|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "RANK=\" 1\""},
    {"RANK=5|WORLD_SIZE=5|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "RANK=5 is not below WORLD_SIZE=5"},
    {"RANK=0|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "WORLD_SIZE is not set"},
    {"RANK=0|WORLD_SIZE=0|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "WORLD_SIZE=0"},
    {"RANK=0|WORLD_SIZE=99999999999|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0,
     NULL, "WORLD_SIZE=\"99999999999\""},
    {"RANK=0|WORLD_SIZE=2|LOCAL_WORLD_SIZE=1|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "LOCAL_RANK is not set"},
    {"RANK=0|WORLD_SIZE=2|LOCAL_RANK=1|LOCAL_WORLD_SIZE=1|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "LOCAL_RANK=1 is not below LOCAL_WORLD_SIZE=1"},
    {"RANK=0|WORLD_SIZE=2|LOCAL_RANK=0|LOCAL_WORLD_SIZE=3|NODE_RANK=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "LOCAL_WORLD_SIZE=3 is larger than WORLD_SIZE=2"},
    {"RANK=0|WORLD_SIZE=2|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "NODE_RANK (or GROUP_RANK) is not set"},
    {"RANK=0|WORLD_SIZE=2|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0|GROUP_RANK=1", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0,
     NULL, "NODE_RANK=0 and GROUP_RANK=1 disagree"},
    {PLUGIN "|DIST_BIND_DEVICE=gpu0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "DIST_BIND_DEVICE=\"gpu0\""},
    {PLUGIN "|DIST_BIND_DEVICE=", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "DIST_BIND_DEVICE=\"\""},
    {"SLURM_PROCID=0|SLURM_LOCALID=0|SLURM_NODEID=0|SLURM_STEP_NUM_TASKS=5|SLURM_STEP_TASKS_PER_NODE=3,,2",
     DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "SLURM_STEP_TASKS_PER_NODE=\"3,,2\"&bad count"},
    {"SLURM_PROCID=0|SLURM_LOCALID=0|SLURM_NODEID=0|SLURM_STEP_NUM_TASKS=6|SLURM_STEP_TASKS_PER_NODE=3,2",
     DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "adds up to 5 tasks but SLURM_STEP_NUM_TASKS=6"},
    {"SLURM_PROCID=0|SLURM_LOCALID=0|SLURM_NODEID=2|SLURM_STEP_NUM_TASKS=5|SLURM_STEP_TASKS_PER_NODE=3,2",
     DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "SLURM_NODEID=2&has only 2 nodes"},
    {"SLURM_PROCID=4|SLURM_LOCALID=2|SLURM_NODEID=1|SLURM_STEP_NUM_TASKS=5|SLURM_STEP_TASKS_PER_NODE=3,2",
     DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "SLURM_LOCALID=2 is not below"},
    {"SLURM_PROCID=4|SLURM_NODEID=1|SLURM_STEP_NUM_TASKS=5|SLURM_STEP_TASKS_PER_NODE=3,2", DISTBIND_ERR_ENV, 0, 0, 0, 0,
     0, 0, NULL, "SLURM_LOCALID is not set"},
    {"SLURM_PROCID=4|SLURM_LOCALID=1|SLURM_NODEID=1|SLURM_STEP_NUM_TASKS=5", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "SLURM_STEP_TASKS_PER_NODE is not set"},
    /* 12 bytes naming 16 million nodes, refused before expanding. */
    {"SLURM_PROCID=0|SLURM_LOCALID=0|SLURM_NODEID=0|SLURM_STEP_NUM_TASKS=5|SLURM_STEP_TASKS_PER_NODE=1(x16777215)",
     DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "SLURM_STEP_TASKS_PER_NODE=\"1(x16777215)\"&more than 5 nodes"},
    {"SLURM_PROCID=0|SLURM_LOCALID=0|SLURM_NODEID=0|SLURM_STEP_NUM_TASKS=5|SLURM_STEP_TASKS_PER_NODE=1(x5),1",
     DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "more than 5 nodes (SLURM_STEP_NUM_TASKS=5 tasks)"},
    {"HOME=/root", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "cannot tell this task's rank&RANK&SLURM_PROCID&PMIX_NAMESPACE"},

    /* Settings. */
    {PLUGIN "|DIST_BIND_TIMEOUT=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "DIST_BIND_TIMEOUT=\"0\"&expected seconds"},
    {PLUGIN "|DIST_BIND_TIMEOUT=ten", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "DIST_BIND_TIMEOUT=\"ten\""},
    {PLUGIN "|DIST_BIND_BOOTSTRAP=mpi", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "DIST_BIND_BOOTSTRAP=\"mpi\"&expected auto, pmix, pmi2 or tcp"},
    {PLUGIN "|DIST_BIND_TCP_FANOUT=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "DIST_BIND_TCP_FANOUT=\"0\"&from 1 to 65535"},
    {PLUGIN "|DIST_BIND_NCCL_RANKS_PER_ROOT=x", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "DIST_BIND_NCCL_RANKS_PER_ROOT=\"x\""},
    {PLUGIN "|MASTER_PORT=70000", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "MASTER_PORT=\"70000\"&1 to 65535"},
    {PLUGIN "|MASTER_PORT=0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "MASTER_PORT=\"0\""},
    {PLUGIN "|MASTER_ADDR=", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "MASTER_ADDR=\"\""},
    {PLUGIN "|DIST_BIND_DEBUG=yes", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "DIST_BIND_DEBUG=\"yes\"&0 or 1"},
    {PLUGIN "|DIST_BIND_STEP_KEY=", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "DIST_BIND_STEP_KEY=\"\""},
    {PLUGIN "|DIST_BIND_SECRET=" SECRET, DISTBIND_OK, 4, 5, 1, 2, 1, 1, "dist-bind", NULL},
    {PLUGIN "|DIST_BIND_SECRET=abc", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "DIST_BIND_SECRET (3 characters) is not a secret&expected 64 hex digits"},
    {PLUGIN "|DIST_BIND_SECRET=" SECRET "0", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL, "(65 characters)"},
    {PLUGIN "|DIST_BIND_TCP_INSECURE=yes", DISTBIND_ERR_ENV, 0, 0, 0, 0, 0, 0, NULL,
     "DIST_BIND_TCP_INSECURE=\"yes\"&expected 0 or 1"},
};

START_TEST(place_row) {
    const struct place_row *r = &place_rows[_i];
    char **env = make_env(r->env);
    distbind_t *db = (distbind_t *)1;
    distbind_status st = distbind_create_env(&db, (const char *const *)env);
    if (r->err) {
        ck_assert_msg(st == r->st, "%s: status %s, want %s (%s)", r->env, distbind_status_name(st),
                      distbind_status_name(r->st), distbind_last_error(NULL));
        ck_assert_msg(db == NULL, "%s: handle left set on error", r->env);
        assert_contains_all(r->env, distbind_last_error(NULL), r->err);
        ck_assert_msg(strncmp(distbind_last_error(NULL), "dist-bind: ", 11) == 0, "%s: prefix: %s", r->env,
                      distbind_last_error(NULL));
    } else {
        ck_assert_msg(st == DISTBIND_OK, "%s: %s", r->env, distbind_last_error(NULL));
        ck_assert_int_eq(distbind_rank(db), r->rank);
        ck_assert_int_eq(distbind_world_size(db), r->world);
        ck_assert_int_eq(distbind_local_rank(db), r->local);
        ck_assert_int_eq(distbind_local_world_size(db), r->local_world);
        ck_assert_int_eq(distbind_node_rank(db), r->node);
        ck_assert_int_eq(distbind_device(db), r->device);
        ck_assert_str_eq(distbind_source(db), r->source);
        ck_assert_ptr_null(distbind_bootstrap(db));
        distbind_destroy(db);
    }
    free_env(env);
}
END_TEST

/* distbind_relaunched, and distbind_env_overwritten in a process torchrun
 * re-ranked: its own RANK, WORLD_SIZE, ... are not counted, a GPU list
 * changed after dist-bind still is. */
static void record_entry(char *out, size_t len, const char *name, const char *value) {
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) h = (h ^ *p) * 16777619u;
    const size_t n = strlen(out);
    snprintf(out + n, len - n, "%s%s:%08x", n && out[n - 1] != ';' ? "," : "", name, h);
}

/* A handle from the process's environment: relaunched or not, and what
 * distbind_env_overwritten names. */
static void expect_process(int relaunched, const char *want) {
    distbind_t *db = NULL;
    char *names = NULL;
    ck_assert_int_eq(distbind_create(&db), DISTBIND_OK);
    ck_assert_int_eq(distbind_relaunched(db), relaunched);
    distbind_destroy(db);
    ck_assert_int_eq(distbind_env_overwritten(&names), DISTBIND_OK);
    ck_assert_msg(strcmp(names, want) == 0, "overwritten: got \"%s\", want \"%s\"", names, want);
    free(names);
}

START_TEST(relaunched_process) {
    /* What the plugin set for the agent: RANK=1 of 2, alone on its node. */
    static const char *const agent[][2] = {
        {"RANK", "1"},      {"WORLD_SIZE", "2"},      {"LOCAL_RANK", "0"},        {"LOCAL_WORLD_SIZE", "1"},
        {"NODE_RANK", "1"}, {"MASTER_PORT", "23456"}, {"DIST_BIND_MODE", "rank"}, {"CUDA_VISIBLE_DEVICES", "0,1,2"}};
    /* torchrun's worker 4 of 6, local 1 of 3, its own store's port. */
    static const char *const worker[][2] = {{"RANK", "4"},       {"WORLD_SIZE", "6"},
                                            {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "3"},
                                            {"GROUP_RANK", "1"}, {"MASTER_PORT", "29500"}};
    char record[1024] = "1,0,2;"; /* its place: RANK,LOCAL_RANK,WORLD_SIZE */
    for (size_t i = 0; i < sizeof agent / sizeof agent[0]; i++) {
        setenv(agent[i][0], agent[i][1], 1);
        record_entry(record, sizeof record, agent[i][0], agent[i][1]);
    }
    setenv("DIST_BIND_SET", record, 1);
    expect_process(0, "");
    for (size_t i = 0; i < sizeof worker / sizeof worker[0]; i++) setenv(worker[i][0], worker[i][1], 1);
    expect_process(1, "");
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    expect_process(1, "CUDA_VISIBLE_DEVICES");
    /* The agent's own place again, with the worker's port (a container
     * plugin's, not a launcher's doing): counted. */
    for (size_t i = 0; i < 4; i++) setenv(agent[i][0], agent[i][1], 1);
    expect_process(0, "MASTER_PORT,CUDA_VISIBLE_DEVICES");
    ck_assert_int_eq(distbind_relaunched(NULL), 0);
}
END_TEST

/* Calls in the wrong order or with bad arguments fail cleanly. */
START_TEST(api_misuse) {
    char **env = make_env(PLUGIN);
    distbind_t *db = NULL;
    char buf[8];
    ck_assert_int_eq(distbind_create_env(&db, (const char *const *)env), DISTBIND_OK);
    ck_assert_int_eq(distbind_barrier(db), DISTBIND_ERR_STATE);
    assert_contains_all("barrier first", distbind_last_error(db), "dist-bind: rank 4: &call distbind_connect");
    ck_assert_int_eq(distbind_set_device(db, NULL), DISTBIND_ERR_STATE);
    ck_assert_int_eq(distbind_gpu_bus_id(db, buf, sizeof buf), DISTBIND_ERR_STATE);
    ck_assert_int_eq(distbind_set_bootstrap(db, "mpi"), DISTBIND_ERR_ARG);
    assert_contains_all("bootstrap", distbind_last_error(db), "\"mpi\"&expected auto, pmix, pmi2 or tcp");
    ck_assert_int_eq(distbind_set_bootstrap(db, NULL), DISTBIND_ERR_ARG);
    ck_assert_int_eq(distbind_set_timeout(db, 0), DISTBIND_ERR_ARG);
    ck_assert_int_eq(distbind_set_timeout(db, -1), DISTBIND_ERR_ARG);
    ck_assert_int_eq(distbind_set_timeout(db, 2.5), DISTBIND_OK);
    ck_assert_int_eq(distbind_set_bootstrap(db, "pmix"), DISTBIND_OK);
    /* No PMIx server in a unit test: a clear error, no crash. */
    ck_assert_int_eq(distbind_connect(db), DISTBIND_ERR_UNAVAILABLE);
    assert_contains_all("pmix", distbind_last_error(db), "PMIX_NAMESPACE is not set&srun --mpi=pmix");
    ck_assert_int_eq(distbind_set_bootstrap(db, "pmi2"), DISTBIND_OK);
    ck_assert_int_eq(distbind_connect(db), DISTBIND_ERR_UNAVAILABLE);
    assert_contains_all("pmi2", distbind_last_error(db), "PMI_FD is not set&srun --mpi=pmi2");
    /* TCP, rank 4 of 5, without the step's secret, then without MASTER_ADDR. */
    ck_assert_int_eq(distbind_set_bootstrap(db, "tcp"), DISTBIND_OK);
    ck_assert_int_eq(distbind_connect(db), DISTBIND_ERR_ENV);
    assert_contains_all("tcp without a secret", distbind_last_error(db),
                        "DIST_BIND_SECRET is not set&srun --dist-bind&srun --mpi=pmix&DIST_BIND_TCP_INSECURE=1");
    distbind_destroy(db);
    free_env(env);
    env = make_env(PLUGIN "|DIST_BIND_BOOTSTRAP=tcp|DIST_BIND_SECRET=" SECRET);
    ck_assert_int_eq(distbind_create_env(&db, (const char *const *)env), DISTBIND_OK);
    ck_assert_int_eq(distbind_connect(db), DISTBIND_ERR_ENV);
    assert_contains_all("tcp", distbind_last_error(db), "MASTER_ADDR is not set");
    distbind_destroy(db);
    ck_assert_int_eq(distbind_create_env(&db, NULL), DISTBIND_ERR_ARG);
    ck_assert_int_eq(distbind_create_env(NULL, (const char *const *)env), DISTBIND_ERR_ARG);
    ck_assert_int_eq(distbind_rank(NULL), -1);
    ck_assert_int_eq(distbind_barrier(NULL), DISTBIND_ERR_ARG);
    distbind_destroy(NULL);
    free_env(env);
}
END_TEST

/* The secret is never shown, not even in the error about a bad one. */
START_TEST(secret_not_shown) {
    char **env = make_env(PLUGIN
                          "|DIST_BIND_SECRET=zz3456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0|"
                          "DIST_BIND_DEBUG=1");
    distbind_t *db = NULL;
    ck_assert_int_eq(distbind_create_env(&db, (const char *const *)env), DISTBIND_ERR_ENV);
    ck_assert_msg(!strstr(distbind_last_error(NULL), "3456789abcdef"), "the value is shown: %s",
                  distbind_last_error(NULL));
    free_env(env);
}
END_TEST

/* distbind_create takes DIST_BIND_SECRET (and the plugin's Apptainer copy of
 * it) out of the process's environment (programs it starts do not inherit
 * it), and later handles still have it. */
START_TEST(secret_leaves_environment) {
    char **env = make_env(PLUGIN);
    for (char **e = env; *e; e++) putenv(*e); /* the strings stay: the environment holds them */
    free(env);
    setenv("DIST_BIND_SECRET", SECRET, 1);
    setenv("APPTAINERENV_DIST_BIND_SECRET", SECRET, 1);
    setenv("DIST_BIND_BOOTSTRAP", "tcp", 1);
    for (int round = 0; round < 2; round++) {
        distbind_t *db = NULL;
        ck_assert_int_eq(distbind_create(&db), DISTBIND_OK);
        ck_assert_msg(getenv("DIST_BIND_SECRET") == NULL, "round %d: still in the environment", round);
        ck_assert_msg(getenv("APPTAINERENV_DIST_BIND_SECRET") == NULL, "round %d: its twin still there", round);
        /* It has the secret: the TCP bootstrap's next want is MASTER_ADDR. */
        ck_assert_int_eq(distbind_connect(db), DISTBIND_ERR_ENV);
        assert_contains_all("second handle", distbind_last_error(db), "MASTER_ADDR is not set");
        distbind_destroy(db);
    }
}
END_TEST

/* A world of one needs no peer: the exchange is a copy. */
START_TEST(world_of_one) {
    char **env = make_env(
        "RANK=0|WORLD_SIZE=1|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0|MASTER_ADDR=127.0.0.1|"
        "MASTER_PORT=1|DIST_BIND_BOOTSTRAP=tcp");
    distbind_t *db = NULL;
    int in = 7, out = 0, bc = 3;
    ck_assert_int_eq(distbind_create_env(&db, (const char *const *)env), DISTBIND_OK);
    ck_assert_int_eq(distbind_connect(db), DISTBIND_OK);
    ck_assert_str_eq(distbind_bootstrap(db), "tcp");
    ck_assert_int_eq(distbind_connect(db), DISTBIND_ERR_STATE);
    ck_assert_int_eq(distbind_allgather(db, &in, sizeof in, &out), DISTBIND_OK);
    ck_assert_int_eq(out, 7);
    ck_assert_int_eq(distbind_broadcast(db, &bc, sizeof bc, 0), DISTBIND_OK);
    ck_assert_int_eq(bc, 3);
    ck_assert_int_eq(distbind_broadcast(db, &bc, sizeof bc, 1), DISTBIND_ERR_ARG);
    assert_contains_all("root", distbind_last_error(db), "root 1 is not a rank (0..0)");
    ck_assert_int_eq(distbind_barrier(db), DISTBIND_OK);
    ck_assert_int_eq(distbind_peak_connections(db), 0);
    distbind_destroy(db);
    free_env(env);
}
END_TEST

/* One collective carries at most DISTBIND_MAX_EXCHANGE_BYTES: len for a
 * broadcast, world * len for an allgather.  Above it: ARG with a message
 * naming len, world and the limit; at it: past the check (here the handle
 * is not connected, so STATE). */
START_TEST(size_caps) {
    char **env = make_env(PLUGIN); /* world 5 */
    distbind_t *db = NULL;
    char byte = 0;
    const size_t max = DISTBIND_MAX_EXCHANGE_BYTES;
    ck_assert_int_eq(max, (size_t)1 << 30);
    ck_assert_int_eq(distbind_create_env(&db, (const char *const *)env), DISTBIND_OK);

    ck_assert_int_eq(distbind_broadcast(db, &byte, max + 1, 0), DISTBIND_ERR_ARG);
    assert_contains_all("broadcast cap", distbind_last_error(db),
                        "distbind_broadcast: len 1073741825&limit of 1073741824 bytes&world size 5");
    ck_assert_int_eq(distbind_broadcast(db, &byte, max, 0), DISTBIND_ERR_STATE);

    ck_assert_int_eq(distbind_allgather(db, &byte, max / 5 + 1, &byte), DISTBIND_ERR_ARG);
    assert_contains_all("allgather cap", distbind_last_error(db),
                        "distbind_allgather: len 214748365 bytes per rank x world size 5 = 1073741825 bytes&"
                        "limit of 1073741824 bytes");
    ck_assert_int_eq(distbind_allgather(db, &byte, max / 5, &byte), DISTBIND_ERR_STATE);
    /* A len whose product would overflow is refused too. */
    ck_assert_int_eq(distbind_allgather(db, &byte, (size_t)-1, &byte), DISTBIND_ERR_ARG);
    assert_contains_all("allgather overflow", distbind_last_error(db), "x world size 5 is above the limit");
    distbind_destroy(db);
    free_env(env);

    /* Connected (a world of one): refused, and the exchange stays usable. */
    env = make_env(
        "RANK=0|WORLD_SIZE=1|LOCAL_RANK=0|LOCAL_WORLD_SIZE=1|NODE_RANK=0|MASTER_ADDR=127.0.0.1|"
        "MASTER_PORT=1|DIST_BIND_BOOTSTRAP=tcp");
    ck_assert_int_eq(distbind_create_env(&db, (const char *const *)env), DISTBIND_OK);
    ck_assert_int_eq(distbind_connect(db), DISTBIND_OK);
    ck_assert_int_eq(distbind_allgather(db, &byte, max + 1, &byte), DISTBIND_ERR_ARG);
    ck_assert_int_eq(distbind_broadcast(db, &byte, max + 1, 0), DISTBIND_ERR_ARG);
    ck_assert_int_eq(distbind_barrier(db), DISTBIND_OK);
    distbind_destroy(db);
    free_env(env);
}
END_TEST

START_TEST(status_names) {
    for (int s = DISTBIND_OK; s <= DISTBIND_ERR_INTERNAL; s++)
        ck_assert_msg(strncmp(distbind_status_name((distbind_status)s), "DISTBIND_", 9) == 0, "status %d", s);
    ck_assert_str_eq(distbind_status_name(DISTBIND_ERR_TIMEOUT), "DISTBIND_ERR_TIMEOUT");
    ck_assert_str_eq(distbind_status_name((distbind_status)99), "DISTBIND_ERR_UNKNOWN");
    /* The library, the header's macros and the string agree (all from VERSION). */
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", DISTBIND_VERSION_MAJOR, DISTBIND_VERSION_MINOR, DISTBIND_VERSION_PATCH);
    ck_assert_str_eq(v, DISTBIND_VERSION_STRING);
    ck_assert_str_eq(distbind_version(), DISTBIND_VERSION_STRING);
}
END_TEST

/* Two ranks on one GPU are told by the GPU's UUID: not by (host, bus id),
 * which identical servers with one host name share (false alarm) and one
 * machine under two host names (UTS namespaces) does not (missed). */
#define UA \
    { 0x89, 0x32, 0xf9, 0x37, 0xd7, 0x2c, 0x41, 0x06, 0xc1, 0x2f, 0x20, 0xbd, 0x9f, 0xae, 0xd9, 0xf6 }
#define UB \
    { 0x89, 0x32, 0xf9, 0x37, 0xd7, 0x2c, 0x41, 0x06, 0xc1, 0x2f, 0x20, 0xbd, 0x9f, 0xae, 0xd9, 0xf7 }
#define UC \
    { 1 }
#define UNKNOWN \
    { 0 }
struct dup_row {
    int n;
    unsigned char uuids[4][16];
    int a, b; /* -1: none */
};

static const struct dup_row dup_rows[] = {
    {3, {UA, UB, UC}, -1, -1},
    {3, {UA, UB, UA}, 0, 2},
    {4, {UC, UA, UB, UA}, 1, 3},
    {2, {UNKNOWN, UNKNOWN}, -1, -1}, /* unknown UUIDs are not compared */
};

START_TEST(dup_row) {
    const struct dup_row *r = &dup_rows[_i];
    int a = -9, b = -9;
    int found = db_rt_test_find_duplicate(r->n, r->uuids, &a, &b);
    ck_assert_msg(found == (r->a >= 0), "row %d: found %d (%d, %d)", _i, found, a, b);
    ck_assert_msg(a == r->a && b == r->b, "row %d: ranks %d and %d, want %d and %d", _i, a, b, r->a, r->b);
}
END_TEST

/* What the other ranks send is checked before it is used: a status that is
 * no distbind_status, a string without its terminator.
 * This is rank 0 of n; the other ranks come from a script. */
#define H(x) "host" #x
struct peer_row {
    int nccl; /* 0: set_device's probes, 1: NCCL's statuses */
    int n;
    int statuses[4];
    unsigned char uuids[4][16];
    const char *hosts[4];
    const char *unterminated;
    distbind_status st;
    const char *err; /* '&'-separated substrings */
};

static const struct peer_row peer_rows[] = {
    {0, 3, {0, 0, 0}, {UA, UB, UC}, {NULL}, NULL, DISTBIND_OK, NULL},
    {0,
     3,
     {0, 99, 0},
     {UA, UB, UC},
     {NULL},
     NULL,
     DISTBIND_ERR_PEER,
     "rank 1 sent status 99, which is not a distbind_status"},
    {0, 3, {0, 0, -1}, {UA, UB, UC}, {NULL}, NULL, DISTBIND_ERR_PEER, "rank 2 sent status -1"},
    {0,
     3,
     {0, DISTBIND_ERR_DEVICE, 0},
     {UA, UB, UC},
     {NULL},
     NULL,
     DISTBIND_ERR_DEVICE,
     "rank 1 on host1: failure of rank 1"},
    {0,
     3,
     {0, DISTBIND_ERR_DEVICE, DISTBIND_ERR_NO_GPU},
     {UA, UB, UC},
     {NULL},
     NULL,
     DISTBIND_ERR_DEVICE,
     "rank 1 on host1: failure of rank 1 (and 1 more rank)"},
    {0,
     3,
     {0, DISTBIND_ERR_DEVICE, 0},
     {UA, UB, UC},
     {NULL},
     "msg",
     DISTBIND_ERR_PEER,
     "rank 1 sent a malformed message (its message has no end within 400 bytes)"},
    {0,
     3,
     {0, DISTBIND_ERR_DEVICE, 0},
     {UA, UB, UC},
     {NULL},
     "host",
     DISTBIND_ERR_PEER,
     "rank 1 sent a malformed message (its host name has no end within 64 bytes)"},
    /* One GPU, two ranks: named by UUID, also under two host names. */
    {0,
     3,
     {0, 0, 0},
     {UC, UA, UA},
     {"n1", "n1", "n1"},
     NULL,
     DISTBIND_ERR_DEVICE,
     "ranks 1 and 2 would both use GPU GPU-uuid-of-rank-1 (0000:01:00.0) on n1 (device 0 and device 0)"},
    {0,
     3,
     {0, 0, 0},
     {UC, UA, UA},
     {"n1", "n1", "n1-ns"},
     NULL,
     DISTBIND_ERR_DEVICE,
     "ranks 1 and 2 would both use GPU&on n1 (rank 1) and n1-ns (rank 2): one GPU under two host names"},
    {0, 3, {0, 0, 0}, {UC, UA, UA}, {NULL}, "uuid", DISTBIND_ERR_PEER, "rank 1 sent a malformed message (its GPU UUID"},
    /* Two GPUs with one bus id on hosts of one name: no duplicate. */
    {0, 2, {0, 0}, {UA, UB}, {"same", "same"}, NULL, DISTBIND_OK, NULL},
    {1, 3, {0, 0, 0}, {{0}}, {NULL}, NULL, DISTBIND_OK, NULL},
    {1, 3, {0, 0, 42}, {{0}}, {NULL}, NULL, DISTBIND_ERR_PEER, "rank 2 sent status 42"},
    {1,
     3,
     {0, DISTBIND_ERR_UNAVAILABLE, 0},
     {{0}},
     {NULL},
     NULL,
     DISTBIND_ERR_UNAVAILABLE,
     "NCCL set-up failed: rank 1 on host1: failure of rank 1"},
    {1,
     3,
     {0, DISTBIND_ERR_UNAVAILABLE, 0},
     {{0}},
     {NULL},
     "msg",
     DISTBIND_ERR_PEER,
     "rank 1 sent a malformed message"},
};

START_TEST(peer_row) {
    const struct peer_row *r = &peer_rows[_i];
    char msg[1024] = "";
    int st = r->nccl ? db_rt_test_peer_nccl(r->n, r->statuses, r->unterminated, msg, sizeof msg)
                     : db_rt_test_peer_probes(r->n, r->statuses, r->uuids, r->hosts[0] ? r->hosts : NULL,
                                              r->unterminated, msg, sizeof msg);
    ck_assert_msg(st == (int)r->st, "row %d: status %d, want %d (%s)", _i, st, r->st, msg);
    if (r->err) assert_contains_all("peer", msg, r->err);
}
END_TEST

/* What bring-up moves: a status and a UUID per rank for
 * the device check, a status per rank and one id per root for NCCL, not a
 * 512-byte and a 432-byte record from every rank. */
struct traffic_row {
    int world, per_root;
    long probe_bytes, nccl_bytes;
    int probe_coll, nccl_coll;
};

static const struct traffic_row traffic_rows[] = {
    {5, 128, 24 * 5, 4 * 5, 1, 2},
    {129, 128, 24 * 129, 4 * 129 + 128, 1, 3},
    {32768, 128, 24L * 32768, 4L * 32768 + 255 * 128, 1, 1 + 256},
};

START_TEST(traffic_row) {
    const struct traffic_row *r = &traffic_rows[_i];
    long pb = 0, nb = 0;
    int pc = 0, nc = 0;
    ck_assert_msg(db_rt_test_bringup_traffic(r->world, r->per_root, &pb, &pc, &nb, &nc), "built without CUDA");
    ck_assert_msg(pb == r->probe_bytes && pc == r->probe_coll,
                  "world %d: device check received %ld bytes in %d "
                  "collectives, want %ld in %d",
                  r->world, pb, pc, r->probe_bytes, r->probe_coll);
    ck_assert_msg(nb == r->nccl_bytes && nc == r->nccl_coll,
                  "world %d: NCCL bring-up received %ld bytes in %d "
                  "collectives, want %ld in %d",
                  r->world, nb, nc, r->nccl_bytes, r->nccl_coll);
}
END_TEST

/* libcudart of the headers' CUDA first, then older runtimes that have
 * every function used (a node with CUDA 12 only), then any. */
START_TEST(cudart_names) {
    char out[512];
    db_rt_test_cudart_names(13, out, sizeof out);
    ck_assert_str_eq(
        out, "libcudart.so.13;libcudart.so.12;libcudart.so.11;libcudart.so;/usr/local/cuda/lib64/libcudart.so.13");
    db_rt_test_cudart_names(12, out, sizeof out);
    ck_assert_str_eq(out, "libcudart.so.12;libcudart.so.11;libcudart.so;/usr/local/cuda/lib64/libcudart.so.12");
}
END_TEST

struct roots_row {
    int world, per_root, n;
    int roots[8];
};

static const struct roots_row roots_rows[] = {
    {1, 128, 1, {0}},
    {128, 128, 1, {0}},
    {129, 128, 2, {0, 65}},
    {256, 128, 2, {0, 128}},
    {1000, 128, 8, {0, 125, 250, 375, 500, 625, 750, 875}},
    {10, 3, 4, {0, 3, 6, 8}},
};

START_TEST(roots_row) {
    const struct roots_row *r = &roots_rows[_i];
    int got[64];
    int n = db_rt_test_nccl_roots(r->world, r->per_root, got, 64);
    ck_assert_int_eq(n, r->n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(got[i] == r->roots[i], "world %d: root %d is %d, want %d", r->world, i, got[i], r->roots[i]);
}
END_TEST

/* "1-3, 5": ranks for messages.  The ranks a child lists in a
 * Missing message reached this with any 32-bit value, and INT_MAX + 1 was
 * computed while looking for a run. */
struct rank_row {
    int ranks[6];
    int n;
    const char *want;
};
static const struct rank_row rank_rows[] = {
    {{1, 2, 3, 5, 7, 8}, 6, "1-3, 5, 7, 8"},
    {{0}, 1, "0"},
    {{4, 5}, 2, "4, 5"},
    {{2147483646, 2147483647}, 2, "2147483646, 2147483647"},
    {{2147483647, -2147483647 - 1, -2147483647}, 3, "2147483647, -2147483648, -2147483647"},
};

START_TEST(rank_row) {
    const struct rank_row *r = &rank_rows[_i];
    char out[256];
    db_rt_test_rank_list(r->ranks, r->n, out, sizeof out);
    ck_assert_str_eq(out, r->want);
}
END_TEST

START_TEST(rank_lists) {
    char out[256];
    int b[40];
    for (int i = 0; i < 40; i++) b[i] = 2 * i;
    db_rt_test_rank_list(b, 40, out, sizeof out);
    assert_contains_all("long", out, "0, 2, 4&(40 ranks in all)");
}
END_TEST

/* Before check_up, rank 0 gathered what its children claimed to send, and a
 * child whose Up carried fewer bytes than its subtree owes made rank 0 read
 * past the end (and send that to every rank).  Up: u32 len, u32 n, n bytes. */
struct up_row {
    unsigned char body[24];
    size_t n;
    unsigned long long expected;
    int taken;
    const char *why;
};
static const struct up_row up_rows[] = {
    /* An allgather of 8 bytes per rank from a subtree of 2: 16 bytes. */
    {{8, 0, 0, 0, 16, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 24, 16, 1, ""},
    /* The same subtree claiming nothing: the over-read check_up stops. */
    {{64, 0, 0, 0, 0, 0, 0, 0}, 8, 64 * 9, 0, "sent 0 bytes for its subtree where the collective needs 576"},
    /* Bytes where the collective needs none (a barrier). */
    {{0, 0, 0, 0, 4, 0, 0, 0, 1, 2, 3, 4}, 12, 0, 0, "sent 4 bytes for its subtree where the collective needs 0"},
    /* A count the body does not hold. */
    {{8, 0, 0, 0, 200, 0, 0, 0, 1, 2}, 10, 200, 0, "not an Up message"},
    {{8, 0, 0}, 3, 0, 0, "not an Up message"},
};

START_TEST(up_row) {
    const struct up_row *r = &up_rows[_i];
    char why[256] = "";
    ck_assert_int_eq(db_rt_test_up(r->body, r->n, r->expected, why, sizeof why), r->taken);
    ck_assert_str_eq(why, r->why);
}
END_TEST

/* Before get_ranks checked them, the ranks of a Missing message reached rank lists unchecked.
 * Missing: u32 count, ranks, u32 count, ranks; every rank below the world. */
START_TEST(missing_rows) {
    const unsigned char ok[] = {1, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 11, 0, 0, 0};
    const unsigned char big[] = {2, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0x80, 0, 0, 0, 0};
    const unsigned char many[] = {0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0};
    const unsigned char extra[] = {0, 0, 0, 0, 0, 0, 0, 0, 9};
    ck_assert_int_eq(db_rt_test_missing(ok, sizeof ok, 12), 2);
    ck_assert_int_eq(db_rt_test_missing(ok, sizeof ok, 11), -1); /* rank 11 of 11 */
    ck_assert_int_eq(db_rt_test_missing(big, sizeof big, 16), -1);
    ck_assert_int_eq(db_rt_test_missing(many, sizeof many, 1 << 24), -1);
    ck_assert_int_eq(db_rt_test_missing(extra, sizeof extra, 4), -1);
}
END_TEST

START_TEST(pmi2_encoding) {
    unsigned char buf[1300];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 37 + 11);
    for (size_t n = 0; n <= 7; n++) ck_assert_msg(db_rt_test_b64_roundtrip(buf, n), "%zu bytes", n);
    ck_assert(db_rt_test_b64_roundtrip(buf, sizeof buf));
}
END_TEST

struct sec_row {
    const char *s;
    double want; /* -1: error */
};
static const struct sec_row sec_rows[] = {
    {"30", 30},  {"2.5", 2.5}, {"0.001", 0.001}, {"604800", 604800}, {"0", -1},      {"0.0", -1}, {"-1", -1},
    {"1e3", -1}, {"1.", -1},   {".5", -1},       {"1.2345", -1},     {"604801", -1}, {"", -1},    {" 5", -1},
};

START_TEST(sec_row) {
    const struct sec_row *r = &sec_rows[_i];
    char err[256] = "";
    double got = db_rt_test_seconds(r->s, err, sizeof err);
    if (r->want < 0) {
        ck_assert_msg(got < 0, "\"%s\": accepted as %g", r->s, got);
        assert_contains_all(r->s, err, "DIST_BIND_TIMEOUT=&expected seconds");
    } else {
        ck_assert_msg(got == r->want, "\"%s\": %g, want %g (%s)", r->s, got, r->want, err);
    }
}
END_TEST

/* DIST_BIND_BOOTSTRAP=auto beside an MPI library in the process (lab/t_mpi
 * runs the real ones): never PMI2 (one client per process), and not PMIx
 * before an Open MPI 5 or later has run MPI_Init. */
START_TEST(beside_mpi) {
    char why[512] = "";
    ck_assert(!db_rt_test_mpi_seen()); /* this test links no MPI */
    ck_assert(!db_rt_test_pmi_conflict(NULL, 0, "pmi2", why, sizeof why));
    ck_assert(!db_rt_test_pmi_conflict(NULL, 0, "pmix", why, sizeof why));
    ck_assert(db_rt_test_pmi_conflict("MPICH Version:      4.2.1", 1, "pmi2", why, sizeof why));
    assert_contains_all("MPICH", why, "MPICH Version:&PMI-2 serves one client per process");
    ck_assert(db_rt_test_pmi_conflict("", 0, "pmi2", why, sizeof why));
    assert_contains_all("unnamed MPI", why, "an MPI library is in this process");
    ck_assert(db_rt_test_pmi_conflict("Open MPI v5.0.7", 0, "pmix", why, sizeof why));
    assert_contains_all("Open MPI 5", why, "Open MPI v5.0.7&MPI_Init has not run&PMIx_Init");
    ck_assert(db_rt_test_pmi_conflict("Open MPI v6.0.0", 0, "pmix", why, sizeof why));
    ck_assert(!db_rt_test_pmi_conflict("Open MPI v5.0.7", 1, "pmix", why, sizeof why));
    ck_assert_str_eq(why, "");
    ck_assert(!db_rt_test_pmi_conflict("Open MPI v4.1.4", 0, "pmix", why, sizeof why));
    ck_assert(!db_rt_test_pmi_conflict("MPICH Version:      4.2.1", 0, "pmix", why, sizeof why));
    ck_assert(!db_rt_test_pmi_conflict("Open MPI v5.0.7", 0, "tcp", why, sizeof why));
}
END_TEST

/* PMI2's calls (and PMI2_Init, PMIx_Init, getaddrinfo) run on a helper
 * thread: what it throws reaches the caller instead of ending the process,
 * and a helper still blocked at the deadline is left to finish alone. */
START_TEST(helper_threads) {
    int st = 0;
    char msg[256] = "";
    ck_assert_msg(db_rt_test_bounded_throw(&st, msg, sizeof msg), "the exception did not reach the caller");
    ck_assert_int_eq(st, DISTBIND_ERR_PEER);
    ck_assert_str_eq(msg, "thrown on the helper thread");
    ck_assert(db_rt_test_bounded_late());
}
END_TEST

int main(void) {
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("rows");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, place_row, 0, (int)(sizeof place_rows / sizeof place_rows[0]));
    tcase_add_loop_test(tc, dup_row, 0, (int)(sizeof dup_rows / sizeof dup_rows[0]));
    tcase_add_loop_test(tc, peer_row, 0, (int)(sizeof peer_rows / sizeof peer_rows[0]));
    tcase_add_loop_test(tc, traffic_row, 0, (int)(sizeof traffic_rows / sizeof traffic_rows[0]));
    tcase_add_test(tc, cudart_names);
    tcase_add_loop_test(tc, roots_row, 0, (int)(sizeof roots_rows / sizeof roots_rows[0]));
    tcase_add_loop_test(tc, up_row, 0, (int)(sizeof up_rows / sizeof up_rows[0]));
    tcase_add_test(tc, missing_rows);
    tcase_add_loop_test(tc, rank_row, 0, (int)(sizeof rank_rows / sizeof rank_rows[0]));
    tcase_add_loop_test(tc, sec_row, 0, (int)(sizeof sec_rows / sizeof sec_rows[0]));
    tcase_add_test(tc, api_misuse);
    tcase_add_test(tc, relaunched_process);
    tcase_add_test(tc, world_of_one);
    tcase_add_test(tc, secret_not_shown);
    tcase_add_test(tc, secret_leaves_environment);
    tcase_add_test(tc, size_caps);
    tcase_add_test(tc, helper_threads);
    tcase_add_test(tc, status_names);
    tcase_add_test(tc, rank_lists);
    tcase_add_test(tc, pmi2_encoding);
    tcase_add_test(tc, beside_mpi);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
