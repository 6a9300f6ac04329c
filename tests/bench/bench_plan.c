/*
 * Per-task cost of dist-bind in slurmstepd, every feature on: the node
 * plan (once per node, shared by its tasks) plus, per task, the task plan
 * (twins included), timed apart from the environment writes slurmstepd
 * does for them: the node's variables once per node in user_init, into the
 * step's environment, which each task's environment then starts from (as
 * exec_task copies it), and each task's own in its task_init.  A write is
 * modelled on Slurm's spank_setenv (src/common/env.c, 22.05 to 26.05):
 * setenvf callocs a 256 KiB buffer, formats the value into it, then
 * env_array_overwrite scans the environment for NAME= (byte by byte),
 * replaces the entry or grows the array by one, and the buffer is freed;
 * spank_unsetenv (unsetenvp) scans the whole environment and closes the gap.
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
 * Prints "plan_ns=P total_ns=T vars=V node_vars=N env=E": the medians over
 * the runs (--runs=N, default 2001) of the plan's cost per task and of plan
 * plus writes (the node's amortised over its 8 tasks), how many variables
 * one task writes (task 1) and the node writes once, and how many the
 * task's environment held at task_init.  --show prints what the node and
 * task 1 write instead.
 *
 * Built against the plan of e50afc0 too (tests/bench/build.mk), with
 * DB_BENCH_E50AFC0: its db_node_input has no lowest rank, container flag
 * or argv, it plans no heterogeneous step, and every task writes all its
 * variables itself (it has no node variables).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db_core.h"

enum { TASKS = 8, DEFAULT_RUNS = 2001 };
static const char *const GPU_LISTS[] = {"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES"};

/* slurmstepd's environment: a NULL-ended array grown one entry at a time. */
struct env {
    char **v;
    int n;
};

static void *xrealloc(void *p, size_t size) {
    p = realloc(p, size);
    if (!p) abort();
    return p;
}

/* _find_name_in_env: the first NAME= entry, or the array's end. */
static char **find_name(char **env, const char *name) {
    char **ep = env;
    for (; *ep; ep++) {
        size_t c = 0;
        while ((*ep)[c] == name[c] && name[c] != '\0' && (*ep)[c] != '\0') c++;
        if (name[c] == '\0' && (*ep)[c] == '=') break;
    }
    return ep;
}

/* What Slurm itself does to a task's environment (not timed), and the
 * last step of each of dist-bind's writes: env_array_overwrite. */
static void overwrite(struct env *e, const char *name, const char *value) {
    char *entry, **ep;
    if (asprintf(&entry, "%s=%s", name, value) < 0) abort();
    ep = find_name(e->v, name);
    if (*ep) {
        free(*ep);
    } else {
        e->v = xrealloc(e->v, (size_t)(e->n + 2) * sizeof *e->v);
        ep = &e->v[e->n++];
        e->v[e->n] = NULL;
    }
    *ep = entry;
}

/* spank_setenv -> setenvf (the value through a zeroed 256 KiB buffer) ->
 * env_array_overwrite. */
static void stepd_setenv(struct env *e, const char *name, const char *value) {
    enum { ENV_BUFSIZE = 256 * 1024 };
    char *buf = calloc(1, ENV_BUFSIZE);
    if (!buf) abort();
    snprintf(buf, ENV_BUFSIZE, "%s", value);
    if (strlen(name) + strlen(buf) + 2 >= ENV_BUFSIZE) abort();
    overwrite(e, name, buf);
    free(buf);
}

/* spank_unsetenv -> unsetenvp: every NAME= entry out, the rest moved up. */
static void stepd_unsetenv(struct env *e, const char *name) {
    char **ep = e->v;
    while (*(ep = find_name(ep, name))) {
        free(*ep);
        memmove(ep, ep + 1, (size_t)(e->v + e->n - ep) * sizeof *ep); /* the NULL too */
        e->n--;
    }
}

