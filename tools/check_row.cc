// dist-bind-check: what one rank reports about itself, and rank 0's check
// of what the others sent before it reads any of it.
#include <dirent.h>
#include <hwloc.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>

#include "check.hh"

namespace dbcheck {

void put(char *dst, size_t n, const std::string &v) {
    if (!n) return;
    size_t k = std::min(v.size(), n - 1);
    std::memcpy(dst, v.data(), k);
    dst[k] = '\0';
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    for (size_t at = 0;;) {
        size_t next = s.find(sep, at);
        out.push_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
        if (next == std::string_view::npos) return out;
        at = next + 1;
    }
}

bool parse_count(const char *s, uint64_t max, uint64_t &out) {
    if (!s || !*s || std::strlen(s) > 20 || std::strspn(s, "0123456789") != std::strlen(s)) return false;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + static_cast<uint64_t>(*p - '0');
    }
    if (v > max) return false;
    out = v;
    return true;
}

namespace {

int env_int(const char *name) {
    uint64_t n;
    return parse_count(getenv(name), INT32_MAX, n) ? static_cast<int>(n) : -1;
}

// The NUMA nodes this process's CPUs belong to ("0", "0,1"), "-" unknown.
std::string cpu_numa_nodes() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return "-";
    DIR *d = opendir("/sys/devices/system/node");
    if (!d) return "-";
    std::vector<int> ids;
    while (dirent *e = readdir(d)) {
        uint64_t n;
        if (std::strncmp(e->d_name, "node", 4) == 0 && parse_count(e->d_name + 4, 4096, n))
            ids.push_back(static_cast<int>(n));
    }
    closedir(d);
    std::sort(ids.begin(), ids.end());
    std::string nodes;
    for (int id : ids) {
        std::ifstream f("/sys/devices/system/node/node" + std::to_string(id) + "/cpulist");
        std::string line;
        std::getline(f, line);
        // hwloc reads the kernel's list form; the project's own parser
        // (lib/topo, strict) is not part of libdistbind's API.
        hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
        if (!cpus) return "-";
        if (hwloc_bitmap_list_sscanf(cpus, line.c_str()) == 0)
            for (int c = hwloc_bitmap_first(cpus); c >= 0 && c < CPU_SETSIZE; c = hwloc_bitmap_next(cpus, c))
                if (CPU_ISSET(c, &set)) {
                    nodes += (nodes.empty() ? "" : ",") + std::to_string(id);
                    break;
                }
        hwloc_bitmap_free(cpus);
    }
    return nodes.empty() ? "-" : nodes;
}

std::string cut(const std::string &s, size_t n) { return s.size() < n ? s : s.substr(0, n - 4) + "..."; }

}  // namespace

Row my_row(distbind_t *h) {
    Row r{};
    r.rank = distbind_rank(h);
    r.world = distbind_world_size(h);
    r.local_rank = distbind_local_rank(h);
    r.local_world = distbind_local_world_size(h);
    r.node_rank = distbind_node_rank(h);
    r.device = distbind_device(h);
    // A launcher (torchrun) re-ranked this process under an srun --dist-bind
    // task: Slurm's numbers are its task's, and its own GPU is the
    // local-rank-th of that task's (libdistbind chose the device so).
    const bool relaunched = distbind_relaunched(h);
    r.relaunched = relaunched ? 1 : 0;
    r.slurm_procid = relaunched ? -1 : env_int("SLURM_PROCID");
    r.slurm_localid = relaunched ? -1 : env_int("SLURM_LOCALID");
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    put(r.host, sizeof r.host, host);
    put_opt(r.source, sizeof r.source, distbind_source(h));
    const char *ma = getenv("MASTER_ADDR"), *mp = getenv("MASTER_PORT");
    std::string master = ma || mp ? std::string(ma ? ma : "?") + ":" + (mp ? mp : "?") : "-";
    put(r.master, sizeof r.master, master);
    put(r.cpu_numa, sizeof r.cpu_numa, cpu_numa_nodes());

    // What CUDA says, without touching the device (no context).
    distbind_gpu_info info{};
    if (distbind_gpu_query(h, &info) != DISTBIND_OK) {
        info.status = DISTBIND_ERR_INTERNAL;
        info.count = -1;
        info.numa = -1;
        put(info.message, sizeof info.message, distbind_last_error(h));
    }
    r.gpu_status = info.status;
    r.gpu_count = info.count;
    r.gpu_numa = info.numa;
    put(r.bus, sizeof r.bus, info.bus_id);
    put(r.uuid, sizeof r.uuid, info.uuid);
    put(r.gpu_msg, sizeof r.gpu_msg, info.message);
    std::string own;
    if (const char *g = getenv("DIST_BIND_GPUS")) {
        std::vector<std::string_view> v = split(g, ',');
        const size_t i = relaunched && r.local_rank >= 0 ? static_cast<size_t>(r.local_rank) : 0;
        own = i < v.size() ? std::string(v[i]) : std::string();
    }
    set_gpu_lists(r, getenv("CUDA_VISIBLE_DEVICES"), getenv("DIST_BIND_GPUS") ? own.c_str() : nullptr);
    // A launcher's re-ranked worker has RANK, LOCAL_RANK, ... of its own:
    // that is the launcher's doing, not a container plugin's, and not
    // counted (distbind_env_overwritten).
    char *changed = nullptr;
    if (distbind_env_overwritten(&changed) == DISTBIND_OK)
        put(r.overwritten, sizeof r.overwritten, cut(changed, sizeof r.overwritten));
    else
        put(r.overwritten, sizeof r.overwritten, cut(distbind_last_error(nullptr), sizeof r.overwritten));
    free(changed);
    return r;
}

