// dist-bind-check: run as every task of a step (`srun --dist-bind
// dist-bind-check`).  Each rank reports where it is and what GPU it would
// use; rank 0 prints one table for the step, flags what is wrong, and, when
// every rank has a GPU, runs an NCCL all-reduce and checks its result.
// Every rank exits with rank 0's verdict: 0 only when all it checked is
// right.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "check.hh"

namespace {

using namespace dbcheck;

const char kUsageText[] =
    "usage: srun [options] --dist-bind dist-bind-check [--bytes N] [--iters N] [--full | --per-node]\n"
    "       dist-bind-check --plan ...   (dry run of a layout, without a job)\n"
    "Checks the step: every rank's place, its device and GPU, the exchange\n"
    "between ranks and, on GPU nodes, an NCCL all-reduce (--bytes per rank,\n"
    "default 67108864; --iters timed rounds, default 20).  Exit 0 only when\n"
    "everything checked is right.  Up to 64 ranks the table has one row per\n"
    "rank, above that one line per node and the flagged ranks' rows;\n"
    "--full prints every rank's row, --per-node the node lines at any size.\n";

// The exchange itself: a broadcast from the last rank and a barrier, on
// top of the allgather that brought the table.
bool check_exchange(distbind_t *h, std::string &why) {
    int last = distbind_world_size(h) - 1;
    uint64_t token = distbind_rank(h) == last ? 0x5eed0000u + static_cast<uint64_t>(last) : 0;
    if (distbind_broadcast(h, &token, sizeof token, last) != DISTBIND_OK || distbind_barrier(h) != DISTBIND_OK) {
        why = distbind_last_error(h);
        return false;
    }
    if (token != 0x5eed0000u + static_cast<uint64_t>(last)) {
        why = "the broadcast from rank " + std::to_string(last) + " delivered wrong data";
        return false;
    }
    return true;
}

bool parse_options(int argc, char **argv, Options &o) {
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        uint64_t v;
        if (a == "--help" || a == "-h") {
            std::fputs(kUsageText, stdout);
            std::exit(kOk);
        }
        if (a == "--full" || a == "--per-node") {
            Layout want = a == "--full" ? Layout::kPerRank : Layout::kPerNode;
            if (o.layout != Layout::kAuto && o.layout != want) {
                std::fprintf(stderr, "dist-bind-check: --full and --per-node exclude each other\n");
                return false;
            }
            o.layout = want;
            continue;
        }
        if ((a == "--bytes" || a == "--iters") && i + 1 < argc) {
            const char *val = argv[++i];
            if (a == "--bytes" && parse_count(val, 1ull << 34, v) && v >= sizeof(float)) {
                o.bytes = v;
                continue;
            }
            if (a == "--iters" && parse_count(val, 100000, v) && v >= 1) {
                o.iters = static_cast<int>(v);
                continue;
            }
            std::fprintf(stderr, "dist-bind-check: %s \"%s\": expected %s\n", a.c_str(), val,
                         a == "--bytes" ? "a byte count from 4 to 17179869184" : "a count from 1 to 100000");
            return false;
        }
        std::fprintf(stderr, "dist-bind-check: unknown argument \"%s\"\n%s", a.c_str(), kUsageText);
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    // It takes the arguments from "--plan" on.
    if (argc > 1 && std::strcmp(argv[1], "--plan") == 0) return plan_main(argc - 1, argv + 1);
    Options o;
    if (!parse_options(argc, argv, o)) return kUsage;
    // The all-reduce's waits are bounded only on a non-blocking
    // communicator, and NCCL_COMM_BLOCKING (from the environment or NCCL's
    // config files) overrides what the program asks for: ask here, before
    // NCCL is loaded.
    const char *nb = std::getenv("NCCL_COMM_BLOCKING");
    std::string nb_note = nb && std::strcmp(nb, "0") ? std::string("NCCL_COMM_BLOCKING=") + nb +
                                                           " overridden: dist-bind-check needs a non-blocking NCCL "
                                                           "communicator to bound its waits"
                                                     : "";
    setenv("NCCL_COMM_BLOCKING", "0", 1);

    // Said by each task before anything else: with the variables replaced
    // (a container plugin after dist-bind), the exchange may not even start.
    char *changed = nullptr;
    if (distbind_env_overwritten(&changed) == DISTBIND_OK && changed[0]) {
        const char *procid = std::getenv("SLURM_PROCID");
        char host[256] = "?";
        gethostname(host, sizeof host - 1);
        std::fprintf(stderr, "dist-bind-check: task %s (%s): %s\n", procid ? procid : "?", host,
                     overwritten_message(changed).c_str());
    }
    std::free(changed);
    // srun leaves hints for the plugin, which takes them out in each task's
    // task_init: with a hint here and no record, what the plugin set in
    // task_init never reached this program (srun --container on Slurm
    // before 23.02 writes the container's environment before task_init).
    if (!std::getenv("DIST_BIND_SET") && (std::getenv("DIST_BIND_NODE_RANKS") || std::getenv("DIST_BIND_RANK0_ADDR") ||
                                          std::getenv("DIST_BIND_SRUN_DEVICES"))) {
        char host[256] = "?";
        gethostname(host, sizeof host - 1);
        std::fprintf(stderr,
                     "dist-bind-check: PROBLEM: %s: dist-bind's variables are missing here although srun ran with "
                     "--dist-bind (srun's hints reached this program, the plugin's task_init did not)%s; see "
                     "docs/containers.md\n",
                     host,
                     std::getenv("SLURM_CONTAINER")
                         ? ": with srun --container, Slurm before 23.02 writes the container's environment before "
                           "SPANK task_init"
                         : "");
        return kProblems;
    }

    distbind_t *h = nullptr;
    if (distbind_init(&h) != DISTBIND_OK) {
        std::fprintf(stderr, "%s\n", distbind_last_error(nullptr));
        return kCannotStart;
    }
    int rank = distbind_rank(h), world = distbind_world_size(h);
    Row mine = my_row(h);
    std::vector<Row> rows(static_cast<size_t>(world));
    if (distbind_allgather(h, &mine, sizeof mine, rows.data()) != DISTBIND_OK) {
        std::fprintf(stderr, "%s\n", distbind_last_error(h));
        distbind_destroy(h);
        return kProblems;
    }
    std::string xwhy;
    bool xok = check_exchange(h, xwhy);
    if (!xok) {
        std::fprintf(stderr, "dist-bind-check: rank %d: exchange failed: %s\n", rank, xwhy.c_str());
        distbind_destroy(h);
        return kProblems;
    }

    Verdict v = judge(rows);
    if (!nb_note.empty()) v.notes.push_back(nb_note);
    // Rank 0 decides whether the GPU part runs, so every rank does the same.
    int32_t run_nccl = rank == 0 && v.gpus && v.problems.empty() ? 1 : 0;
    if (distbind_broadcast(h, &run_nccl, sizeof run_nccl, 0) != DISTBIND_OK) {
        std::fprintf(stderr, "%s\n", distbind_last_error(h));
        distbind_destroy(h);
        return kProblems;
    }
    std::string nccl_line;
    bool exchange_ok = !run_nccl || gpu_part(h, o, v, nccl_line);

    int32_t verdict = v.problems.empty() ? kOk : kProblems;
    if (rank == 0) {
        std::fputs(format_table(rows, v, distbind_bootstrap(h), o.layout).c_str(), stdout);
        std::printf("exchange: ok (allgather, broadcast from rank %d, barrier over %s)\n", world - 1,
                    distbind_bootstrap(h));
        if (!std::strcmp(distbind_bootstrap(h), "tcp") && getenv("DIST_BIND_TCP_INSECURE") &&
            !std::strcmp(getenv("DIST_BIND_TCP_INSECURE"), "1"))
            std::printf("WARNING: DIST_BIND_TCP_INSECURE=1: the exchange ran without authentication\n");
        if (!nccl_line.empty()) std::printf("%s\n", nccl_line.c_str());
        for (const std::string &n : v.notes) std::printf("%s\n", n.c_str());
        for (const std::string &p : v.problems) std::printf("PROBLEM: %s\n", p.c_str());
        std::printf("dist-bind-check: %s\n", verdict == kOk ? "all checks passed"
                                                            : (std::to_string(v.problems.size()) + " problem" +
                                                               (v.problems.size() > 1 ? "s" : "") + " found")
                                                                  .c_str());
        std::fflush(stdout);
    }
    // Every rank exits with rank 0's verdict, as long as the exchange
    // works to tell it.
    if (exchange_ok && distbind_broadcast(h, &verdict, sizeof verdict, 0) != DISTBIND_OK) {
        std::fprintf(stderr, "%s\n", distbind_last_error(h));
        verdict = kProblems;
    }
    distbind_destroy(h);
    return verdict;
}
