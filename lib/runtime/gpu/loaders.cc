// libcudart and libnccl, loaded with dlopen the first time they are needed
// (loaders.hh).
#include "gpu/loaders.hh"

#include <mutex>

#include "core/dl.hh"

#ifndef DB_CUDA_HOME
#define DB_CUDA_HOME "/usr/local/cuda"
#endif

namespace db::rt::gpu {

std::vector<std::string> cudart_names(int major, const std::string &cuda_home) {
    std::vector<std::string> out;
    // cudaDeviceGetPCIBusId, cudaDeviceGetAttribute, cudaGetDeviceProperties
    // and the rest exist with these signatures since CUDA 11.
    for (int m = major; m >= 11; m--) out.push_back("libcudart.so." + std::to_string(m));
    out.push_back("libcudart.so");
    out.push_back(cuda_home + "/lib64/libcudart.so." + std::to_string(major));
    return out;
}

#ifdef DB_HAVE_CUDA

namespace {

// A function of the library: `why` says which one is missing, unless it
// is optional (newer NCCLs only).
template <typename T>
bool sym(void *dl, T &out, const char *name, std::string &why, bool required = true) {
    if (find_sym(dl, out, name) || !required) return true;
    why = std::string("has no ") + name;
    return false;
}

}  // namespace

std::string Cudart::error(cudaError_t e) const {
    const char *name = GetErrorName(e), *text = GetErrorString(e);
    return std::string(name ? name : "cudaError " + std::to_string(static_cast<int>(e))) + ": " + (text ? text : "?");
}

std::string Nccl::error(ncclResult_t r, ncclComm_t comm) const {
    const char *s = GetErrorString(r);
    std::string out = s ? s : "ncclResult " + std::to_string(static_cast<int>(r));
    const char *last = GetLastError ? GetLastError(comm) : nullptr;
    if (last && *last) out += std::string(": ") + last;
    return out;
}

const Cudart *cudart(std::string &why) {
    static std::once_flag once;
    static Cudart api;
    static bool ok = false;
    static std::string reason;
    std::call_once(once, [] {
        void *dl = open_first(cudart_names(CUDART_VERSION / 1000, DB_CUDA_HOME), RTLD_NOW | RTLD_LOCAL, reason);
        if (!dl) {
            reason = "cannot load libcudart: " + reason;
            return;
        }
        ok = sym(dl, api.GetDeviceCount, "cudaGetDeviceCount", reason) &&
             sym(dl, api.SetDevice, "cudaSetDevice", reason) &&
             sym(dl, api.DeviceGetPCIBusId, "cudaDeviceGetPCIBusId", reason) &&
             sym(dl, api.DeviceGetAttribute, "cudaDeviceGetAttribute", reason) &&
             sym(dl, api.GetErrorName, "cudaGetErrorName", reason) &&
             sym(dl, api.GetErrorString, "cudaGetErrorString", reason) && sym(dl, api.Malloc, "cudaMalloc", reason) &&
             sym(dl, api.Free, "cudaFree", reason) && sym(dl, api.Memcpy, "cudaMemcpy", reason) &&
             sym(dl, api.StreamCreate, "cudaStreamCreate", reason) &&
             sym(dl, api.StreamQuery, "cudaStreamQuery", reason) &&
             sym(dl, api.StreamDestroy, "cudaStreamDestroy", reason);
        // CUDA 12 kept the old layout under the old name; any layout will do.
        if (ok) {
            sym(dl, api.GetDeviceProperties, "cudaGetDeviceProperties_v2", reason, false);
            if (!api.GetDeviceProperties) ok = sym(dl, api.GetDeviceProperties, "cudaGetDeviceProperties", reason);
        }
        if (!ok) reason = "libcudart " + reason;
    });
    why = reason;
    return ok ? &api : nullptr;
}

const Nccl *nccl(std::string &why) {
    static std::once_flag once;
    static Nccl api;
    static bool ok = false;
    static std::string reason;
    std::call_once(once, [] {
        std::string maj = std::to_string(NCCL_MAJOR);
        void *dl = open_first({"libnccl.so." + maj, "libnccl.so", DB_CUDA_HOME "/lib64/libnccl.so." + maj},
                              RTLD_NOW | RTLD_LOCAL, reason);
        if (!dl) {
            reason = "cannot load libnccl: " + reason;
            return;
        }
        ok = sym(dl, api.GetVersion, "ncclGetVersion", reason) && sym(dl, api.GetUniqueId, "ncclGetUniqueId", reason) &&
             sym(dl, api.CommInitRankConfig, "ncclCommInitRankConfig", reason) &&
             sym(dl, api.CommInitRankScalable, "ncclCommInitRankScalable", reason, false) &&
             sym(dl, api.CommDestroy, "ncclCommDestroy", reason) && sym(dl, api.CommAbort, "ncclCommAbort", reason) &&
             sym(dl, api.CommGetAsyncError, "ncclCommGetAsyncError", reason) &&
             sym(dl, api.GetErrorString, "ncclGetErrorString", reason) &&
             sym(dl, api.GetLastError, "ncclGetLastError", reason, false) &&
             sym(dl, api.AllReduce, "ncclAllReduce", reason);
        if (!ok) reason = "libnccl " + reason;
    });
    why = reason;
    return ok ? &api : nullptr;
}

#endif

}  // namespace db::rt::gpu
