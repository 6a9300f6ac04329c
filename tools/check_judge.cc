// dist-bind-check: rank 0's verdict on the step, from every rank's row.
// The mapping is judged as Slurm names GPUs (CUDA_VISIBLE_DEVICES), so it
// is checked on nodes without a GPU driver too; what CUDA itself says is
// judged where it can say it.
#include <algorithm>
#include <cstring>
#include <set>

#include "check.hh"
#include "gpu.hh"

namespace dbcheck {

using namespace db::rt;

Verdict judge(const std::vector<Row> &rows) {
    Verdict v;
    int n = static_cast<int>(rows.size());
    std::map<std::string, std::vector<int>> by_host;
    for (const Row &r : rows) by_host[r.host].push_back(r.rank);

    // Ranks against Slurm's own numbering.
    for (const Row &r : rows) {
        std::string who = "rank " + std::to_string(r.rank) + " (" + r.host + ")";
        if (r.slurm_procid >= 0 && r.slurm_procid != r.rank)
            v.problem(r.rank, "RANK", who + ": rank " + std::to_string(r.rank) + " but SLURM_PROCID=" + std::to_string(r.slurm_procid));
        if (r.slurm_localid >= 0 && r.slurm_localid != r.local_rank)
            v.problem(r.rank, "LOCAL", who + ": local rank " + std::to_string(r.local_rank) +
                                           " but SLURM_LOCALID=" + std::to_string(r.slurm_localid));
        if (std::strcmp(r.master, rows[0].master) != 0)
            v.problem(r.rank, "MASTER", who + ": MASTER_ADDR:MASTER_PORT=" + r.master + " but rank 0 has " + rows[0].master);
    }
    // Per node: local ranks 0..k-1 once each, the right local world size,
    // one node rank per host and a different one on each host.
    std::map<int, std::string> node_owner;
    for (const auto &[host, ranks] : by_host) {
        std::vector<int> locals;
        std::set<int> node_ranks;
        for (int r : ranks) {
            const Row &x = rows[static_cast<size_t>(r)];
            locals.push_back(x.local_rank);
            node_ranks.insert(x.node_rank);
            if (x.local_world != static_cast<int>(ranks.size()))
                v.problem(r, "LOCAL", "rank " + std::to_string(r) + " (" + host + "): local world size " +
                                          std::to_string(x.local_world) + " but " + std::to_string(ranks.size()) +
                                          " ranks run on " + host);
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

    // The mapping, as Slurm names GPUs: works without a GPU driver.
    std::map<std::pair<std::string, std::string>, int> owner;
    for (const Row &r : rows) {
        if (r.visible_count < 0) continue;
        std::string who = "rank " + std::to_string(r.rank) + " (" + r.host + ")";
        std::string g = slurm_gpu(r);
        if (g.empty()) {
            int k = r.visible_count;
            v.problem(r.rank, "NO-SUCH-DEVICE", who + ": device " + std::to_string(r.device) + " does not exist: CUDA_VISIBLE_DEVICES=" +
                                                  r.visible + " has " + std::to_string(k) + " GPU" + (k != 1 ? "s" : ""));
            continue;
        }
        if (!unset(r.own) && r.own != g)
            v.problem(r.rank, "NOT-OWN", who + ": device " + std::to_string(r.device) + " is GPU " + g +
                                          " but the GPU Slurm gave it is " + r.own);
        auto key = std::make_pair(std::string(r.host), g);
        auto [it, fresh] = owner.emplace(key, r.rank);
        if (!fresh) {
            v.flag(it->second, "DUPLICATE");
            v.problem(r.rank, "DUPLICATE", "ranks " + std::to_string(it->second) + " and " + std::to_string(r.rank) +
                                               " would both use GPU " + g + " on " + r.host);
        }
    }

    // What CUDA itself says.
    int usable = 0, none = 0;
    std::string none_why;
    for (const Row &r : rows) {
        if (r.gpu_status == DISTBIND_OK) {
            usable++;
        } else if (r.gpu_status == DISTBIND_ERR_NO_GPU || r.gpu_status == DISTBIND_ERR_UNAVAILABLE) {
            none++;
            if (none_why.empty()) none_why = std::string(r.host) + ": " + r.gpu_msg;
        } else {
            v.problem(r.rank, "CUDA", "rank " + std::to_string(r.rank) + " (" + r.host + "): " + r.gpu_msg);
        }
    }
    std::vector<gpu::Probe> probes;
    for (const Row &r : rows) {
        gpu::Probe p{};
        p.status = r.gpu_status;
        p.device = r.device;
        db::copy_out(r.host, p.host, sizeof p.host);
        db::copy_out(r.bus, p.bus, sizeof p.bus);
        if (unset(p.bus)) p.bus[0] = '\0';
        probes.push_back(p);
    }
    std::string dup = gpu::find_duplicate(probes);
    if (!dup.empty()) v.problems.push_back(dup);
    if (usable == n) {
        v.gpus = true;
    } else if (none == n) {
        v.notes.push_back("GPU checks skipped: no rank has a usable GPU (" + none_why + ")");
    } else if (none > 0) {
        v.problems.push_back(std::to_string(none) + " of " + std::to_string(n) + " ranks have no usable GPU (" + none_why +
                             ") while the others do");
    }
    return v;
}

}  // namespace dbcheck
