// EnvIndex (env_index.hh).
#include "env_index.hh"

#include <cstring>

#include "text.hh"

namespace db {

namespace {

constexpr uint32_t kFnvBasis = 2166136261u, kFnvPrime = 16777619u;

uint32_t step(uint32_t h, char c) { return (h ^ static_cast<unsigned char>(c)) * kFnvPrime; }

}  // namespace

EnvIndex::EnvIndex(const char *const *env) : env_(env) {
    size_t n = 0;
    if (env)
        while (env[n]) n++;
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    slots_.resize(cap);
    const size_t mask = cap - 1;
    for (size_t i = 0; i < n; i++) {
        const char *e = env[i];
        uint32_t h = kFnvBasis;
        size_t len = 0;
        for (; e[len] != '=' && e[len] != '\0'; len++) h = step(h, e[len]);
        if (e[len] != '=') continue;  // not NAME=VALUE: no lookup finds it
        for (size_t s = h & mask;; s = (s + 1) & mask) {
            Slot &slot = slots_[s];
            if (!slot.entry) {
                slot = Slot{e, len, h};
                break;
            }
            // A name twice: the first entry is the one a scan finds.
            if (slot.hash == h && slot.name_len == len && std::memcmp(slot.entry, e, len) == 0) break;
        }
    }
}

const char *EnvIndex::get(std::string_view name) const {
    // Every name the plan asks for is a plain name; one holding '=' would
    // match entries by their value too, which only a scan can answer alike.
    if (name.find('=') != std::string_view::npos) return env_get(env_, name);
    if (slots_.empty()) return nullptr;
    uint32_t h = kFnvBasis;
    for (char c : name) h = step(h, c);
    const size_t mask = slots_.size() - 1;
    for (size_t s = h & mask;; s = (s + 1) & mask) {
        const Slot &slot = slots_[s];
        if (!slot.entry) return nullptr;
        if (slot.hash == h && slot.name_len == name.size() &&
            (name.empty() || std::memcmp(slot.entry, name.data(), name.size()) == 0))
            return slot.entry + slot.name_len + 1;
    }
}

}  // namespace db
