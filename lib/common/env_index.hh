// An environment (a NULL-ended NAME=VALUE array, as slurmstepd hands one
// over) indexed in one pass.  A plan asks a task's environment for some 60
// names, most of them absent; a scan per name compares each against every
// entry (a few thousand comparisons per task), a lookup here hashes the name
// once.  The index points into the array: it must outlive neither the array
// nor its strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace db {

class EnvIndex {
  public:
    EnvIndex() = default;
    explicit EnvIndex(const char *const *env);

    // What env_get(env, name) returns: the value of the first NAME= entry,
    // or nullptr.
    const char *get(std::string_view name) const;

  private:
    struct Slot {
        const char *entry = nullptr;  // NAME=VALUE; nullptr: a free slot
        size_t name_len = 0;
        uint32_t hash = 0;
    };
    std::vector<Slot> slots_;  // open addressing, at most half full
    const char *const *env_ = nullptr;
};

}  // namespace db
