// CUDA and NCCL, loaded with dlopen the first time they are needed.  The
// headers are needed to build the GPU parts (DB_HAVE_CUDA); the libraries
// only to run them, so libdistbind loads on CPU-only nodes and reports
// "no GPU" there instead of failing to start.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/exchange.hh"
#include "core/rt.hh"

#ifdef DB_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace db::rt::gpu {

#ifdef DB_HAVE_CUDA
// Only functions whose signature is the same in CUDA 11, 12 and 13, so a
// node with any of those runtimes works (cudaDeviceProp changed size, but
// the uuid, the one field read, sits at offset 256 in all of them).
struct Cudart {
    decltype(&cudaGetDeviceCount) GetDeviceCount;
    decltype(&cudaSetDevice) SetDevice;
    decltype(&cudaDeviceGetPCIBusId) DeviceGetPCIBusId;
    // cudaGetDeviceProperties_v2 where the runtime has it (CUDA 12), else
    // cudaGetDeviceProperties; called with a buffer larger than any
    // runtime's struct.
    cudaError_t (*GetDeviceProperties)(void *prop, int device);
    decltype(&cudaDeviceGetAttribute) DeviceGetAttribute;
    decltype(&cudaGetErrorName) GetErrorName;
    decltype(&cudaGetErrorString) GetErrorString;
    cudaError_t (*Malloc)(void **, size_t);  // cudaMalloc has C++ overloads
    decltype(&cudaFree) Free;
    decltype(&cudaMemcpy) Memcpy;
    decltype(&cudaStreamCreate) StreamCreate;
    decltype(&cudaStreamQuery) StreamQuery;
    decltype(&cudaStreamDestroy) StreamDestroy;
    // "cudaErrorNoDevice: no CUDA-capable device is detected"
    std::string error(cudaError_t e) const;
};

struct Nccl {
    decltype(&ncclGetVersion) GetVersion;
    decltype(&ncclGetUniqueId) GetUniqueId;
    decltype(&ncclCommInitRankConfig) CommInitRankConfig;
    decltype(&ncclCommInitRankScalable) CommInitRankScalable;  // NCCL >= 2.23, else null
    decltype(&ncclCommDestroy) CommDestroy;
    decltype(&ncclCommAbort) CommAbort;
    decltype(&ncclCommGetAsyncError) CommGetAsyncError;
    decltype(&ncclGetErrorString) GetErrorString;
    decltype(&ncclGetLastError) GetLastError;  // null before NCCL 2.13
    decltype(&ncclAllReduce) AllReduce;
    // "unhandled system error: <NCCL's last message>"
    std::string error(ncclResult_t r, ncclComm_t comm) const;
};

// Loaded once per process; null, with the reason in `why`, when not there.
const Cudart *cudart(std::string &why);
const Nccl *nccl(std::string &why);
#endif

// The names tried, in order, to load libcudart for a build against CUDA
// `major` (the headers' major first, then older ones whose runtime has
// every function used, then the unversioned name, then the build's CUDA).
std::vector<std::string> cudart_names(int major, const std::string &cuda_home);

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

// A wait's limit for messages: "2.5 s".
std::string seconds_text(double s);

// The NUMA node of a PCI device from sysfs, -1 when unknown.
int pci_numa_node(const std::string &bus_id);

// What a failing rank tells the others, fixed size so it can travel as it
// is; every string from a peer is checked for its terminator first.
struct Detail {
    char host[64];
    char bus[32];
    char uuid[48];
    char msg[400];
};
Detail make_detail(const std::string &host, const std::string &bus, const std::string &uuid, const std::string &msg);
// A peer's Detail, decoded; throws Failure(PEER) naming `rank` when a
// field has no terminator.
struct DetailText {
    std::string host, bus, uuid, msg;
};
DetailText read_detail(const Detail &d, int rank);
// A status a peer sent; throws Failure(PEER) naming `rank` when it is not
// a distbind_status.
distbind_status peer_status(int32_t s, int rank);

// After an allgather of every rank's status: when some rank failed, the
// first one's Detail is broadcast from it and every rank throws the same
// Failure ("<what> on rank R (host): msg (and N more ranks)").  `prefer`
// (may be empty) marks ranks whose failure is their own rather than a
// consequence of another's: the first of those is reported when there is
// one.  Returns when every status is OK.
void fail_with_first(Exchange &ex, const std::vector<distbind_status> &all, const Detail &mine, const std::string &what,
                     const std::vector<bool> &prefer = {});
// The same, returning the failure (status OK when there is none).
std::pair<distbind_status, std::string> first_failure(Exchange &ex, const std::vector<distbind_status> &all,
                                                      const Detail &mine, const std::string &what,
                                                      const std::vector<bool> &prefer);

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
