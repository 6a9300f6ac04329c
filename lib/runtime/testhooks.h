/*
 * Internal functions of libdistbind exposed to its C unit tests (they link
 * the objects directly; the shared library does not export these).
 */
#ifndef DISTBIND_TESTHOOKS_H
#define DISTBIND_TESTHOOKS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Two of n ranks on one (host, bus id)?  1 and the message in out, or 0. */
int db_rt_test_find_duplicate(int n, const char *const *hosts, const char *const *bus, const int *devices,
                              char *out, size_t len);
/* The ranks that make NCCL unique ids; returns how many (at most max). */
int db_rt_test_nccl_roots(int world, int per_root, int *out, int max);
/* "1, 3, 5-9" */
void db_rt_test_rank_list(const int *ranks, int n, char *out, size_t len);
/* Encode n bytes for PMI2, decode again; 1 when the round trip is exact and
 * the text uses only URL-safe characters. */
int db_rt_test_b64_roundtrip(const unsigned char *p, size_t n);
/* DIST_BIND_TIMEOUT parsing: seconds, or -1 with the message in err. */
double db_rt_test_seconds(const char *s, char *err, size_t len);
/* The helper thread of PMI2 and the other unbounded calls (run_bounded):
 * work that throws Failure(PEER, "thrown on the helper thread") there.
 * 1 with the status and message that reached the caller, 0 if none did. */
int db_rt_test_bounded_throw(int *status, char *msg, size_t len);
/* Work still blocked at the deadline: 1 when the caller was told so and the
 * work, released afterwards, finished on its own; and work that finishes
 * in time gives its result. */
int db_rt_test_bounded_late(void);

/* A child's Up message (body bytes) in a gather that needs `expected`
 * bytes from its subtree: 1 when taken, 0 when refused, with why in out. */
int db_rt_test_up(const unsigned char *body, size_t n, unsigned long long expected, char *out, size_t len);
/* A Missing message (body bytes) in a world of `world`: how many ranks it
 * names, or -1 when refused. */
int db_rt_test_missing(const unsigned char *body, size_t n, int world);

#ifdef __cplusplus
}
#endif
#endif
