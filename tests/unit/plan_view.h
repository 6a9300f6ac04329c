/* A task's plan as slurmstepd applies it, for the plan's unit tests.
 *
 * The glue writes the node plan's variables (db_node_plan_env_*) in
 * user_init into the step's environment, which each task's starts from;
 * then each task's plan writes the rest.  A row of a test gives the step's
 * environment at user_init and the task's at task_init as it would be
 * without dist-bind's user_init: the node's writes reach the task wherever
 * the two agree on a name (where they differ, Slurm or a plugin before
 * dist-bind changed it in the task, and that stays).  The view lists what
 * dist-bind wrote for the task, the node's and the task's, the task's
 * write winning, and the task's environment at exec.
 */
#ifndef DIST_BIND_PLAN_VIEW_H
#define DIST_BIND_PLAN_VIEW_H

#include "db_core.h"
#include "unit.h"

#define PV_MAX 512

struct plan_view {
    char **env;       /* the task's environment at task_init (the node's writes in it) */
    db_task_plan *tp; /* the task's plan (what it writes), NULL on error */
    size_t node_n;    /* node writes that reached the task */
    size_t n;         /* what dist-bind wrote for the task, node's and task's */
    const char *names[PV_MAX];
    const char *values[PV_MAX]; /* NULL: unset */
};

/* The value of `name` in `env`, or NULL. */
static inline const char *pv_get(char **env, const char *name) {
    size_t len = strlen(name);
    for (char **e = env; e && *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
    return NULL;
}

static inline int pv_same(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* `env` (malloc'ed, NULL-ended, as make_env) with `name` set to `value`, or
 * unset where value is NULL, as slurmstepd's spank_setenv/unsetenv do. */
static inline char **pv_apply(char **env, const char *name, const char *value) {
    size_t len = strlen(name), n = 0, i;
    while (env[n]) n++;
    for (i = 0; i < n; i++)
        if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') break;
    if (!value) {
        if (i < n) {
            free(env[i]);
            memmove(&env[i], &env[i + 1], (n - i) * sizeof *env);
        }
        return env;
    }
    char *entry = malloc(len + strlen(value) + 2);
    sprintf(entry, "%s=%s", name, value);
    if (i < n) {
        free(env[i]);
        env[i] = entry;
        return env;
    }
    env = realloc(env, (n + 2) * sizeof *env);
    env[n] = entry;
    env[n + 1] = NULL;
    return env;
}

static inline char **pv_copy(char **env) {
    size_t n = 0;
    while (env && env[n]) n++;
    char **out = calloc(n + 1, sizeof *out);
    for (size_t i = 0; i < n; i++) out[i] = strdup(env[i]);
    return out;
}

static inline void pv_add(struct plan_view *v, const char *name, const char *value) {
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->names[i], name) == 0) {
            v->values[i] = value;
            return;
        }
    ck_assert_msg(v->n < PV_MAX, "more than %d variables", PV_MAX);
    v->names[v->n] = name;
    v->values[v->n++] = value;
}

/* The task plan of (rank, local) on `task` (its environment without the
 * node's writes), the node's writes applied where `step` agrees: 0 or the
 * task plan's error. */
static inline int plan_view_new(const db_node_plan *np, char **step, char **task, uint32_t rank, uint32_t local,
                                struct plan_view *v, char *err, size_t errlen) {
    memset(v, 0, sizeof *v);
    v->env = pv_copy(task);
    size_t nn = db_node_plan_env_count(np);
    char *reached = calloc(nn + 1, 1);
    for (size_t i = 0; i < nn; i++) {
        const char *name = db_node_plan_env_name(np, i);
        if (!pv_same(pv_get(step, name), pv_get(task, name))) continue;
        v->env = pv_apply(v->env, name, db_node_plan_env_value(np, i));
        reached[i] = 1;
        v->node_n++;
    }
    db_task_input ti = {rank, local, (const char *const *)v->env};
    int rc = db_task_plan_new(np, &ti, &v->tp, err, errlen);
    if (rc == 0) {
        for (size_t i = 0; i < nn; i++)
            if (reached[i]) pv_add(v, db_node_plan_env_name(np, i), db_node_plan_env_value(np, i));
        for (size_t i = 0; i < db_task_plan_count(v->tp); i++)
            pv_add(v, db_task_plan_name(v->tp, i), db_task_plan_value(v->tp, i));
    }
    free(reached);
    return rc;
}

/* The task's environment at exec: its plan applied (malloc'ed). */
static inline char **plan_view_final(const struct plan_view *v) {
    char **env = pv_copy(v->env);
    for (size_t i = 0; i < db_task_plan_count(v->tp); i++)
        env = pv_apply(env, db_task_plan_name(v->tp, i), db_task_plan_value(v->tp, i));
    return env;
}

static inline void plan_view_free(struct plan_view *v) {
    db_task_plan_free(v->tp);
    free_env(v->env);
    memset(v, 0, sizeof *v);
}

/* Index of `name` in the view, or -1. */
static inline int plan_view_find(const struct plan_view *v, const char *name) {
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->names[i], name) == 0) return (int)i;
    return -1;
}

/* Both environments hold the same entries, whatever their order. */
static inline int pv_env_equal(char **a, char **b, const char **which) {
    size_t na = 0, nb = 0;
    while (a[na]) na++;
    while (b[nb]) nb++;
    for (size_t i = 0; i < na; i++) {
        char *eq = strchr(a[i], '='), name[256];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a[i]) : (int)strlen(a[i]), a[i]);
        if (!pv_same(pv_get(b, name), eq ? eq + 1 : "")) {
            *which = a[i];
            return 0;
        }
    }
    for (size_t i = 0; i < nb; i++) {
        char *eq = strchr(b[i], '='), name[256];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - b[i]) : (int)strlen(b[i]), b[i]);
        if (!pv_get(a, name)) {
            *which = b[i];
            return 0;
        }
    }
    return na == nb || (*which = "(a name twice)", 0);
}

#endif
