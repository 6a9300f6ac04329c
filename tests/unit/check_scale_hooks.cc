// dist-bind-check's table and verdict at scale, reached from the C unit
// test test_check_scale.c.  The rows are made here as rank 0 receives them
// from a step of many nodes (my_row reads one process's own environment,
// which cannot be thousands of hosts).  The tool's objects in this test are
// built with -fsanitize-coverage=trace-pc (tests/unit/build.mk): every basic
// block they run, the templates they instantiate included, calls
// __sanitizer_cov_trace_pc below, so the count is the work done, the same on
// every machine and every run, where a time is not.  What runs inside
// libstdc++.so and libc (memcmp, a tree's rebalancing) is not counted.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check.hh"

namespace {

unsigned long g_blocks;

std::string host_of(int node) {
    std::string n = std::to_string(node + 1);
    return "n" + std::string(n.size() < 4 ? 4 - n.size() : 0, '0') + n;
}

}  // namespace

extern "C" void __sanitizer_cov_trace_pc(void) { g_blocks++; }

extern "C" int dbcheck_test_ranges(const int *values, int n, char *out, size_t len) {
    std::string s = dbcheck::ranges(std::vector<int>(values, values + n));
    dbcheck::put(out, len, s);
    return static_cast<int>(s.size());
}

// A step of `ranks` ranks on `nodes` nodes, block (the first ranks % nodes
// nodes one more) or cyclic, rank 0's host as MASTER_ADDR.  Every node has
// as many GPUs as its most crowded node has tasks, named 0..k-1 by Slurm,
// and each rank is given the one of its local rank (DIST_BIND_GPUS).  With
// `gpus`, CUDA describes each device (a UUID per node and GPU), else there
// is no driver.  `faults`, ";"-separated: RANK:device=N (the rank uses
// device N), RANK:master=S (its MASTER_ADDR:MASTER_PORT is S),
// RANK:local_world=N, RANK:node_rank=N; RANK "*" is every rank, "+" every
// rank but 0.  layout: 0 auto, 1 --full, 2 --per-node.  Returns the table,
// the notes and the PROBLEM lines as dist-bind-check prints them (free()),
// and the blocks the judge ran and the table ran per node and per rank.
extern "C" char *dbcheck_test_step(int ranks, int nodes, int cyclic, int gpus, const char *faults, int layout,
                                   unsigned long *judge_work, unsigned long table_work[2]) {
    if (ranks < 1 || nodes < 1 || nodes > ranks) return nullptr;
    std::vector<int> node(static_cast<size_t>(ranks)), local(node.size()), count(static_cast<size_t>(nodes));
    const int base = ranks / nodes, extra = ranks % nodes;
    for (int r = 0, n = 0, at = 0; r < ranks; r++) {
        if (cyclic) {
            n = r % nodes;
        } else if (at == base + (n < extra)) {
            n++;
            at = 0;
        }
        at++;
        node[static_cast<size_t>(r)] = n;
        local[static_cast<size_t>(r)] = count[static_cast<size_t>(n)]++;
    }
    const int k = base + (extra > 0);
    std::string visible;
    for (int g = 0; g < k; g++) visible += (g ? "," : "") + std::to_string(g);
    std::vector<int> device(local);
    std::vector<std::string> master(node.size(), host_of(0) + ":29500");
    std::vector<int> local_world(node.size()), node_rank(node);
    for (size_t i = 0; i < node.size(); i++) local_world[i] = count[static_cast<size_t>(node[i])];
    for (std::string_view f : dbcheck::split(faults ? faults : "", ';')) {
        size_t colon = f.find(':'), eq = f.find('=');
        if (f.empty() || colon == std::string_view::npos || eq == std::string_view::npos || eq < colon) continue;
        std::string who(f.substr(0, colon)), what(f.substr(colon + 1, eq - colon - 1)), value(f.substr(eq + 1));
        for (int r = 0; r < ranks; r++) {
            if (!(who == "*" || (who == "+" && r > 0) || who == std::to_string(r))) continue;
            if (what == "device") device[static_cast<size_t>(r)] = std::atoi(value.c_str());
            if (what == "master") master[static_cast<size_t>(r)] = value;
            if (what == "local_world") local_world[static_cast<size_t>(r)] = std::atoi(value.c_str());
            if (what == "node_rank") node_rank[static_cast<size_t>(r)] = std::atoi(value.c_str());
        }
    }
    std::vector<dbcheck::Row> rows(node.size());
    for (int r = 0; r < ranks; r++) {
        const size_t i = static_cast<size_t>(r);
        dbcheck::Row &x = rows[i];
        x = dbcheck::Row{};
        x.rank = x.slurm_procid = r;
        x.world = ranks;
        x.local_rank = x.slurm_localid = local[i];
        x.local_world = local_world[i];
        x.node_rank = node_rank[i];
        x.device = device[i];
        x.gpu_status = gpus ? DISTBIND_OK : DISTBIND_ERR_NO_GPU;
        x.gpu_count = gpus ? k : -1;
        x.gpu_numa = gpus ? 0 : -1;
        dbcheck::put(x.host, sizeof x.host, host_of(node[i]));
        dbcheck::put(x.source, sizeof x.source, "dist-bind");
        dbcheck::put(x.master, sizeof x.master, master[i]);
        dbcheck::put(x.cpu_numa, sizeof x.cpu_numa, "0");
        dbcheck::set_gpu_lists(x, visible.c_str(), std::to_string(local[i]).c_str());
        if (gpus && x.gpu[0]) {
            dbcheck::put(x.uuid, sizeof x.uuid, "GPU-" + std::string(x.host) + "-" + x.gpu);
            dbcheck::put(x.bus, sizeof x.bus, "0000:" + std::to_string(10 + std::atoi(x.gpu)) + ":00.0");
        }
        if (!gpus) dbcheck::put(x.gpu_msg, sizeof x.gpu_msg, "no usable GPU: no driver");
        x.overwritten[0] = '\0';
    }
    g_blocks = 0;
    dbcheck::Verdict v = dbcheck::judge(rows);
    if (judge_work) *judge_work = g_blocks;
    const dbcheck::Layout l[] = {dbcheck::Layout::kAuto, dbcheck::Layout::kPerRank, dbcheck::Layout::kPerNode};
    std::string out = dbcheck::format_table(rows, v, "pmix", l[layout >= 0 && layout <= 2 ? layout : 0]);
    for (int i = 0; table_work && i < 2; i++) {
        g_blocks = 0;
        dbcheck::format_table(rows, v, "pmix", i ? dbcheck::Layout::kPerRank : dbcheck::Layout::kPerNode);
        table_work[i] = g_blocks;
    }
    for (const std::string &n : v.notes) out += n + "\n";
    for (const std::string &p : v.problems) out += "PROBLEM: " + p + "\n";
    return strdup(out.c_str());
}
