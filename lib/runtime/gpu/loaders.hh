// CUDA and NCCL, loaded with dlopen the first time they are needed.  The
// headers are needed to build the GPU parts (DB_HAVE_CUDA); the libraries
// only to run them.
#pragma once

#include <string>
#include <vector>

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

}  // namespace db::rt::gpu