static void write_var(struct env *e, const char *name, const char *value) {
    if (value)
        stepd_setenv(e, name, value);
    else
        stepd_unsetenv(e, name);
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

/* What slurmstepd holds for the step at user_init on node 0 of a 2-node,
 * 16-task step 123456.1, or on the node of the second component of a
 * heterogeneous one. */
static void make_step_env(struct env *e, int het) {
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
        "DIST_BIND_STEP=123456.0", "DIST_BIND_MASTER=gpu001:29400", "DIST_BIND_MODE=closest",
        "DIST_BIND_SET=0,0,1;RANK:340ca71c", "DIST_BIND_DEVICE=0", "DIST_BIND_GPUS=0", "DIST_BIND_NUMA=0",
        "DIST_BIND_NICS=mlx5_0", "RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0", "MASTER_ADDR=gpu001", "MASTER_PORT=29400",
        "PET_NNODES=1", "APPTAINERENV_RANK=0", "APPTAINERENV_DIST_BIND_STEP=123456.0",
        "APPTAINERENV_MASTER_ADDR=gpu001", "APPTAINERENV_DIST_BIND_NUMA=0", NULL};
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
    const char *const *parts[] = {fixed, het ? het_step : plain_step};
    e->n = 0;
    e->v = xrealloc(NULL, sizeof *e->v);
    e->v[0] = NULL;
    for (int p = 0; p < 2; p++)
        for (const char *const *s = parts[p]; *s; s++) {
            e->v = xrealloc(e->v, (size_t)(e->n + 2) * sizeof *e->v);
            e->v[e->n++] = strdup(*s);
            e->v[e->n] = NULL;
        }
    for (int i = 0; i < 3; i++) overwrite(e, GPU_LISTS[i], "0,1,2,3,4,5,6,7");
}

/* A task's environment at task_init: the step's as user_init left it
 * (exec_task's env_array_copy), then what Slurm sets for the task: its
 * ranks, and its GPU lists narrowed to its own GPU. */
static void make_task_env(struct env *task, const struct env *step, int local, int het) {
    char buf[32];
    task->n = step->n;
    task->v = xrealloc(NULL, (size_t)(step->n + 1) * sizeof *task->v);
    for (int i = 0; i < step->n; i++) task->v[i] = strdup(step->v[i]);
    task->v[task->n] = NULL;
    snprintf(buf, sizeof buf, "%d", local);
    for (int i = 0; i < 3; i++) overwrite(task, GPU_LISTS[i], buf); /* bound one per task */
    snprintf(buf, sizeof buf, "%d", (het ? 8 : 0) + local);
    overwrite(task, "SLURM_PROCID", buf);
    snprintf(buf, sizeof buf, "%d", local);
    overwrite(task, "SLURM_LOCALID", buf);
    snprintf(buf, sizeof buf, "%d", 4000 + local);
    overwrite(task, "SLURM_TASK_PID", buf);
}

static void free_env(struct env *e) {
    for (int i = 0; i < e->n; i++) free(e->v[i]);
    free(e->v);
    e->v = NULL;
    e->n = 0;
}

/* The node's variables, written once in user_init (none in e50afc0). */
static size_t node_count(const db_node_plan *np) {
#ifdef DB_BENCH_E50AFC0
    (void)np;
    return 0;
#else
    return db_node_plan_env_count(np);
#endif
}

static void node_write(struct env *step, const db_node_plan *np, size_t i) {
#ifdef DB_BENCH_E50AFC0
    (void)step, (void)np, (void)i;
#else
    write_var(step, db_node_plan_env_name(np, i), db_node_plan_env_value(np, i));
#endif
}

static void show(const char *who, size_t n, const char *(*name)(const void *, size_t),
                 const char *(*value)(const void *, size_t), const void *plan) {
    printf("# %s: %zu\n", who, n);
    for (size_t i = 0; i < n; i++)
        if (value(plan, i))
            printf("%s=%s\n", name(plan, i), value(plan, i));
        else
            printf("unset %s\n", name(plan, i));
}
#ifndef DB_BENCH_E50AFC0
static const char *nname(const void *p, size_t i) { return db_node_plan_env_name(p, i); }
static const char *nvalue(const void *p, size_t i) { return db_node_plan_env_value(p, i); }
#endif
static const char *tname(const void *p, size_t i) { return db_task_plan_name(p, i); }
static const char *tvalue(const void *p, size_t i) { return db_task_plan_value(p, i); }

