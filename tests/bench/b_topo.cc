// `make bench` figures for --dist-bind=closest (run by b_topo.sh):
//  - per node and step: loading the topology from slurmd's cached XML
//    against live discovery, on this machine side by side, plus the six
//    real machines' XML and the whole node-level choice on them;
//  - per task: the plan in closest mode against rank mode.
// Medians of repeated runs; figures only, no thresholds.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "db_core.h"
#include "db_topo.h"
#include "topo.hh"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_ms(int runs, F &&f) {
    std::vector<double> t;
    for (int i = 0; i < runs; i++) {
        const auto a = Clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

const char *kXml = DB_TEST_XML_DIR;
const char *kMachines[] = {"nvidiaDGX2.xml",         "coral-lassen.xml", "cts1-pascal.xml",
                           "power8gpudistances.xml", "eas-tioga.xml",    "32em64t-2n8c2t-pci-normalio.xml"};

// The node-level call the plugin makes, on a cached XML, every GPU in the
// step, one task per GPU (or per core when there are fewer cores).
double node_choice_ms(const std::string &xml, int runs) {
    size_t ngpu;
    int ncores;
    {
        // Not kept open while timing: a live topology keeps hwloc's plugins
        // loaded, which slurmstepd does not have.
        db::topo::Topology t = db::topo::Topology::from_xml_file(xml);
        ngpu = db::topo::gpus(t).size();
        ncores = hwloc_get_nbobjs_by_type(t.get(), HWLOC_OBJ_CORE);
    }
    const size_t ntasks = std::min(ngpu, static_cast<size_t>(ncores));
    std::vector<std::string> ids;
    for (size_t i = 0; i < ngpu; i++) ids.push_back(std::to_string(i));
    std::vector<const char *> idp;
    for (const std::string &s : ids) idp.push_back(s.c_str());
    const std::string cores = "0-" + std::to_string(ncores - 1);
    const char *env[] = {"DIST_BIND_NVIDIA_PROC=/nonexistent", nullptr};
    db_topo_node_request rq{};
    rq.env = env;
    rq.gpus = idp.data();
    rq.ngpus = idp.size();
    rq.ntasks = static_cast<uint32_t>(ntasks);
    rq.step_cores = cores.c_str();
    rq.cached_xml = xml.c_str();
    char err[DB_ERRLEN];
    return median_ms(runs, [&] {
        db_topo_node_result *r = nullptr;
        if (db_topo_node_choose(&rq, &r, err, sizeof err) != 0 || db_topo_node_closest(r)->fallback) {
            std::fprintf(stderr, "b_topo: %s: %s\n", xml.c_str(), r ? db_topo_node_closest(r)->fallback : err);
            std::exit(1);
        }
        db_topo_node_result_free(r);
    });
}

// Per task: db_task_plan_new for 8 local tasks on 8 GPUs.
double per_task_us(int mode, bool with_choice, int rounds) {
    // Slurm names the step's GPUs in SLURM_STEP_GPUS whenever it allocated
    // some; without it the plan has no GPUs to choose among.
    const char *step_env[] = {"SLURM_STEP_NODELIST=node[1-2]",      "SLURM_STEP_TASKS_PER_NODE=8(x2)",
                              "SLURM_STEP_GPUS=0,1,2,3,4,5,6,7",    "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
                              "GPU_DEVICE_ORDINAL=0,1,2,3,4,5,6,7", nullptr};
    db_config cfg;
    char err[DB_ERRLEN];
    db_config_parse(0, nullptr, &cfg, err, sizeof err);
    db_request eff{mode, 0, 0, 0};
    db_node_input ni{42, 0, 2, 0, 16, 8, step_env, 0, 0, 0, 0, nullptr, 0};
    db_node_plan *np = nullptr;
    if (db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err) != 0) {
        std::fprintf(stderr, "b_topo: %s\n", err);
        std::exit(1);
    }
    static const size_t pos[8] = {4, 5, 2, 3, 6, 7, 0, 1};
    db_closest_task tasks[8];
    for (int i = 0; i < 8; i++) tasks[i] = db_closest_task{&pos[i], 1, i / 2, "hsi0"};
    db_closest_input in{"bench", nullptr, tasks, 8};
    if (with_choice && db_node_plan_set_closest(np, &in, err, sizeof err) != 0) {
        std::fprintf(stderr, "b_topo: %s\n", err);
        std::exit(1);
    }
    std::vector<std::string> task_env(8);
    for (int i = 0; i < 8; i++) task_env[i] = "CUDA_VISIBLE_DEVICES=" + std::to_string(i);
    const double ms = median_ms(5, [&] {
        for (int r = 0; r < rounds; r++)
            for (uint32_t i = 0; i < 8; i++) {
                const char *tenv[] = {task_env[i].c_str(), nullptr};
                db_task_input ti{8 + i, i, tenv};
                db_task_plan *tp = nullptr;
                if (db_task_plan_new(np, &ti, &tp, err, sizeof err) != 0) std::exit(1);
                db_task_plan_free(tp);
            }
    });
    db_node_plan_free(np);
    return ms * 1000.0 / (rounds * 8);
}

}  // namespace

int main() {
    const int runs = 15;
    std::printf("per-node topology cost, once per node and step in user_init (median of %d)\n\n", runs);

    // This machine: the XML slurmd would cache against live discovery.
    char path[] = "/tmp/dist-bind-bench.XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    {
        db::topo::Topology live = db::topo::Topology::live();
        if (hwloc_topology_export_xml(live.get(), path, 0) != 0) {
            std::fprintf(stderr, "b_topo: cannot export this machine's topology\n");
            return 1;
        }
    }
    const double cached = median_ms(runs, [&] { db::topo::Topology::from_xml_file(path); });
    const double live = median_ms(runs, [] { db::topo::Topology::live(); });
    const double live_all = median_ms(runs, [] {
        hwloc_topology_t t;
        hwloc_topology_init(&t);
        hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        hwloc_topology_load(t);
        hwloc_topology_destroy(t);
    });
    unlink(path);
    std::printf(
        "  this machine    cached XML %7.2f ms | live, closest's filters %7.2f ms | live, hwloc defaults "
        "with I/O %7.2f ms\n\n",
        cached, live, live_all);

    std::printf("  %-34s %12s %22s\n", "real machine (tests/topology/xml)", "load XML", "load + whole choice");
    for (const char *m : kMachines) {
        const std::string xml = std::string(kXml) + "/" + m;
        const double load = median_ms(runs, [&] { db::topo::Topology::from_xml_file(xml); });
        std::printf("  %-34s %9.2f ms %19.2f ms\n", m, load, node_choice_ms(xml, runs));
    }

    const int rounds = 2000;
    const double rank = per_task_us(DB_MODE_RANK, false, rounds);
    const double closest = per_task_us(DB_MODE_CLOSEST, true, rounds);
    std::printf("\nper-task cost in task_init (8 local tasks, 8 GPUs, median of 5 x %d rounds)\n", rounds);
    std::printf("  rank %6.2f us | closest %6.2f us (budget 20 us)\n", rank, closest);
    return 0;
}
