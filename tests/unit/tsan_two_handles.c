/*
 * Handles on different threads share nothing unsynchronised,
 * run under ThreadSanitizer: two steps of two ranks each, every rank a
 * thread of this one process with its own handle, talking over the TCP
 * bootstrap on loopback, one step with DIST_BIND_DEBUG=1 and one without;
 * meanwhile two more threads make handles from the process's environment
 * (which takes DIST_BIND_SECRET out of it).  Any report from the sanitizer
 * fails the run (TSAN_OPTIONS below); so does a wrong byte.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distbind.h"

const char *__tsan_default_options(void) { return "halt_on_error=1:exitcode=66:second_deadlock_stack=1"; }

#define SECRET "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2"

struct rank_arg {
    int rank, port, debug;
    int ok;
    char msg[512];
};

/* A port nothing listens on, below the kernel's ephemeral range (where the
 * ranks' own listeners go). */
static int free_port(void) {
    for (int tries = 0; tries < 1000; tries++) {
        struct sockaddr_in a;
        int fd = socket(AF_INET, SOCK_STREAM, 0), port = 10000 + rand() % 22000, ok;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((unsigned short)port);
        ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0) close(fd);
        if (ok) return port;
    }
    return -1;
}

static void *one_rank(void *p) {
    struct rank_arg *a = p;
    char rank[16], port[32], step[64], debug[32];
    snprintf(rank, sizeof rank, "RANK=%d", a->rank);
    snprintf(port, sizeof port, "MASTER_PORT=%d", a->port);
    snprintf(step, sizeof step, "DIST_BIND_STEP_KEY=tsan.%d", a->port);
    snprintf(debug, sizeof debug, "DIST_BIND_DEBUG=%d", a->debug);
    const char *env[] = {rank,
                         "WORLD_SIZE=2",
                         "LOCAL_RANK=0",
                         "LOCAL_WORLD_SIZE=1",
                         "NODE_RANK=0",
                         "MASTER_ADDR=127.0.0.1",
                         port,
                         step,
                         debug,
                         "DIST_BIND_BOOTSTRAP=tcp",
                         "DIST_BIND_TIMEOUT=60",
                         "DIST_BIND_SECRET=" SECRET,
                         NULL};
    distbind_t *db = NULL;
    distbind_status st = distbind_create_env(&db, env);
    if (st == DISTBIND_OK) st = distbind_connect(db);
    int v = a->rank == 0 ? 4242 + a->port : -1, all[2] = {0, 0}, mine = 100 + a->rank;
    if (st == DISTBIND_OK) st = distbind_broadcast(db, &v, sizeof v, 0);
    if (st == DISTBIND_OK) st = distbind_allgather(db, &mine, sizeof mine, all);
    if (st == DISTBIND_OK) st = distbind_barrier(db);
    if (st != DISTBIND_OK)
        snprintf(a->msg, sizeof a->msg, "%s: %s", distbind_status_name(st), distbind_last_error(db ? db : NULL));
    else if (v != 4242 + a->port || all[0] != 100 || all[1] != 101)
        snprintf(a->msg, sizeof a->msg, "wrong data: broadcast %d, allgather %d %d", v, all[0], all[1]);
    else
        a->ok = 1;
    distbind_destroy(db);
    return NULL;
}

static void *from_process(void *p) {
    int *ok = p;
    distbind_t *db = NULL;
    *ok = distbind_create(&db) == DISTBIND_OK && distbind_connect(db) == DISTBIND_OK &&
          distbind_barrier(db) == DISTBIND_OK;
    distbind_destroy(db);
    return NULL;
}

int main(void) {
    struct rank_arg ranks[4];
    pthread_t th[6];
    int ok[2] = {0, 0}, fails = 0, p1, p2;
    srand((unsigned)getpid());
    p1 = free_port();
    p2 = free_port();
    if (p1 < 0 || p2 < 0 || p1 == p2) {
        fprintf(stderr, "no free ports\n");
        return 1;
    }
    /* A world of one in the process's environment. */
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "1", 1);
    setenv("LOCAL_RANK", "0", 1);
    setenv("LOCAL_WORLD_SIZE", "1", 1);
    setenv("NODE_RANK", "0", 1);
    setenv("DIST_BIND_SECRET", SECRET, 1);
    setenv("DIST_BIND_DEBUG", "1", 1);
    for (int i = 0; i < 4; i++) {
        memset(&ranks[i], 0, sizeof ranks[i]);
        ranks[i].rank = i % 2;
        ranks[i].port = i < 2 ? p1 : p2;
        ranks[i].debug = i < 2;
        pthread_create(&th[i], NULL, one_rank, &ranks[i]);
    }
    pthread_create(&th[4], NULL, from_process, &ok[0]);
    pthread_create(&th[5], NULL, from_process, &ok[1]);
    for (int i = 0; i < 6; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) {
        printf("%s step %d rank %d %s\n", ranks[i].ok ? "ok  " : "FAIL", i / 2, ranks[i].rank, ranks[i].msg);
        fails += !ranks[i].ok;
    }
    for (int i = 0; i < 2; i++) {
        printf("%s handle %d from the process's environment\n", ok[i] ? "ok  " : "FAIL", i);
        fails += !ok[i];
    }
    if (getenv("DIST_BIND_SECRET")) {
        printf("FAIL DIST_BIND_SECRET is still in the environment\n");
        fails++;
    }
    printf("%s\n", fails ? "FAILED" : "two handles on two threads: no race reported, all data right");
    return fails ? 1 : 0;
}
