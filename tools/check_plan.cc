// dist-bind-check --plan: what --dist-bind=closest would choose on a node,
// without Slurm, so an admin can look before enabling it.
//
//   dist-bind-check --plan [--topology FILE] (--task-cpus 'LIST;LIST;...' |
//       --step-cores LIST --tasks N [--cpus-per-task C] [--distribution D])
//       [--gpus 0,1,...] [--gpus-per-task K] [--nvidia-proc DIR]
//
// One line per local task on stdout:
//   task N cpus LIST gpus LIST numa N[ nics LIST]
// GPUs in Slurm's numbering: by default every GPU the topology shows,
// numbered in PCI bus order (or by device minor with --nvidia-proc).
//
// plan_main() gets the arguments from "--plan" on (argv[0] is "--plan");
// dist-bind-check calls it when its first argument is --plan.  The plan
// itself comes from libdistbind (distbind_plan_dry_run).
// Exit status: 0, 1 for bad input (with one "dist-bind: " line on stderr),
// 2 for bad usage.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hh"

namespace dbcheck {

namespace {

const char kUsageText[] =
    "usage: dist-bind-check --plan [--topology FILE] (--task-cpus 'LIST;LIST;...' |\n"
    "           --step-cores LIST --tasks N [--cpus-per-task C] [--distribution D])\n"
    "           [--gpus 0,1,...] [--gpus-per-task K] [--nvidia-proc DIR]\n"
    "Prints, for each local task, the GPUs --dist-bind=closest would choose:\n"
    "  task N cpus LIST gpus LIST numa N [nics LIST]\n"
    "  --topology FILE     hwloc XML of the node (e.g. SlurmdSpoolDir/hwloc_topo_whole.xml);\n"
    "                      default: discover this machine\n"
    "  --task-cpus L;L;..  each task's CPUs (OS numbering, as in /proc/cpuinfo)\n"
    "  --step-cores LIST   or: the step's cores as Slurm numbers them (S_STEP_ALLOC_CORES),\n"
    "  --tasks N             with N tasks laid out as Slurm's task/affinity does\n"
    "  --cpus-per-task C     (default: the cores shared out)\n"
    "  --distribution D      (SLURM_DISTRIBUTION, default block:cyclic)\n"
    "  --gpus LIST         the step's GPUs in Slurm's numbering (default: all GPUs shown)\n"
    "  --gpus-per-task K   GPUs per task (default 1)\n"
    "  --nvidia-proc DIR   match GPU numbers to device minors from DIR/<bus id>/information\n"
    "                      (as in /proc/driver/nvidia/gpus) instead of PCI bus order\n";

struct Usage : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct BadInput : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Args {
    std::string topology, task_cpus, step_cores, tasks, cpt, dist, gpus, k, nvidia;
};

Args parse_args(int argc, char **argv) {
    Args a;
    struct Opt {
        const char *name;
        std::string *dst;
    } opts[] = {{"--topology", &a.topology}, {"--task-cpus", &a.task_cpus}, {"--step-cores", &a.step_cores},
                {"--tasks", &a.tasks},       {"--cpus-per-task", &a.cpt},   {"--distribution", &a.dist},
                {"--gpus", &a.gpus},         {"--gpus-per-task", &a.k},     {"--nvidia-proc", &a.nvidia}};
    std::vector<bool> seen(sizeof opts / sizeof opts[0], false);
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "-h" || arg == "--help") throw Usage("");
        std::string value;
        bool have = false;
        const size_t eq = arg.find('=');
        if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            have = true;
        }
        size_t o = 0;
        while (o < seen.size() && arg != opts[o].name) o++;
        if (o == seen.size()) throw Usage("unknown argument \"" + arg + "\"");
        if (seen[o]) throw Usage(arg + " given twice");
        seen[o] = true;
        if (!have) {
            if (i + 1 >= argc) throw Usage(arg + " needs a value");
            value = argv[++i];
        }
        *opts[o].dst = value;
    }
    if (a.task_cpus.empty() == a.step_cores.empty())
        throw Usage("give either --task-cpus or --step-cores with --tasks");
    if (!a.step_cores.empty() && a.tasks.empty()) throw Usage("--step-cores needs --tasks");
    if (a.step_cores.empty() && (!a.tasks.empty() || !a.cpt.empty() || !a.dist.empty()))
        throw Usage("--tasks, --cpus-per-task and --distribution go with --step-cores");
    return a;
}

unsigned count(const std::string &s, const char *what) {
    uint64_t v;
    if (!parse_count(s.c_str(), 1u << 16, v) || v == 0)
        throw BadInput(std::string(what) + "=\"" + s.substr(0, 120) + (s.size() > 120 ? "..." : "") +
                       "\": expected a number 1.." + std::to_string(1u << 16));
    return static_cast<unsigned>(v);
}

int run(int argc, char **argv) {
    const Args a = parse_args(argc, argv);
    distbind_plan_args d{};
    auto opt = [](const std::string &s) { return s.empty() ? nullptr : s.c_str(); };
    d.topology = opt(a.topology);
    d.task_cpus = opt(a.task_cpus);
    d.step_cores = opt(a.step_cores);
    d.ntasks = a.tasks.empty() ? 0 : count(a.tasks, "--tasks");
    d.cpus_per_task = a.cpt.empty() ? 0 : count(a.cpt, "--cpus-per-task");
    d.distribution = opt(a.dist);
    d.gpus = opt(a.gpus);
    d.gpus_per_task = a.k.empty() ? 1 : count(a.k, "--gpus-per-task");
    d.nvidia_proc = opt(a.nvidia);
    char *text = nullptr;
    if (distbind_plan_dry_run(&d, &text) != DISTBIND_OK) {
        std::fprintf(stderr, "%s\n", distbind_last_error(nullptr));
        return kProblems;
    }
    const bool ok = std::fputs(text, stdout) >= 0 && std::fflush(stdout) == 0;
    std::free(text);
    if (!ok) throw BadInput("cannot write the plan to stdout");
    return kOk;
}

}  // namespace

int plan_main(int argc, char **argv) {
    try {
        return run(argc, argv);
    } catch (const Usage &e) {
        if (*e.what()) std::fprintf(stderr, "dist-bind: %s\n", e.what());
        std::fputs(kUsageText, *e.what() ? stderr : stdout);
        return *e.what() ? kUsage : kOk;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "dist-bind: %s\n", e.what());
    }
    return kProblems;
}

}  // namespace dbcheck
