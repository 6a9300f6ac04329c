// The dry run behind dist-bind-check --plan, and the topology tables'
// window onto the choice: the same code the plugin runs, from a file.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "db_topo.h"
#include "guard.hh"
#include "topo.hh"

namespace db::topo {

namespace {

Topology load(const db_topo_dry_run &a) {
    if (a.synthetic) return Topology::synthetic(a.synthetic);
    if (a.topology) return Topology::from_xml_file(a.topology);
    return Topology::live();
}

std::vector<Bitmap> task_cpus(const Topology &t, const db_topo_dry_run &a) {
    std::vector<Bitmap> cpus;
    if (!a.task_cpus == !a.step_cores) throw Error("give either each task's CPUs or the step's cores and a task count");
    if (a.step_cores) {
        if (a.ntasks == 0) throw Error("no tasks");
        return model_task_cpus(t, parse_list(a.step_cores, "step cores"), a.ntasks, a.cpus_per_task,
                               parse_distribution(a.distribution));
    }
    hwloc_const_bitmap_t all = hwloc_topology_get_complete_cpuset(t.get());
    size_t task = 0;
    for (std::string_view part : split(a.task_cpus, ';')) {
        const std::string what = "task " + std::to_string(task) + " CPUs";
        Bitmap b;
        for (unsigned cpu : parse_list(part, what)) {
            if (!hwloc_bitmap_isset(all, cpu))
                throw Error(what + ": CPU " + std::to_string(cpu) + " is not in the machine (CPUs " +
                            Bitmap(all).list() + ")");
            hwloc_bitmap_set(b.get(), cpu);
        }
        cpus.push_back(std::move(b));
        task++;
    }
    return cpus;
}

std::string dry_run(const db_topo_dry_run &a) {
    const Topology t = load(a);
    const std::vector<Bitmap> cpus = task_cpus(t, a);
    std::string out;
    if (a.cpus_only) {
        for (size_t i = 0; i < cpus.size(); i++)
            out += "task " + std::to_string(i) + " cpus " + cpus[i].list() + " numa " +
                   std::to_string(numa_of(t, cpus[i].get())) + "\n";
        return out;
    }
    const std::vector<NvidiaGpu> nv = a.nvidia_proc ? read_nvidia(a.nvidia_proc) : std::vector<NvidiaGpu>();
    if (a.nvidia_proc && nv.empty()) throw Error(std::string(a.nvidia_proc) + ": no NVIDIA GPUs listed there");
    std::vector<std::string> ids;
    if (a.gpus) {
        ids = parse_gpu_list(a.gpus, "GPUs");
    } else if (!nv.empty()) {
        std::vector<long> minors;
        for (const NvidiaGpu &g : nv) minors.push_back(g.minor);
        std::sort(minors.begin(), minors.end());
        for (long m : minors) ids.push_back(std::to_string(m));
    } else {
        const size_t n = gpus(t).size();
        if (n == 0) throw Error(t.source() + ": the topology shows no GPUs");
        for (size_t i = 0; i < n; i++) ids.push_back(std::to_string(i));
    }
    const Matched m = match_gpus(t, ids, nv);
    const std::vector<Choice> choice = choose(t, m.pci, cpus, a.gpus_per_task ? a.gpus_per_task : 1);
    for (size_t i = 0; i < choice.size(); i++) {
        std::vector<std::string> mine;
        for (size_t p : choice[i].gpus) mine.push_back(ids[p]);
        out += "task " + std::to_string(i) + " cpus " + cpus[i].list() + " gpus " + join(mine) + " numa " +
               std::to_string(choice[i].numa);
        if (!choice[i].nics.empty()) out += " nics " + join(choice[i].nics);
        out += "\n";
    }
    return out;
}

}  // namespace

}  // namespace db::topo

extern "C" int db_topo_dry_run_text(const db_topo_dry_run *a, char **out, char *err, size_t errlen) {
    if (out) *out = nullptr;
    return db::guarded(err, errlen, [&] {
        if (!a || !out) throw db::Error("no arguments");
        const std::string text = db::topo::dry_run(*a);
        char *s = strdup(text.c_str());
        if (!s) throw std::bad_alloc();
        *out = s;
    });
}
