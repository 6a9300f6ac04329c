// The plan: from a snapshot of what Slurm said, the user's request and the
// admin's config, to the variables each task gets.  Computed in two parts:
// once per node and step (rank variables common to the node, MASTER_*,
// the step's GPU lists, the task-count check, and the variables every task
// of the node gets alike, which user_init writes once) and once per task
// (its own GPUs and the lists it sees, and what it must write itself).
#pragma once

#include <bitset>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "db_core.h"
#include "env_index.hh"
#include "record.hh"
#include "text.hh"

namespace db {

// One GPU list variable Slurm set (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES,
// ...) with the step's GPUs on this node, in Slurm's order.
struct GpuVar {
    std::string name;
    std::vector<std::string> step;
};

// closest: what lib/topo chose for each local task (positions in gpus[0].step).
struct ClosestTask {
    std::vector<size_t> gpus;
    int numa = -1;
    std::string nics;
};
struct Closest {
    bool chosen = false;
    std::string source;    // for verbose: topology source, GPU matching
    std::string fallback;  // for verbose: why closest acts as rank
    std::vector<ClosestTask> tasks;
};

// Whether a task Slurm binds per task can open only its own GPUs (device
// cgroup with ConstrainDevices=yes; Slurm then numbers every list inside
// the cgroup) or every GPU it is shown.
enum class Devices { Unknown, Open, Confined };

// This node's NODE_RANK and where it came from (for verbose).
struct NodeRank {
    uint32_t rank = 0;
    std::string from;
};

// What the step's program typed on torchrun's command line (torchrun.cc).
struct TorchrunFlags {
    bool torchrun = false;      // the program is torchrun
    bool typed_master = false;  // --master-addr or --master-port typed
    std::string master_addr, master_port;
    bool rdzv_endpoint = false;  // --rdzv-endpoint typed
};

// One variable user_init writes into the step's environment, which every
// task's environment starts from (slurmstepd's exec_task copies it): its
// value is the same in every task of the node and does not depend on what
// a task's own environment holds at task_init.  One spank_setenv per node
// instead of one per task: each costs slurmstepd a 256 KiB calloc and a
// scan of the environment.
struct NodeVar {
    // Offsets into NodeEnv::text, where each string ends in a NUL.
    uint32_t name = 0, name_len = 0;
    uint32_t value = 0, value_len = 0;  // what user_init writes
    uint32_t before = 0;                // "NAME=VALUE" as the step's environment held it at user_init
    bool unset = false;                 // user_init unsets it instead
    bool written = true;                // false: the step's environment held that already
    bool had = false;                   // the step's environment held the name at user_init (before)
    uint32_t hash = 0;                  // EnvIndex::hash of the name, for each task's lookup
};

// The node's variables in the order the task plan lists them (its sets,
// then its unsets), so that matching them to a task's plan is one walk.
struct NodeEnv {
    // Every name, value and entry, one after another: each task reads all
    // of them, from caches its writes (256 KiB buffers) have emptied.
    std::string text;
    std::vector<NodeVar> vars;
    size_t nsets = 0;              // vars[0, nsets) are set, the rest unset
    size_t first_twin = 0;         // vars[first_twin, nsets) are APPTAINERENV_ twins
    std::vector<uint32_t> writes;  // the positions user_init writes
    const char *str(uint32_t offset) const { return text.data() + offset; }
    std::string_view name(const NodeVar &v) const { return {str(v.name), v.name_len}; }
    std::string_view value(const NodeVar &v) const { return {str(v.value), v.value_len}; }
};
// A bound that keeps a task's record of them small (TaskEnv::intact); the
// variables past it are simply left to the tasks.
constexpr size_t kMaxNodeVars = 128;

struct NodePlan {
    bool active = false;
    std::string skip_reason;
    // Inactive because of mode off, in a step srun started: the task still
    // drops what dist-bind set for an enclosing step (DB_STEP_MARK).
    bool clean_inherited = false;

    db_request req{};
    // A heterogeneous step: the counts are the whole step's, the job id the
    // leader's; node_id, NODE_RANK and each rank come from the task's
    // environment (het_task_view).
    bool het = false;
    std::string het_rank0_node;  // where every component expects rank 0
    uint32_t job_id = 0, step_id = 0, nnodes = 0, node_id = 0, ntasks = 0, local_ntasks = 0;
    std::string node_name;  // this node's name in the step's node list, "" if unknown
    std::string host;       // node_name, or "#N": for messages

    NodeRank node_rank;

