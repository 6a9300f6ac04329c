// CUDA and NCCL, loaded with dlopen the first time they are needed.  The
// headers are needed to build the GPU parts (DB_HAVE_CUDA); the libraries
// only to run them, so libdistbind loads on CPU-only nodes and reports
// "no GPU" there instead of failing to start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rt.hh"

#ifdef DB_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace db::rt::gpu {

#ifdef DB_HAVE_CUDA
struct Cudart {
    decltype(&cudaGetDeviceCount) GetDeviceCount;
    decltype(&cudaSetDevice) SetDevice;
    decltype(&cudaGetDevice) GetDevice;
    decltype(&cudaDeviceGetPCIBusId) DeviceGetPCIBusId;
    decltype(&cudaGetErrorName) GetErrorName;
    decltype(&cudaGetErrorString) GetErrorString;
    cudaError_t (*Malloc)(void **, size_t);  // cudaMalloc has C++ overloads
    decltype(&cudaFree) Free;
    decltype(&cudaMemcpy) Memcpy;
    decltype(&cudaStreamCreate) StreamCreate;
    decltype(&cudaStreamSynchronize) StreamSynchronize;
    decltype(&cudaStreamQuery) StreamQuery;
    decltype(&cudaStreamDestroy) StreamDestroy;
    decltype(&cudaDeviceSynchronize) DeviceSynchronize;
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
    decltype(&ncclGetLastError) GetLastError;
    decltype(&ncclAllReduce) AllReduce;
    // "unhandled system error: <NCCL's last message>"
    std::string error(ncclResult_t r, ncclComm_t comm) const;
};

// Loaded once per process; null, with the reason in `why`, when not there.
const Cudart *cudart(std::string &why);
const Nccl *nccl(std::string &why);
#endif

bool built_with_cuda();

// What one rank found out about its GPU.  Fixed size: it travels in an
// allgather between ranks running the same library.
struct Probe {
    int32_t status;  // distbind_status of this rank's own checks
    int32_t device;  // the ordinal asked for
    int32_t count;   // devices CUDA sees, -1 when unknown
    int32_t numa;    // the GPU's NUMA node, -1 when unknown
    char host[64];
    char bus[32];    // PCI bus id, "" when unknown
    char msg[400];   // why status is not OK
};

// Check the ordinal against what CUDA sees and make it current.
Probe probe(const Identity &id, const Env &env, bool set_device);

// Across ranks: the first rank that failed its own checks, then two ranks
// on one GPU.  Throws Failure naming them; returns when all is well.
void check_probes(const std::vector<Probe> &all);

// Two ranks with the same (host, bus id): "" when none, else the message.
std::string find_duplicate(const std::vector<Probe> &all);

// The NUMA node of a PCI device from sysfs, -1 when unknown.
int pci_numa_node(const std::string &bus_id);

// NCCL bring-up over the exchange; returns an ncclComm_t (as void *).
void *nccl_init(Exchange &ex, const Identity &id, const Params &p, const void *config);
void nccl_destroy(void *comm);
// The handle's communicator, which the handle forgets (capi.cc): for
// dist-bind-check, which aborts one that does not finish its work, after
// which distbind_destroy must not destroy it again.  nullptr when none.
void *take_nccl_comm(distbind_t *db);

// The ranks that make the unique ids: the first rank of each root's block.
std::vector<int> nccl_roots(int world, int ranks_per_root);

}  // namespace db::rt::gpu
