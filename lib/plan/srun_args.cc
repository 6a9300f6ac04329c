// srun's own command line, read the way srun reads it (getopt_long with
// "+": its options end at the first word that is neither an option nor an
// option's value; a heterogeneous srun's components are separated by the
// word ":", each with its options, program and arguments).  SPANK gives a
// plugin no item for srun's options before the step exists, so
// init_post_opt reads /proc/self/cmdline and this decides (--async, each
// component's options for DIST_BIND_SRUN_DEVICES, and --export).  The
// option names are srun's in Slurm 26.05, the first release with --async;
// what matters about each is whether it takes a value.
#include <algorithm>
#include <cstring>
#include <strings.h>
#include <string_view>

#include "plan.hh"

namespace {

// Long options with a required value ("--name VALUE" or "--name=VALUE").
constexpr const char *kWithValue[] = {
    "accel-bind",
    "account",
    "acctg-freq",
    "autocomplete",
    "bb",
    "bbf",
    "bcast-exclude",
    "begin",
    "chdir",
    "cluster",
    "cluster-constraint",
    "clusters",
    "comment",
    "constraint",
    "container",
    "container-id",
    "container-type",
    "context",
    "core-spec",
    "cores-per-socket",
    "cpu-bind",
    "cpu-freq",
    "cpu_bind",
    "cpus-per-gpu",
    "cpus-per-task",
    "deadline",
    "delay-boot",
    "dependency",
    "distribution",
    "epilog",
    "error",
    "exclude",
    "export",
    "extra",
    "extra-node-info",
    "gpu-bind",
    "gpu-freq",
    "gpus",
    "gpus-per-node",
    "gpus-per-socket",
    "gpus-per-task",
    "gres",
    "gres-flags",
    "het-group",
    "hint",
    "ignore-signals",
    "input",
    "job-name",
    "jobid",
    "licenses",
    "mail-type",
    "mail-user",
    "mcs-label",
    "mem",
    "mem-bind",
    "mem-per-cpu",
    "mem-per-gpu",
    "mem-update",
    "mincpus",
    "mpi",
    "msg-timeout",
    "network",
    "nodefile",
    "nodelist",
    "nodes",
    "ntasks",
    "ntasks-per-core",
    "ntasks-per-gpu",
    "ntasks-per-node",
    "ntasks-per-socket",
    "ntasks-per-tres",
    "open-mode",
    "output",
    "pack-group",
    "partition",
    "prefer",
    "priority",
    "profile",
    "prolog",
    "qos",
    "relative",
    "reservation",
    "resources",
    "segment",
    "signal",
    "slurmd-debug",
    "sockets-per-node",
    "switches",
    "task-epilog",
    "task-prolog",
    "tasks-per-node",
    "thread-spec",
    "threads",
    "threads-per-core",
    "time",
    "time-min",
    "tmp",
    "treewidth",
    "tres-bind",
    "tres-per-task",
    "wait",
    "wckey",
};

// Long options without a value, or with an optional one ("--name=VALUE"
// only); dist-bind's own among them.
constexpr const char *kWithoutValue[] = {
    "async",
    "bcast",
    "compress",
    "consolidate-segments",
    "contiguous",
    "debugger-test",
    "disable-status",
    "exact",
    "exclusive",
    "external-launcher",
    "help",
    "hold",
    "immediate",
    "interactive",
    "kill-on-bad-exit",
    "label",
    "multi-prog",
    "nice",
    "no-allocate",
    "no-kill",
    "oom-kill-step",
    "overcommit",
    "overlap",
    "oversubscribe",
    "parsable",
    "preserve-env",
    "propagate",
    "pty",
    "quiet",
    "quit-on-interrupt",
    "reboot",
    "resv-ports",
    "send-libs",
    "spread-job",
    "spread-segments",
    "stepmgr",
    "test-only",
    "unbuffered",
    "usage",
    "use-min-nodes",
    "verbose",
    "version",
    "wait-for-children",
    "whole",
    "x11",
    "dist-bind",
};

// Short options with a required value ("-n 5", "-n5"), and with an
// optional one (attached only: "-k0").
constexpr std::string_view kShortWithValue = "ABCDFGJLMNSTWbcdeimnopqrtwx";
constexpr std::string_view kShortOptionalValue = "IKk";

enum class Long { Unknown, Ambiguous, Flag, Value, Async };

// What getopt_long makes of `--name`: an exact name, else the one option
// it abbreviates (srun refuses an abbreviation of several).
Long classify(std::string_view name) {
    if (name.empty()) return Long::Unknown;
    for (const char *o : kWithValue)
        if (name == o) return Long::Value;
    for (const char *o : kWithoutValue)
        if (name == o) return name == "async" ? Long::Async : Long::Flag;
    size_t matches = 0;
    Long kind = Long::Unknown;
    for (const char *o : kWithValue)
        if (std::string_view(o).substr(0, name.size()) == name) matches++, kind = Long::Value;
    for (const char *o : kWithoutValue)
        if (std::string_view(o).substr(0, name.size()) == name)
            matches++, kind = std::strcmp(o, "async") == 0 ? Long::Async : Long::Flag;
    return matches > 1 ? Long::Ambiguous : kind;
}

// Where srun's options end in argv[begin, end): the index of the first
// word that is neither an option nor an option's value (the program), or
// `end`; *async is set when --async is among the options, *export_value to
// the last --export's value.
size_t options_end(const char *const *argv, size_t begin, size_t end, bool *async, const char **export_value) {
    for (size_t i = begin; i < end; i++) {
        const std::string_view a = argv[i];
        if (a == "--") return i + 1 < end ? i + 1 : end;
        if (a.size() > 2 && a.substr(0, 2) == "--") {
            const std::string_view body = a.substr(2);
            const size_t eq = body.find('=');
            const Long kind = classify(body.substr(0, eq));
            if (kind == Long::Async && eq == std::string_view::npos && async) *async = true;
            // Not ambiguous (classify): an abbreviation of "export" is one
            // of that option only.
            const std::string_view name = body.substr(0, eq);
            if (kind == Long::Value && std::string_view("export").substr(0, name.size()) == name)
                *export_value = eq != std::string_view::npos ? argv[i] + 3 + eq : i + 1 < end ? argv[i + 1] : "";
            if (kind == Long::Value && eq == std::string_view::npos) i++;  // its value is the next word
        } else if (a.size() > 1 && a[0] == '-') {
            // A cluster of short options ("-lN2"): a value ends it.
            for (size_t j = 1; j < a.size(); j++) {
                if (kShortOptionalValue.find(a[j]) != std::string_view::npos) break;
                if (kShortWithValue.find(a[j]) != std::string_view::npos) {
                    if (j + 1 == a.size()) i++;
                    break;
                }
            }
        } else {
            return i;  // the program
        }
    }
    return end;
}

}  // namespace