void set_gpu_lists(Row &r, const char *visible, const char *own) {
    r.visible_count = -1;
    r.gpu[0] = r.unopenable[0] = '\0';
    put_opt(r.own, sizeof r.own, own ? std::string(split(own, ',')[0]).c_str() : nullptr);
    if (!visible) {
        put_opt(r.visible, sizeof r.visible, nullptr);
        return;
    }
    std::vector<std::string_view> v = split(visible, ',');
    r.visible_count = static_cast<int32_t>(v.size());
    if (r.device >= 0 && static_cast<size_t>(r.device) < v.size())
        put(r.gpu, sizeof r.gpu, std::string(v[static_cast<size_t>(r.device)]));
    put(r.visible, sizeof r.visible, cut(visible, sizeof r.visible));
    // CUDA reads the list up to the first entry that names no device it
    // can open: it saw gpu_count entries, the rest name nothing it can use.
    if (r.gpu_count >= 0 && r.gpu_count < r.visible_count) {
        std::string rest;
        for (size_t i = static_cast<size_t>(r.gpu_count); i < v.size(); i++)
            rest += (rest.empty() ? "" : ",") + std::string(v[i]);
        put(r.unopenable, sizeof r.unopenable, cut(rest, sizeof r.unopenable));
    }
}

std::string sanitize(Row &r, int index, int world) {
    std::string bad;
    auto text = [&](char *f, size_t n, const char *name) {
        if (std::memchr(f, '\0', n)) return;
        bad += (bad.empty() ? "" : "; ") + std::string(name) + " has no end within " + std::to_string(n) + " bytes";
        put(f, n, "?");
    };
    text(r.host, sizeof r.host, "host");
    text(r.source, sizeof r.source, "source");
    text(r.gpu, sizeof r.gpu, "gpu");
    text(r.own, sizeof r.own, "own gpu");
    text(r.visible, sizeof r.visible, "CUDA_VISIBLE_DEVICES");
    text(r.unopenable, sizeof r.unopenable, "unopenable list");
    text(r.master, sizeof r.master, "master");
    text(r.bus, sizeof r.bus, "bus id");
    text(r.uuid, sizeof r.uuid, "uuid");
    text(r.cpu_numa, sizeof r.cpu_numa, "cpu numa");
    text(r.gpu_msg, sizeof r.gpu_msg, "CUDA message");
    text(r.overwritten, sizeof r.overwritten, "overwritten");
    auto number = [&](int32_t &v, int32_t lo, int32_t hi, const char *name, int32_t instead) {
        if (v >= lo && v <= hi) return;
        bad += (bad.empty() ? "" : "; ") + std::string(name) + " " + std::to_string(v) + " is not in " +
               std::to_string(lo) + ".." + std::to_string(hi);
        v = instead;
    };
    // Out of range: a value that judges nothing (a GPU status that is an
    // error, counts unknown).
    number(r.rank, index, index, "rank", index);
    number(r.world, world, world, "world size", world);
    number(r.local_world, 1, world, "local world size", 1);
    number(r.local_rank, 0, r.local_world - 1, "local rank", 0);
    number(r.node_rank, 0, world - 1, "node rank", 0);
    number(r.device, 0, 65535, "device", 0);
    number(r.slurm_procid, -1, INT32_MAX, "SLURM_PROCID", -1);
    number(r.slurm_localid, -1, INT32_MAX, "SLURM_LOCALID", -1);
    number(r.relaunched, 0, 1, "relaunched", 0);
    number(r.gpu_status, DISTBIND_OK, DISTBIND_ERR_INTERNAL, "GPU status", DISTBIND_ERR_INTERNAL);
    number(r.gpu_count, -1, 1 << 20, "GPU count", -1);
    number(r.gpu_numa, -1, 1 << 20, "GPU NUMA node", -1);
    number(r.visible_count, -1, 1 << 20, "CUDA_VISIBLE_DEVICES count", -1);
    return bad;
}

}  // namespace dbcheck
