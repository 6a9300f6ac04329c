// Device choice: the ordinal comes from discovery (DIST_BIND_DEVICE, else
// the local rank); here it is checked against what CUDA sees, compared
// across the step by GPU UUID (exact, whatever the host names), and only
// then made current, so two ranks on one GPU are named as such even where
// the GPU's exclusive-process mode would let only one of them in.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "gpu/gpu.hh"
#include "text.hh"

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

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", s);
    return buf;
}

std::string format_uuid(const std::array<uint8_t, 16> &u) {
    char s[48];
    std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                  u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    return s;
}

int pci_numa_node(const std::string &bus_id) {
    if (bus_id.empty()) return -1;
    // CUDA writes "00000000:3B:00.0" or "0000:3B:00.0"; sysfs wants
    // "0000:3b:00.0".
    std::string b = bus_id;
    size_t colon = b.find(':');
    if (colon != std::string::npos && colon > 4) b = b.substr(colon - 4);
    std::transform(b.begin(), b.end(), b.begin(), [](unsigned char c) { return std::tolower(c); });
    if (b.find('/') != std::string::npos) return -1;
    std::ifstream f("/sys/bus/pci/devices/" + b + "/numa_node");
    int n = -1;
    if (!(f >> n)) return -1;
    return n;
}

Detail make_detail(const std::string &host, const std::string &bus, const std::string &uuid, const std::string &msg) {
    Detail d{};
    db::copy_out(host, d.host, sizeof d.host);
    db::copy_out(bus, d.bus, sizeof d.bus);
    db::copy_out(uuid, d.uuid, sizeof d.uuid);
    db::copy_out(msg, d.msg, sizeof d.msg);
    return d;
}

namespace {

std::string field(const char *p, size_t n, const char *name, int rank) {
    const void *end = std::memchr(p, '\0', n);
    if (!end)
        fail(DISTBIND_ERR_PEER, "rank " + std::to_string(rank) + " sent a malformed message (its " + name +
                                    " has no end within " + std::to_string(n) +
                                    " bytes): the ranks run different libdistbind builds, or its memory is corrupt");
    return std::string(p, static_cast<const char *>(end));
}

}  // namespace

DetailText read_detail(const Detail &d, int rank) {
    return {field(d.host, sizeof d.host, "host name", rank), field(d.bus, sizeof d.bus, "bus id", rank),
            field(d.uuid, sizeof d.uuid, "GPU UUID", rank), field(d.msg, sizeof d.msg, "message", rank)};
}

distbind_status peer_status(int32_t s, int rank) {
    if (s < DISTBIND_OK || s > DISTBIND_ERR_INTERNAL)
        fail(DISTBIND_ERR_PEER, "rank " + std::to_string(rank) + " sent status " + std::to_string(s) +
                                    ", which is not a distbind_status: the ranks run different libdistbind builds, "
                                    "or its memory is corrupt");
    return static_cast<distbind_status>(s);
}

std::pair<distbind_status, std::string> first_failure(Exchange &ex, const std::vector<distbind_status> &all,
                                                      const Detail &mine, const std::string &what,
                                                      const std::vector<bool> &prefer) {
    size_t bad = 0, first = all.size();
    auto preferred = [&](size_t r) { return r < prefer.size() && prefer[r]; };
    for (size_t r = 0; r < all.size(); r++)
        if (all[r] != DISTBIND_OK) {
            bad++;
            if (first == all.size() || (preferred(r) && !preferred(first))) first = r;
        }
    if (!bad) return {DISTBIND_OK, ""};
    Detail d = mine;
    ex.broadcast(&d, sizeof d, static_cast<int>(first));
    DetailText t = read_detail(d, static_cast<int>(first));
    std::string more = bad > 1 ? " (and " + std::to_string(bad - 1) + " more rank" + (bad > 2 ? "s" : "") + ")" : "";
    return {all[first], what + "rank " + std::to_string(first) + " on " + t.host + ": " + t.msg + more};
}

void fail_with_first(Exchange &ex, const std::vector<distbind_status> &all, const Detail &mine, const std::string &what,
                     const std::vector<bool> &prefer) {
    auto [st, msg] = first_failure(ex, all, mine, what, prefer);
    if (st != DISTBIND_OK) fail(st, msg);
}

