// An environment (a NULL-ended NAME=VALUE array, as slurmstepd hands one
// over) indexed in one pass.  A plan asks a task's environment for some 60
// names, most of them absent; a scan per name compares each against every
// entry (a few thousand comparisons per task), a lookup here hashes the name
// once.  The index points into the array: it must outlive neither the array
// nor its strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace db {

class EnvIndex {
  public:
    explicit EnvIndex(const char *const *env);
    EnvIndex(const EnvIndex &) = delete;  // slots_ may point into the object
    EnvIndex &operator=(const EnvIndex &) = delete;

    // What env_get(env, name) returns: the value of the first NAME= entry,
    // or nullptr.
    const char *get(std::string_view name) const;

  private:
    struct Slot {
        const char *entry;  // NAME=VALUE; nullptr: a free slot
        uint32_t name_len;
        uint32_t hash;
    };
    // An environment of up to kInline/2 entries (the usual size) is indexed
    // in place: glibc's malloc takes longer over a block of this size than
    // the whole index does.
    static constexpr size_t kInline = 256;
    Slot inline_[kInline];
    std::unique_ptr<Slot[]> heap_;
    Slot *slots_;  // open addressing, at most half full
    size_t mask_;  // slots - 1 (a power of two)
    const char *const *env_;
    bool scan_ = false;  // a name too long to index: every lookup scans
};

}  // namespace db
