// DIST_BIND_SET (record.hh).
#include "record.hh"

#include "env_index.hh"
#include "text.hh"

namespace db {

namespace {

// Eight lowercase hex digits, as "%08x" writes them (a printf per variable
// was a tenth of a task plan's cost).
void fnv1a(std::string_view v, char (&hex)[8]) {
    uint32_t h = 2166136261u;
    for (unsigned char c : v) h = (h ^ c) * 16777619u;
    for (int i = 7; i >= 0; i--, h >>= 4) hex[i] = "0123456789abcdef"[h & 0xf];
}

bool name_ok(std::string_view n) {
    if (n.empty() || n.size() > 128) return false;
    for (char c : n)
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
    return true;
}

}  // namespace

void RecordWriter::item(std::string_view name, std::string_view tail) {
    if (!out_.empty()) out_ += ',';
    out_.append(name).append(1, ':').append(tail);
}

void RecordWriter::set(std::string_view name, std::string_view value) {
    char hex[8];
    fnv1a(value, hex);
    item(name, std::string_view(hex, sizeof hex));
}

void RecordWriter::unset(std::string_view name) { item(name, "-"); }

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
        char mine[8];
        if (v) fnv1a(v, mine);
        const bool same = hash == "-" ? v == nullptr : v && hash == std::string_view(mine, sizeof mine);
        if (!same) out.emplace_back(name);
    }
    return out;
}

}  // namespace db
