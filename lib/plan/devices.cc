// Device cgroups and srun's word to the nodes (DB_DEVICES_HINT): the
// writer (db_srun_hint, in srun) and the reader (read_devices_hint, on each
// node) of that one variable side by side.
//
// Slurm numbers a task's GPU lists inside the task's device cgroup, and
// confines a task it binds per task to its own GPUs, exactly when TaskPlugin
// includes task/cgroup and cgroup.conf has ConstrainDevices=yes (unless the
// step asked for --gres-flags=allow-task-sharing).  Each node reads that
// from its own configuration (db_devices_from_conf).  srun tells the nodes
// what only its command line says:
// - how many GPUs each task asked for (--gpus-per-task, --tres-per-task),
//   which the nodes need where Slurm binds none (--gpu-bind=none).  From
//   25.05 a step may ask for several types per task
//   (--gpus-per-task=a100:1,v100:1); Slurm binds their sum (per_task:2);
// - --gres-flags=allow-task-sharing;
// and, first, whether its own TaskPlugin has task/cgroup, which is all a
// node of dist-bind 0.1.0 knows of device cgroups.
#include <cstring>
#include <string>

#include "db_core.h"
#include "plan.hh"
#include "text.hh"

namespace db {
namespace {

// "Name = value" lines as slurm_print_key_pairs() writes them.
std::string key_pair(std::string_view text, std::string_view name) {
    for (std::string_view line : split(text, '\n')) {
        if (line.substr(0, name.size()) != name) continue;
        std::string_view rest = line.substr(name.size());
        size_t eq = rest.find_first_not_of(" \t");
        if (eq == std::string_view::npos || rest[eq] != '=') continue;
        rest = rest.substr(eq + 1);
        size_t b = rest.find_first_not_of(" \t"), e = rest.find_last_not_of(" \t\r");
        return b == std::string_view::npos ? std::string() : std::string(rest.substr(b, e - b + 1));
    }
    return {};
}

bool has_plugin(std::string_view list, std::string_view plugin) {
    for (std::string_view p : split(list, ','))
        if (p == plugin || p == plugin.substr(plugin.find('/') + 1)) return true;
    return false;
}

bool gres_flags_share(std::string_view flags) {
    for (std::string_view f : split(flags, ','))
        if (f == "allow-task-sharing") return true;
    return false;
}

// The count at the end of "N", "TYPE:N", "TYPE=N".
bool count_of(std::string_view v, uint64_t &n) {
    size_t sep = v.find_last_of(":=");
    return parse_uint(sep == std::string_view::npos ? v : v.substr(sep + 1), kMaxGpusPerTask, n);
}

// The value of srun option `name` in argv ("--name=V" or "--name V"), or
// nullptr; the last one wins, as for srun itself.
const char *option(int argc, const char *const *argv, std::string_view name) {
    const char *found = nullptr;
    for (int i = 0; i < argc && argv[i]; i++) {
        std::string_view a = argv[i];
        if (a.size() > name.size() + 2 && a.substr(0, 2) == "--" && a.substr(2, name.size()) == name &&
            a[name.size() + 2] == '=')
            found = argv[i] + name.size() + 3;
        else if (a.size() == name.size() + 2 && a.substr(0, 2) == "--" && a.substr(2) == name && i + 1 < argc)
            found = argv[i + 1];
    }
    return found;
}

}  // namespace

bool gpus_per_task_count(std::string_view v, uint64_t &k) {
    uint64_t sum = 0, n;
    for (std::string_view part : split(v, ',')) {
        if (!count_of(part, n) || n == 0 || (sum += n) > kMaxGpusPerTask) return false;
    }
    k = sum;
    return true;
}

bool tres_gpu_count(std::string_view tres, uint64_t &k) {
    uint64_t sum = 0, n;
    for (std::string_view t : split(tres, ',')) {
        const std::string_view head = t.substr(0, 8);
        if ((head != "gres/gpu" && head != "gres:gpu") || (t.size() > 8 && t[8] != ':' && t[8] != '=')) continue;
        if (!count_of(t.substr(8), n) || n == 0 || (sum += n) > kMaxGpusPerTask) return false;
    }
    k = sum;
    return true;
}

// The nodes' side of DB_DEVICES_HINT (db_srun_hint below writes it): task
// sharing and GPUs per task into `np`, and what srun's TaskPlugin says of
// device cgroups returned (Unknown where srun said nothing).  A
// heterogeneous srun (A : B) says it once per component, ';' between them:
// the first word is the cluster's, the same in each; the rest is this
// node's component's.
Devices read_devices_hint(const db_node_input &in, const EnvIndex &env, NodePlan &np) {
    const SrunWord word = srun_word(env, DB_CARRIED(DB_DEVICES_HINT));
    const char *hint = word.value;
    if (!hint) return Devices::Unknown;
    auto bad = [&] {
        return Error(quoted(word.name, hint) +
                     ": expected \"none\" or \"cgroup\", then \",task-sharing\" and \",gpus-per-task=K\", "
                     "once per component of a heterogeneous step, ';' between them (srun sets it)");
    };
    const std::vector<std::string_view> sections = split(hint, ';');
    int mine = 0;
    if (sections.size() > 1) {
        mine = het_component(in, env);
        if (mine < 0 || static_cast<size_t>(mine) >= sections.size()) {
            np.notes.push_back(std::string("srun's ") + DB_DEVICES_HINT + " names " + std::to_string(sections.size()) +
                               " components, and Slurm's SLURM_JOB_ID_HET_GROUP_* do not say which this is: "
                               "GPUs per task from the step's environment");
            mine = -1;
        }
    }
    Devices said = Devices::Unknown;
    for (size_t s = 0; s < sections.size(); s++) {
        const std::vector<std::string_view> words = split(sections[s], ',');
        const Devices here = words[0] == "none"     ? Devices::Open
                             : words[0] == "cgroup" ? Devices::Confined
                                                    : Devices::Unknown;
        if (here == Devices::Unknown || (s && here != said)) throw bad();
        said = here;
        bool sharing = false;
        size_t per_task = 0;
        for (size_t i = 1; i < words.size(); i++) {
            uint64_t k;
            if (words[i] == "task-sharing" && here == Devices::Confined)
                sharing = true;
            else if (words[i].substr(0, 14) == "gpus-per-task=" && parse_uint(words[i].substr(14), 1u << 20, k) && k)
                per_task = static_cast<size_t>(k);
            else
                throw bad();
        }
        if (static_cast<int>(s) == mine) {
            np.task_sharing = sharing;
            np.gpus_per_task = per_task;
        }
    }
    return said;
}

}  // namespace db

