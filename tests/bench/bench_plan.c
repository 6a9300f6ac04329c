/*
 * Per-task cost of dist-bind in slurmstepd, every feature on: the node
 * plan (once per node, shared by its tasks) plus, per task, the task plan
 * (twins included), timed apart from the environment writes slurmstepd
 * then does for it.  The writes are modelled on Slurm's
 * env_array_overwrite (find NAME=, replace or append); spank_setenv's
 * setenvf also clears a 256 KiB buffer per variable, which is left out:
 * the model is a lower bound of slurmstepd's share.
 *
 * The step: 8 tasks per node on 2 nodes, 8 GPUs bound one per task,
 * --dist-bind=rank,verbose, torchrun as the program (its PET_ defaults),
 * started from inside an enclosing dist-bind step (srun --pty bash, then
 * srun): the environment holds that step's DIST_BIND_STEP, DIST_BIND_MASTER,
 * some of its variables and their APPTAINERENV_ twins, so the plan drops or
 * replaces what it left; srun's hints and the step's secret; about 90
 * variables in a task's environment.  --het: the same as the second
 * component of a heterogeneous step (srun A : B, one component per node).
 *
 * Prints "plan_ns=P total_ns=T vars=V env=E": the medians over the runs
 * (--runs=N, default 2001) of the plan's cost per task and of plan plus
 * writes, how many variables the plan writes per task and how many the
 * task's environment held.  --show prints one task's plan instead.
 *
 * Built against the plan of e50afc0 too (tests/bench/build.mk), with
 * DB_BENCH_E50AFC0: its db_node_input has no lowest rank, container flag
 * or argv, and it plans no heterogeneous step.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db_core.h"

enum { TASKS = 8, DEFAULT_RUNS = 2001, ENV_MAX = 256 };

/* Slurm's env_array_overwrite: find NAME= and replace, else append. */
static void env_overwrite(char **env, int *n, const char *name, const char *value) {
    size_t len = strlen(name);
    char *entry;
    if (asprintf(&entry, "%s=%s", name, value) < 0) abort();
    for (int i = 0; i < *n; i++)
        if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') {
            free(env[i]);
            env[i] = entry;
            return;
        }
    if (*n + 1 >= ENV_MAX) abort();
    env[(*n)++] = entry;
    env[*n] = NULL;
}

static void env_unset(char **env, int *n, const char *name) {
    size_t len = strlen(name);
    for (int i = 0; i < *n; i++)
        if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') {
            free(env[i]);
            env[i] = env[--(*n)];
            env[*n] = NULL;
            return;
        }
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void add(char **env, int *n, const char *fmt, ...) {
    char *e;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&e, fmt, ap) < 0) abort();
    va_end(ap);
    if (*n + 1 >= ENV_MAX) abort();
    env[(*n)++] = e;
    env[*n] = NULL;
}

/* What slurmstepd holds for local task `local` (or, with local < 0, for the
 * step at user_init) on node 0 of a 2-node, 16-task step 123456.1, or on the
 * node of the second component of a heterogeneous one. */
