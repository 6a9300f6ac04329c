/*
 * A SPANK plugin the lab tests load beside dist-bind to see what Slurm
 * itself does (tests/lab/t_releases.py): it registers --trace-probe and
 * appends one line per call of its option callback to the file named by
 * its plugstack.conf argument file=PATH:
 *
 *     option context=N remote=R pid=P
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

static void trace(const char *what, int remote) {
    char line[256];
    int fd, n;

    if (!trace_file[0]) return;
    n = snprintf(line, sizeof line, "%s context=%d remote=%d pid=%d\n", what, (int)spank_context(), remote,
                 (int)getpid());
    fd = open(trace_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return;
    if (write(fd, line, (size_t)n) != n) slurm_error("spank_trace: short write to %s", trace_file);
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

    for (i = 0; i < ac; i++)
        if (strncmp(av[i], "file=", 5) == 0) snprintf(trace_file, sizeof trace_file, "%s", av[i] + 5);
    return spank_option_register(sp, &trace_options[0]) == ESPANK_SUCCESS ? 0 : -1;
}
