// Where Slurm binds each task, worked out once per node before any task
// exists (a task only learns its own CPUs when it starts).  This follows
// the task/affinity and task/cgroup layouts documented in srun(1) for the
// second --distribution level: block fills a socket before the next,
// cyclic gives consecutive tasks consecutive sockets (all of a task's CPUs
// on one socket when they fit), fcyclic spreads each task's CPUs over the
// sockets.  Tasks get whole cores.
#include <algorithm>
#include <cstring>

#include "topo.hh"

namespace db::topo {

Dist parse_distribution(const char *value) {
    if (!value || !*value) return Dist::Cyclic;
    std::string_view v(value);
    std::string_view levels = v.substr(0, v.find(','));  // ",Pack" / ",NoPack"
    std::vector<std::string_view> part = split(levels, ':');
    const std::string_view first = part[0].substr(0, part[0].find('='));  // plane=N
    auto bad = [&](std::string_view level) {
        return Error(quoted("SLURM_DISTRIBUTION", v) + ": unknown distribution \"" + std::string(level) +
                     "\" (expected block, cyclic, plane or arbitrary, then *, block, cyclic or fcyclic)");
    };
    if (first != "block" && first != "cyclic" && first != "plane" && first != "arbitrary" && first != "*")
        throw bad(part[0]);
    if (part.size() > 3) throw bad(levels);
    if (part.size() < 2 || part[1] == "*") return Dist::Cyclic;
    if (part[1] == "block") return Dist::Block;
    if (part[1] == "cyclic") return Dist::Cyclic;
    if (part[1] == "fcyclic") return Dist::FCyclic;
    throw bad(part[1]);
}

const char *dist_name(Dist d) {
    switch (d) {
    case Dist::Block: return "block";
    case Dist::Cyclic: return "cyclic";
    case Dist::FCyclic: return "fcyclic";
    }
    return "?";
}

namespace {

// The machine's cores as Slurm numbers them: the Core level, or the PUs
// when an export carries no Core level.
struct Cores {
    hwloc_topology_t topo;
    hwloc_obj_type_t type = HWLOC_OBJ_CORE;
    int count = 0;

    explicit Cores(hwloc_topology_t t) : topo(t) {
        count = hwloc_get_nbobjs_by_type(topo, type);
        if (count <= 0) {
            type = HWLOC_OBJ_PU;
            count = hwloc_get_nbobjs_by_type(topo, type);
        }
    }
    hwloc_obj_t obj(unsigned c) const { return hwloc_get_obj_by_type(topo, type, c); }
};

// The step's cores, sorted, each once and inside the machine.
std::vector<unsigned> checked_cores(const Cores &m, const std::vector<unsigned> &step_cores) {
    if (step_cores.empty()) throw Error("the step has no cores on this node");
    std::vector<unsigned> cores = step_cores;
    std::sort(cores.begin(), cores.end());
    if (std::adjacent_find(cores.begin(), cores.end()) != cores.end()) throw Error("a step core is listed twice");
    if (cores.back() >= static_cast<unsigned>(m.count))
        throw Error("step core " + std::to_string(cores.back()) + " is outside the machine (" +
                    std::to_string(m.count) + " cores)");
    return cores;
}

// Per-socket queues of the step's cores, sockets in order.
std::vector<std::vector<unsigned>> socket_queues(const Cores &m, const std::vector<unsigned> &cores) {
    std::vector<std::vector<unsigned>> sock;
    std::vector<int> sock_id;
    for (unsigned c : cores) {
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(m.topo, HWLOC_OBJ_PACKAGE, m.obj(c));
        const int id = pkg ? static_cast<int>(pkg->logical_index) : 0;
        auto it = std::find(sock_id.begin(), sock_id.end(), id);
        if (it == sock_id.end()) {
            sock_id.push_back(id);
            sock.emplace_back();
            it = sock_id.end() - 1;
        }
        sock[static_cast<size_t>(it - sock_id.begin())].push_back(c);
    }
    return sock;
}

// cyclic and fcyclic: `per` cores for each task from the socket queues.
// cyclic puts a task on the next socket that has room for all of it;
// fcyclic, or a cyclic task that fits on no single socket, takes one core
// per socket in turn.
template <typename Give>
void deal_by_socket(const std::vector<std::vector<unsigned>> &sock, size_t ntasks, size_t per, Dist d, Give give) {
    std::vector<size_t> used(sock.size(), 0);
    auto left = [&](size_t s) { return sock[s].size() - used[s]; };
    const size_t S = sock.size();
    size_t next = 0;
    for (size_t i = 0; i < ntasks; i++) {
        if (d == Dist::Cyclic) {
            size_t s = next, tried = 0;
            while (tried < S && left(s) < per) {
                s = (s + 1) % S;
                tried++;
            }
            if (tried < S) {
                for (size_t j = 0; j < per; j++) give(i, sock[s][used[s]++]);
                next = (s + 1) % S;
                continue;
            }
        }
        for (size_t j = 0; j < per; j++) {
            while (left(next) == 0) next = (next + 1) % S;
            give(i, sock[next][used[next]++]);
            next = (next + 1) % S;
        }
    }
}

}  // namespace

std::vector<Bitmap> model_task_cpus(const Topology &t, const std::vector<unsigned> &step_cores, size_t ntasks,
                                    unsigned cpus_per_task, Dist d) {
    const Cores m(t.get());
    const std::vector<unsigned> cores = checked_cores(m, step_cores);
    std::vector<Bitmap> out(ntasks);
    if (ntasks == 0) return out;
    auto give = [&](size_t task, unsigned core) {
        hwloc_bitmap_or(out[task].get(), out[task].get(), m.obj(core)->cpuset);
    };

    const size_t n = cores.size();
    if (n < ntasks) {
        // More tasks than cores (threads as CPUs, or overcommit): tasks share
        // cores in order.
        for (size_t i = 0; i < ntasks; i++) give(i, cores[i * n / ntasks]);
        return out;
    }
    int tpc = hwloc_bitmap_weight(m.obj(cores[0])->cpuset);
    if (tpc < 1) tpc = 1;
    size_t per =
        cpus_per_task ? (cpus_per_task + static_cast<unsigned>(tpc) - 1) / static_cast<unsigned>(tpc) : n / ntasks;
    if (per == 0) per = 1;
    if (per * ntasks > n) per = n / ntasks;

    if (d == Dist::Block) {
        for (size_t i = 0; i < ntasks; i++)
            for (size_t j = 0; j < per; j++) give(i, cores[i * per + j]);
        return out;
    }
    deal_by_socket(socket_queues(m, cores), ntasks, per, d, give);
    return out;
}

}  // namespace db::topo