extern "C" int db_task_plugin_cgroup(const char *task_plugins) {
    try {
        return task_plugins && db::has_plugin(task_plugins, "task/cgroup");
    } catch (...) {
        return 0;  // out of memory
    }
}

extern "C" int db_devices_from_conf(const char *task_plugins, const char *cgroup_conf) try {
    if (!db_task_plugin_cgroup(task_plugins)) return DB_DEVICES_OPEN;
    const std::string constrain = db::key_pair(cgroup_conf ? cgroup_conf : "", "ConstrainDevices");
    // Slurm's own default for a cgroup.conf that does not say is "no".
    return constrain == "yes" || constrain == "Yes" ? DB_DEVICES_CONFINED : DB_DEVICES_OPEN;
} catch (...) {
    return DB_DEVICES_UNKNOWN;
}

extern "C" int db_srun_hint(const char *task_plugins, int argc, const char *const *argv, const char *const *env,
                            char *out, size_t outlen) try {
    using namespace db;
    // A node of 0.1.0 takes "cgroup" for confinement: it refuses, rather
    // than mislead, a step it cannot tell (srun does not read cgroup.conf,
    // which in configless mode it does not even have).
    const bool cgroup = db_task_plugin_cgroup(task_plugins);
    // One section per component: its own --gres-flags and GPUs per task.
    auto section = [&](int n, const char *const *opts) {
        std::string word = cgroup ? "cgroup" : "none";
        if (cgroup) {
            const char *flags = option(n, opts, "gres-flags");
            if (!flags) flags = env_get(env, "SLURM_GRES_FLAGS");
            if (flags && gres_flags_share(flags)) word += ",task-sharing";
        }
        // A value that does not parse gives no word rather than a wrong one.
        uint64_t k = 0;
        bool ok = true;
        if (const char *v = option(n, opts, "gpus-per-task"))
            ok = gpus_per_task_count(v, k);
        else if (const char *t = option(n, opts, "tres-per-task"))
            ok = tres_gpu_count(t, k);
        else if (const char *e = env_get(env, "SLURM_GPUS_PER_TASK"))
            ok = gpus_per_task_count(e, k);
        else if (const char *te = env_get(env, "SLURM_TRES_PER_TASK"))
            ok = tres_gpu_count(te, k);
        if (ok && k) word += ",gpus-per-task=" + std::to_string(k);
        return word;
    };
    std::string hint;
    for (const SrunComponent &c : srun_components(argc, argv, nullptr))
        hint += (hint.empty() ? "" : ";") + section(static_cast<int>(c.opts_end - c.opts_begin), argv + c.opts_begin);
    if (hint.empty()) hint = section(0, argv);
    if (hint.size() >= outlen) return -1;
    copy_out(hint, out, outlen);
    return 0;
} catch (...) {
    return -1;  // out of memory: no word rather than a wrong one
}
