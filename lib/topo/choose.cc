// The closest choice for all local tasks at once.
//
// GPUs are grouped by the CPU-side object hwloc attaches them to (their
// NUMA locality).  First every task is given a number of GPUs from each
// group, by a greedy pass over all (task, group) pairs ordered by how much
// of the task's CPUs lie in the group's NUMA locality, then in its
// package, then by local rank and group order: the pairs that fit best are
// served first, so a task that is as near to one group as to another does
// not take the last GPU of a group that some other task is nearer to.
// Then, inside each group, tasks in local-rank order take free GPUs in PCI
// bus order, each further GPU of a task being the free one fewest PCI hops
// from its first (so a task's GPUs share a PCIe switch when they can).
#include <algorithm>
#include <cstdint>

#include "topo.hh"

namespace db::topo {

namespace {

struct Group {
    hwloc_obj_t home;             // CPU-side object the GPUs hang off
    hwloc_obj_t pkg;              // its package (or itself when above packages)
    std::vector<size_t> members;  // positions, PCI bus order
    size_t left;
};

struct Fit {
    uint64_t numa, pkg, cpus;  // weights of the task's CPUs in the group's NUMA locality / package; its CPU count
};

// a/b better than c/d, as exact fractions.
int cmp_frac(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    const uint64_t l = a * d, r = c * b;
    return l > r ? -1 : l < r ? 1 : 0;
}

using Takes = std::vector<std::vector<std::pair<size_t, size_t>>>;  // per task: (group, count)

void check_request(size_t ngpus, const std::vector<Bitmap> &task_cpus, size_t k) {
    const size_t ntasks = task_cpus.size();
    if (k == 0) throw Error("0 GPUs per task");
    if (ntasks * k > ngpus)
        throw Error(std::to_string(ntasks) + " tasks with " + std::to_string(k) + " GPU" + (k > 1 ? "s" : "") +
                    " each need " + std::to_string(ntasks * k) + " GPUs, but there are " + std::to_string(ngpus));
    for (size_t i = 0; i < ntasks; i++)
        if (task_cpus[i].empty()) throw Error("task " + std::to_string(i) + " has no CPUs");
}

// The step's GPUs grouped by the CPU-side object they hang off, each group's
// members in PCI bus order.
std::vector<Group> group_by_locality(hwloc_topology_t topo, const std::vector<hwloc_obj_t> &step) {
    std::vector<size_t> order(step.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pci_before(step[a], step[b]); });

    std::vector<Group> groups;
    for (size_t p : order) {
        hwloc_obj_t home = hwloc_get_non_io_ancestor_obj(topo, step[p]);
        auto g = std::find_if(groups.begin(), groups.end(), [&](const Group &x) { return x.home == home; });
        if (g == groups.end()) {
            hwloc_obj_t pkg =
                home->type == HWLOC_OBJ_PACKAGE ? home : hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, home);
            groups.push_back(Group{home, pkg ? pkg : home, {}, 0});
            g = groups.end() - 1;
        }
        g->members.push_back(p);
        g->left++;
    }
    return groups;
}

// How many GPUs each task takes from each group, in the order it takes
// them: the greedy pass over (task, group) pairs, best fit first.
Takes share_out(std::vector<Group> &groups, const std::vector<Bitmap> &task_cpus, size_t k) {
    const size_t ntasks = task_cpus.size();
    struct Pair {
        size_t task, group;
        Fit fit;
    };
    std::vector<Pair> pairs;
    Bitmap both;
    for (size_t i = 0; i < ntasks; i++)
        for (size_t g = 0; g < groups.size(); g++) {
            Fit f{};
            f.cpus = task_cpus[i].weight();
            hwloc_bitmap_and(both.get(), task_cpus[i].get(), groups[g].home->cpuset);
            f.numa = both.weight();
            hwloc_bitmap_and(both.get(), task_cpus[i].get(), groups[g].pkg->cpuset);
            f.pkg = both.weight();
            pairs.push_back(Pair{i, g, f});
        }
    std::stable_sort(pairs.begin(), pairs.end(), [](const Pair &a, const Pair &b) {
        if (int c = cmp_frac(a.fit.numa, a.fit.cpus, b.fit.numa, b.fit.cpus)) return c < 0;
        if (int c = cmp_frac(a.fit.pkg, a.fit.cpus, b.fit.pkg, b.fit.cpus)) return c < 0;
        if (a.task != b.task) return a.task < b.task;
        return a.group < b.group;
    });
    std::vector<size_t> need(ntasks, k);
    Takes takes(ntasks);
    for (const Pair &p : pairs) {
        const size_t take = std::min(need[p.task], groups[p.group].left);
        if (!take) continue;
        need[p.task] -= take;
        groups[p.group].left -= take;
        takes[p.task].emplace_back(p.group, take);
    }
    return takes;
}

// Which GPUs of group g each task gets: in local-rank order, free GPUs in
// PCI bus order, each further one the free one fewest PCI hops from the
// task's first.  picked[task][g] gets the positions.
void pick_in_group(const std::vector<hwloc_obj_t> &step, const Group &group, size_t g, const Takes &takes,
                   std::vector<std::vector<std::vector<size_t>>> &picked) {
    std::vector<bool> used(group.members.size(), false);
    for (size_t i = 0; i < takes.size(); i++) {
        size_t count = 0;
        for (auto [grp, c] : takes[i])
            if (grp == g) count = c;
        std::vector<size_t> &mine = picked[i][g];
        while (mine.size() < count) {
            size_t best = SIZE_MAX;
            unsigned best_hops = 0;
            for (size_t m = 0; m < used.size(); m++) {
                if (used[m]) continue;
                const unsigned h = mine.empty() ? 0 : pci_hops(step[mine[0]], step[group.members[m]]);
                if (best == SIZE_MAX || h < best_hops) {
                    best = m;
                    best_hops = h;
                }
            }
            used[best] = true;
            mine.push_back(group.members[best]);
        }
    }
}

}  // namespace

std::vector<Choice> choose(const Topology &t, const std::vector<hwloc_obj_t> &step,
                           const std::vector<Bitmap> &task_cpus, size_t k) {
    const size_t ntasks = task_cpus.size();
    check_request(step.size(), task_cpus, k);
    std::vector<Group> groups = group_by_locality(t.get(), step);
    const Takes takes = share_out(groups, task_cpus, k);
    std::vector<std::vector<std::vector<size_t>>> picked(ntasks, std::vector<std::vector<size_t>>(groups.size()));
    for (size_t g = 0; g < groups.size(); g++) pick_in_group(step, groups[g], g, takes, picked);

    std::vector<Choice> out(ntasks);
    for (size_t i = 0; i < ntasks; i++) {
        Choice &c = out[i];
        for (auto [g, count] : takes[i]) {
            (void)count;
            for (size_t p : picked[i][g]) c.gpus.push_back(p);
        }
        c.numa = numa_of(t, task_cpus[i].get());
        for (size_t p : c.gpus)
            for (std::string &nic : nics_near(t, step[p]))
                if (std::find(c.nics.begin(), c.nics.end(), nic) == c.nics.end()) c.nics.push_back(std::move(nic));
    }
    return out;
}

}  // namespace db::topo