std::pair<int, int> find_duplicate(const std::vector<std::array<uint8_t, 16>> &uuids) {
    static const std::array<uint8_t, 16> unknown{};
    std::map<std::array<uint8_t, 16>, int> seen;
    for (size_t r = 0; r < uuids.size(); r++) {
        if (uuids[r] == unknown) continue;
        auto [it, fresh] = seen.emplace(uuids[r], static_cast<int>(r));
        if (!fresh) return {it->second, static_cast<int>(r)};
    }
    return {-1, -1};
}

#ifndef DB_HAVE_CUDA

Probe probe(const Identity &id, const Env &) {
    Probe p;
    p.device = id.device;
    p.status = DISTBIND_ERR_UNAVAILABLE;
    p.msg = "this libdistbind was built without CUDA (no cuda_runtime_api.h/nccl.h)";
    return p;
}

#else

namespace {

// Try each name; keep every failure, so the message says why the first
// (the runtime the headers belong to) did not load, not just the last.
void *open_lib(const std::vector<std::string> &names, std::string &why) {
    std::string tried;
    for (const std::string &n : names) {
        if (void *h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
        const char *e = dlerror();
        tried += (tried.empty() ? "" : "; ") + std::string(e ? e : n + ": not loaded");
    }
    why = tried;
    return nullptr;
}

template <typename T>
bool sym(void *dl, T &out, const char *name, std::string &why, bool required = true) {
    out = reinterpret_cast<T>(dlsym(dl, name));
    if (!out && required) why = std::string("has no ") + name;
    return out || !required;
}

// Big enough for any runtime's cudaDeviceProp (CUDA 13's is about 1 KiB).
constexpr size_t kPropBytes = 16384;
static_assert(sizeof(cudaDeviceProp) <= kPropBytes / 4, "cudaDeviceProp grew: enlarge kPropBytes");
static_assert(offsetof(cudaDeviceProp, uuid) == 256, "cudaDeviceProp.uuid moved");

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
        void *dl = open_lib(cudart_names(CUDART_VERSION / 1000, DB_CUDA_HOME), reason);
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

Probe probe(const Identity &id, const Env &env) {
    Probe p;
    p.device = id.device;
    auto fail_with = [&](distbind_status st, const std::string &m) {
        p.status = st;
        p.msg = m;
        return p;
    };
    const char *vis = env.get("CUDA_VISIBLE_DEVICES");
    std::string visible = vis ? quoted("CUDA_VISIBLE_DEVICES", vis) : "CUDA_VISIBLE_DEVICES unset";
    std::string why;
    const Cudart *cu = cudart(why);
    if (!cu) return fail_with(DISTBIND_ERR_UNAVAILABLE, why);
    int n = 0;
    cudaError_t e = cu->GetDeviceCount(&n);
    // No device is an answer (the driver works and shows none); no driver
    // is not.
    if (e == cudaErrorNoDevice)
        n = 0;
    else if (e != cudaSuccess)
        return fail_with(DISTBIND_ERR_NO_GPU, "no usable GPU: cudaGetDeviceCount: " + cu->error(e));
    p.count = n;
    if (n == 0) return fail_with(DISTBIND_ERR_NO_GPU, "no usable GPU: CUDA sees no device (" + visible + ")");
    if (id.device >= n)
        return fail_with(DISTBIND_ERR_DEVICE, "device " + std::to_string(id.device) + " (from " + id.device_from +
                                                  ") does not exist: CUDA sees " + std::to_string(n) + " device" +
                                                  (n > 1 ? "s" : "") + " (" + visible + ")");
    char bus[32] = "";
    e = cu->DeviceGetPCIBusId(bus, sizeof bus, id.device);
    if (e != cudaSuccess)
        return fail_with(DISTBIND_ERR_DEVICE,
                         "cudaDeviceGetPCIBusId(" + std::to_string(id.device) + "): " + cu->error(e));
    bus[sizeof bus - 1] = '\0';
    p.bus = bus;
    p.numa = pci_numa_node(p.bus);
    auto prop = std::make_unique<unsigned char[]>(kPropBytes);
    e = cu->GetDeviceProperties(prop.get(), id.device);
    if (e != cudaSuccess)
        return fail_with(DISTBIND_ERR_DEVICE,
                         "cudaGetDeviceProperties(" + std::to_string(id.device) + "): " + cu->error(e));
    std::memcpy(p.uuid_bytes.data(), prop.get() + offsetof(cudaDeviceProp, uuid), 16);
    p.uuid = format_uuid(p.uuid_bytes);
    return p;
}

#endif

namespace {

// Only after every rank's device is known to be its own.
distbind_status make_current(const Identity &id, std::string &msg) {
#ifdef DB_HAVE_CUDA
    std::string why;
    const Cudart *cu = cudart(why);
    cudaError_t e = cu->SetDevice(id.device);
    if (e == cudaSuccess) return DISTBIND_OK;
    msg = "cudaSetDevice(" + std::to_string(id.device) + "): " + cu->error(e);
    int mode = -1;
    if (e == cudaErrorDevicesUnavailable &&
        cu->DeviceGetAttribute(&mode, cudaDevAttrComputeMode, id.device) == cudaSuccess) {
        if (mode == cudaComputeModeExclusiveProcess)
            msg +=
                " (the GPU is in exclusive-process compute mode and another process, outside this step, is "
                "using it)";
        else if (mode == cudaComputeModeProhibited)
            msg += " (the GPU is in prohibited compute mode: no process may use it)";
    }
    return DISTBIND_ERR_DEVICE;
#else
    (void)id;
    msg = "built without CUDA";
    return DISTBIND_ERR_UNAVAILABLE;
#endif
}

}  // namespace

void agree_on_probes(Exchange &ex, const Identity &id, const Probe &p) {
    // What travels when all is well: a status and a UUID per rank.
    struct Compact {
        int32_t status;
        int32_t device;
        uint8_t uuid[16];
    };
    Compact mine{p.status, p.device, {}};
    std::memcpy(mine.uuid, p.uuid_bytes.data(), 16);
    size_t n = static_cast<size_t>(id.world);
    std::vector<Compact> all(n);
    ex.allgather(&mine, sizeof mine, all.data());
    std::vector<distbind_status> st(n);
    std::vector<std::array<uint8_t, 16>> uuids(n);
    for (size_t r = 0; r < n; r++) {
        st[r] = peer_status(all[r].status, static_cast<int>(r));
        std::memcpy(uuids[r].data(), all[r].uuid, 16);
    }
    Detail me = make_detail(id.host, p.bus, p.uuid, p.msg);
    fail_with_first(ex, st, me, "");

    auto [a, b] = find_duplicate(uuids);
    if (a < 0) return;
    Detail da = me, dbb = me;
    ex.broadcast(&da, sizeof da, a);
    ex.broadcast(&dbb, sizeof dbb, b);
    DetailText ta = read_detail(da, a), tb = read_detail(dbb, b);
    std::string where = ta.host == tb.host ? "on " + ta.host
                                           : "on " + ta.host + " (rank " + std::to_string(a) + ") and " + tb.host +
                                                 " (rank " + std::to_string(b) + "): one GPU under two host names";
    fail(DISTBIND_ERR_DEVICE, "ranks " + std::to_string(a) + " and " + std::to_string(b) + " would both use GPU " +
                                  ta.uuid + " (" + ta.bus + ") " + where + " (device " +
                                  std::to_string(all[static_cast<size_t>(a)].device) + " and device " +
                                  std::to_string(all[static_cast<size_t>(b)].device) +
                                  "): each rank needs a GPU of its own; check CUDA_VISIBLE_DEVICES and "
                                  "DIST_BIND_DEVICE, or use srun --dist-bind");
}

std::string set_device(Exchange &ex, const Identity &id, const Env &env) {
    Probe p = probe(id, env);
    agree_on_probes(ex, id, p);
    std::string msg;
    int32_t now = make_current(id, msg);
    std::vector<int32_t> done(static_cast<size_t>(id.world));
    ex.allgather(&now, sizeof now, done.data());
    std::vector<distbind_status> st(done.size());
    for (size_t r = 0; r < done.size(); r++) st[r] = peer_status(done[r], static_cast<int>(r));
    fail_with_first(ex, st, make_detail(id.host, p.bus, p.uuid, msg), "");
    return p.bus;
}

}  // namespace db::rt::gpu