    std::string master_addr, master_addr_from;
    std::string master_port, master_port_from;

    // Empty: no GPUs in the step on this node (or none handled in this mode).
    // [0] is the primary list; the others are rewritten to match it.
    std::vector<GpuVar> gpus;
    // The step's GPUs as Slurm names them on the node (SLURM_STEP_GPUS), by
    // position in gpus[0].step; gpus[0].step itself where it has none.
    std::vector<std::string> gpu_names;
    Devices devices = Devices::Unknown;
    bool task_sharing = false;  // --gres-flags=allow-task-sharing: bound, not confined
    size_t gpus_per_task = 0;   // what the step asked for, from srun; 0: not known
    std::string devices_from;   // for verbose

    Closest closest;  // closest mode only

    std::vector<std::string> notes;  // for the verbose line

    TorchrunFlags torchrun;  // the step's program, if torchrun

    // The variables dist-bind sets, as the step's environment had them at
    // user_init: (name, value) in kContainerWatched's order, absent names
    // not listed.  A task whose value differs at task_init had it changed
    // by a plugin that ran before dist-bind there: a container plugin
    // (pyxis) copying the image's environment over the task's.
    std::vector<std::pair<std::string, std::string>> step_values;

    // What user_init writes (node_env.cc); shared, as a heterogeneous step's
    // task view copies the plan.  Null for an inactive plan.
    std::shared_ptr<const NodeEnv> node_env;
};

// The variables an image or a container hook sets and dist-bind sets too
// (enroot's PyTorch hook: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK,
// LOCAL_RANK): compared between user_init and task_init.
constexpr const char *kContainerWatched[] = {"RANK",        "WORLD_SIZE",     "LOCAL_RANK",       "LOCAL_WORLD_SIZE",
                                             "NODE_RANK",   "GROUP_RANK",     "GROUP_WORLD_SIZE", "MASTER_ADDR",
                                             "MASTER_PORT", "DIST_BIND_MODE", "DIST_BIND_DEVICE", "DIST_BIND_GPUS"};

// What dist-bind sets in a task; with DB_STEP_MARK naming another step,
// these came from an enclosing step and are dropped where not set anew.
constexpr const char *kOwnVars[] = {
    "RANK",           "WORLD_SIZE",       "LOCAL_RANK",          "LOCAL_WORLD_SIZE", "NODE_RANK",
    "GROUP_RANK",     "GROUP_WORLD_SIZE", "DIST_BIND_MODE",      "DIST_BIND_DEVICE", "DIST_BIND_GPUS",
    "DIST_BIND_NUMA", "DIST_BIND_NICS",   "HIP_VISIBLE_DEVICES", DB_STEP_MARK,       DB_MASTER_MARK,
    "PET_NNODES",     "PET_NODE_RANK",    "PET_MASTER_ADDR",     "PET_MASTER_PORT",  "PET_RDZV_ENDPOINT",
    "PET_RDZV_ID",    DB_SET_RECORD};

// One task as the task plan reads it (task_init): its ranks and its
// environment, indexed once, and what that environment says about a
// dist-bind that ran before, computed once for every part of the plan.
// The index answers as the environment would without dist-bind's writes of
// user_init (NodeEnv): every decision that depends on what the step's
// environment held before dist-bind (an enclosing step's values, a value
// the user exported) comes out as if the task had written everything.  A
// node variable the task no longer holds as user_init wrote it (a plugin
// before dist-bind in task_init changed it) is seen as the task holds it.
struct TaskEnv {
    TaskEnv(const NodePlan &np, const db_task_input &in);
    uint32_t global_rank, local_rank;
    EnvIndex env;
    // DB_STEP_MARK as the task has it: a dist-bind set its variables before.
    const char *step_mark;
    // ... and for another step (an enclosing one): those values are that
    // step's, not the user's, and are dropped where this plan does not set
    // them anew.
    bool inherited;
    // The node's variables (null: none), and per variable whether the task
    // still holds it as user_init left it.
    const NodeEnv *node = nullptr;
    std::bitset<kMaxNodeVars> intact;
};

struct TaskPlan {
    // What the task writes: variables to set, then to unset.
    std::vector<std::pair<std::string, std::string>> set;
    std::vector<std::string> unset;
    std::string verbose;  // empty unless verbose
    // What the verbose line says after its head, each part of the pipeline
    // adding its own (task_plan joins them).
    std::vector<std::string> notes;
    // The node's variables the plan found, by name where the node's order
    // says (put, node_holds_twin, drop_node_writes); where the task holds
    // one as the plan sets it, the plan has no entry for it.
    std::bitset<kMaxNodeVars> node_seen;

