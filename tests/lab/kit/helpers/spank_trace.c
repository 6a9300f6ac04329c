/*
 * A SPANK plugin the lab tests load beside dist-bind to see what Slurm
 * itself does (tests/lab/t_releases.py): it registers --trace-probe and
 * appends one line per call of its option callback to the file named by
 * its plugstack.conf argument file=PATH:
 *
 *     option context=N remote=R pid=P
 *
 * and with vars=A,B,... one line per slurmstepd user_init and task_init
 * with those variables of the step's environment as the plugin sees them
 * there (S_JOB_ENV), "-" for unset:
 *
 *     user_init context=N remote=1 pid=P A=... B=-
 *
 * Built by the test against the headers of the release it runs on.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(dist_bind_trace, 1);

static char trace_file[1024];
static char trace_vars[512];

static void trace(const char *what, int remote) {
    char line[2048];
    int fd, n;

    if (!trace_file[0]) return;
    n = snprintf(line, sizeof line, "%s context=%d remote=%d pid=%d\n", what, (int)spank_context(), remote,
                 (int)getpid());
    if (n < 0 || (size_t)n >= sizeof line) return;
    fd = open(trace_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return;
    if (write(fd, line, (size_t)n) != n) slurm_error("spank_trace: short write to %s", trace_file);
    close(fd);
}

/* "user_init ... A=value B=-": the variables named by vars= in the step's
 * environment. */
static void trace_env(spank_t sp, const char *what) {
    char line[2048], vars[512], *save = NULL, *v;
    char **env = NULL;
    size_t len, used;
    int fd, i;

    if (!trace_file[0] || !trace_vars[0]) return;
    if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS) env = NULL;
    used =
        (size_t)snprintf(line, sizeof line, "%s context=%d remote=1 pid=%d", what, (int)spank_context(), (int)getpid());
    snprintf(vars, sizeof vars, "%s", trace_vars);
    for (v = strtok_r(vars, ",", &save); v && used < sizeof line; v = strtok_r(NULL, ",", &save)) {
        const char *value = "-";
        len = strlen(v);
        for (i = 0; env && env[i]; i++)
            if (strncmp(env[i], v, len) == 0 && env[i][len] == '=') value = env[i] + len + 1;
        used += (size_t)snprintf(line + used, sizeof line - used, " %s=%s", v, value);
    }
    if (used >= sizeof line - 1) used = sizeof line - 2;
    line[used++] = '\n';
    fd = open(trace_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return;
    if (write(fd, line, used) != (ssize_t)used) slurm_error("spank_trace: short write to %s", trace_file);
    close(fd);
}

static int option_cb(int val, const char *optarg, int remote) {
    (void)val;
    (void)optarg;
    trace("option", remote);
    return 0;
}

static struct spank_option trace_options[] = {
    {"trace-probe", NULL, "[test] count the option callbacks", 0, 0, option_cb},
    SPANK_OPTIONS_TABLE_END,
};

int slurm_spank_init(spank_t sp, int ac, char **av) {
    int i;

    for (i = 0; i < ac; i++) {
        if (strncmp(av[i], "file=", 5) == 0) snprintf(trace_file, sizeof trace_file, "%s", av[i] + 5);
        if (strncmp(av[i], "vars=", 5) == 0) snprintf(trace_vars, sizeof trace_vars, "%s", av[i] + 5);
    }
    return spank_option_register(sp, &trace_options[0]) == ESPANK_SUCCESS ? 0 : -1;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    if (spank_remote(sp)) trace_env(sp, "user_init");
    return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    if (spank_remote(sp)) trace_env(sp, "task_init");
    return 0;
}
