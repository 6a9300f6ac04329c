#include "core/dl.hh"

namespace db::rt {

void *open_first(const std::vector<std::string> &names, int flags, std::string &why) {
    std::string tried;
    for (const std::string &n : names) {
        if (void *h = dlopen(n.c_str(), flags)) return h;
        const char *e = dlerror();
        tried += (tried.empty() ? "" : "; ") + std::string(e ? e : n + ": not loaded");
    }
    why = tried;
    return nullptr;
}

}  // namespace db::rt