int main(int argc, char **argv) {
#ifndef DB_BENCH_E50AFC0
    static const char *const program[] = {"torchrun", "--nnodes=2", "--nproc-per-node=8", "train.py", NULL};
#endif
    int runs = DEFAULT_RUNS, het = 0, show_plan = 0, env_n = 0;
    size_t vars = 0, node_vars = 0;
    double *plan_ns, *total_ns;
    char err[DB_ERRLEN];
    db_config cfg;
    db_request eff = {DB_MODE_RANK, 1, 0, 0}; /* rank,verbose */

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--het") == 0)
            het = 1;
        else if (strcmp(argv[i], "--show") == 0)
            show_plan = 1;
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
    if (db_config_parse(0, NULL, &cfg, err, sizeof err) != 0) return 1;

    for (int run = 0; run < runs; run++) {
        struct env step, task[TASKS];
        db_task_plan *tp[TASKS];
        db_node_plan *np;
        double plan = 0, writes = 0, t0, t1;
        make_step_env(&step, het);
        /* A het component's own items: its job id, 1 node, its 8 tasks. */
        db_node_input ni = {.job_id = het ? 123457 : 123456,
                            .step_id = 1,
                            .nnodes = het ? 1 : 2,
                            .node_id = 0,
                            .ntasks = het ? TASKS : 16,
                            .local_ntasks = TASKS,
                            .env = (const char *const *)step.v};
#ifndef DB_BENCH_E50AFC0
        ni.lowest_rank = 0;
        ni.lowest_rank_known = !het;
        ni.argc = (int)(sizeof program / sizeof program[0]) - 1;
        ni.argv = program;
#endif
        /* user_init: the node plan, then the node's writes into the step's
         * environment (the plan's snapshot of it ends there). */
        t0 = now_ns();
        if (db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err) != 0) {
            fprintf(stderr, "node plan: %s\n", err);
            return 1;
        }
        t1 = now_ns();
        plan += t1 - t0;
        for (size_t i = 0; i < node_count(np); i++) node_write(&step, np, i);
        writes += now_ns() - t1;

        /* task_init in each task, on its copy of the step's environment. */
        for (int t = 0; t < TASKS; t++) {
            make_task_env(&task[t], &step, t, het);
            if (run == 0 && t == 1) env_n = task[t].n;
            db_task_input ti = {(uint32_t)t, (uint32_t)t, (const char *const *)task[t].v};
            t0 = now_ns();
            if (db_task_plan_new(np, &ti, &tp[t], err, sizeof err) != 0) {
                fprintf(stderr, "task plan: %s\n", err);
                return 1;
            }
            t1 = now_ns();
            for (size_t i = 0; i < db_task_plan_count(tp[t]); i++)
                write_var(&task[t], db_task_plan_name(tp[t], i), db_task_plan_value(tp[t], i));
            writes += now_ns() - t1;
            plan += t1 - t0;
        }
        if (run == 0) {
            vars = db_task_plan_count(tp[1]);
            node_vars = node_count(np);
        }
        if (show_plan) {
#ifndef DB_BENCH_E50AFC0
            show("user_init, once per node", node_vars, nname, nvalue, np);
#endif
            show("task_init, task 1", vars, tname, tvalue, tp[1]);
            printf("%s\n", db_task_plan_verbose(tp[1]) ? db_task_plan_verbose(tp[1]) : "(no verbose line)");
            return 0;
        }
        t0 = now_ns();
        for (int t = 0; t < TASKS; t++) db_task_plan_free(tp[t]);
        db_node_plan_free(np);
        plan += now_ns() - t0;

        plan_ns[run] = plan / TASKS;
        total_ns[run] = (plan + writes) / TASKS;
        for (int t = 0; t < TASKS; t++) free_env(&task[t]);
        free_env(&step);
    }
    qsort(plan_ns, (size_t)runs, sizeof plan_ns[0], cmp);
    qsort(total_ns, (size_t)runs, sizeof total_ns[0], cmp);
    printf("plan_ns=%.0f total_ns=%.0f vars=%zu node_vars=%zu env=%d\n", plan_ns[runs / 2], total_ns[runs / 2], vars,
           node_vars, env_n);
    free(plan_ns);
    free(total_ns);
    return 0;
}
