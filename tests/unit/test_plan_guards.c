/*
 * Every extern "C" entry point of the plan (the plan, common and devices,
 * layout and srun-argument code the SPANK glue calls from slurmstepd and
 * srun) turns an exception into its documented error value: C has no
 * unwinding, and an exception escaping into srun or slurmstepd would
 * terminate it.  Each call below runs again and again with operator new
 * failing at its 1st, 2nd, ... allocation (failing_new.cc) until a run
 * needs no more allocations than that; every failing run must return the
 * error value (and, where there is one, a message), never crash.
 */
#include <stdint.h>

#include "db_core.h"
#include "unit.h"

extern long db_test_new_countdown;
extern int db_test_new_failed;

/* One call of an entry point: ERROR (its error value, and a message where
 * it has a channel for one), DONE (success), BROKEN (neither: `why` says). */
enum { ERROR, DONE, BROKEN };
typedef int (*call_f)(char *why, size_t len);

/* Set-up inside a call that must not fail: allocation failure paused. */
static long pause_failing(void) {
    long at = db_test_new_countdown;
    db_test_new_countdown = -1;
    return at;
}
static void resume_failing(long at) { db_test_new_countdown = at; }

static char **seed_env, **task_env;
static const char *const plug_argv[] = {"default=rank", "ports=20000-20999", "master_addr=suffix:-ib", NULL};
static const char *const srun_argv[] = {"srun",
                                        "-N2",
                                        "--gpus-per-task=1",
                                        "--gres-flags=allow-task-sharing",
                                        "--async",
                                        "true",
                                        ":",
                                        "-n2",
                                        "--gpus-per-task=2",
                                        "true",
                                        NULL};

static int err_or_ok(int rc, const char *err, char *why, size_t len) {
    if (rc == 0) return DONE;
    if (rc == -1 && err[0]) return ERROR;
    snprintf(why, len, "rc %d, message \"%s\"", rc, err);
    return BROKEN;
}

static int c_request(char *why, size_t len) {
    db_request r;
    char err[256] = "";
    return err_or_ok(db_request_parse("closest,verbose,share,port=24000", &r, err, sizeof err), err, why, len);
}

static int c_config(char *why, size_t len) {
    db_config c;
    char err[256] = "";
    return err_or_ok(db_config_parse(3, plug_argv, &c, err, sizeof err), err, why, len);
}

static int c_rank0(char *why, size_t len) {
    db_config c;
    char err[256] = "";
    db_request eff = {DB_MODE_RANK, 0, 0, 0};
    /* Names longer than a std::string holds without the heap. */
    const char *env[] = {"MASTER_ADDR=login-node-0001.cluster.example",
                         "DIST_BIND_MASTER=login-node-0001.cluster.example:20001", "SLURM_DISTRIBUTION=arbitrary",
                         NULL};
    long at = pause_failing();
    db_config_parse(3, plug_argv, &c, err, sizeof err);
    resume_failing(at);
    /* No message here: these answer yes or no, and say yes when unsure. */
    int w = db_srun_wants_rank0(&c, &eff, env), n = db_srun_needs_rank0(&c, &eff, env),
        l = db_srun_reads_layout(&c, &eff, env, 0);
    if ((w != 0 && w != 1) || (n != 0 && n != 1) || (l != 0 && l != 1)) {
        snprintf(why, len, "wants %d needs %d reads %d", w, n, l);
        return BROKEN;
    }
    return DONE;
}

static int c_master(char *why, size_t len) {
    db_config c;
    char err[256] = "", out[256];
    long at = pause_failing();
    db_config_parse(3, plug_argv, &c, err, sizeof err);
    resume_failing(at);
    return err_or_ok(
        db_format_master_addr(&c, "gpu-node-0007.cluster.example", "10.0.0.7", out, sizeof out, err, sizeof err), err,
        why, len);
}

static int c_hostlist(char *why, size_t len) {
    char err[256] = "", out[256];
    return err_or_ok(db_hostlist_nth("gpu[01-20],cpu[1-4]", 21, out, sizeof out, err, sizeof err), err, why, len);
}

