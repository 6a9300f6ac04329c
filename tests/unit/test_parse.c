/*
 * The --dist-bind value, the plugstack.conf arguments and Slurm hostlists,
 * table-driven.  Bad input must give one error naming what was wrong.
 */
#include "db_core.h"
#include "unit.h"

/* A parser that allocates for what a short string claims shows up as an
 * error here, not as a slow success. */
const char *__asan_default_options(void) { return "allocator_may_return_null=1:max_allocation_size_mb=16"; }

struct opt_row {
    const char *value;
    int mode, verbose, share;
    unsigned port;
    const char *err; /* '&'-separated substrings, or NULL */
};

static const struct opt_row opt_rows[] = {
    {NULL, DB_MODE_RANK, 0, 0, 0, NULL},
    {"", DB_MODE_RANK, 0, 0, 0, NULL},
    {"rank", DB_MODE_RANK, 0, 0, 0, NULL},
    {"isolate", DB_MODE_ISOLATE, 0, 0, 0, NULL},
    {"closest", DB_MODE_CLOSEST, 0, 0, 0, NULL},
    {"env", DB_MODE_ENV, 0, 0, 0, NULL},
    {"off", DB_MODE_OFF, 0, 0, 0, NULL},
    {"verbose", DB_MODE_RANK, 1, 0, 0, NULL},
    {"isolate,verbose,share,port=1234", DB_MODE_ISOLATE, 1, 1, 1234, NULL},
    {"port=65535,rank", DB_MODE_RANK, 0, 0, 65535, NULL},
    {"bogus", 0, 0, 0, 0, "--dist-bind=\"bogus\"&unknown item \"bogus\"&rank, isolate, closest, env, off"},
    {"Rank", 0, 0, 0, 0, "unknown item \"Rank\""},
    {"rank,isolate", 0, 0, 0, 0, "more than one MODE"},
    {"rank,,verbose", 0, 0, 0, 0, "empty item"},
    {",", 0, 0, 0, 0, "empty item"},
    {"verbose,verbose", 0, 0, 0, 0, "\"verbose\" given twice"},
    {"port=0", 0, 0, 0, 0, "\"port=0\" is not a port&1..65535"},
    {"port=65536", 0, 0, 0, 0, "\"port=65536\" is not a port"},
    {"port=12x", 0, 0, 0, 0, "\"port=12x\""},
    {"port=", 0, 0, 0, 0, "\"port=\" is not a port"},
    {"port=-5", 0, 0, 0, 0, "\"port=-5\""},
    {"port=99999999999999999999999", 0, 0, 0, 0, "is not a port"},
    {"port=1,port=2", 0, 0, 0, 0, "given twice"},
    {"off,verbose", 0, 0, 0, 0, "\"off\" takes no modifiers"},
    {"rank ", 0, 0, 0, 0, "unknown item \"rank \""},
};

START_TEST(option_row) {
    const struct opt_row *r = &opt_rows[_i];
    char err[DB_ERRLEN] = "";
    db_request q = {99, 99, 99, 99};
    int rc = db_request_parse(r->value, &q, err, sizeof err);
    if (r->err) {
        ck_assert_msg(rc != 0, "\"%s\": expected an error", r->value);
        ck_assert_msg(q.mode == 99, "\"%s\": output written on error", r->value);
        assert_contains_all(r->value, err, r->err);
    } else {
        ck_assert_msg(rc == 0, "\"%s\": %s", r->value ? r->value : "(null)", err);
        ck_assert_int_eq(q.mode, r->mode);
        ck_assert_int_eq(q.verbose, r->verbose);
        ck_assert_int_eq(q.share, r->share);
        ck_assert_uint_eq(q.port, r->port);
    }
}
END_TEST

struct conf_row {
    const char *args;
    int def_mode;
    unsigned lo, hi;
    int addr;
    const char *suffix;
    const char *err;
};

