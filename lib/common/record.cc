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

constexpr const char *kExpected = ": expected RANK,LOCAL_RANK,WORLD_SIZE;NAME:HASH,... (set by srun --dist-bind)";
constexpr uint64_t kMaxPlace = uint64_t(1) << 24;  // libdistbind's largest world

// The place and the items of `rec`.
std::pair<RecordPlace, std::string_view> split_record(std::string_view rec) {
    RecordPlace p;
    const size_t semi = rec.substr(0, 32).find(';');  // three numbers below 2^24 and two commas
    const std::vector<std::string_view> f = split(rec.substr(0, semi == std::string_view::npos ? 0 : semi), ',');
    if (semi == std::string_view::npos || f.size() != 3 || !parse_uint(f[0], kMaxPlace, p.rank) ||
        !parse_uint(f[1], kMaxPlace, p.local_rank) || !parse_uint(f[2], kMaxPlace, p.world) || p.world == 0 ||
        p.rank >= p.world || p.local_rank >= p.world)
        throw Error(quoted(DB_SET_RECORD, rec) + kExpected);
    return {p, rec.substr(semi + 1)};
}

}  // namespace

std::string RecordPlace::str() const {
    return std::to_string(rank) + ',' + std::to_string(local_rank) + ',' + std::to_string(world);
}

RecordWriter::RecordWriter(const RecordPlace &place, size_t reserve) {
    out_.reserve(reserve + 24);
    out_.append(place.str()).append(1, ';');
    head_ = out_.size();
}

void RecordWriter::item(std::string_view name, std::string_view tail) {
    if (out_.size() > head_) out_ += ',';
    out_.append(name).append(1, ':').append(tail);
}

void RecordWriter::set(std::string_view name, std::string_view value) {
    char hex[8];
    fnv1a(value, hex);
    item(name, std::string_view(hex, sizeof hex));
}

void RecordWriter::unset(std::string_view name) { item(name, "-"); }

RecordPlace record_place(const char *record) { return split_record(record).first; }

std::vector<std::string> record_mismatches(const char *record, const char *const *env) {
    std::vector<std::string> out;
    if (!record) return out;
    const std::string rec(record);
    if (rec.size() > 16384) throw Error(quoted(DB_SET_RECORD, rec) + ": too long");
    const std::string_view items = split_record(rec).second;
    if (items.empty()) return out;
    const EnvIndex index(env);
    for (std::string_view item : split(items, ',')) {
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