static db_node_input seed_input(void) {
    db_node_input in = {0};
    in.job_id = 7;
    in.nnodes = 2;
    in.ntasks = 5;
    in.local_ntasks = 3;
    in.env = (const char *const *)seed_env;
    in.lowest_rank_known = 1;
    in.node_devices = DB_DEVICES_OPEN;
    return in;
}

static int c_node_plan(char *why, size_t len) {
    db_config c;
    db_node_plan *np = NULL;
    char err[256] = "";
    db_request eff = {DB_MODE_RANK, 1, 0, 0};
    db_node_input in = seed_input();
    int rc;
    long at = pause_failing();
    db_config_parse(0, NULL, &c, err, sizeof err);
    resume_failing(at);
    rc = db_node_plan_new(&c, &eff, &in, &np, err, sizeof err);
    pause_failing();
    db_node_plan_free(np);
    if (rc != 0 && np) {
        snprintf(why, len, "an error, and a plan");
        return BROKEN;
    }
    return err_or_ok(rc, err, why, len);
}

/* The task plan (and, after it, closest's choice) on a node plan made
 * with every allocation working. */
static db_node_plan *node_plan(int mode) {
    db_config c;
    db_node_plan *np = NULL;
    char err[256] = "";
    db_request eff = {mode, 1, 0, 0};
    db_node_input in = seed_input();
    db_config_parse(0, NULL, &c, err, sizeof err);
    ck_assert_msg(db_node_plan_new(&c, &eff, &in, &np, err, sizeof err) == 0, "node plan: %s", err);
    return np;
}

static int c_task_plan(char *why, size_t len) {
    db_node_plan *np;
    db_task_plan *tp = NULL;
    db_task_input in = {1, 1, (const char *const *)task_env};
    char err[256] = "";
    int rc;
    long at = pause_failing();
    np = node_plan(DB_MODE_RANK);
    resume_failing(at);
    rc = db_task_plan_new(np, &in, &tp, err, sizeof err);
    pause_failing();
    db_task_plan_free(tp);
    db_node_plan_free(np);
    return err_or_ok(rc, err, why, len);
}

static int c_closest(char *why, size_t len) {
    static const size_t g0[] = {2}, g1[] = {0}, g2[] = {1};
    const db_closest_task tasks[] = {{g0, 1, 0, "mlx5_0"}, {g1, 1, 0, "mlx5_1"}, {g2, 1, 1, NULL}};
    const db_closest_input c = {"test topology", NULL, tasks, 3};
    db_node_plan *np;
    char err[256] = "";
    int rc;
    long at = pause_failing();
    np = node_plan(DB_MODE_CLOSEST);
    resume_failing(at);
    rc = db_node_plan_set_closest(np, &c, err, sizeof err);
    pause_failing();
    db_node_plan_free(np);
    return err_or_ok(rc, err, why, len);
}

static int c_record(char *why, size_t len) {
    const char *env[] = {"RANK=3", "LOCAL_RANK=1", "CUDA_VISIBLE_DEVICES=1,0", NULL};
    char err[256] = "", out[256];
    return err_or_ok(
        db_set_record_mismatches("0,0,2;RANK:deadbeef,LOCAL_RANK:0badf00d,CUDA_VISIBLE_DEVICES:12345678,WORLD_SIZE:-",
                                 env, out, sizeof out, err, sizeof err),
        err, why, len);
}

static int c_layout(char *why, size_t len) {
    static const uint16_t tasks[] = {2, 2, 1};
    static const uint32_t t0[] = {2, 3}, t1[] = {0, 4}, t2[] = {1};
    const uint32_t *const tids[] = {t0, t1, t2};
    char *out = NULL, err[256] = "";
    uint32_t rank0 = 0;
    int rc = db_layout_hints(3, 5, tasks, tids, &out, &rank0, err, sizeof err);
    if (rc != 0 && out) {
        snprintf(why, len, "an error, and a value");
        free(out);
        return BROKEN;
    }
    free(out);
    return err_or_ok(rc, err, why, len);
}

