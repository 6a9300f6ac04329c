// EnvIndex (env_index.hh).
#include "env_index.hh"

#include <cstring>
#include <type_traits>

#include "text.hh"

namespace db {

namespace {

uint64_t load(const char *p, size_t n) {
    uint64_t v = 0;
    std::memcpy(&v, p, n);
    return v;
}

// A name's hash from its length and its first and last 8 bytes: constant
// time whatever its length, and names differ there (SLURM_STEP_ID and
// SLURM_JOB_ID; a common prefix is the rest of the name).  Names that share
// it only cost a comparison more.
uint32_t name_hash(const char *p, size_t n) {
    uint64_t a, b;
    if (n >= 8) {
        a = load(p, 8);
        b = load(p + n - 8, 8);
    } else if (n >= 4) {
        a = load(p, 4);
        b = load(p + n - 4, 4);
    } else {
        a = n ? static_cast<unsigned char>(p[0]) | static_cast<unsigned char>(p[n / 2]) << 8 : 0;
        b = n ? static_cast<unsigned char>(p[n - 1]) : 0;
    }
    const uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull) ^ n) * 0xbf58476d1ce4e5b9ull;
    return static_cast<uint32_t>(h >> 32);
}

}  // namespace

EnvIndex::EnvIndex(const char *const *env, size_t extra) : env_(env) {
    size_t n = 0;
    if (env)
        while (env[n]) n++;
    size_t cap = 16;
    while (cap < 2 * (n + extra)) cap *= 2;
    if (cap <= kInline) {
        slots_ = inline_;
    } else {
        heap_.reset(new Slot[cap]);
        slots_ = heap_.get();
    }
    static_assert(std::is_trivial_v<Slot>);
    std::memset(slots_, 0, cap * sizeof(Slot));  // every slot free
    mask_ = cap - 1;
    free_ = cap;
    for (size_t i = 0; i < n; i++) {
        const char *e = env[i];
        const char *eq = std::strchr(e, '=');
        if (!eq) continue;  // not NAME=VALUE: no lookup finds it
        const size_t len = static_cast<size_t>(eq - e);
        // No environment holds one (Slurm and exec refuse strings over
        // 128 KiB); kept exact all the same.
        if (len >= kGone) {
            scan_ = true;
            continue;
        }
        const uint32_t h = name_hash(e, len);
        for (size_t s = h & mask_;; s = (s + 1) & mask_) {
            Slot &slot = slots_[s];
            if (!slot.entry) {
                slot = Slot{e, static_cast<uint32_t>(len), h};
                free_--;
                break;
            }
            // A name twice: the first entry is the one a scan finds.
            if (slot.hash == h && slot.name_len == len && std::memcmp(slot.entry, e, len) == 0) break;
        }
    }
}

size_t EnvIndex::find(std::string_view name, uint32_t h) const {
    for (size_t s = h & mask_;; s = (s + 1) & mask_) {
        const Slot &slot = slots_[s];
        if (!slot.entry) return s;
        if (slot.hash == h && slot.name_len == name.size() &&
            (name.empty() || std::memcmp(slot.entry, name.data(), name.size()) == 0))
            return s;
    }
}

const char *EnvIndex::get(std::string_view name) const {
    if (!put_.empty())
        for (auto p = put_.rbegin(); p != put_.rend(); ++p)
            if (p->first == name) return p->second ? p->second + name.size() + 1 : nullptr;
    // Every name the plan asks for is a plain name; one holding '=' would
    // match entries by their value too, which only a scan answers alike.
    if (scan_ || name.find('=') != std::string_view::npos) return env_get(env_, name);
    const Slot &slot = slots_[find(name, name_hash(name.data(), name.size()))];
    return slot.entry ? slot.entry + slot.name_len + 1 : nullptr;
}

uint32_t EnvIndex::hash(std::string_view name) { return name_hash(name.data(), name.size()); }

EnvIndex::Probe EnvIndex::probe(std::string_view name, uint32_t h) const {
    if (scan_ || !put_.empty() || name.size() >= kGone || name.find('=') != std::string_view::npos)
        return {get(name), 0, h, false};
    const size_t s = find(name, h);
    return {slots_[s].entry ? slots_[s].entry + slots_[s].name_len + 1 : nullptr, s, h, true};
}

void EnvIndex::put(const Probe &p, std::string_view name, const char *entry) {
    if (p.exact)
        put_at(p.slot, name, p.hash, entry);
    else
        put(name, entry);
}

void EnvIndex::put(std::string_view name, const char *entry) {
    if (name.size() >= kGone || name.find('=') != std::string_view::npos) return;  // no variable's name
    if (scan_) {
        put_.emplace_back(name, entry);
        return;
    }
    const uint32_t h = name_hash(name.data(), name.size());
    put_at(find(name, h), name, h, entry);
}

void EnvIndex::put_at(size_t s, std::string_view name, uint32_t h, const char *entry) {
    Slot &slot = slots_[s];
    if (slot.entry) {  // the name's
        if (entry)
            slot.entry = entry;
        else
            slot.name_len |= kGone;
        return;
    }
    // The free slot where the name's lookup ended.
    if (!entry) {
        if (!put_.empty()) put_.emplace_back(name, nullptr);  // over an earlier put()
        return;
    }
    // Beyond the room asked for: a list every lookup reads first, as every
    // lookup must end at a free slot.
    if (free_ <= 1) {
        put_.emplace_back(name, entry);
        return;
    }
    slot = Slot{entry, static_cast<uint32_t>(name.size()), h};
    free_--;
}

}  // namespace db
