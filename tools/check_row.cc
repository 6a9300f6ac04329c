// dist-bind-check: what one rank reports about itself.
#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

#include "check.hh"
#include "gpu.hh"
#include "rt.hh"

extern char **environ;

namespace dbcheck {

using namespace db::rt;

namespace {

int env_int(const char *name) {
    const char *v = getenv(name);
    uint64_t n;
    return v && db::parse_uint(v, INT32_MAX, n) ? static_cast<int>(n) : -1;
}

// "0-3,8-11" -> the CPUs.
std::set<int> parse_cpulist(const std::string &s) {
    std::set<int> out;
    for (std::string_view part : db::split(s, ',')) {
        size_t dash = part.find('-');
        uint64_t a, b;
        if (!db::parse_uint(part.substr(0, dash), 1u << 20, a)) continue;
        b = a;
        if (dash != std::string_view::npos && !db::parse_uint(part.substr(dash + 1), 1u << 20, b)) continue;
        for (uint64_t c = a; c <= b; c++) out.insert(static_cast<int>(c));
    }
    return out;
}

// The NUMA nodes this process's CPUs belong to ("0", "0,1"), "-" unknown.
std::string cpu_numa_nodes() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return "-";
    std::vector<std::string> nodes;
    DIR *d = opendir("/sys/devices/system/node");
    if (!d) return "-";
    std::vector<int> ids;
    while (dirent *e = readdir(d)) {
        uint64_t n;
        if (std::strncmp(e->d_name, "node", 4) == 0 && db::parse_uint(e->d_name + 4, 4096, n))
            ids.push_back(static_cast<int>(n));
    }
    closedir(d);
    std::sort(ids.begin(), ids.end());
    for (int id : ids) {
        std::ifstream f("/sys/devices/system/node/node" + std::to_string(id) + "/cpulist");
        std::string line;
        std::getline(f, line);
        for (int c : parse_cpulist(line))
            if (c < CPU_SETSIZE && CPU_ISSET(c, &set)) {
                nodes.push_back(std::to_string(id));
                break;
            }
    }
    return nodes.empty() ? "-" : db::join(nodes);
}

}  // namespace

Row my_row(distbind_t *db) {
    Row r{};
    r.rank = distbind_rank(db);
    r.world = distbind_world_size(db);
    r.local_rank = distbind_local_rank(db);
    r.local_world = distbind_local_world_size(db);
    r.node_rank = distbind_node_rank(db);
    r.device = distbind_device(db);
    r.slurm_procid = env_int("SLURM_PROCID");
    r.slurm_localid = env_int("SLURM_LOCALID");
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    put(r.host, sizeof r.host, host);
    put(r.source, sizeof r.source, distbind_source(db));
    set_gpu_lists(r, getenv("CUDA_VISIBLE_DEVICES"), getenv("DIST_BIND_GPUS"));
    const char *ma = getenv("MASTER_ADDR"), *mp = getenv("MASTER_PORT");
    std::string master = ma || mp ? std::string(ma ? ma : "?") + ":" + (mp ? mp : "?") : "-";
    put(r.master, sizeof r.master, master.c_str());
    put(r.cpu_numa, sizeof r.cpu_numa, cpu_numa_nodes().c_str());

    Identity id;
    id.rank = r.rank;
    id.device = r.device;
    id.device_from = getenv("DIST_BIND_DEVICE") ? "DIST_BIND_DEVICE" : "the local rank";
    id.host = host;
    Env env(environ);
    gpu::Probe p = gpu::probe(id, env, true);
    r.gpu_status = p.status;
    r.gpu_count = p.count;
    r.gpu_numa = p.numa;
    put(r.bus, sizeof r.bus, p.bus);
    put(r.gpu_msg, sizeof r.gpu_msg, p.msg);
    return r;
}

void set_gpu_lists(Row &r, const char *visible, const char *own) {
    r.visible_count = -1;
    r.gpu[0] = '\0';
    put(r.own, sizeof r.own, own ? std::string(db::split(own, ',')[0]).c_str() : nullptr);
    if (!visible) {
        put(r.visible, sizeof r.visible, nullptr);
        return;
    }
    std::vector<std::string_view> v = db::split(visible, ',');
    r.visible_count = static_cast<int32_t>(v.size());
    if (r.device >= 0 && static_cast<size_t>(r.device) < v.size())
        db::copy_out(std::string(v[static_cast<size_t>(r.device)]), r.gpu, sizeof r.gpu);
    std::string shown = visible;
    if (shown.size() >= sizeof r.visible) shown = shown.substr(0, sizeof r.visible - 4) + "...";
    put(r.visible, sizeof r.visible, shown.c_str());
}

}  // namespace dbcheck