static int c_srun(char *why, size_t len) {
    const char *env[] = {"SLURM_GPUS_PER_TASK=1", "SLURM_GRES_FLAGS=allow-task-sharing", NULL};
    char out[4096];
    int async = db_srun_async(10, srun_argv);
    int all = db_srun_exports_all(10, srun_argv, "NONE");
    int hint = db_srun_hint("task/affinity,task/cgroup", 10, srun_argv, env, out, sizeof out);
    int conf = db_devices_from_conf("task/cgroup", "ConstrainDevices = yes\nCgroupPlugin = cgroup/v1\n");
    int cg = db_task_plugin_cgroup("task/affinity,task/cgroup");
    /* An answer each, whatever failed: async says yes or no, the hint is
     * made or refused (-1), the configuration and plugin list read. */
    if ((async != 0 && async != 1) || (all != 0 && all != 1) || (hint != 0 && hint != -1) ||
        conf < DB_DEVICES_UNKNOWN || conf > DB_DEVICES_CONFINED || (cg != 0 && cg != 1)) {
        snprintf(why, len, "async %d exports_all %d hint %d conf %d cgroup %d", async, all, hint, conf, cg);
        return BROKEN;
    }
    return DONE;
}

static const struct {
    const char *name;
    call_f call;
    int has_error; /* 0: answers only (yes, no, a value), no error channel */
} calls[] = {
    {"db_request_parse", c_request, 1},
    {"db_config_parse", c_config, 1},
    {"db_srun_wants_rank0, db_srun_needs_rank0, db_srun_reads_layout", c_rank0, 0},
    {"db_format_master_addr", c_master, 1},
    {"db_hostlist_nth", c_hostlist, 1},
    {"db_node_plan_new", c_node_plan, 1},
    {"db_task_plan_new", c_task_plan, 1},
    {"db_node_plan_set_closest", c_closest, 1},
    {"db_set_record_mismatches", c_record, 1},
    {"db_layout_hints", c_layout, 1},
    {"db_srun_async, db_srun_exports_all, db_srun_hint, db_devices_from_conf, db_task_plugin_cgroup", c_srun, 0},
};

START_TEST(each_entry_point) {
    char why[512];
    long at;
    int failures = 0;
    for (at = 1; at < 100000; at++) {
        int got;
        db_test_new_failed = 0;
        db_test_new_countdown = at;
        why[0] = '\0';
        got = calls[_i].call(why, sizeof why);
        db_test_new_countdown = -1;
        ck_assert_msg(got != BROKEN, "%s, allocation %ld failing: %s", calls[_i].name, at, why);
        if (!db_test_new_failed) {
            ck_assert_msg(got == DONE, "%s: no allocation failed, and still an error", calls[_i].name);
            break; /* it needs fewer allocations than `at`: every one was failed once */
        }
        ck_assert_msg(got == ERROR || !calls[_i].has_error, "%s, allocation %ld failing: success reported",
                      calls[_i].name, at);
        failures++;
    }
    ck_assert_msg(failures > 0, "%s: no allocation to fail (the test no longer reaches it)", calls[_i].name);
}
END_TEST

int main(void) {
    Suite *s = suite_create("plan_guards");
    TCase *tc = tcase_create("guards");
    seed_env = make_env(
        "SLURM_STEP_NODELIST=node[1-2]|SLURM_STEP_TASKS_PER_NODE=3,2|SLURM_STEP_GPUS=0,1,2|"
        "CUDA_VISIBLE_DEVICES=0,1,2|SLURM_JOB_NODELIST=node[1-2]|SLURMD_NODENAME=node1|"
        "SLURM_GPUS_PER_TASK=1|DIST_BIND_SRUN_DEVICES=none,gpus-per-task=1");
    task_env = make_env(
        "SLURM_STEP_NODELIST=node[1-2]|SLURM_STEP_TASKS_PER_NODE=3,2|SLURM_STEP_GPUS=0,1,2|"
        "CUDA_VISIBLE_DEVICES=1|SLURMD_NODENAME=node1|APPTAINERENV_RANK=9|"
        "DIST_BIND_STEP=7.9|RANK=4|MASTER_ADDR=x");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, each_entry_point, 0, (int)(sizeof calls / sizeof calls[0]));
    suite_add_tcase(s, tc);
    int rc = run_suite(s);
    free_env(seed_env);
    free_env(task_env);
    return rc;
}
