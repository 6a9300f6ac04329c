/*
 * Internal functions of libdistbind reached from its C unit tests
 * (runtime_hooks.cc, linked with the library's objects into the test
 * only: nothing here is in the shipped library).
 */
#ifndef DISTBIND_RUNTIME_HOOKS_H
#define DISTBIND_RUNTIME_HOOKS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Two of n ranks with one GPU UUID (16 bytes each; all zero = unknown)?
 * 1 with the two ranks, or 0. */
int db_rt_test_find_duplicate(int n, const unsigned char (*uuids)[16], int *a, int *b);
/* The ranks that make NCCL unique ids; returns how many (at most max). */
int db_rt_test_nccl_roots(int world, int per_root, int *out, int max);
/* The names tried to load libcudart for CUDA `major`, ';'-separated. */
void db_rt_test_cudart_names(int major, char *out, size_t len);
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

/* What other ranks send, as this rank (rank 0 of n) receives it, through a
 * scripted exchange: rank r's status is statuses[r] and its GPU UUID is
 * uuids[r]; a rank that broadcasts its details sends host "host<r>" (or
 * `hosts[r]` when hosts is not NULL), and leaves the field named by
 * `unterminated` ("host", "bus", "uuid", "msg"; NULL for none) without
 * its terminating NUL.
 *   db_rt_test_peer_probes: set_device's checks of every rank's probe;
 *   db_rt_test_peer_nccl:   NCCL bring-up's exchange of statuses and ids.
 * Each returns the distbind_status they end with (0: all good) and the
 * message. */
int db_rt_test_peer_probes(int n, const int *statuses, const unsigned char (*uuids)[16], const char *const *hosts,
                           const char *unterminated, char *msg, size_t len);
int db_rt_test_peer_nccl(int n, const int *statuses, const char *unterminated, char *msg, size_t len);

/* Bytes one rank receives, and collectives it takes part in, when all is
 * well: set_device's check of every rank's probe, and NCCL bring-up's
 * exchange (statuses and ids) with `per_root` ranks per root, in a world
 * of `world` played by a scripted exchange.  0 when built without CUDA. */
int db_rt_test_bringup_traffic(int world, int per_root, long *probe_bytes, int *probe_collectives, long *nccl_bytes,
                               int *nccl_collectives);

/* A child's Up message (body bytes) in a gather that needs `expected`
 * bytes from its subtree: 1 when taken, 0 when refused, with why in out. */
int db_rt_test_up(const unsigned char *body, size_t n, unsigned long long expected, char *out, size_t len);
/* A Missing message (body bytes) in a world of `world`: how many ranks it
 * names, or -1 when refused. */
int db_rt_test_missing(const unsigned char *body, size_t n, int world);

/* Why DIST_BIND_BOOTSTRAP=auto must not take `pmi` ("pmix", "pmi2") beside
 * an MPI library whose version string is `version` (NULL: none in the
 * process), MPI_Init done or not: 1 with the reason in out, 0 when it may.
 * db_rt_test_mpi_seen: whether this process has an MPI library. */
int db_rt_test_pmi_conflict(const char *version, int initialized, const char *pmi, char *out, size_t len);
int db_rt_test_mpi_seen(void);

#ifdef __cplusplus
}
#endif
#endif
