// Device choice: the ordinal comes from discovery (DIST_BIND_DEVICE, else
// the local rank); here it is checked against what CUDA sees, compared
// across the step by GPU UUID (exact, whatever the host names), and only
// then made current, so two ranks on one GPU are named as such even where
// the GPU's exclusive-process mode would let only one of them in.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "gpu/agree.hh"
#include "gpu/gpu.hh"
#include "gpu/loaders.hh"
#include "text.hh"

namespace db::rt::gpu {

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

// Big enough for any runtime's cudaDeviceProp (CUDA 13's is about 1 KiB).
constexpr size_t kPropBytes = 16384;
static_assert(sizeof(cudaDeviceProp) <= kPropBytes / 4, "cudaDeviceProp grew: enlarge kPropBytes");
static_assert(offsetof(cudaDeviceProp, uuid) == 256, "cudaDeviceProp.uuid moved");

}  // namespace

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
