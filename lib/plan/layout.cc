// NODE_RANK from the step's layout: srun writes each node's place in the
// order of the lowest global rank it runs (DB_NODE_RANKS_HINT), the nodes
// read their own.  The order of the nodes by their lowest rank is what
// torchrun and friends call the node rank, and Slurm's node index is not it
// wherever task 0 does not run on the step's first node.
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "db_core.h"
#include "guard.hh"
#include "plan.hh"
#include "text.hh"

namespace db {

namespace {

// "0-15", "1,0", "2-3,0-1": each run of consecutive ascending values as a range.
std::string compress(const std::vector<uint32_t> &v) {
    std::string out;
    for (size_t i = 0; i < v.size();) {
        size_t j = i;
        while (j + 1 < v.size() && v[j + 1] == v[j] + 1) j++;
        if (!out.empty()) out += ',';
        out += std::to_string(v[i]);
        if (j > i) out += '-' + std::to_string(v[j]);
        if (out.size() > DB_NODE_RANKS_MAX)
            throw Error("the step's node order is too irregular to pass to the nodes (" DB_NODE_RANKS_HINT
                        " would be longer than " +
                        std::to_string(DB_NODE_RANKS_MAX) + " characters)");
        i = j + 1;
    }
    return out;
}

}  // namespace

std::vector<uint32_t> node_ranks_of_layout(uint32_t nnodes, uint32_t ntasks, const uint16_t *tasks,
                                           const uint32_t *const *tids, uint32_t &rank0_node) {
    if (nnodes == 0 || !tasks || !tids) throw Error("the step's layout has no nodes");
    const uint32_t none = std::numeric_limits<uint32_t>::max();
    std::vector<uint32_t> node_of(ntasks, none);  // node running each rank
    for (uint32_t n = 0; n < nnodes; n++) {
        if (tasks[n] == 0 || !tids[n])
            throw Error("the step's layout has no tasks on node " + std::to_string(n) + " of " +
                        std::to_string(nnodes));
        for (uint32_t t = 0; t < tasks[n]; t++) {
            const uint32_t r = tids[n][t];
            if (r >= ntasks)
                throw Error("the step's layout has rank " + std::to_string(r) + " in a step of " +
                            std::to_string(ntasks) + " tasks");
            if (node_of[r] != none) throw Error("the step's layout has rank " + std::to_string(r) + " twice");
            node_of[r] = n;
        }
    }
    // Walking the ranks upwards meets each node first at its lowest rank.
    std::vector<uint32_t> rank_of_node(nnodes, none);
    uint32_t next = 0;
    for (uint32_t r = 0; r < ntasks; r++) {
        if (node_of[r] == none) throw Error("the step's layout has no task of rank " + std::to_string(r));
        if (rank_of_node[node_of[r]] == none) rank_of_node[node_of[r]] = next++;
    }
    rank0_node = node_of[0];
    return rank_of_node;
}

NodeRank parse_node_ranks(const char *name, const char *value, uint32_t nnodes, uint32_t node_id) {
    const std::string_view v(value);
    auto bad = [&](const std::string &why) {
        return Error(quoted(name, v) + ": " + why + "; expected a permutation of 0.." +
                     std::to_string(nnodes ? nnodes - 1 : 0) + " (the NODE_RANK of each of the step's " +
                     std::to_string(nnodes) +
                     " nodes, in Slurm's node order, as numbers and ranges A-B separated by commas), "
                     "as srun's dist-bind sets it");
    };
    if (nnodes == 0 || node_id >= nnodes) throw bad("no node " + std::to_string(node_id) + " in the step");
    std::vector<bool> seen(nnodes, false);
    uint64_t count = 0;
    NodeRank out;
    for (std::string_view term : split(v, ',')) {
        const size_t dash = term.find('-');
        const std::string_view first = term.substr(0, dash);
        const std::string_view last = dash == std::string_view::npos ? first : term.substr(dash + 1);
        uint64_t lo = 0, hi = 0;
        if (!parse_uint(first, nnodes - 1, lo) || !parse_uint(last, nnodes - 1, hi) || hi < lo) {
            if (term.empty()) throw bad("empty entry");
            throw bad("\"" + std::string(term) + "\" is not a node rank or range of them below " +
                      std::to_string(nnodes));
        }
        if (count + (hi - lo + 1) > nnodes) throw bad("more than the step's " + std::to_string(nnodes) + " node ranks");
        for (uint64_t r = lo; r <= hi; r++, count++) {
            if (seen[r]) throw bad("node rank " + std::to_string(r) + " given twice");
            seen[r] = true;
            if (count == node_id) out.rank = static_cast<uint32_t>(r);
        }
    }
    if (count != nnodes)
        throw bad(std::to_string(count) + " node ranks for the step's " + std::to_string(nnodes) + " nodes");
    out.from = "srun's layout";
    return out;
}

}  // namespace db

extern "C" int db_layout_hints(uint32_t nnodes, uint32_t ntasks, const uint16_t *tasks, const uint32_t *const *tids,
                               char **out, uint32_t *rank0_node, char *err, size_t errlen) {
    *out = nullptr;
    return db::guarded(err, errlen, [&] {
        uint32_t r0 = 0;
        const std::string s = db::compress(db::node_ranks_of_layout(nnodes, ntasks, tasks, tids, r0));
        char *p = static_cast<char *>(std::malloc(s.size() + 1));
        if (!p) throw std::bad_alloc();
        std::memcpy(p, s.c_str(), s.size() + 1);
        *out = p;
        *rank0_node = r0;
    });
}
