/*
 * srun side: its command line, read once, its words to the nodes, and the
 * messages srun's user sees on request (srun_common.h).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srun_common.h"

enum { CMDLINE_LEN = 256 * 1024, CMDLINE_MAX = 8192 };

void db_cmdline_read(struct db_cmdline *cl) {
    FILE *f;
    size_t n;

    cl->argc = 0;
    cl->complete = 0;
    cl->buf = malloc(CMDLINE_LEN);
    cl->argv = malloc(CMDLINE_MAX * sizeof *cl->argv);
    if (!cl->buf || !cl->argv) return;
    f = fopen("/proc/self/cmdline", "re");
    if (!f) return;
    n = fread(cl->buf, 1, CMDLINE_LEN - 1, f);
    cl->complete = n < CMDLINE_LEN - 1 && feof(f);
    fclose(f);
    /* A word cut at the end of the buffer is left out. */
    while (!cl->complete && n > 0 && cl->buf[n - 1] != '\0') n--;
    cl->buf[n] = '\0';
    for (size_t i = 0; i < n && cl->argc < CMDLINE_MAX; i += strlen(cl->buf + i) + 1)
        cl->argv[cl->argc++] = cl->buf + i;
    if (cl->argc == CMDLINE_MAX) cl->complete = 0;
}

void db_cmdline_free(struct db_cmdline *cl) {
    free(cl->buf);
    free(cl->argv);
    cl->buf = NULL;
    cl->argv = NULL;
    cl->argc = 0;
}

void db_local_say(const db_request *eff, const char *fmt, ...) {
    char msg[DB_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (eff->verbose)
        slurm_spank_log(DB_PREFIX "%s", msg);
    else
        slurm_verbose(DB_PREFIX "%s", msg);
}

/* Until db_srun_words_route says srun passes its whole environment. */
static int carry = 1;

void db_srun_words_route(const struct db_cmdline *cl) {
    const int complete = cl && cl->complete;
    carry = !complete || !db_srun_exports_all(cl->argc, cl->argv, getenv("SLURM_EXPORT_ENV"));
}

int db_srun_pass(const char *carried, const char *value) {
    if (setenv(DB_PLAIN(carried), value, 1) != 0) return -1;
    return carry && setenv(carried, value, 1) != 0 ? -1 : 0;
}

void db_srun_drop(const char *carried) {
    unsetenv(DB_PLAIN(carried));
    unsetenv(carried);
}
