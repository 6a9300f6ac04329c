// The GPU side of libdistbind: the device choice checked across the step
// (device.cc), NCCL's bring-up (nccl.cc) and the checked all-reduce
// (nccl_check.cc), over whichever exchange the handle has.  CUDA and NCCL
// are loaded at run time (loaders.hh), so libdistbind loads on CPU-only
// nodes and reports "no GPU" there instead of failing to start.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/exchange.hh"
#include "core/rt.hh"

#ifdef DB_HAVE_CUDA
#include <nccl.h>
#endif

namespace db::rt::gpu {

// What CUDA says about this rank's device, without making it current (no
// cudaSetDevice, so no context: a GPU in exclusive-process mode held by
// another rank of the step is reported as shared, not as busy).
struct Probe {
    distbind_status status = DISTBIND_OK;
    int device = -1;
    int count = -1;  // devices CUDA sees, -1 when CUDA could not tell
    int numa = -1;
    std::string bus, uuid, msg;
    std::array<uint8_t, 16> uuid_bytes{};  // all zero when unknown
};
Probe probe(const Identity &id, const Env &env);

// COLLECTIVE, set_device's first part: every rank's probe, then two ranks
// on one GPU; throws the same Failure on every rank.
void agree_on_probes(Exchange &ex, const Identity &id, const Probe &p);

// COLLECTIVE: check the ordinal on every rank, then that no two ranks use
// one GPU (by UUID), then cudaSetDevice on every rank; every rank gets the
// same status.  Returns this rank's PCI bus id.
std::string set_device(Exchange &ex, const Identity &id, const Env &env);

// Two ranks with one GPU UUID (all-zero UUIDs are unknown and never
// match): the first such pair, or {-1, -1}.
std::pair<int, int> find_duplicate(const std::vector<std::array<uint8_t, 16>> &uuids);

// "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6".
std::string format_uuid(const std::array<uint8_t, 16> &u);

// The NUMA node of a PCI device from sysfs, -1 when unknown.
int pci_numa_node(const std::string &bus_id);

// NCCL bring-up over the exchange; returns an ncclComm_t (as void *).
// `blocking` applies to a NULL config: -1 NCCL's default, 0 or 1.
// *nonblocking tells whether the communicator is non-blocking.
void *nccl_init(Exchange &ex, const Identity &id, const Params &p, const void *config, int blocking, bool *nonblocking);
#ifdef DB_HAVE_CUDA
// COLLECTIVE, nccl_init's exchange: every rank's status (this rank's is
// `st`, with `why`), then each root's id (this rank's is `uid` when it is
// one), in root order.  Throws the same Failure on every rank when one
// cannot go on.
std::vector<ncclUniqueId> share_ids(Exchange &ex, const Identity &id, const std::vector<int> &roots, distbind_status st,
                                    const std::string &why, const ncclUniqueId &uid);
#endif
void nccl_destroy(void *comm);
void nccl_abort(void *comm);

// COLLECTIVE: the checked, timed all-reduce of distbind_nccl_allreduce_check
// (nccl_check.cc).  `comm` is aborted and set to null when a round does
// not finish.  Returns the seconds per timed round; throws Failure.
double allreduce_check(Exchange &ex, const Identity &id, const Params &p, void *&comm, bool nonblocking, size_t bytes,
                       int iters);

// The ranks that make the unique ids: the first rank of each root's block.
std::vector<int> nccl_roots(int world, int ranks_per_root);

}  // namespace db::rt::gpu
