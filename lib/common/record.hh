// DIST_BIND_SET: the record of what dist-bind set in a task, so that the
// program (dist-bind-check, libdistbind) can tell which of those variables
// something changed after dist-bind's task_init, e.g. a container plugin
// (pyxis) later in plugstack.conf copying an image's environment over the
// task's.  "RANK,LOCAL_RANK,WORLD_SIZE;NAME:HASH,NAME:HASH,...": first the
// place the values were set for, in the clear (a launcher that re-ranks its
// workers, torchrun, leaves it behind, and libdistbind then knows the
// plugin's DIST_BIND_DEVICE is the launcher task's), then every variable,
// HASH the value's 32-bit FNV-1a in hex, "-" for a variable dist-bind
// unset: short whatever the values, and names only, never values, in
// messages.  One variable, not two: each is a spank_setenv (and its
// Apptainer twin another) in every task.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#define DB_SET_RECORD "DIST_BIND_SET"

namespace db {

// The place a record was written for.
struct RecordPlace {
    uint64_t rank = 0, local_rank = 0, world = 0;
    // "RANK,LOCAL_RANK,WORLD_SIZE", as the record opens.
    std::string str() const;
};

// A record, item by item: the place, every variable set (name, value),
// then every one unset.
class RecordWriter {
  public:
    RecordWriter(const RecordPlace &place, size_t reserve);
    void set(std::string_view name, std::string_view value);
    void unset(std::string_view name);
    std::string take() { return std::move(out_); }

  private:
    void item(std::string_view name, std::string_view tail);
    std::string out_;
    size_t head_ = 0;  // where the first item starts
};

// The place `record` was written for; throws db::Error naming
// DIST_BIND_SET for a record that does not start with one.
RecordPlace record_place(const char *record);

// The names whose value in `env` (NULL-ended NAME=VALUE array) is not what
// `record` says dist-bind left; throws db::Error naming DIST_BIND_SET for
// a record that is not one.
std::vector<std::string> record_mismatches(const char *record, const char *const *env);

}  // namespace db
