// Device choice: the ordinal comes from discovery (DIST_BIND_DEVICE, else
// the local rank); here it is checked against what CUDA sees, made current,
// and compared across the step, so two ranks on one GPU are caught before
// NCCL hangs or fails on them.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>

#include "gpu.hh"
#include "text.hh"

namespace db::rt::gpu {

namespace {

void copy_str(char *dst, size_t n, const std::string &s) { db::copy_out(s, dst, n); }

#ifdef DB_HAVE_CUDA
#ifndef DB_CUDA_HOME
#define DB_CUDA_HOME "/usr/local/cuda"
#endif

// Try the soname the headers belong to, then any, then the build's CUDA.
void *open_lib(const std::vector<std::string> &names, std::string &why) {
    for (const std::string &n : names) {
        if (void *h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
        why = dlerror();
    }
    return nullptr;
}

template <typename T>
bool sym(void *dl, T &out, const char *name, std::string &why, bool required = true) {
    out = reinterpret_cast<T>(dlsym(dl, name));
    if (!out && required) why = std::string("has no ") + name;
    return out || !required;
}
#endif

}  // namespace

bool built_with_cuda() {
#ifdef DB_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

#ifdef DB_HAVE_CUDA

std::string Cudart::error(cudaError_t e) const {
    return std::string(GetErrorName(e)) + ": " + GetErrorString(e);
}

std::string Nccl::error(ncclResult_t r, ncclComm_t comm) const {
    std::string out = GetErrorString(r);
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
        std::string maj = std::to_string(CUDART_VERSION / 1000);
        void *dl = open_lib({"libcudart.so." + maj, "libcudart.so", DB_CUDA_HOME "/lib64/libcudart.so." + maj}, reason);
        if (!dl) {
            reason = "cannot load libcudart: " + reason;
            return;
        }
        ok = sym(dl, api.GetDeviceCount, "cudaGetDeviceCount", reason) && sym(dl, api.SetDevice, "cudaSetDevice", reason) &&
             sym(dl, api.GetDevice, "cudaGetDevice", reason) &&
             sym(dl, api.DeviceGetPCIBusId, "cudaDeviceGetPCIBusId", reason) &&
             sym(dl, api.GetErrorName, "cudaGetErrorName", reason) &&
             sym(dl, api.GetErrorString, "cudaGetErrorString", reason) && sym(dl, api.Malloc, "cudaMalloc", reason) &&
             sym(dl, api.Free, "cudaFree", reason) && sym(dl, api.Memcpy, "cudaMemcpy", reason) &&
             sym(dl, api.StreamCreate, "cudaStreamCreate", reason) &&
             sym(dl, api.StreamSynchronize, "cudaStreamSynchronize", reason) &&
             sym(dl, api.StreamQuery, "cudaStreamQuery", reason) &&
             sym(dl, api.StreamDestroy, "cudaStreamDestroy", reason) &&
             sym(dl, api.DeviceSynchronize, "cudaDeviceSynchronize", reason);
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
        void *dl = open_lib({"libnccl.so." + maj, "libnccl.so", DB_CUDA_HOME "/lib64/libnccl.so." + maj}, reason);
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

int pci_numa_node(const std::string &bus_id) {
    if (bus_id.empty()) return -1;
    // CUDA writes "00000000:3B:00.0" or "0000:3B:00.0"; sysfs wants
    // "0000:3b:00.0".
    std::string b = bus_id;
    size_t colon = b.find(':');
    if (colon != std::string::npos && colon > 4) b = b.substr(colon - 4);
    std::transform(b.begin(), b.end(), b.begin(), [](unsigned char c) { return std::tolower(c); });
    std::ifstream f("/sys/bus/pci/devices/" + b + "/numa_node");
    int n = -1;
    if (!(f >> n)) return -1;
    return n;
}

Probe probe(const Identity &id, const Env &env, bool set_device) {
    Probe p{};
    p.status = DISTBIND_OK;
    p.device = id.device;
    p.count = -1;
    p.numa = -1;
    copy_str(p.host, sizeof p.host, id.host);
    auto fail_with = [&](distbind_status st, const std::string &m) {
        p.status = st;
        copy_str(p.msg, sizeof p.msg, m);
        return p;
    };
    const char *vis = env.get("CUDA_VISIBLE_DEVICES");
    std::string visible = vis ? quoted("CUDA_VISIBLE_DEVICES", vis) : "CUDA_VISIBLE_DEVICES unset";
#ifndef DB_HAVE_CUDA
    (void)set_device;
    return fail_with(DISTBIND_ERR_UNAVAILABLE, "this libdistbind was built without CUDA (no cuda_runtime_api.h/nccl.h)");
#else
    std::string why;
    const Cudart *cu = cudart(why);
    if (!cu) return fail_with(DISTBIND_ERR_UNAVAILABLE, why);
    int n = 0;
    cudaError_t e = cu->GetDeviceCount(&n);
    if (e != cudaSuccess) return fail_with(DISTBIND_ERR_NO_GPU, "no usable GPU: cudaGetDeviceCount: " + cu->error(e));
    p.count = n;
    if (n == 0) return fail_with(DISTBIND_ERR_NO_GPU, "no usable GPU: CUDA sees no device (" + visible + ")");
    if (id.device >= n)
        return fail_with(DISTBIND_ERR_DEVICE, "device " + std::to_string(id.device) + " (from " + id.device_from +
                                                  ") does not exist: CUDA sees " + std::to_string(n) + " device" +
                                                  (n > 1 ? "s" : "") + " (" + visible + ")");
    if (set_device) {
        e = cu->SetDevice(id.device);
        if (e != cudaSuccess)
            return fail_with(DISTBIND_ERR_DEVICE, "cudaSetDevice(" + std::to_string(id.device) + "): " + cu->error(e));
    }
    char bus[32] = "";
    e = cu->DeviceGetPCIBusId(bus, sizeof bus, id.device);
    if (e != cudaSuccess)
        return fail_with(DISTBIND_ERR_DEVICE, "cudaDeviceGetPCIBusId(" + std::to_string(id.device) + "): " + cu->error(e));
    copy_str(p.bus, sizeof p.bus, bus);
    p.numa = pci_numa_node(bus);
    return p;
#endif
}

std::string find_duplicate(const std::vector<Probe> &all) {
    std::map<std::pair<std::string, std::string>, size_t> seen;
    for (size_t r = 0; r < all.size(); r++) {
        const Probe &p = all[r];
        if (p.status != DISTBIND_OK || !p.bus[0]) continue;
        auto key = std::make_pair(std::string(p.host), std::string(p.bus));
        auto [it, fresh] = seen.emplace(key, r);
        if (fresh) continue;
        const Probe &q = all[it->second];
        return "ranks " + std::to_string(it->second) + " and " + std::to_string(r) + " would both use GPU " + p.bus +
               " on " + p.host + " (device " + std::to_string(q.device) + " and device " + std::to_string(p.device) +
               "): each rank needs a GPU of its own; check CUDA_VISIBLE_DEVICES and DIST_BIND_DEVICE, or use "
               "srun --dist-bind";
    }
    return "";
}

void check_probes(const std::vector<Probe> &all) {
    size_t bad = 0, first = all.size();
    for (size_t r = 0; r < all.size(); r++)
        if (all[r].status != DISTBIND_OK) {
            if (first == all.size()) first = r;
            bad++;
        }
    if (bad) {
        const Probe &p = all[first];
        std::string more = bad > 1 ? " (and " + std::to_string(bad - 1) + " more rank" + (bad > 2 ? "s" : "") + ")" : "";
        fail(static_cast<distbind_status>(p.status),
             "rank " + std::to_string(first) + " on " + p.host + ": " + p.msg + more);
    }
    std::string dup = find_duplicate(all);
    if (!dup.empty()) fail(DISTBIND_ERR_DEVICE, dup);
}

}  // namespace db::rt::gpu
