// Strict parsing of what Slurm and users hand us: numbers, lists, Slurm
// hostlists, tasks-per-node strings, GPU lists.  Every parser either returns
// a complete value or throws db::Error naming the variable, the value and
// what was expected; nothing is silently read as 0.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace db {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// `NAME="value"` for messages, with the value shortened if it is huge.
std::string quoted(std::string_view name, std::string_view value);

// Decimal digits only (no sign, space or prefix), at most `max`.
bool parse_uint(std::string_view s, uint64_t max, uint64_t &out);

std::vector<std::string_view> split(std::string_view s, char sep);

// Slurm hostlists: "node[1-3,7],login,rack[1-2]n[01-02]".
// The host at `index` (rightmost bracket varies fastest, as Slurm writes
// multi-dimensional names); a list of more than 2^24 hosts is refused
// whatever the index.
std::string hostlist_nth(std::string_view list, size_t index);

// SLURM_STEP_TASKS_PER_NODE and friends: "3,2", "2(x3),1".
// A list naming more than max_nodes nodes is refused before anything is
// allocated for it; `limit` says why that many, e.g. "the step has 2".
std::vector<uint32_t> parse_tasks_per_node(std::string_view s, std::string_view name);
std::vector<uint32_t> parse_tasks_per_node(std::string_view s, std::string_view name, uint64_t max_nodes,
                                           std::string_view limit);

// A GPU list as Slurm sets it (CUDA_VISIBLE_DEVICES, ...): non-empty,
// comma-separated, each an index (0..999999) or a GPU-/MIG- UUID, no
// duplicates.
std::vector<std::string> parse_gpu_list(std::string_view s, std::string_view name);

// A port list such as SLURM_STEP_RESV_PORTS ("12000-12003", "12000,12005"):
// the first port.
unsigned first_port(std::string_view s, std::string_view name);

// Value of NAME in a NULL-ended NAME=VALUE array, or nullptr.
const char *env_get(const char *const *env, std::string_view name);

// Copy into a C buffer, truncating; always NUL-terminates when len > 0.
void copy_out(std::string_view s, char *buf, size_t len);

std::string join(const std::vector<std::string> &v, char sep = ',');
// "0,1,...,n-1".
std::string first_n(size_t n);

}  // namespace db
