// dist-bind-check: rank 0's verdict on the step, from every rank's row.
// The mapping is judged as Slurm names GPUs (CUDA_VISIBLE_DEVICES), so it
// is checked on nodes without a GPU driver too; what CUDA itself says is
// judged where it can say it.
#include <algorithm>
#include <cstring>
#include <set>

#include "check.hh"

namespace dbcheck {

namespace {

std::string who(const Row &r) { return "rank " + std::to_string(r.rank) + " (" + r.host + ")"; }

// Ranks against Slurm's numbering and each other: RANK, LOCAL, NODE, MASTER.
void judge_places(const std::vector<Row> &rows, Verdict &v) {
    // A launcher's workers (torchrun) count per agent, its "node": two
    // agents on one host have a node rank each.
    std::map<std::string, std::vector<int>> by_host;
    for (const Row &r : rows) {
        by_host[r.relaunched ? std::string(r.host) + " (agent of node rank " + std::to_string(r.node_rank) + ")"
                             : std::string(r.host)]
            .push_back(r.rank);
        if (r.slurm_procid >= 0 && r.slurm_procid != r.rank)
            v.problem(
                r.rank, "RANK",
                who(r) + ": rank " + std::to_string(r.rank) + " but SLURM_PROCID=" + std::to_string(r.slurm_procid));
        if (r.slurm_localid >= 0 && r.slurm_localid != r.local_rank)
            v.problem(r.rank, "LOCAL",
                      who(r) + ": local rank " + std::to_string(r.local_rank) +
                          " but SLURM_LOCALID=" + std::to_string(r.slurm_localid));
        if (r.overwritten[0]) v.problem(r.rank, "OVERWRITTEN", who(r) + ": " + overwritten_message(r.overwritten));
        if (std::strcmp(r.master, rows[0].master) != 0)
            v.problem(r.rank, "MASTER",
                      who(r) + ": MASTER_ADDR:MASTER_PORT=" + r.master + " but rank 0 has " + rows[0].master);
    }
    // Per node (or agent): local ranks 0..k-1 once each, the right local
    // world size, one node rank per host and a different one on each host.
    std::map<int, std::string> node_owner;
    for (const auto &[host, ranks] : by_host) {
        std::vector<int> locals;
        std::set<int> node_ranks;
        for (int r : ranks) {
            const Row &x = rows[static_cast<size_t>(r)];
            locals.push_back(x.local_rank);
            node_ranks.insert(x.node_rank);
            if (x.local_world != static_cast<int>(ranks.size()))
                v.problem(r, "LOCAL",
                          who(x) + ": local world size " + std::to_string(x.local_world) + " but " +
                              std::to_string(ranks.size()) + " ranks run on " + host);
        }
        std::sort(locals.begin(), locals.end());
        for (size_t i = 0; i < locals.size(); i++)
            if (locals[i] != static_cast<int>(i)) {
                for (int r : ranks) v.flag(r, "LOCAL");
                v.problems.push_back("the local ranks on " + host + " are not 0.." + std::to_string(ranks.size() - 1) +
                                     " once each");
                break;
            }
        if (node_ranks.size() != 1) {
            for (int r : ranks) v.flag(r, "NODE");
            v.problems.push_back("the ranks on " + host + " disagree on their node rank");
        }
        int nr = *node_ranks.begin();
        if (node_owner.count(nr)) {
            for (int r : ranks) v.flag(r, "NODE");
            v.problems.push_back(host + " and " + node_owner[nr] + " have the same node rank " + std::to_string(nr));
        }
        node_owner[nr] = host;
    }
}

// The mapping as Slurm names GPUs, which needs no driver: NO-SUCH-DEVICE,
// NOT-OWN, DUPLICATE (where CUDA cannot tell the GPUs apart); and
// CANNOT-OPEN where CUDA saw fewer GPUs than the list names.
void judge_mapping(const std::vector<Row> &rows, Verdict &v) {
    std::map<std::pair<std::string, std::string>, int> owner;
    for (const Row &r : rows) {
        if (r.visible_count < 0) continue;
        if (r.unopenable[0])
            v.problem(r.rank, "CANNOT-OPEN",
                      who(r) + ": CUDA_VISIBLE_DEVICES=" + r.visible + " lists " + std::to_string(r.visible_count) +
                          " GPU" + (r.visible_count != 1 ? "s" : "") + " but CUDA sees " + std::to_string(r.gpu_count) +
                          ": " + r.unopenable +
                          " name no GPU this task can open (CUDA stops reading the list at "
                          "the first such entry; under a device cgroup a task can open "
                          "only the GPUs Slurm gave it)");
        std::string g = slurm_gpu(r);
        if (g.empty()) {
            int k = r.visible_count;
            v.problem(r.rank, "NO-SUCH-DEVICE",
                      who(r) + ": device " + std::to_string(r.device) + " does not exist: CUDA_VISIBLE_DEVICES=" +
                          r.visible + " has " + std::to_string(k) + " GPU" + (k != 1 ? "s" : ""));
            continue;
        }
        if (!unset(r.own) && r.own != g)
            v.problem(r.rank, "NOT-OWN",
                      who(r) + ": device " + std::to_string(r.device) + " is GPU " + g +
                          " but the GPU Slurm gave it is " + r.own);
        auto [it, fresh] = owner.emplace(std::make_pair(std::string(r.host), g), r.rank);
        // Where CUDA named both GPUs, their UUIDs decide (judge_cuda): under
        // a device cgroup Slurm numbers each task's GPUs from 0.
        if (!fresh && r.uuid[0] && rows[static_cast<size_t>(it->second)].uuid[0]) continue;
        if (!fresh) {
            v.flag(it->second, "DUPLICATE");
            v.problem(r.rank, "DUPLICATE",
                      "ranks " + std::to_string(it->second) + " and " + std::to_string(r.rank) +
                          " would both use GPU " + g + " on " + r.host);
        }
    }
}

// What CUDA itself says: CUDA, DUPLICATE by GPU UUID (exact whatever the
// host names), and whether the GPU part can run.
void judge_cuda(const std::vector<Row> &rows, Verdict &v) {
    int n = static_cast<int>(rows.size()), usable = 0, none = 0;
    std::string none_why;
    std::map<std::string, int> by_uuid;
    // Each finding once, through a set: a scan of all findings for each
    // rank on a shared GPU grew with the square of the ranks (every rank on
    // its node's GPU 0: 53 times the work at 8,192 ranks as at 1,024).
    std::set<std::string> said(v.problems.begin(), v.problems.end());
    for (const Row &r : rows) {
        if (r.gpu_status == DISTBIND_OK) {
            usable++;
            if (!r.uuid[0]) continue;
            auto [it, fresh] = by_uuid.emplace(r.uuid, r.rank);
            if (fresh) continue;
            const Row &a = rows[static_cast<size_t>(it->second)];
            v.flag(a.rank, "DUPLICATE");
            v.flag(r.rank, "DUPLICATE");
            std::string s = "ranks " + std::to_string(a.rank) + " and " + std::to_string(r.rank) +
                            " would both use GPU " + r.uuid + " (" + r.bus + ") on " + a.host;
            if (std::strcmp(a.host, r.host)) s += " and " + std::string(r.host) + ": one GPU under two host names";
            if (said.insert(s).second) v.problems.push_back(s);
        } else if (r.gpu_status == DISTBIND_ERR_NO_GPU || r.gpu_status == DISTBIND_ERR_UNAVAILABLE) {
            none++;
            if (none_why.empty()) none_why = std::string(r.host) + ": " + r.gpu_msg;
        } else {
            v.problem(r.rank, "CUDA", who(r) + ": " + r.gpu_msg);
        }
    }
    if (usable == n) {
        v.gpus = true;
    } else if (none == n) {
        v.notes.push_back("GPU checks skipped: no rank has a usable GPU (" + none_why + ")");
    } else if (none > 0) {
        v.problems.push_back(std::to_string(none) + " of " + std::to_string(n) + " ranks have no usable GPU (" +
                             none_why + ") while the others do");
    }
}

}  // namespace

std::string overwritten_message(const std::string &names) {
    return "not what dist-bind set: " + names +
           " (something after dist-bind changed them, e.g. a container plugin listed after dist-bind in "
           "plugstack.conf: list dist-bind after it, see docs/containers.md)";
}

Verdict judge(std::vector<Row> &rows) {
    Verdict v;
    int n = static_cast<int>(rows.size());
    // Every row came from another rank: nothing is read before it is checked.
    for (int i = 0; i < n; i++) {
        std::string bad = sanitize(rows[static_cast<size_t>(i)], i, n);
        if (!bad.empty()) v.problem(i, "MALFORMED", "rank " + std::to_string(i) + " sent a malformed report: " + bad);
    }
    judge_places(rows, v);
    judge_mapping(rows, v);
    judge_cuda(rows, v);
    return v;
}

}  // namespace dbcheck