static int make_env(char **env, int local, int het) {
    static const char *const fixed[] = {
        "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/user", "USER=user", "SHELL=/bin/bash", "LANG=C.UTF-8",
        "SLURM_JOB_ID=123456", "SLURM_JOBID=123456", "SLURM_STEP_ID=1", "SLURM_STEPID=1", "SLURM_NODELIST=gpu[001-002]",
        "SLURM_JOB_NODELIST=gpu[001-002]", "SLURM_TASKS_PER_NODE=8(x2)", "SLURM_NNODES=2", "SLURM_NTASKS=16",
        "SLURM_NPROCS=16", "SLURM_JOB_NUM_NODES=2", "SLURM_CLUSTER_NAME=cluster", "SLURM_JOB_PARTITION=gpu",
        "SLURM_JOB_USER=user", "SLURM_JOB_UID=1000", "SLURM_JOB_GID=1000", "SLURM_SUBMIT_DIR=/home/user",
        "SLURM_SUBMIT_HOST=login1", "SLURM_CPUS_ON_NODE=64", "SLURM_JOB_CPUS_PER_NODE=64(x2)",
        "SLURM_DISTRIBUTION=block", "SLURM_SRUN_COMM_HOST=10.0.0.1", "SLURM_SRUN_COMM_PORT=40000",
        "SLURM_LAUNCH_NODE_IPADDR=10.0.0.1", "SLURM_STEP_LAUNCHER_PORT=40000", "SLURM_PRIO_PROCESS=0",
        "SLURM_UMASK=0022", "SLURM_TOPOLOGY_ADDR_PATTERN=node", "SLURM_WORKING_CLUSTER=cluster:10.0.0.1:6817:9728:109",
        "SLURM_CPU_BIND=quiet,mask_cpu", "SLURMD_TRES_BIND=gpu:per_task:1", "SLURM_GPUS_ON_NODE=8",
        "SLURM_GPUS_PER_TASK=1", "SLURM_STEP_GPUS=0,1,2,3,4,5,6,7", "OMP_NUM_THREADS=8", "PWD=/home/user", "TERM=xterm",
        "LOGNAME=user", "MAIL=/var/mail/user", "EDITOR=vi", "PYTHONUNBUFFERED=1", "CONDA_PREFIX=/opt/conda",
        "LD_LIBRARY_PATH=/usr/local/cuda/lib64", "CUDA_HOME=/usr/local/cuda", "NCCL_DEBUG=WARN",
        "XDG_RUNTIME_DIR=/run/user/1000", "MODULEPATH=/etc/modulefiles", "LOADEDMODULES=cuda/13.0",
        /* srun's word to the nodes, and the step's secret */
        "DIST_BIND_RANK0_ADDR=gpu001", "DIST_BIND_NODE_RANKS=0-1", "DIST_BIND_SRUN_DEVICES=none,gpus-per-task=1",
        "DIST_BIND_SECRET=3f9a0c2d5e8b71f4a6c39d0e2b5f8a1c7d4e9b0a3c6f2e5d8b1a4c7f0e3d6b9a",
        /* what dist-bind set in the enclosing step 123456.0 (one
         * task, closest: its NUMA and NICs are dropped) */
        "DIST_BIND_STEP=123456.0", "DIST_BIND_MASTER=gpu001:29400", "DIST_BIND_MODE=closest", "DIST_BIND_TASK=0,0,1",
        "DIST_BIND_DEVICE=0", "DIST_BIND_GPUS=0", "DIST_BIND_NUMA=0", "DIST_BIND_NICS=mlx5_0", "RANK=0", "WORLD_SIZE=1",
        "LOCAL_RANK=0", "MASTER_ADDR=gpu001", "MASTER_PORT=29400", "PET_NNODES=1", "APPTAINERENV_RANK=0",
        "APPTAINERENV_DIST_BIND_STEP=123456.0", "APPTAINERENV_MASTER_ADDR=gpu001", "APPTAINERENV_DIST_BIND_NUMA=0",
        NULL};
    /* A heterogeneous step's: its whole size, the leader's job id, the first
     * component's nodes; this node runs the second component (ranks 8-15). */
    static const char *const het_step[] = {"SLURM_STEP_NODELIST=gpu[001-002]",
                                           "SLURM_STEP_NUM_NODES=2",
                                           "SLURM_STEP_NUM_TASKS=16",
                                           "SLURM_STEP_TASKS_PER_NODE=8(x2)",
                                           "SLURM_HET_SIZE=2",
                                           "SLURM_JOB_ID_HET_GROUP_0=123456",
                                           "SLURM_JOB_ID_HET_GROUP_1=123457",
                                           "SLURM_JOB_NODELIST_HET_GROUP_0=gpu001",
                                           "SLURM_JOB_NODELIST_HET_GROUP_1=gpu002",
                                           "SLURMD_NODENAME=gpu002",
                                           "SLURM_TOPOLOGY_ADDR=gpu002",
                                           "HOSTNAME=gpu002",
                                           "SLURM_NODEID=1",
                                           "SLURM_GTIDS=8,9,10,11,12,13,14,15",
                                           NULL};
    static const char *const plain_step[] = {"SLURM_STEP_NODELIST=gpu[001-002]",
                                             "SLURM_STEP_NUM_NODES=2",
                                             "SLURM_STEP_NUM_TASKS=16",
                                             "SLURM_STEP_TASKS_PER_NODE=8(x2)",
                                             "SLURMD_NODENAME=gpu001",
                                             "SLURM_TOPOLOGY_ADDR=gpu001",
                                             "HOSTNAME=gpu001",
                                             "SLURM_NODEID=0",
                                             "SLURM_GTIDS=0,1,2,3,4,5,6,7",
                                             NULL};
    static const char *const gpu_lists[] = {"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES"};
    int n = 0;
    for (int i = 0; fixed[i]; i++) env[n++] = strdup(fixed[i]);
    for (const char *const *s = het ? het_step : plain_step; *s; s++) env[n++] = strdup(*s);
    env[n] = NULL;
    for (int i = 0; i < 3; i++) {
        if (local < 0)
            add(env, &n, "%s=0,1,2,3,4,5,6,7", gpu_lists[i]);
        else
            add(env, &n, "%s=%d", gpu_lists[i], local); /* bound one per task */
    }
    if (local >= 0) {
        add(env, &n, "SLURM_PROCID=%d", (het ? 8 : 0) + local);
        add(env, &n, "SLURM_LOCALID=%d", local);
        add(env, &n, "SLURM_TASK_PID=%d", 4000 + local);
    }
    return n;
}

static void free_env(char **env, int n) {
    for (int i = 0; i < n; i++) free(env[i]);
}