    // Every variable the plan sets, in the order it sets them (put): an
    // entry of `set`, or a node variable user_init wrote that the task
    // holds as the plan sets it, which the task need not write again.  The
    // record, the twins and "does the plan set NAME" read this list.
    struct Planned {
        bool node;  // vars[i] of the task's NodeEnv, else set[i]
        uint32_t i;
    };
    std::vector<Planned> planned;
    size_t node_cursor = 0;  // where put() looks for the next name among the node's variables

    // Plan NAME=VALUE (node_env.cc).
    void put(const TaskEnv &task, std::string_view name, std::string value);
    std::string_view name(const TaskEnv &task, Planned p) const;
    std::string_view value(const TaskEnv &task, Planned p) const;
    bool plans(const TaskEnv &task, std::string_view name) const;
};

// An error that every task of the node would report alike: the glue
// reports it once per node (db_task_plan_new returns DB_ERR_NODE).
struct NodeError : Error {
    using Error::Error;
};

NodePlan plan_node(const db_config &cfg, const db_request &eff, const db_node_input &in);
// One task's whole plan, the one pipeline (plan_task.cc): the task's
// environment indexed once, the heterogeneous step's view of its component,
// the rank variables, its GPUs and the lists it is shown, what an enclosing
// step's dist-bind left behind, the Apptainer twins, what user_init wrote
// already taken out, and the verbose line.  Throws Error, or NodeError for
// what every task of the node would say alike.
TaskPlan task_plan(const NodePlan &np, const db_task_input &in);
// Adds APPTAINERENV_<NAME> for each variable `tp` sets or unsets (twins.cc).
void add_apptainer_twins(const TaskEnv &task, TaskPlan &tp);
// The node's variables user_init writes, from the step's environment
// `env` as it is then (node_env.cc); a no-op for an inactive plan.
void plan_node_env(const EnvIndex &env, NodePlan &np);
// Whether the twin of `base` the task plan would set to `value` is a node
// variable the task holds with that value: then it is marked in
// tp.node_seen and needs no entry.  `cursor` walks the node's variables in
// their order from one call to the next (start it at 0).
bool node_holds_twin(const TaskEnv &task, TaskPlan &tp, size_t &cursor, std::string_view base, std::string_view value);
// Takes out of `tp` (the task's whole plan) what user_init wrote and the
// task still holds, and puts back what user_init wrote but this task's plan
// neither sets nor unsets (node_env.cc).
void drop_node_writes(const NodePlan &np, const TaskEnv &task, TaskPlan &tp);
// Checks the choice against the plan (task count, positions, one k) and
// stores it; throws db::Error and leaves `np` as it was when it does not fit.
void set_closest(NodePlan &np, const db_closest_input &c);

// torchrun's typed flags in the program's argv (S_JOB_ARGV), and the
// rendezvous endpoint for PET_RDZV_ENDPOINT: MASTER_ADDR:MASTER_PORT, or
// the typed master where one was typed without --rdzv-endpoint.
TorchrunFlags torchrun_flags(int argc, const char *const *argv);
std::string torchrun_endpoint(const NodePlan &np);

// srun's command line (srun_args.cc): each component of a heterogeneous
// srun (A : B) as the range [opts_begin, opts_end) of argv holding its
// options, without its program; one component for a plain srun.
// *async (may be null) is set when a component asks for --async.
// export_value: the component's last --export value, or null.
struct SrunComponent {
    size_t opts_begin, opts_end;
    const char *export_value;
};
std::vector<SrunComponent> srun_components(int argc, const char *const *argv, bool *async);

// Heterogeneous steps (het.cc): is this one; the node's part of its plan
// (whole-step counts, the leader's job id); a task's view of the node plan
// (the node's index and NODE_RANK in the whole step; task.global_rank
// becomes the task's rank in it).  `env` is the step's environment (in.env).
bool het_step(const db_node_input &in, const EnvIndex &env);
void plan_het_node(const db_node_input &in, const EnvIndex &env, NodePlan &np);
void het_master_addr(const db_config &cfg, const EnvIndex &env, NodePlan &np);
// Which component of its het job this node's step is (0, 1, ...), -1 if
// Slurm's SLURM_JOB_ID_HET_GROUP_<i> do not say.
int het_component(const db_node_input &in, const EnvIndex &env);
NodePlan het_task_view(const NodePlan &np, TaskEnv &task);

// Each node's NODE_RANK (by Slurm's node index) from the step's layout, and
// the node that runs rank 0; throws db::Error for a layout that is not one.
std::vector<uint32_t> node_ranks_of_layout(uint32_t nnodes, uint32_t ntasks, const uint16_t *tasks,
                                           const uint32_t *const *tids, uint32_t &rank0_node);
// Node `node_id`'s rank from DB_NODE_RANKS_HINT (read under `name`), which
// must be a permutation of 0..nnodes-1 (throws db::Error naming the
// variable otherwise).
NodeRank parse_node_ranks(const char *name, const char *value, uint32_t nnodes, uint32_t node_id);

// GPUs per task as srun and Slurm write them: --gpus-per-task and
// SLURM_GPUS_PER_TASK ("2", "a100:2", from 25.05 "a100:1,v100:1"), and the
// gres/gpu items of --tres-per-task and SLURM_TRES_PER_TASK
// ("cpu=2,gres/gpu=2", "gres/gpu:a100=1,gres/gpu:v100=1").  Types add up,
// as Slurm binds their sum per task.  false: a part that names no count
// (or 0, or more than kMaxGpusPerTask in all); k = 0: no GPUs named.
constexpr uint64_t kMaxGpusPerTask = 1u << 20;
// One of srun's words as a node reads it (DB_WORD_PREFIX in db_core.h):
// `carried` is its DB_CARRIED name, read first, then its plain name.
// `name` says which it was read under; nullptr both where srun passed
// neither.
struct SrunWord {
    const char *name = nullptr;
    const char *value = nullptr;
};
SrunWord srun_word(const EnvIndex &env, const char *carried);
// Every name srun's words travel under: each task's plan removes them.
extern const char *const kSrunWordsGone[9];
// The step's secret as srun drew it (carried, else DB_SECRET_VAR).
const char *step_secret(const EnvIndex &env);

// What to do where srun's word is missing (plan_node.cc): by the version
// srun's dist-bind announced (DB_SRUN_VERSION_HINT), where it differs from
// this node's, both named; else where srun's plugstack.conf lacks it.
std::string srun_fix(const EnvIndex &env);
// srun's DB_DEVICES_HINT as this node reads it (devices.cc): task sharing
// and GPUs per task into `np`; what srun's TaskPlugin says of device
// cgroups returned (Unknown: srun said nothing).
Devices read_devices_hint(const db_node_input &in, const EnvIndex &env, NodePlan &np);
bool gpus_per_task_count(std::string_view v, uint64_t &k);
bool tres_gpu_count(std::string_view tres, uint64_t &k);

// MASTER_PORT from the admin's range when nothing else gives one: distinct
// for consecutive step ids of one job, spread over jobs.
unsigned hashed_port(const db_config &cfg, uint32_t job_id, uint32_t step_id);

// "JOB.STEP".
std::string step_name(uint32_t job, uint32_t step);
// The rank variables every task of a node gets alike (with_node_rank: also
// NODE_RANK, GROUP_RANK and GROUP_WORLD_SIZE, which a heterogeneous step's
// tasks take from their own component), in the one order in which both the
// node's writes (node_env.cc) and each task's plan (plan_task.cc) list them.
template <class Set>
void shared_rank_vars(const NodePlan &np, bool with_node_rank, Set &&set) {
    set("WORLD_SIZE", std::to_string(np.ntasks));
    set("LOCAL_WORLD_SIZE", std::to_string(np.local_ntasks));
    if (with_node_rank) {
        set("NODE_RANK", std::to_string(np.node_rank.rank));
        set("GROUP_RANK", std::to_string(np.node_rank.rank));
        set("GROUP_WORLD_SIZE", std::to_string(np.nnodes));
    }
    set("MASTER_ADDR", np.master_addr);
    set("MASTER_PORT", np.master_port);
    set("DIST_BIND_MODE", db_mode_name(np.req.mode));
    set(DB_STEP_MARK, step_name(np.job_id, np.step_id));
    set(DB_MASTER_MARK, np.master_addr + ":" + np.master_port);
}
// MASTER_ADDR/MASTER_PORT as dist-bind set them for an enclosing step, from
// the value of DB_MASTER_MARK ("ADDR:PORT"; may be null), or empty.
std::pair<std::string, std::string> inherited_master(const char *mark);

}  // namespace db

// The C handles are the C++ plans themselves.
struct db_node_plan : db::NodePlan {};
struct db_task_plan : db::TaskPlan {};