static const struct conf_row conf_rows[] = {
    {"", DB_MODE_OFF, 20000, 29999, DB_ADDR_NAME, "", NULL},
    {"default=rank", DB_MODE_RANK, 20000, 29999, DB_ADDR_NAME, "", NULL},
    {"default=isolate,verbose ports=30000-30099 master_addr=suffix:-ib", DB_MODE_ISOLATE, 30000, 30099, DB_ADDR_SUFFIX,
     "-ib", NULL},
    {"master_addr=addr", DB_MODE_OFF, 20000, 29999, DB_ADDR_NODEADDR, "", NULL},
    {"master_addr=name default=off", DB_MODE_OFF, 20000, 29999, DB_ADDR_NAME, "", NULL},
    {"ports=1-1", DB_MODE_OFF, 1, 1, DB_ADDR_NAME, "", NULL},
    {"foo=1", 0, 0, 0, 0, NULL, "unknown key \"foo\"&valid keys: default, ports, master_addr, topology_cache"},
    {"default=rank bar=2", 0, 0, 0, 0, NULL, "unknown key \"bar\""},
    {"noequals", 0, 0, 0, 0, NULL, "\"noequals\": expected key=value"},
    {"=rank", 0, 0, 0, 0, NULL, "expected key=value"},
    {"default=bogus", 0, 0, 0, 0, NULL, "default=\"bogus\"&unknown item"},
    {"default=", 0, 0, 0, 0, NULL, "default=\"\"&expected a MODE"},
    {"default=rank,port=5", 0, 0, 0, 0, NULL, "port= cannot be a default"},
    {"default=rank default=off", 0, 0, 0, 0, NULL, "key \"default\" given twice"},
    {"ports=5-1", 0, 0, 0, 0, NULL, "ports=\"5-1\"&LO-HI"},
    {"ports=abc", 0, 0, 0, 0, NULL, "ports=\"abc\""},
    {"ports=0-10", 0, 0, 0, 0, NULL, "ports=\"0-10\""},
    {"ports=100-70000", 0, 0, 0, 0, NULL, "ports=\"100-70000\""},
    {"ports=100", 0, 0, 0, 0, NULL, "ports=\"100\""},
    {"master_addr=ip", 0, 0, 0, 0, NULL, "master_addr=\"ip\"&expected name, addr or suffix:S"},
    {"master_addr=suffix:", 0, 0, 0, 0, NULL, "master_addr=\"suffix:\"&suffix"},
    {"master_addr=suffix:a/b", 0, 0, 0, 0, NULL, "master_addr=\"suffix:a/b\""},
    {"topology_cache=relative/x.xml", 0, 0, 0, 0, NULL, "topology_cache=\"relative/x.xml\"&absolute path"},
    {"topology_cache=/s/%u.xml", 0, 0, 0, 0, NULL, "topology_cache=\"/s/%u.xml\"&%n (node name)"},
    {"topology_cache=/s/100%", 0, 0, 0, 0, NULL, "topology_cache=\"/s/100%\""},
    {"topology_cache=", 0, 0, 0, 0, NULL, "topology_cache=\"\"&expected none"},
    {"topology_cache=none topology_cache=/x", 0, 0, 0, 0, NULL, "key \"topology_cache\" given twice"},
};

