// Where a task is in its step.  The plugin's variables win (they are what
// every framework reads, and torchrun sets the same ones); without them
// Slurm's own; without those, PMIx.  Whatever the source, every value is
// checked, and a missing or malformed one is an error naming it.
#include <unistd.h>

#include <climits>
#include <cstring>

#include "discovery.hh"

#include "bootstrap/choose.hh"
#include "core/rt.hh"
#include "record.hh"
#include "text.hh"

namespace db::rt {

namespace {

constexpr uint64_t kMaxWorld = 1u << 24;

class Reader {
  public:
    Reader(const Env &env, std::string why) : env_(env), why_(std::move(why)) {}

    // The value of `name`, which this source cannot do without.
    int need(const char *name, uint64_t max = kMaxWorld - 1) const {
        const char *v = env_.get(name);
        if (!v) fail(DISTBIND_ERR_ENV, std::string(name) + " is not set (" + why_ + ")");
        return number(name, v, max);
    }

    static int number(const char *name, const char *v, uint64_t max) {
        uint64_t n;
        if (!parse_uint(v, max, n))
            fail(DISTBIND_ERR_ENV, quoted(name, v) + ": expected a whole number from 0 to " + std::to_string(max));
        return static_cast<int>(n);
    }

  private:
    const Env &env_;
    std::string why_;
};

[[noreturn]] void inconsistent(const std::string &msg) { fail(DISTBIND_ERR_ENV, msg); }

void check_place(const Identity &id, const char *rank, const char *world, const char *lrank, const char *lworld,
                 const char *node) {
    auto show = [](const char *n, int v) { return std::string(n) + "=" + std::to_string(v); };
    if (id.world < 1) inconsistent(show(world, id.world) + ": a step has at least 1 task");
    if (id.rank >= id.world) inconsistent(show(rank, id.rank) + " is not below " + show(world, id.world));
    if (id.local_world < 1) inconsistent(show(lworld, id.local_world) + ": a node has at least 1 task");
    if (id.local_world > id.world)
        inconsistent(show(lworld, id.local_world) + " is larger than " + show(world, id.world));
    if (id.local_rank >= id.local_world)
        inconsistent(show(lrank, id.local_rank) + " is not below " + show(lworld, id.local_world));
    if (id.node_rank >= id.world) inconsistent(show(node, id.node_rank) + " is not below " + show(world, id.world));
}

// The plugin's record (DIST_BIND_SET) opens with the place it computed its
// values for.  A launcher that starts the real workers itself (torchrun)
// gives them other ranks and leaves the plugin's NODE_RANK and
// DIST_BIND_DEVICE behind: those are the launcher's.
bool relaunched(const Env &env, const Identity &id) {
    const char *v = env.get(DB_SET_RECORD);
    if (!v) return false;
    db::RecordPlace p;
    try {
        p = db::record_place(v);
    } catch (const db::Error &e) {
        fail(DISTBIND_ERR_ENV, e.what());
    }
    return p.rank != static_cast<uint64_t>(id.rank) || p.local_rank != static_cast<uint64_t>(id.local_rank) ||
           p.world != static_cast<uint64_t>(id.world);
}

void from_plugin(const Env &env, Identity &id) {
    Reader r(env,
             "RANK is set, so the task's place is read from RANK, WORLD_SIZE, LOCAL_RANK, "
             "LOCAL_WORLD_SIZE and NODE_RANK or GROUP_RANK");
    id.source = env.get("DIST_BIND_MODE") ? Source::Plugin : Source::Env;
    id.rank = r.need("RANK");
    id.world = r.need("WORLD_SIZE", kMaxWorld);
    id.local_rank = r.need("LOCAL_RANK");
    id.local_world = r.need("LOCAL_WORLD_SIZE", kMaxWorld);
    id.relaunched = env.get("DIST_BIND_MODE") && relaunched(env, id);
    if (id.relaunched) id.source = Source::Env;
    // Relaunched: the launcher's GROUP_RANK, not the plugin's NODE_RANK.
    const char *node_var = id.relaunched && env.get("GROUP_RANK") ? "GROUP_RANK"
                           : env.get("NODE_RANK")                 ? "NODE_RANK"
                           : env.get("GROUP_RANK")                ? "GROUP_RANK"
                                                                  : nullptr;
    if (!node_var)
        fail(DISTBIND_ERR_ENV,
             "NODE_RANK (or GROUP_RANK) is not set (RANK is set, so the task's place is read "
             "from RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and NODE_RANK)");
    id.node_rank = r.need(node_var);
    if (!id.relaunched && env.get("NODE_RANK") && env.get("GROUP_RANK")) {
        int g = Reader::number("GROUP_RANK", env.get("GROUP_RANK"), kMaxWorld - 1);
        if (g != id.node_rank)
            inconsistent("NODE_RANK=" + std::to_string(id.node_rank) + " and GROUP_RANK=" + std::to_string(g) +
                         " disagree");
    }
    check_place(id, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", node_var);
}

void from_slurm(const Env &env, Identity &id) {
    Reader r(env, "the task's place is read from Slurm's variables because RANK is not set");
    id.source = Source::Slurm;
    id.rank = r.need("SLURM_PROCID");
    id.local_rank = r.need("SLURM_LOCALID");
    id.node_rank = r.need("SLURM_NODEID");
    const char *world_var = env.get("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
    id.world = r.need(world_var, kMaxWorld);
    const char *tpn_var = env.get("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
    const char *tpn = env.get(tpn_var);
    if (!tpn) fail(DISTBIND_ERR_ENV, "SLURM_STEP_TASKS_PER_NODE is not set (needed for the local world size)");
    std::vector<uint32_t> counts;
    try {
        // Every node runs at least one task: no more nodes than tasks.
        counts = parse_tasks_per_node(tpn, tpn_var, static_cast<uint64_t>(id.world),
                                      std::string(world_var) + "=" + std::to_string(id.world) + " tasks");
    } catch (const db::Error &e) {
        fail(DISTBIND_ERR_ENV, e.what());
    }
    uint64_t sum = 0;
    for (uint32_t c : counts) sum += c;
    if (sum != static_cast<uint64_t>(id.world))
        inconsistent(quoted(tpn_var, tpn) + " adds up to " + std::to_string(sum) + " tasks but " + world_var + "=" +
                     std::to_string(id.world));
    if (static_cast<size_t>(id.node_rank) >= counts.size())
        inconsistent("SLURM_NODEID=" + std::to_string(id.node_rank) + " but " + quoted(tpn_var, tpn) + " has only " +
                     std::to_string(counts.size()) + " nodes");
    id.local_world = static_cast<int>(counts[id.node_rank]);
    check_place(id, "SLURM_PROCID", world_var, "SLURM_LOCALID", "the local task count", "SLURM_NODEID");
}

void choose_device(const Env &env, Identity &id) {
    const char *dev = env.get("DIST_BIND_DEVICE");
    const char *gpus = env.get("DIST_BIND_GPUS");
    if (id.relaunched && (dev || gpus)) {
        // The launcher's task owns the GPUs DIST_BIND_GPUS names, as devices
        // DIST_BIND_DEVICE onwards (none: from 0, a node's only task); its
        // workers take one each, by local rank.
        const int first = dev ? Reader::number("DIST_BIND_DEVICE", dev, 65535) : 0;
        const size_t n = gpus ? split(gpus, ',').size() : 0;
        if (gpus && static_cast<size_t>(id.local_rank) >= n)
            fail(DISTBIND_ERR_DEVICE, "LOCAL_RANK=" + std::to_string(id.local_rank) +
                                          " but the srun task that started this process owns " + std::to_string(n) +
                                          " GPU" + (n == 1 ? "" : "s") + " (" + quoted("DIST_BIND_GPUS", gpus) +
                                          "): start at most " + std::to_string(n) + " worker" + (n == 1 ? "" : "s") +
                                          " per srun task (torchrun --nproc-per-node=" + std::to_string(n) +
                                          "), or give each task more GPUs (--gpus-per-node, --gpus-per-task)");
        id.device = first + id.local_rank;
        // relaunched() read the record's place: it parses.
        id.device_from = std::string(dev ? "DIST_BIND_DEVICE+LOCAL_RANK" : "LOCAL_RANK") +
                         " (a launcher re-ranked this process: srun --dist-bind set RANK,LOCAL_RANK,WORLD_SIZE=" +
                         db::record_place(env.get(DB_SET_RECORD)).str() + ")";
    } else if (const char *v = dev) {
        id.device = Reader::number("DIST_BIND_DEVICE", v, 65535);
        id.device_from = "DIST_BIND_DEVICE";
    } else {
        id.device = id.local_rank;
        id.device_from = id.source == Source::Slurm  ? "SLURM_LOCALID"
                         : id.source == Source::Pmix ? "PMIx local rank"
                                                     : "LOCAL_RANK";
    }
}

std::string this_host() {
    char buf[HOST_NAME_MAX + 1] = "";
    if (gethostname(buf, sizeof buf) != 0) return "?";
    buf[HOST_NAME_MAX] = '\0';
    return buf;
}

}  // namespace

bool discover_from_env(const Env &env, Identity &id) {
    if (env.get("RANK"))
        from_plugin(env, id);
    else if (env.get("SLURM_PROCID"))
        from_slurm(env, id);
    else
        return false;
    choose_device(env, id);
    return true;
}

Identity discover(const Env &env, std::shared_ptr<void> &keep, double timeout_s) {
    Identity id;
    if (!discover_from_env(env, id)) {
        LauncherPlace p;
        if (!launcher_place(env, keep, timeout_s, p))
            fail(DISTBIND_ERR_ENV,
                 "cannot tell this task's rank: none of RANK (set by srun --dist-bind or torchrun), SLURM_PROCID "
                 "(set by srun) or PMIX_NAMESPACE (set by a PMIx launcher) is set; start the program with "
                 "srun --dist-bind");
        id.source = Source::Pmix;
        id.rank = p.rank;
        id.world = p.world;
        id.local_rank = p.local_rank;
        id.local_world = p.local_world;
        id.node_rank = p.node_rank;
        check_place(id, "PMIx rank", "PMIX_JOB_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE", "PMIX_NODEID");
        choose_device(env, id);
    }
    id.host = this_host();
    return id;
}

}  // namespace db::rt
