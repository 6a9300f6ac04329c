// Libraries loaded at run time (libpmix, Slurm's libpmi2, libcudart,
// libnccl), so that libdistbind depends on none of them and loads where
// they are missing.
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

namespace db::rt {

// The first of `names` that dlopen loads with `flags`; nullptr when none
// does, with every name's failure in `why` (so the message says why the
// first, the preferred one, did not load, not only the last).
void *open_first(const std::vector<std::string> &names, int flags, std::string &why);

// dl's symbol `name` as out's type; false when dl has none.
template <typename T>
bool find_sym(void *dl, T &out, const char *name) {
    out = reinterpret_cast<T>(dlsym(dl, name));
    return out != nullptr;
}

}  // namespace db::rt
