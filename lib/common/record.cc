// DIST_BIND_SET (record.hh).
#include "record.hh"

#include "env_index.hh"
#include "text.hh"

namespace db {

namespace {

// Eight lowercase hex digits, as "%08x" writes them (a printf per variable
// was a tenth of a task plan's cost).
std::string fnv1a(std::string_view v) {
    uint32_t h = 2166136261u;
    for (unsigned char c : v) h = (h ^ c) * 16777619u;
    std::string out(8, '0');
    for (int i = 7; i >= 0; i--, h >>= 4) out[i] = "0123456789abcdef"[h & 0xf];
    return out;
}

bool name_ok(std::string_view n) {
    if (n.empty() || n.size() > 128) return false;
    for (char c : n)
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
    return true;
}

}  // namespace

std::string set_record(const std::vector<std::pair<std::string, std::string>> &set,
                       const std::vector<std::string> &unset) {
    std::string out;
    size_t size = 0;
    for (const auto &kv : set) size += kv.first.size() + 10;
    for (const std::string &n : unset) size += n.size() + 3;
    out.reserve(size);
    auto item = [&](const std::string &name, const std::string &hash) {
        if (!out.empty()) out += ',';
        out += name;
        out += ':';
        out += hash;
    };
    for (const auto &kv : set) item(kv.first, fnv1a(kv.second));
    for (const std::string &n : unset) item(n, "-");
    return out;
}

std::vector<std::string> record_mismatches(const char *record, const char *const *env) {
    std::vector<std::string> out;
    if (!record) return out;
    const std::string rec(record);
    if (rec.size() > 16384) throw Error(quoted(DB_SET_RECORD, rec) + ": too long");
    const EnvIndex index(env);
    for (std::string_view item : split(rec, ',')) {
        const size_t colon = item.find(':');
        const std::string_view name = item.substr(0, colon == std::string_view::npos ? 0 : colon);
        const std::string_view hash = colon == std::string_view::npos ? "" : item.substr(colon + 1);
        if (!name_ok(name) || !(hash == "-" || hash.size() == 8))
            throw Error(quoted(DB_SET_RECORD, rec) + ": \"" + std::string(item) + "\" is not NAME:HASH");
        const char *v = index.get(name);
        const bool same = hash == "-" ? v == nullptr : v && fnv1a(v) == hash;
        if (!same) out.emplace_back(name);
    }
    return out;
}

}  // namespace db
