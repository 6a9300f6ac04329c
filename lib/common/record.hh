// DIST_BIND_SET: the record of what dist-bind set in a task, so that the
// program (dist-bind-check, libdistbind) can tell which of those variables
// something changed after dist-bind's task_init, e.g. a container plugin
// (pyxis) later in plugstack.conf copying an image's environment over the
// task's.  "NAME:HASH,NAME:HASH,...", HASH the value's 32-bit FNV-1a in
// hex, "-" for a variable dist-bind unset: short whatever the values, and
// names only, never values, in messages.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#define DB_SET_RECORD "DIST_BIND_SET"

namespace db {

// A record, item by item: every variable set (name, value), then every
// one unset.
class RecordWriter {
  public:
    explicit RecordWriter(size_t reserve) { out_.reserve(reserve); }
    void set(std::string_view name, std::string_view value);
    void unset(std::string_view name);
    std::string take() { return std::move(out_); }

  private:
    void item(std::string_view name, std::string_view tail);
    std::string out_;
};

// The names whose value in `env` (NULL-ended NAME=VALUE array) is not what
// `record` says dist-bind left; throws db::Error naming DIST_BIND_SET for
// a record that is not one.
std::vector<std::string> record_mismatches(const char *record, const char *const *env);

}  // namespace db