/* topology_cache=: the default, none, and a template kept as written. */
START_TEST(topology_cache_key) {
    char err[DB_ERRLEN] = "", **argv = NULL;
    db_config c;
    ck_assert(db_config_parse(0, NULL, &c, err, sizeof err) == 0);
    ck_assert_str_eq(c.topology_cache, "/var/spool/slurmd/hwloc_topo_whole.xml");
    int argc = make_argv("topology_cache=none", &argv);
    ck_assert_msg(db_config_parse(argc, (const char *const *)argv, &c, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(c.topology_cache, "");
    free_env(argv);
    argc = make_argv("topology_cache=/lab/%n/spool/%%h_%h.xml", &argv);
    ck_assert_msg(db_config_parse(argc, (const char *const *)argv, &c, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(c.topology_cache, "/lab/%n/spool/%%h_%h.xml");
    free_env(argv);
}
END_TEST

START_TEST(config_row) {
    const struct conf_row *r = &conf_rows[_i];
    char err[DB_ERRLEN] = "", **argv = NULL;
    int argc = make_argv(r->args, &argv);
    db_config c;
    int rc = db_config_parse(argc, (const char *const *)argv, &c, err, sizeof err);
    if (r->err) {
        ck_assert_msg(rc != 0, "\"%s\": expected an error", r->args);
        assert_contains_all(r->args, err, r->err);
        ck_assert_msg(strncmp(err, "plugstack.conf", 14) == 0, "\"%s\": message names plugstack.conf: %s", r->args,
                      err);
    } else {
        ck_assert_msg(rc == 0, "\"%s\": %s", r->args, err);
        ck_assert_int_eq(c.def.mode, r->def_mode);
        ck_assert_uint_eq(c.port_lo, r->lo);
        ck_assert_uint_eq(c.port_hi, r->hi);
        ck_assert_int_eq(c.addr_kind, r->addr);
        ck_assert_str_eq(c.addr_suffix, r->suffix);
    }
    free_env(argv);
}
END_TEST

struct host_row {
    const char *list;
    size_t index;
    const char *want; /* or NULL */
    const char *err;
};

static const struct host_row host_rows[] = {
    {"node1", 0, "node1", NULL},
    {"node[1-2]", 1, "node2", NULL},
    {"node[1-3,7]", 3, "node7", NULL},
    {"gpu[001-010]", 9, "gpu010", NULL},
    {"gpu[08-11]", 2, "gpu10", NULL},
    {"a,b[10-11],c", 2, "b11", NULL},
    {"a,b[10-11],c", 3, "c", NULL},
    {"r[1-2]n[01-02]", 1, "r1n02", NULL},
    {"r[1-2]n[01-02]", 2, "r2n01", NULL},
    {"x[1-2]-ib", 1, "x2-ib", NULL},
    {"node[1-2]", 2, NULL, "has no host number 2"},
    {"node[1-", 0, NULL, "unbalanced '['"},
    {"node1]", 0, NULL, "unbalanced ']'"},
    {"node[3-1]", 0, NULL, "bad range \"3-1\""},
    {"node[]", 0, NULL, "bad range"},
    {"node[a-b]", 0, NULL, "bad range \"a-b\""},
    {"", 0, NULL, "empty"},
    {"a,,b", 0, NULL, "empty host name"},
    {"n[1-2[3]]", 0, NULL, "nested"},
    {"n[0-99999999]m[0-99999999]", 0, NULL, "too many hosts"},
    /* Refused whatever the index: the whole list is counted first. */
    {"a,n[0-99999999]m[0-99999999]", 0, NULL, "too many hosts"},
    {"node 1", 0, NULL, "whitespace"},
};

START_TEST(hostlist_row) {
    const struct host_row *r = &host_rows[_i];
    char out[64] = "", err[DB_ERRLEN] = "";
    int rc = db_hostlist_nth(r->list, r->index, out, sizeof out, err, sizeof err);
    if (r->err) {
        ck_assert_msg(rc != 0, "\"%s\"[%zu]: expected an error, got %s", r->list, r->index, out);
        assert_contains_all(r->list, err, r->err);
    } else {
        ck_assert_msg(rc == 0, "\"%s\"[%zu]: %s", r->list, r->index, err);
        ck_assert_str_eq(out, r->want);
    }
}
END_TEST

/* A term's host count is the product of its groups' sizes.
 * 2^24 hosts in one group times 2^40 in the next (4096 ranges of 2^28: a
 * 49 KB list) wrapped to 2^64 = 0, and the list was taken as a small one. */
START_TEST(hostlist_product_wrap) {
    const char *range = "0-268435455,";
    size_t n = 4096, len = strlen("a[0-16777215]b[") + n * strlen(range) + 2;
    char *list = malloc(len), out[64] = "", err[DB_ERRLEN] = "";
    strcpy(list, "a[0-16777215]b[");
    for (size_t i = 0; i < n; i++) strcat(list, range);
    list[strlen(list) - 1] = ']';
    ck_assert_msg(db_hostlist_nth(list, 0, out, sizeof out, err, sizeof err) != 0, "accepted, host 0 is %s", out);
    assert_contains_all("2^64 hosts", err, "too many hosts");
    /* One short of the limit in one group, times 2: refused too. */
    ck_assert(db_hostlist_nth("a[0-16777215]b[1-2]", 0, out, sizeof out, err, sizeof err) != 0);
    assert_contains_all("2^25 hosts", err, "too many hosts");
    ck_assert(db_hostlist_nth("a[0-4095]b[0-4095]", 16777215, out, sizeof out, err, sizeof err) == 0);
    ck_assert_str_eq(out, "a4095b4095");
    free(list);
}
END_TEST

/* "1(x16777215)" is 12 bytes naming 16 million nodes; the node
 * plan refuses it against the step's node count before expanding it. */
START_TEST(tasks_per_node_cap) {
    char err[DB_ERRLEN] = "", **env = make_env("SLURM_STEP_TASKS_PER_NODE=1(x16777215)|SLURM_STEP_NODELIST=n[1-2]");
    db_config c;
    db_request eff = {DB_MODE_RANK, 0, 0, 0};
    db_node_input in = {7, 0, 2, 0, 2, 1, (const char *const *)env, 0, 0, 0, 0, NULL, 0};
    db_node_plan *np = NULL;
    ck_assert(db_config_parse(0, NULL, &c, err, sizeof err) == 0);
    ck_assert_msg(db_node_plan_new(&c, &eff, &in, &np, err, sizeof err) != 0, "accepted");
    assert_contains_all("1(x16777215)", err, "SLURM_STEP_TASKS_PER_NODE=\"1(x16777215)\"&more than 2 nodes&step has 2");
    db_node_plan_free(np);
    free_env(env);
}
END_TEST

START_TEST(master_addr_formats) {
    char out[64], err[DB_ERRLEN], **argv = NULL;
    db_config c;
    int argc = make_argv("master_addr=suffix:-ib", &argv);
    ck_assert(db_config_parse(argc, (const char *const *)argv, &c, err, sizeof err) == 0);
    ck_assert(db_format_master_addr(&c, "node1", NULL, out, sizeof out, err, sizeof err) == 0);
    ck_assert_str_eq(out, "node1-ib");
    c.addr_kind = DB_ADDR_NODEADDR;
    ck_assert(db_format_master_addr(&c, "node1", "10.0.0.1", out, sizeof out, err, sizeof err) == 0);
    ck_assert_str_eq(out, "10.0.0.1");
    ck_assert(db_format_master_addr(&c, "node1", "", out, sizeof out, err, sizeof err) != 0);
    assert_contains_all("nodeaddr", err, "no NodeAddr known for node \"node1\"");
    ck_assert(db_format_master_addr(&c, "node1", "10.0.0.1", out, 4, err, sizeof err) != 0);
    assert_contains_all("too long", err, "too long");
    free_env(argv);
}
END_TEST

/* srun passes rank 0's address for every step that asks for dist-bind
 * unless the user exported MASTER_ADDR, and fails the step without it only
 * where the nodes cannot tell it themselves. */
START_TEST(srun_lookup_needed) {
    db_config c;
    db_request on = {DB_MODE_RANK, 0, 0, 0}, off = {DB_MODE_OFF, 0, 0, 0};
    char err[DB_ERRLEN], **arb = make_env("SLURM_DISTRIBUTION=arbitrary"), **blk = make_env("SLURM_DISTRIBUTION=block"),
                         **user = make_env("SLURM_DISTRIBUTION=arbitrary|MASTER_ADDR=h"),
                         **nested = make_env(
                             "SLURM_DISTRIBUTION=arbitrary|MASTER_ADDR=node1|"
                             "DIST_BIND_MASTER=node1:24000|DIST_BIND_STEP=7.0"),
                         **changed = make_env("MASTER_ADDR=h|DIST_BIND_MASTER=node1:24000");
    ck_assert(db_config_parse(0, NULL, &c, err, sizeof err) == 0);
    ck_assert(db_srun_needs_rank0(&c, &on, (const char *const *)arb));
    ck_assert(!db_srun_needs_rank0(&c, &on, (const char *const *)blk));
    ck_assert(!db_srun_needs_rank0(&c, &off, (const char *const *)arb));
    ck_assert(!db_srun_needs_rank0(&c, &on, (const char *const *)user));
    ck_assert(db_srun_wants_rank0(&c, &on, (const char *const *)arb));
    ck_assert(db_srun_wants_rank0(&c, &on, (const char *const *)blk));
    ck_assert(!db_srun_wants_rank0(&c, &off, (const char *const *)blk));
    ck_assert(!db_srun_wants_rank0(&c, &on, (const char *const *)user));
    /* srun inside a task: the MASTER_ADDR dist-bind set there is not the user's. */
    ck_assert(db_srun_wants_rank0(&c, &on, (const char *const *)nested));
    ck_assert(db_srun_needs_rank0(&c, &on, (const char *const *)nested));
    ck_assert(!db_srun_wants_rank0(&c, &on, (const char *const *)changed));
    /* The layout (one RPC) only where the nodes cannot tell: arbitrary (even
     * with the user's MASTER_ADDR: NODE_RANK still needs it), a topology
     * that may rank the nodes or may not be known, master_addr=addr. */
    ck_assert(!db_srun_reads_layout(&c, &on, (const char *const *)blk, 0));
    ck_assert(db_srun_reads_layout(&c, &on, (const char *const *)arb, 0));
    ck_assert(db_srun_reads_layout(&c, &on, (const char *const *)user, 0));
    ck_assert(db_srun_reads_layout(&c, &on, (const char *const *)blk, 1));
    ck_assert(db_srun_reads_layout(&c, &on, (const char *const *)blk, -1));
    ck_assert(!db_srun_reads_layout(&c, &off, (const char *const *)arb, 1));
    c.addr_kind = DB_ADDR_NODEADDR;
    ck_assert(db_srun_needs_rank0(&c, &on, (const char *const *)blk));
    ck_assert(db_srun_reads_layout(&c, &on, (const char *const *)blk, 0));
    c.addr_kind = DB_ADDR_SUFFIX;
    ck_assert(!db_srun_reads_layout(&c, &on, (const char *const *)blk, 0));
    free_env(arb);
    free_env(blk);
    free_env(user);
    free_env(nested);
    free_env(changed);
}
END_TEST

/* The step's layout as srun reads it: each node's tasks' global ranks, in
 * Slurm's node order, "|" between nodes. */
static const struct {
    const char *name;
    uint32_t ntasks;
    const char *tids;
    const char *want; /* DB_NODE_RANKS_HINT, or NULL: refused */
    uint32_t rank0;   /* node index of rank 0 */
    const char *err;
} layout_rows[] = {
    {"block 3+2", 5, "0,1,2|3,4", "0-1", 0, NULL},
    {"cyclic", 5, "0,2,4|1,3", "0-1", 0, NULL},
    {"-m arbitrary -w node2,node1,node2,node1,node2", 5, "1,3|0,2,4", "1,0", 1, NULL},
    {"one node", 4, "0,1,2,3", "0", 0, NULL},
    /* 26.05 topology ranking: gpu03 first, then gpu04, gpu01, gpu02. */
    {"topology: rank 0 on the third node", 8, "4,5|6,7|0,1|2,3", "2-3,0-1", 2, NULL},
    {"topology: reversed", 4, "3|2|1|0", "3,2,1,0", 3, NULL},
    {"identity on 16 nodes", 16, "0|1|2|3|4|5|6|7|8|9|10|11|12|13|14|15", "0-15", 0, NULL},
    {"runs of one and more", 6, "0|5|1|2|3|4", "0,5,1-4", 0, NULL},
    /* Tasks of a node need not be in order; its lowest rank counts. */
    {"unordered ranks on a node", 4, "3,1|0,2", "1,0", 1, NULL},
    {"a node without tasks", 3, "0,1,2|", NULL, 0, "no tasks on node 1 of 2"},
    {"a rank twice", 3, "0,1|1,2", NULL, 0, "rank 1 twice"},
    {"a rank beyond the step", 3, "0,1|5", NULL, 0, "rank 5 in a step of 3 tasks"},
    {"a rank missing", 4, "0,1|3", NULL, 0, "no task of rank 2"},
};

START_TEST(layout_row) {
    uint16_t tasks[32] = {0};
    uint32_t *tids[32] = {NULL}, nnodes = 0, rank0 = 99;
    char *copy = strdup(layout_rows[_i].tids), *node = copy, *out = (char *)1, err[DB_ERRLEN] = "";
    for (;;) { /* "1,3|0,2,4" */
        char *bar = strchr(node, '|');
        if (bar) *bar = '\0';
        tids[nnodes] = calloc(16, sizeof **tids);
        for (char *t = node; *t;) {
            tids[nnodes][tasks[nnodes]++] = (uint32_t)strtoul(t, &t, 10);
            if (*t == ',') t++;
        }
        nnodes++;
        if (!bar) break;
        node = bar + 1;
    }
    int rc = db_layout_hints(nnodes, layout_rows[_i].ntasks, tasks, (const uint32_t *const *)tids, &out, &rank0, err,
                             sizeof err);
    if (layout_rows[_i].want) {
        ck_assert_msg(rc == 0, "%s: %s", layout_rows[_i].name, err);
        ck_assert_msg(strcmp(out, layout_rows[_i].want) == 0, "%s: got %s, want %s", layout_rows[_i].name, out,
                      layout_rows[_i].want);
        ck_assert_msg(rank0 == layout_rows[_i].rank0, "%s: rank 0 on node %u, want %u", layout_rows[_i].name, rank0,
                      layout_rows[_i].rank0);
    } else {
        ck_assert_msg(rc != 0, "%s: accepted as %s", layout_rows[_i].name, out);
        ck_assert_ptr_null(out);
        assert_contains_all(layout_rows[_i].name, err, layout_rows[_i].err);
    }
    free(out);
    for (uint32_t n = 0; n < nnodes; n++) free(tids[n]);
    free(copy);
}
END_TEST

/* Thousands of nodes stay short in the identity order; an order too
 * irregular for one environment variable is refused, not cut. */
START_TEST(layout_sizes) {
    enum { N = 40000 };
    uint16_t *tasks = malloc(N * sizeof *tasks);
    uint32_t *ranks = malloc(N * sizeof *ranks), **tids = malloc(N * sizeof *tids), rank0 = 0;
    char *out = NULL, err[DB_ERRLEN] = "";
    for (uint32_t n = 0; n < N; n++) tasks[n] = 1, ranks[n] = n, tids[n] = &ranks[n];
    ck_assert_msg(db_layout_hints(N, N, tasks, (const uint32_t *const *)tids, &out, &rank0, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_str_eq(out, "0-39999");
    free(out);
    /* Every other node swapped with its neighbour: no run longer than one. */
    for (uint32_t n = 0; n + 1 < N; n += 2) ranks[n] = n + 1, ranks[n + 1] = n;
    ck_assert(db_layout_hints(N, N, tasks, (const uint32_t *const *)tids, &out, &rank0, err, sizeof err) != 0);
    ck_assert_ptr_null(out);
    assert_contains_all("irregular", err, "too irregular&" DB_NODE_RANKS_HINT "&120000");
    ck_assert(db_layout_hints(0, 0, tasks, (const uint32_t *const *)tids, &out, &rank0, err, sizeof err) != 0);
    free(tasks);
    free(ranks);
    free(tids);
}
END_TEST

/* srun's own command line: --async among srun's options, not the program's. */
static const struct {
    const char *args;
    int async;
} async_rows[] = {
    {"srun --async --dist-bind prog", 1},
    {"srun --dist-bind --async prog", 1},
    {"srun -n2 --async prog", 1},
    {"srun --async", 1},
    {"srun --asy prog", 1}, /* getopt_long takes an abbreviation */
    {"srun --as prog", 1},
    {"srun --parsable --async -N2 -n5 --gpus-per-task 1 prog", 1},
    {"srun -N 2 --async prog", 1},
    {"srun -lN2 --async prog", 1},
    {"srun -lN 2 --async prog", 1},
    {"srun --nodelist node1 --async prog", 1},
    {"srun --nodel node1 --async prog", 1},
    {"srun --dist-bind=verbose,share --async prog", 1},
    {"srun -k0 --async prog", 1},
    {"srun prog --async", 0},
    {"srun --dist-bind python train.py --async", 0},
    {"srun -n 2 prog --async", 0},
    {"srun -J --async prog", 0},         /* the job's name is "--async" */
    {"srun --job-name --async prog", 0}, /* the same */
    {"srun --mpi pmix prog --async", 0},
    {"srun -- --async", 0},
    {"srun - --async", 0},
    {"srun --async=1 prog", 0},              /* srun refuses this itself */
    {"srun -n2 prog : -n3 --async prog", 1}, /* a later component's */
    {"srun -n2 prog --async : -n3 prog", 0},
    {"srun --a prog", 0}, /* ambiguous: srun refuses it */
    {"srun --asynchronous prog", 0},
    /* Another plugin's option: its value is taken for the program. */
    {"srun --container-image img --async prog", 0},
    {"srun --container-image=img --async prog", 1},
    {"srun", 0},
    {"", 0},
};

START_TEST(async_row) {
    char **argv = NULL;
    int argc = make_argv(async_rows[_i].args, &argv);
    ck_assert_msg(db_srun_async(argc, (const char *const *)argv) == async_rows[_i].async, "\"%s\": want %d",
                  async_rows[_i].args, async_rows[_i].async);
    free_env(argv);
}
END_TEST

/* Does srun pass its whole environment (then srun's words need no carried
 * copy): every component's last --export, else SLURM_EXPORT_ENV, has ALL
 * first (measured: ALL, all, ALL,X=1 pass everything; NONE, X=1 and
 * SLURM_EXPORT_ENV=NONE only SLURM*; X=1,ALL passes everything too, but
 * is taken for a list, which only costs the copies). */
static const struct {
    const char *args, *export_env;
    int all;
} export_rows[] = {
    {"srun prog", NULL, 1},
    {"srun --export=ALL prog", NULL, 1},
    {"srun --export=all prog", NULL, 1},
    {"srun --export=ALL,FOO=1 prog", NULL, 1},
    {"srun --export ALL prog", NULL, 1},
    {"srun --export=NONE prog", NULL, 0},
    {"srun --export NONE prog", NULL, 0},
    {"srun --expo=NONE prog", NULL, 0}, /* getopt_long takes an abbreviation */
    {"srun --export=FOO=1 prog", NULL, 0},
    {"srun --export=FOO=1,ALL prog", NULL, 0},
    {"srun --export=ALLX prog", NULL, 0},
    {"srun --export= prog", NULL, 0},
    {"srun prog", "NONE", 0},
    {"srun prog", "ALL", 1},
    {"srun --export=ALL prog", "NONE", 1},             /* the command line wins */
    {"srun --export=NONE --export=ALL prog", NULL, 1}, /* the last one */
    {"srun --export=ALL --export=NONE prog", NULL, 0},
    {"srun prog --export=NONE", NULL, 1},            /* the program's */
    {"srun -J --export=NONE prog", NULL, 1},         /* the job's name */
    {"srun -n1 prog : --export=NONE prog", NULL, 0}, /* any component's */
    {"srun --export=NONE prog : -n1 prog", "ALL", 0},
    {"srun --export", NULL, 0}, /* no value: srun refuses it */
    {"srun", NULL, 1},          /* srun's default */
    {"", NULL, 0},
};

START_TEST(export_row) {
    char **argv = NULL;
    int argc = make_argv(export_rows[_i].args, &argv);
    ck_assert_msg(
        db_srun_exports_all(argc, (const char *const *)argv, export_rows[_i].export_env) == export_rows[_i].all,
        "\"%s\" (SLURM_EXPORT_ENV %s): want %d", export_rows[_i].args,
        export_rows[_i].export_env ? export_rows[_i].export_env : "unset", export_rows[_i].all);
    free_env(argv);
}
END_TEST

/* A node's own word on device cgroups: its TaskPlugin and its cgroup.conf
 * as slurm_print_key_pairs() prints it. */
static const struct {
    const char *task_plugin, *cgroup;
    int want;
} devices_rows[] = {
    {"task/cgroup", "CgroupPlugin            = cgroup/v1\nConstrainDevices        = yes\n", DB_DEVICES_CONFINED},
    {"task/cgroup,task/affinity", "ConstrainDevices = Yes", DB_DEVICES_CONFINED},
    {"task/affinity,task/cgroup", "ConstrainDevices = yes", DB_DEVICES_CONFINED},
    {"affinity,cgroup", "ConstrainDevices=yes", DB_DEVICES_CONFINED},
    {"task/cgroup", "ConstrainDevices        = no\n", DB_DEVICES_OPEN},
    {"task/cgroup", "ConstrainCores = yes\nConstrainRAMSpace = yes", DB_DEVICES_OPEN},
    {"task/none", "ConstrainDevices = yes", DB_DEVICES_OPEN},
    {"task/affinity", "", DB_DEVICES_OPEN},
    {NULL, "ConstrainDevices = yes", DB_DEVICES_OPEN},
    {"task/cgroup", NULL, DB_DEVICES_OPEN},
    {"task/cgroupx", "ConstrainDevices = yes", DB_DEVICES_OPEN},
    {"task/cgroup", "ConstrainDevicesX = yes", DB_DEVICES_OPEN},
};

START_TEST(devices_row) {
    ck_assert_msg(db_devices_from_conf(devices_rows[_i].task_plugin, devices_rows[_i].cgroup) == devices_rows[_i].want,
                  "row %d (%s / %s): want %d", _i, devices_rows[_i].task_plugin, devices_rows[_i].cgroup,
                  devices_rows[_i].want);
}
END_TEST

/* srun's word to the nodes: its TaskPlugin (for nodes of dist-bind 0.1.0),
 * the step's --gres-flags and GPUs per task from srun's options (argv
 * without the program) and environment. */
static const struct {
    const char *task_plugin, *args, *env, *want;
} hint_rows[] = {
    {"task/cgroup", "srun -n2", "", "cgroup"},
    {"task/affinity,task/cgroup", "", "", "cgroup"},
    {"affinity,cgroup", "", "", "cgroup"},
    {"task/cgroup", "", "", "cgroup"},
    {"task/none", "", "", "none"},
    {"task/affinity", "", "", "none"},
    {NULL, "", "", "none"},
    {"task/cgroupx", "", "", "none"},
    {"task/cgroup", "srun --gres-flags=allow-task-sharing -n2", "", "cgroup,task-sharing"},
    {"task/cgroup", "srun --gres-flags enforce-binding,allow-task-sharing", "", "cgroup,task-sharing"},
    {"task/cgroup", "srun --gres-flags=enforce-binding", "", "cgroup"},
    {"task/cgroup", "srun --gres-flags", "", "cgroup"},
    {"task/cgroup", "srun", "SLURM_GRES_FLAGS=allow-task-sharing", "cgroup,task-sharing"},
    {"task/none", "srun --gres-flags=allow-task-sharing", "", "none"},
    {"task/cgroup", "srun", "SLURM_GRES_FLAGS=disable-binding", "cgroup"},
    {"task/none", "srun -N2 --gpus-per-task=2", "", "none,gpus-per-task=2"},
    {"task/none", "srun --gpus-per-task a100:4", "", "none,gpus-per-task=4"},
    {"task/none", "srun --tres-per-task=cpu=4,gres/gpu:2", "", "none,gpus-per-task=2"},
    {"task/none", "srun --tres-per-task=cpu=10,gres/gpu:gtx=1", "", "none,gpus-per-task=1"},
    {"task/none", "srun", "SLURM_GPUS_PER_TASK=3", "none,gpus-per-task=3"},
    {"task/none", "srun", "SLURM_TRES_PER_TASK=cpu=10,gres/gpu:gtx=1", "none,gpus-per-task=1"},
    {"task/none", "srun --gpus-per-task=1", "SLURM_GPUS_PER_TASK=3", "none,gpus-per-task=1"},
    /* 25.05+: one count per GPU type; Slurm binds their sum (per_task:2). */
    {"task/none", "srun --gpus-per-task=a100:1,v100:1", "", "none,gpus-per-task=2"},
    {"task/none", "srun --gpus-per-task a100:2,v100:1", "", "none,gpus-per-task=3"},
    {"task/none", "srun --tres-per-task=cpu=2,gres/gpu:a100=1,gres/gpu:v100=1", "", "none,gpus-per-task=2"},
    {"task/none", "srun", "SLURM_GPUS_PER_TASK=a100:1,v100:1", "none,gpus-per-task=2"},
    {"task/none", "srun", "SLURM_TRES_PER_TASK=cpu=2,gres/gpu:a100=1,gres/gpu:v100=1", "none,gpus-per-task=2"},
    /* A part that names no count: no word rather than a wrong one. */
    {"task/none", "srun --gpus-per-task=a100:1,v100", "", "none"},
    {"task/none", "srun --tres-per-task=gres/gpu:a100=1,gres/gpu:v100=x", "", "none"},
    {"task/none", "srun --tres-per-task=gres/gpuish=3", "", "none"},
    {"task/none", "srun --gpus-per-task=x", "", "none"},
    {"task/none", "srun --gpus-per-task=0", "", "none"},
    {"task/cgroup", "srun --gres-flags=allow-task-sharing --gpus-per-task=1", "",
     "cgroup,task-sharing,gpus-per-task=1"},
    /* srun's whole command line: the program's own arguments are not srun's, and each
     * component of srun A : B gets its own section. */
    {"task/none", "srun --gpus-per-task=1 prog --gpus-per-task=3", "", "none,gpus-per-task=1"},
    {"task/none", "srun -n2 prog --gpus-per-task=3", "", "none"},
    {"task/none", "srun -n3 --gpus-per-task=1 prog a : -n2 --gpus-per-task 2 prog", "",
     "none,gpus-per-task=1;none,gpus-per-task=2"},
    {"task/cgroup", "srun --gres-flags=allow-task-sharing -n3 prog : -n2 -- prog", "", "cgroup,task-sharing;cgroup"},
    {"task/none", "srun -n3 prog : -n2 prog : -n1 --tres-per-task=gres/gpu:3 prog", "SLURM_GPUS_PER_TASK=2",
     "none,gpus-per-task=2;none,gpus-per-task=2;none,gpus-per-task=3"},
    {"task/none", "srun -J : prog", "", "none"}, /* the job's name is ":" */
};

START_TEST(srun_hint_row) {
    char **argv = NULL, **env = make_env(hint_rows[_i].env), out[64];
    int argc = make_argv(hint_rows[_i].args, &argv);
    int rc = db_srun_hint(hint_rows[_i].task_plugin, argc, (const char *const *)argv, (const char *const *)env, out,
                          sizeof out);
    ck_assert_msg(rc == 0 && strcmp(out, hint_rows[_i].want) == 0, "row %d (%s / %s / %s): got %s, want %s", _i,
                  hint_rows[_i].task_plugin, hint_rows[_i].args, hint_rows[_i].env, rc ? "error" : out,
                  hint_rows[_i].want);
    ck_assert_msg(db_srun_hint(hint_rows[_i].task_plugin, argc, (const char *const *)argv, (const char *const *)env,
                               out, 4) == -1,
                  "row %d: a buffer too small is an error", _i);
    free_env(argv);
    free_env(env);
}
END_TEST

int main(void) {
    Suite *s = suite_create("parse");
    TCase *tc = tcase_create("rows");
    tcase_add_loop_test(tc, option_row, 0, (int)(sizeof opt_rows / sizeof opt_rows[0]));
    tcase_add_loop_test(tc, config_row, 0, (int)(sizeof conf_rows / sizeof conf_rows[0]));
    tcase_add_loop_test(tc, hostlist_row, 0, (int)(sizeof host_rows / sizeof host_rows[0]));
    tcase_add_test(tc, topology_cache_key);
    tcase_add_test(tc, hostlist_product_wrap);
    tcase_add_test(tc, tasks_per_node_cap);
    tcase_add_test(tc, master_addr_formats);
    tcase_add_test(tc, srun_lookup_needed);
    tcase_add_loop_test(tc, layout_row, 0, (int)(sizeof layout_rows / sizeof layout_rows[0]));
    tcase_add_test(tc, layout_sizes);
    tcase_add_loop_test(tc, async_row, 0, (int)(sizeof async_rows / sizeof async_rows[0]));
    tcase_add_loop_test(tc, export_row, 0, (int)(sizeof export_rows / sizeof export_rows[0]));
    tcase_add_loop_test(tc, devices_row, 0, (int)(sizeof devices_rows / sizeof devices_rows[0]));
    tcase_add_loop_test(tc, srun_hint_row, 0, (int)(sizeof hint_rows / sizeof hint_rows[0]));
    suite_add_tcase(s, tc);
    return run_suite(s);
}