namespace db {

std::vector<SrunComponent> srun_components(int argc, const char *const *argv, bool *async) {
    std::vector<SrunComponent> out;
    const size_t n = argv && argc > 0 ? static_cast<size_t>(argc) : 0;
    size_t begin = 1;
    while (begin <= n) {
        // srun reads each component's options with getopt, then its program
        // and arguments up to the next word ":".
        const char *export_value = nullptr;
        const size_t opts_end = options_end(argv, begin, n, async, &export_value);
        size_t next = opts_end;
        while (next < n && std::string_view(argv[next]) != ":") next++;
        out.push_back({begin, std::min(opts_end, next), export_value});
        begin = next + 1;
    }
    return out;
}

}  // namespace db

extern "C" int db_srun_async(int argc, const char *const *argv) {
    bool async = false;
    try {
        db::srun_components(argc, argv, &async);
    } catch (...) {
        // Out of memory in srun: say "not async" (srun fails soon enough),
        // never unwind into it.
        return 0;
    }
    return async;
}

extern "C" int db_srun_exports_all(int argc, const char *const *argv, const char *export_env) {
    if (!argv || argc < 1) return 0;
    try {
        for (const db::SrunComponent &c : db::srun_components(argc, argv, nullptr)) {
            const char *v = c.export_value ? c.export_value : export_env;
            if (!v) continue;  // srun's default: ALL
            const std::string_view first = std::string_view(v).substr(0, std::string_view(v).find(','));
            if (first.size() != 3 || strncasecmp(first.data(), "ALL", 3) != 0) return 0;
        }
        return 1;
    } catch (...) {
        return 0;  // out of memory: carry the words, which costs nothing wrong
    }
}
