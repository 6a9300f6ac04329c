/* Helpers shared by the Check unit tests. */
#ifndef DIST_BIND_UNIT_H
#define DIST_BIND_UNIT_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Split "A=1|B=2" into a NULL-ended array (caller frees with free_env). */
static inline char **make_env(const char *spec) {
    size_t n = 1, i = 0;
    const char *p;
    char *copy, *tok, *save = NULL, **env;
    if (!spec) spec = "";
    for (p = spec; *p; p++) n += *p == '|';
    env = calloc(n + 1, sizeof *env);
    copy = strdup(spec);
    for (tok = strtok_r(copy, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) env[i++] = strdup(tok);
    free(copy);
    return env;
}

static inline void free_env(char **env) {
    for (char **e = env; e && *e; e++) free(*e);
    free(env);
}

/* Split on spaces for plugstack-style argv. */
static inline int make_argv(const char *spec, char ***out) {
    int n = 0;
    char *copy = strdup(spec ? spec : ""), *tok, *save = NULL;
    *out = calloc(strlen(copy) / 2 + 2, sizeof **out);
    for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) (*out)[n++] = strdup(tok);
    free(copy);
    return n;
}

/* Every '&'-separated part of `want` occurs in `got`. */
static inline void assert_contains_all(const char *what, const char *got, const char *want) {
    char *copy = strdup(want), *tok, *save = NULL;
    for (tok = strtok_r(copy, "&", &save); tok; tok = strtok_r(NULL, "&", &save))
        ck_assert_msg(got && strstr(got, tok), "%s: expected \"%s\" in \"%s\"", what, tok, got ? got : "(null)");
    free(copy);
}

static inline int run_suite(Suite *s) {
    SRunner *sr = srunner_create(s);
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
