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
#include <utility>
#include <vector>

namespace db {

class EnvIndex {
  public:
    // `extra`: room for that many names put() may add.
    explicit EnvIndex(const char *const *env, size_t extra = 0);
    EnvIndex(const EnvIndex &) = delete;  // slots_ may point into the object
    EnvIndex &operator=(const EnvIndex &) = delete;

    // What env_get(env, name) returns: the value of the first NAME= entry,
    // or nullptr.
    const char *get(std::string_view name) const;

    // From now on get(name) answers entry's value (entry is "NAME=VALUE"),
    // or nullptr where entry is nullptr: the task plan sees a task's
    // environment as it was before dist-bind's own writes of user_init this
    // way.  `entry` must outlive the index; a name get() did not know takes
    // one of the `extra` places.  A name holding '=' names no variable and
    // changes nothing.
    void put(std::string_view name, const char *entry);

    // get() and then put() of one name in one lookup, its hash computed
    // beforehand (hash()): a task's plan does this for each of its node's
    // variables (TaskEnv).  `value` is what get(name) answers; put(probe,
    // ...) does what put(name, ...) would, and must come before any other
    // put().
    static uint32_t hash(std::string_view name);
    struct Probe {
        const char *value;
        size_t slot;
        uint32_t hash;
        bool exact;  // false: no slot to act on (a name with '=', or a list to read first)
    };
    Probe probe(std::string_view name, uint32_t hash) const;
    void put(const Probe &probe, std::string_view name, const char *entry);

  private:
    // The slot holding `name` (hash h), or the free slot its lookup ends at.
    size_t find(std::string_view name, uint32_t h) const;
    // put() at slot s, found by find(name, h).
    void put_at(size_t s, std::string_view name, uint32_t h, const char *entry);
    struct Slot {
        const char *entry;  // NAME=VALUE; nullptr: a free slot
        uint32_t name_len;  // kGone set: the name is absent (put), the slot still taken
        uint32_t hash;
    };
    // No name is this long (Slurm and exec refuse strings over 128 KiB), so
    // a length with this bit never matches a lookup.
    static constexpr uint32_t kGone = 1u << 31;
    // An environment of up to kInline/2 entries (the usual size) is indexed
    // in place: glibc's malloc takes longer over a block of this size than
    // the whole index does.
    static constexpr size_t kInline = 256;
    Slot inline_[kInline];
    std::unique_ptr<Slot[]> heap_;
    Slot *slots_;  // open addressing, at most half full
    size_t mask_;  // slots - 1 (a power of two)
    size_t free_;  // free slots
    const char *const *env_;
    bool scan_ = false;  // a name too long to index: every lookup scans
    // What put() said where no slot could: every lookup scans, or no room.
    std::vector<std::pair<std::string_view, const char *>> put_;
};

}  // namespace db
