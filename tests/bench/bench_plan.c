/*
 * Per-task cost of dist-bind in slurmstepd: the node plan (once per node,
 * shared by its tasks) plus, per task, the task plan and the environment
 * writes, as slurmstepd does them (overwrite in a NAME=VALUE array).
 * 8 tasks per node, 8 GPUs, a realistic ~70-variable task environment.
 * Prints the median nanoseconds per task over many runs.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db_core.h"

enum { TASKS = 8, RUNS = 2001, ENV_MAX = 256 };

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

/* The environment slurmstepd holds for a task of a 2-node, 16-task step. */
static int base_env(char **env, int local) {
    int n = 0;
    char buf[128];
    const char *fixed[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
                           "HOME=/home/user",
                           "USER=user",
                           "SHELL=/bin/bash",
                           "LANG=C.UTF-8",
                           "SLURM_JOB_ID=123456",
                           "SLURM_JOBID=123456",
                           "SLURM_STEP_ID=0",
                           "SLURM_STEPID=0",
                           "SLURM_STEP_NODELIST=gpu[001-002]",
                           "SLURM_NODELIST=gpu[001-002]",
                           "SLURM_JOB_NODELIST=gpu[001-002]",
                           "SLURM_STEP_TASKS_PER_NODE=8(x2)",
                           "SLURM_TASKS_PER_NODE=8(x2)",
                           "SLURM_STEP_NUM_NODES=2",
                           "SLURM_STEP_NUM_TASKS=16",
                           "SLURM_NNODES=2",
                           "SLURM_NTASKS=16",
                           "SLURM_NPROCS=16",
                           "SLURM_JOB_NUM_NODES=2",
                           "SLURM_CLUSTER_NAME=cluster",
                           "SLURM_JOB_PARTITION=gpu",
                           "SLURM_JOB_USER=user",
                           "SLURM_JOB_UID=1000",
                           "SLURM_JOB_GID=1000",
                           "SLURM_SUBMIT_DIR=/home/user",
                           "SLURM_SUBMIT_HOST=login1",
                           "SLURM_CPUS_ON_NODE=64",
                           "SLURM_JOB_CPUS_PER_NODE=64(x2)",
                           "SLURM_DISTRIBUTION=block",
                           "SLURM_SRUN_COMM_HOST=10.0.0.1",
                           "SLURM_SRUN_COMM_PORT=40000",
                           "SLURM_LAUNCH_NODE_IPADDR=10.0.0.1",
                           "SLURM_STEP_LAUNCHER_PORT=40000",
                           "SLURM_PRIO_PROCESS=0",
                           "SLURM_UMASK=0022",
                           "SLURM_TOPOLOGY_ADDR=gpu001",
                           "SLURM_TOPOLOGY_ADDR_PATTERN=node",
                           "SLURM_WORKING_CLUSTER=cluster:10.0.0.1:6817:9728:109",
                           "SLURMD_NODENAME=gpu001",
                           "SLURM_NODEID=0",
                           "SLURM_GTIDS=0,1,2,3,4,5,6,7",
                           "SLURM_CPU_BIND=quiet,mask_cpu",
                           "SLURMD_TRES_BIND=gpu:per_task:1",
                           "SLURM_GPUS_ON_NODE=8",
                           "OMP_NUM_THREADS=8",
                           "PWD=/home/user",
                           "TERM=xterm",
                           "LOGNAME=user",
                           "MAIL=/var/mail/user",
                           "EDITOR=vi",
                           "PYTHONUNBUFFERED=1",
                           "CONDA_PREFIX=/opt/conda",
                           "LD_LIBRARY_PATH=/usr/local/cuda/lib64",
                           "CUDA_HOME=/usr/local/cuda",
                           "NCCL_DEBUG=WARN",
                           "XDG_RUNTIME_DIR=/run/user/1000",
                           "HOSTNAME=gpu001",
                           "MODULEPATH=/etc/modulefiles",
                           "LOADEDMODULES=cuda/13.0",
                           NULL};
    for (int i = 0; fixed[i]; i++) env[n++] = strdup(fixed[i]);
    snprintf(buf, sizeof buf, "SLURM_PROCID=%d", local);
    env[n++] = strdup(buf);
    snprintf(buf, sizeof buf, "SLURM_LOCALID=%d", local);
    env[n++] = strdup(buf);
    snprintf(buf, sizeof buf, "SLURM_TASK_PID=%d", 4000 + local);
    env[n++] = strdup(buf);
    snprintf(buf, sizeof buf, "%d", local);
    const char *gpuvars[] = {"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "SLURM_STEP_GPUS"};
    for (int i = 0; i < 4; i++) {
        char *e;
        if (asprintf(&e, "%s=%d", gpuvars[i], local) < 0) abort();
        env[n++] = e;
    }
    env[n] = NULL;
    return n;
}

int main(void) {
    static char *step_env[ENV_MAX], *task_env[TASKS][ENV_MAX];
    static double per_task[RUNS];
    int step_n = base_env(step_env, 0), task_n[TASKS];
    char err[DB_ERRLEN];
    db_config cfg;
    db_request eff = {DB_MODE_RANK, 0, 0, 0};

    /* user_init sees the node-level lists. */
    env_overwrite(step_env, &step_n, "CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7");
    env_overwrite(step_env, &step_n, "GPU_DEVICE_ORDINAL", "0,1,2,3,4,5,6,7");
    env_overwrite(step_env, &step_n, "ROCR_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7");
    if (db_config_parse(0, NULL, &cfg, err, sizeof err) != 0) return 1;

    for (int run = 0; run < RUNS; run++) {
        for (int t = 0; t < TASKS; t++) task_n[t] = base_env(task_env[t], t);
        double t0 = now_ns();
        db_node_input ni = {123456, 0, 2, 0, 16, TASKS, (const char *const *)step_env, 0, 0, 0};
        db_node_plan *np;
        if (db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err) != 0) {
            fprintf(stderr, "node plan: %s\n", err);
            return 1;
        }
        for (int t = 0; t < TASKS; t++) {
            db_task_input ti = {(uint32_t)t, (uint32_t)t, (const char *const *)task_env[t]};
            db_task_plan *tp;
            if (db_task_plan_new(np, &ti, &tp, err, sizeof err) != 0) {
                fprintf(stderr, "task plan: %s\n", err);
                return 1;
            }
            for (size_t i = 0; i < db_task_plan_count(tp); i++) {
                if (db_task_plan_value(tp, i))
                    env_overwrite(task_env[t], &task_n[t], db_task_plan_name(tp, i), db_task_plan_value(tp, i));
                else
                    env_unset(task_env[t], &task_n[t], db_task_plan_name(tp, i));
            }
            db_task_plan_free(tp);
        }
        db_node_plan_free(np);
        per_task[run] = (now_ns() - t0) / TASKS;
        for (int t = 0; t < TASKS; t++)
            for (int i = 0; i < task_n[t]; i++) free(task_env[t][i]);
    }
    qsort(per_task, RUNS, sizeof per_task[0], cmp);
    printf("%.0f\n", per_task[RUNS / 2]);
    for (int i = 0; i < step_n; i++) free(step_env[i]);
    return 0;
}
