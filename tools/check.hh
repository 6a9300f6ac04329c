// dist-bind-check's parts (tools/*.cc): what each rank reports, how rank 0
// judges the step and lays out its table, and the NCCL all-reduce.  A
// client of libdistbind's public API (distbind.h) only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "distbind.h"

namespace dbcheck {

enum Exit { kOk = 0, kProblems = 1, kUsage = 2, kCannotStart = 3 };

// Rank 0's table: one row per rank, or one line per node with every
// flagged rank's row under it.  kAuto takes the second above kPerNodeAbove
// ranks (the spec's 64): past that nobody reads every row, everybody looks
// for the wrong ones.
enum class Layout { kAuto, kPerRank, kPerNode };
constexpr size_t kPerNodeAbove = 64;

struct Options {
    size_t bytes = 64u << 20;
    int iters = 20;
    Layout layout = Layout::kAuto;
};

// What one rank tells rank 0.  Fixed size: it travels in an allgather.
// GPU lists can be long (UUIDs, MIG ids): each rank picks out of its own
// lists the one entry rank 0 judges, so nothing is judged from a cut list.
struct Row {
    int32_t rank, world, local_rank, local_world, node_rank, device;
    int32_t slurm_procid, slurm_localid;  // -1 when unset
    int32_t relaunched;                   // 1: a launcher re-ranked it (distbind_relaunched)
    int32_t gpu_status, gpu_count, gpu_numa;
    int32_t visible_count;  // entries in CUDA_VISIBLE_DEVICES, -1 when unset
    char host[64];
    char source[16];
    char gpu[96];          // entry `device` of CUDA_VISIBLE_DEVICES ("" when unset or too short)
    char own[96];          // the first GPU of DIST_BIND_GPUS (the LOCAL_RANK-th under a launcher), "\1" when unset
    char visible[160];     // CUDA_VISIBLE_DEVICES for messages only (cut with "..."), "\1" when unset
    char unopenable[160];  // the entries of CUDA_VISIBLE_DEVICES past what CUDA sees ("" when none)
    char master[128];      // MASTER_ADDR:MASTER_PORT
    char bus[32];
    char uuid[48];  // CUDA's UUID of the device, "" when unknown
    char cpu_numa[32];
    char gpu_msg[400];
    char overwritten[160];  // what changed what dist-bind set (distbind_env_overwritten), "" when nothing
};

// Copy into a fixed field, cut to fit, always terminated.
void put(char *dst, size_t n, const std::string &v);
inline void put_opt(char *dst, size_t n, const char *v) { put(dst, n, v ? v : "\1"); }
inline bool unset(const char *s) { return s[0] == '\1'; }
std::vector<std::string_view> split(std::string_view s, char sep);
// A whole number from 0 to max, digits only.
bool parse_count(const char *s, uint64_t max, uint64_t &out);

struct Verdict {
    std::vector<std::string> problems;
    std::map<int, std::string> flags;  // rank -> flag column
    std::vector<std::string> notes;
    bool gpus = false;  // every rank has a usable GPU
    void flag(int rank, const std::string &f) {
        std::string &s = flags[rank];
        if (s.find(f) == std::string::npos) s += (s.empty() ? "" : ",") + f;
    }
    void problem(int rank, const std::string &flag_, const std::string &msg) {
        flag(rank, flag_);
        problems.push_back(msg);
    }
};

// This rank's row (check_row.cc).
Row my_row(distbind_t *h);
// The GPU lists' part of a row: `visible` is CUDA_VISIBLE_DEVICES, `own`
// DIST_BIND_GPUS (nullptr when unset); gpu_count must be set first.
void set_gpu_lists(Row &r, const char *visible, const char *own);
// A row another rank sent, checked before anything reads it: "" when it is
// well formed, else what is wrong (and its text fields are made safe).
std::string sanitize(Row &r, int index, int world);
// The GPU a rank's device ordinal names, as Slurm names it: entry `device`
// of its CUDA_VISIBLE_DEVICES ("" when that list is unset or too short).
inline std::string slurm_gpu(const Row &r) { return r.gpu; }
// The finding for variables something changed after dist-bind set them.
std::string overwritten_message(const std::string &names);
// Rank 0's verdict on the step (check_judge.cc); rows are sanitized first.
Verdict judge(std::vector<Row> &rows);

// Rank 0's table (check_table.cc): the step's line, then the rows as
// `layout` says; every line ends in a newline.
std::string format_table(const std::vector<Row> &rows, const Verdict &v, const char *bootstrap, Layout layout);
// Whole numbers as sorted ranges without repeats: {5,0,1,2,3,7,8} is "0-3,5,7-8".
std::string ranges(std::vector<int> values);

// The GPU part (check_nccl.cc), collective: the device, NCCL and a checked
// all-reduce; problems go into v, the result line into `line`.  False when
// the exchange failed after it (the problem then names this rank's own
// failure first; ranks other than 0 also print it on stderr).
bool gpu_part(distbind_t *h, const Options &o, Verdict &v, std::string &line);

// dist-bind-check --plan (check_plan.cc): argv[0] is "--plan"; returns the
// exit status.
int plan_main(int argc, char **argv);

}  // namespace dbcheck
