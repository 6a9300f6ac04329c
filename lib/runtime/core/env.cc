// The environment a handle reads its settings and place from: a snapshot,
// so that nothing the program changes afterwards changes a handle.
#include <cstdlib>
#include <mutex>

#include "core/rt.hh"
#include "core/secret.hh"

extern char **environ;

namespace db::rt {

Env::Env(const char *const *env) {
    for (; env && *env; env++) vars_.emplace_back(*env);
}

namespace {
// The process's DIST_BIND_SECRET once it is out of its environment, for
// the handles made after the first.  Guarded with the environment itself:
// nothing else here reads or changes `environ` meanwhile.
std::mutex g_env_mu;
std::string *g_secret_var = nullptr;  // "DIST_BIND_SECRET=..."; kept until exit
constexpr char kSecretVar[] = "DIST_BIND_SECRET";
}  // namespace

Env Env::process() {
    std::lock_guard<std::mutex> lock(g_env_mu);
    Env e(environ);
    if (const char *v = e.get(kSecretVar)) {
        if (!g_secret_var) g_secret_var = new std::string;
        *g_secret_var = std::string(kSecretVar) + "=" + v;
        unsetenv(kSecretVar);
        unsetenv("APPTAINERENV_DIST_BIND_SECRET");  // dist-bind's copy for Apptainer (docs/usage.md)
    } else if (g_secret_var) {
        e.vars_.push_back(*g_secret_var);
    }
    return e;
}

void Env::forget(std::string_view name) {
    for (auto it = vars_.begin(); it != vars_.end(); ++it) {
        if (it->size() > name.size() && (*it)[name.size()] == '=' && it->compare(0, name.size(), name) == 0) {
            wipe(it->data(), it->size());
            vars_.erase(it);
            return;
        }
    }
}

const char *Env::get(std::string_view name) const {
    for (const std::string &v : vars_)
        if (v.size() > name.size() && v[name.size()] == '=' && v.compare(0, name.size(), name) == 0)
            return v.c_str() + name.size() + 1;
    return nullptr;
}

}  // namespace db::rt