int main(int argc, char **argv) {
    static char *step_env[ENV_MAX], *task_env[TASKS][ENV_MAX];
#ifndef DB_BENCH_E50AFC0
    static const char *const program[] = {"torchrun", "--nnodes=2", "--nproc-per-node=8", "train.py", NULL};
#endif
    int runs = DEFAULT_RUNS, het = 0, show = 0, step_n, task_n[TASKS], env_n = 0;
    size_t vars = 0;
    double *plan_ns, *total_ns;
    char err[DB_ERRLEN];
    db_config cfg;
    db_request eff = {DB_MODE_RANK, 1, 0, 0}; /* rank,verbose */

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--het") == 0)
            het = 1;
        else if (strcmp(argv[i], "--show") == 0)
            show = 1;
        else if (strncmp(argv[i], "--runs=", 7) == 0 && atoi(argv[i] + 7) > 0)
            runs = atoi(argv[i] + 7);
        else {
            fprintf(stderr, "usage: %s [--het] [--runs=N] [--show]\n", argv[0]);
            return 2;
        }
    }
#ifdef DB_BENCH_E50AFC0
    if (het) {
        fprintf(stderr, "bench_plan: e50afc0 plans no heterogeneous step\n");
        return 2;
    }
#endif
    plan_ns = calloc((size_t)runs, sizeof *plan_ns);
    total_ns = calloc((size_t)runs, sizeof *total_ns);
    if (!plan_ns || !total_ns) return 1;
    step_n = make_env(step_env, -1, het);
    if (db_config_parse(0, NULL, &cfg, err, sizeof err) != 0) return 1;

    for (int run = 0; run < runs; run++) {
        db_task_plan *tp[TASKS];
        db_node_plan *np;
        /* A het component's own items: its job id, 1 node, its 8 tasks. */
        db_node_input ni = {.job_id = het ? 123457 : 123456,
                            .step_id = 1,
                            .nnodes = het ? 1 : 2,
                            .node_id = 0,
                            .ntasks = het ? TASKS : 16,
                            .local_ntasks = TASKS,
                            .env = (const char *const *)step_env};
#ifndef DB_BENCH_E50AFC0
        ni.lowest_rank = 0;
        ni.lowest_rank_known = !het;
        ni.argc = (int)(sizeof program / sizeof program[0]) - 1;
        ni.argv = program;
#endif
        for (int t = 0; t < TASKS; t++) task_n[t] = make_env(task_env[t], t, het);
        if (run == 0) env_n = task_n[1];

        double t0 = now_ns();
        if (db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err) != 0) {
            fprintf(stderr, "node plan: %s\n", err);
            return 1;
        }
        for (int t = 0; t < TASKS; t++) {
            db_task_input ti = {(uint32_t)t, (uint32_t)t, (const char *const *)task_env[t]};
            if (db_task_plan_new(np, &ti, &tp[t], err, sizeof err) != 0) {
                fprintf(stderr, "task plan: %s\n", err);
                return 1;
            }
        }
        double t1 = now_ns();
        for (int t = 0; t < TASKS; t++)
            for (size_t i = 0; i < db_task_plan_count(tp[t]); i++) {
                if (db_task_plan_value(tp[t], i))
                    env_overwrite(task_env[t], &task_n[t], db_task_plan_name(tp[t], i), db_task_plan_value(tp[t], i));
                else
                    env_unset(task_env[t], &task_n[t], db_task_plan_name(tp[t], i));
            }
        double t2 = now_ns();
        if (run == 0) vars = db_task_plan_count(tp[1]);
        if (show) {
            /* What the runs measure: task 1's plan. */
            for (size_t i = 0; i < vars; i++)
                if (db_task_plan_value(tp[1], i))
                    printf("%s=%s\n", db_task_plan_name(tp[1], i), db_task_plan_value(tp[1], i));
                else
                    printf("unset %s\n", db_task_plan_name(tp[1], i));
            printf("%s\n", db_task_plan_verbose(tp[1]) ? db_task_plan_verbose(tp[1]) : "(no verbose line)");
            return 0;
        }
        for (int t = 0; t < TASKS; t++) db_task_plan_free(tp[t]);
        db_node_plan_free(np);
        double t3 = now_ns();

        plan_ns[run] = ((t1 - t0) + (t3 - t2)) / TASKS;
        total_ns[run] = (t3 - t0) / TASKS;
        for (int t = 0; t < TASKS; t++) free_env(task_env[t], task_n[t]);
    }
    qsort(plan_ns, (size_t)runs, sizeof plan_ns[0], cmp);
    qsort(total_ns, (size_t)runs, sizeof total_ns[0], cmp);
    printf("plan_ns=%.0f total_ns=%.0f vars=%zu env=%d\n", plan_ns[runs / 2], total_ns[runs / 2], vars, env_n);
    free_env(step_env, step_n);
    free(plan_ns);
    free(total_ns);
    return 0;
}
