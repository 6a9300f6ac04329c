// torchrun as the step's program (srun --dist-bind torchrun ...): the flags
// typed on its command line that dist-bind's PET_* defaults must not
// override.  torchrun takes every flag's default from PET_<FLAG>, and a
// typed flag beats its default; but its static rendezvous takes
// --rdzv-endpoint (PET_RDZV_ENDPOINT) over --master-addr/--master-port
// (get_rdzv_endpoint in torch/distributed/run.py, 1.13 to 2.14), so a
// typed master would lose to dist-bind's endpoint.  The plan then makes the
// endpoint from the typed master instead.
//
// Read as torchrun's argparse reads it: its options up to the training
// script (the first word that is no option nor an option's value), dashes
// or underscores alike.  Abbreviated flags (argparse takes "--master-p")
// and a torchrun started from a shell (bash -c "torchrun ...") are not
// seen; exporting PET_RDZV_ENDPOINT= (empty) hands the choice back there.
#include <string_view>

#include "plan.hh"

namespace db {

namespace {

// torchrun's options that take no value (1.13 to 2.14).
constexpr std::string_view kFlags[] = {"standalone", "module",  "no-python",          "run-path",
                                       "help",       "version", "virtual-local-rank", "no-progress"};

std::string normal(std::string_view name) {
    std::string out(name);
    for (char &c : out)
        if (c == '_') c = '-';
    return out;
}

std::string_view base_name(std::string_view path) {
    const size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Where torchrun's own options start in argv, or 0 when the program is not
// torchrun: "torchrun ...", "python3 -m torch.distributed.run ..." (or the
// older torch.distributed.launch, which reads the same flags).
size_t torchrun_start(int argc, const char *const *argv) {
    if (argc < 1 || !argv || !argv[0]) return 0;
    const std::string_view prog = base_name(argv[0]);
    if (prog == "torchrun") return 1;
    if (prog.substr(0, 6) != "python") return 0;
    for (int i = 1; i < argc && argv[i]; i++) {
        std::string_view a = argv[i];
        std::string_view module;
        if (a == "-m" && i + 1 < argc && argv[i + 1])
            module = argv[++i];
        else if (a.substr(0, 2) == "-m")
            module = a.substr(2);
        else if (a.size() > 1 && a[0] == '-')
            continue;  // an interpreter option (-u, -X dev is not handled)
        else
            return 0;  // a script
        return module == "torch.distributed.run" || module == "torch.distributed.launch" ? static_cast<size_t>(i + 1)
                                                                                         : 0;
    }
    return 0;
}

}  // namespace

TorchrunFlags torchrun_flags(int argc, const char *const *argv) {
    TorchrunFlags out;
    const size_t start = torchrun_start(argc, argv);
    if (!start) return out;
    out.torchrun = true;
    for (size_t i = start; i < static_cast<size_t>(argc) && argv[i]; i++) {
        const std::string_view a = argv[i];
        if (a == "--" || a.size() < 2 || a[0] != '-') break;  // the training script
        std::string name, value;
        bool has_value = false;
        if (a[1] == '-') {
            const size_t eq = a.find('=');
            name = normal(a.substr(2, eq == std::string_view::npos ? std::string_view::npos : eq - 2));
            if (eq != std::string_view::npos) {
                value = std::string(a.substr(eq + 1));
                has_value = true;
            } else {
                bool flag = false;
                for (std::string_view f : kFlags) flag = flag || name == f;
                if (!flag && i + 1 < static_cast<size_t>(argc) && argv[i + 1]) {
                    value = argv[++i];
                    has_value = true;
                }
            }
        } else if ((a[1] == 'r' || a[1] == 't') && a.size() == 2) {
            i++;  // --redirects, --tee: their value is the next word
        }
        if (!has_value) continue;
        if (name == "master-addr" || name == "master-port") {
            (name == "master-addr" ? out.master_addr : out.master_port) = value;
            out.typed_master = true;
        }
        if (name == "rdzv-endpoint") out.rdzv_endpoint = true;
    }
    return out;
}

std::string torchrun_endpoint(const NodePlan &np) {
    const TorchrunFlags &f = np.torchrun;
    if (!f.typed_master || f.rdzv_endpoint) return np.master_addr + ":" + np.master_port;
    std::string addr = f.master_addr.empty() ? np.master_addr : f.master_addr;
    if (addr.find(':') != std::string::npos && addr.front() != '[') addr = "[" + addr + "]";
    return addr + ":" + (f.master_port.empty() ? np.master_port : f.master_port);
}

}  // namespace db
