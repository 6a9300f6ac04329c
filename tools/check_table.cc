// dist-bind-check: rank 0's table.  One row per rank reads well on a few
// nodes and not at all on a thousand (8,192 rows); there one line per node
// is scanned for what is not "ok", and the flagged ranks' rows follow in
// full, in the same format, so that nothing the small table would show of
// them is lost.  Everything here is linear in the ranks but for sorting.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "check.hh"

namespace dbcheck {

namespace {

std::string cell(const char *s) { return unset(s) || !*s ? "-" : s; }

// Left-aligned columns two spaces apart, the last one unpadded (the table
// has always been printed so, and the lab's tests split it on spaces).
void put_columns(const std::vector<std::vector<std::string>> &t, std::string &out) {
    std::vector<size_t> w(t[0].size(), 0);
    for (const auto &row : t)
        for (size_t i = 0; i < row.size(); i++) w[i] = std::max(w[i], row[i].size());
    for (const auto &row : t) {
        for (size_t i = 0; i < row.size(); i++) {
            out += row[i];
            if (i + 1 < row.size()) out.append(w[i] - row[i].size() + 2, ' ');
        }
        out += '\n';
    }
}

std::vector<std::string> rank_header() {
    return {"rank", "host", "node", "local", "device", "gpu", "bus id", "gpu numa", "cpu numa", "flags"};
}

std::vector<std::string> rank_cells(const Row &r, const Verdict &v) {
    std::string g = slurm_gpu(r);
    auto it = v.flags.find(r.rank);
    return {std::to_string(r.rank),
            r.host,
            std::to_string(r.node_rank),
            std::to_string(r.local_rank) + "/" + std::to_string(r.local_world),
            std::to_string(r.device),
            g.empty() ? "-" : g,
            cell(r.bus),
            r.gpu_numa >= 0 ? std::to_string(r.gpu_numa) : "-",
            cell(r.cpu_numa),
            it == v.flags.end() ? "ok" : it->second};
}

// A node as the judge counts nodes: a host, or under a launcher (torchrun)
// each of its agents, whose workers share the agent's node rank.
struct Node {
    std::string host;
    std::vector<int> ranks, node_ranks, local_worlds, devices, flagged;
    std::vector<std::string> flags;  // in the order they first appear
};

void per_node(const std::vector<Row> &rows, const Verdict &v, std::string &out) {
    std::map<std::pair<std::string, int>, size_t> index;
    std::vector<Node> nodes;  // rows come in rank order: nodes by their lowest rank
    for (const Row &r : rows) {
        auto [it, fresh] =
            index.emplace(std::make_pair(std::string(r.host), r.relaunched ? r.node_rank : -1), nodes.size());
        if (fresh) nodes.push_back(Node{r.host, {}, {}, {}, {}, {}, {}});
        Node &n = nodes[it->second];
        n.ranks.push_back(r.rank);
        n.node_ranks.push_back(r.node_rank);
        n.local_worlds.push_back(r.local_world);
        n.devices.push_back(r.device);
        auto f = v.flags.find(r.rank);
        if (f == v.flags.end()) continue;
        n.flagged.push_back(r.rank);
        for (std::string_view one : split(f->second, ','))
            if (std::find(n.flags.begin(), n.flags.end(), one) == n.flags.end()) n.flags.emplace_back(one);
    }
    std::vector<std::vector<std::string>> t;
    t.push_back({"host", "node", "ranks", "tasks", "devices", "flags"});
    for (Node &n : nodes) {
        std::string verdict = "ok";
        if (!n.flagged.empty()) {
            verdict.clear();
            for (const std::string &f : n.flags) verdict += (verdict.empty() ? "" : ",") + f;
            verdict += std::string(n.flagged.size() > 1 ? " (ranks " : " (rank ") + ranges(n.flagged) + ")";
        }
        t.push_back(
            {n.host, ranges(n.node_ranks), ranges(n.ranks), ranges(n.local_worlds), ranges(n.devices), verdict});
    }
    put_columns(t, out);
    if (v.flags.empty()) {
        out += "no rank flagged (dist-bind-check --full prints every rank's row)\n";
        return;
    }
    // Not led by a number: a line that starts with one is a rank's row.
    out += "flagged ranks, " + std::to_string(v.flags.size()) + " of " + std::to_string(rows.size()) +
           ", in full (dist-bind-check --full prints every rank's row):\n";
    t.assign(1, rank_header());
    for (const auto &[rank, flags] : v.flags)
        if (rank >= 0 && static_cast<size_t>(rank) < rows.size())
            t.push_back(rank_cells(rows[static_cast<size_t>(rank)], v));
    put_columns(t, out);
}

}  // namespace

std::string ranges(std::vector<int> values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    std::string s;
    for (size_t i = 0; i < values.size();) {
        size_t j = i;
        while (j + 1 < values.size() && static_cast<long long>(values[j + 1]) == values[j] + 1LL) j++;
        s += (s.empty() ? "" : ",") + std::to_string(values[i]);
        if (j > i) s += "-" + std::to_string(values[j]);
        i = j + 1;
    }
    return s;
}

std::string format_table(const std::vector<Row> &rows, const Verdict &v, const char *bootstrap, Layout layout) {
    std::set<std::string> hosts;
    for (const Row &r : rows) hosts.insert(r.host);
    std::string out = "dist-bind-check: " + std::to_string(rows.size()) + " rank" + (rows.size() > 1 ? "s" : "") +
                      " on " + std::to_string(hosts.size()) + " node" + (hosts.size() > 1 ? "s" : "") +
                      ", place from " + rows[0].source + ", exchange over " + (bootstrap ? bootstrap : "?") + "\n";
    if (layout == Layout::kPerNode || (layout == Layout::kAuto && rows.size() > kPerNodeAbove)) {
        per_node(rows, v, out);
        return out;
    }
    std::vector<std::vector<std::string>> t;
    t.reserve(rows.size() + 1);
    t.push_back(rank_header());
    for (const Row &r : rows) t.push_back(rank_cells(r, v));
    put_columns(t, out);
    return out;
}

}  // namespace dbcheck
