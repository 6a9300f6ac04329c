#include "options.hh"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "text.hh"

namespace db {

namespace {

constexpr const char *kExpectedValue =
    "expected [MODE][,MODIFIER...] with MODE one of rank, isolate, closest, env, off "
    "and MODIFIER one of verbose, share, port=N";

struct ModeName {
    const char *name;
    int mode;
};
constexpr ModeName kModes[] = {
    {"rank", DB_MODE_RANK}, {"isolate", DB_MODE_ISOLATE}, {"closest", DB_MODE_CLOSEST},
    {"env", DB_MODE_ENV},   {"off", DB_MODE_OFF},
};

int mode_from(std::string_view s) {
    for (const ModeName &m : kModes)
        if (s == m.name) return m.mode;
    return DB_MODE_UNSET;
}

}  // namespace

db_request parse_request(std::string_view value, std::string_view origin) {
    db_request r{};
    const std::string what = quoted(origin, value);
    bool seen_verbose = false, seen_share = false, seen_port = false;
    if (!value.empty()) {
        for (std::string_view item : split(value, ',')) {
            if (item.empty()) throw Error(what + ": empty item; " + kExpectedValue);
            int m = mode_from(item);
            if (m != DB_MODE_UNSET) {
                if (r.mode != DB_MODE_UNSET)
                    throw Error(what + ": more than one MODE (\"" + db_mode_name(r.mode) + "\" and \"" +
                                std::string(item) + "\"); " + kExpectedValue);
                r.mode = m;
            } else if (item == "verbose") {
                if (seen_verbose) throw Error(what + ": \"verbose\" given twice");
                seen_verbose = true;
                r.verbose = 1;
            } else if (item == "share") {
                if (seen_share) throw Error(what + ": \"share\" given twice");
                seen_share = true;
                r.share = 1;
            } else if (item.substr(0, 5) == "port=") {
                if (seen_port) throw Error(what + ": \"port=\" given twice");
                seen_port = true;
                uint64_t p;
                if (!parse_uint(item.substr(5), 65535, p) || p == 0)
                    throw Error(what + ": \"" + std::string(item) +
                                "\" is not a port, expected port=N with N in 1..65535");
                r.port = static_cast<unsigned>(p);
            } else {
                throw Error(what + ": unknown item \"" + std::string(item) + "\"; " + kExpectedValue);
            }
        }
    }
    if (r.mode == DB_MODE_UNSET) r.mode = DB_MODE_RANK;
    if (r.mode == DB_MODE_OFF && (r.verbose || r.share || r.port)) throw Error(what + ": \"off\" takes no modifiers");
    return r;
}

db_config default_config() {
    db_config c{};
    c.def.mode = DB_MODE_OFF;
    c.port_lo = 20000;
    c.port_hi = 29999;
    c.addr_kind = DB_ADDR_NAME;
    copy_out(DB_TOPOLOGY_CACHE_DEFAULT, c.topology_cache, sizeof c.topology_cache);
    return c;
}

namespace {

// plugstack.conf's keys, one each.
void set_default(db_config &c, std::string_view val) {
    if (val.empty()) throw Error("plugstack.conf: default=\"\": expected a MODE (rank, isolate, closest, env, off)");
    c.def = parse_request(val, "plugstack.conf: default");
    if (c.def.port)
        throw Error("plugstack.conf: default=\"" + std::string(val) +
                    "\": port= cannot be a default (every step would get the same MASTER_PORT); use ports=LO-HI");
}

void set_ports(db_config &c, std::string_view val) {
    size_t dash = val.find('-');
    uint64_t lo = 0, hi = 0;
    if (dash == std::string_view::npos || !parse_uint(val.substr(0, dash), 65535, lo) ||
        !parse_uint(val.substr(dash + 1), 65535, hi) || lo == 0 || hi < lo)
        throw Error("plugstack.conf: " + quoted("ports", val) + ": expected LO-HI with 1 <= LO <= HI <= 65535");
    c.port_lo = static_cast<unsigned>(lo);
    c.port_hi = static_cast<unsigned>(hi);
}

void set_master_addr(db_config &c, std::string_view val) {
    if (val == "name") {
        c.addr_kind = DB_ADDR_NAME;
    } else if (val == "addr") {
        c.addr_kind = DB_ADDR_NODEADDR;
    } else if (val.substr(0, 7) == "suffix:") {
        std::string_view s = val.substr(7);
        bool ok = !s.empty() && s.size() < DB_SUFFIX_MAX;
        for (char ch : s)
            ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                        ch == '.' || ch == '_');
        if (!ok)
            throw Error("plugstack.conf: " + quoted("master_addr", val) +
                        ": the suffix must be 1-63 characters of letters, digits, '-', '.', '_'");
        c.addr_kind = DB_ADDR_SUFFIX;
        copy_out(s, c.addr_suffix, sizeof c.addr_suffix);
    } else {
        throw Error("plugstack.conf: " + quoted("master_addr", val) + ": expected name, addr or suffix:S");
    }
}

void set_topology_cache(db_config &c, std::string_view val) {
    if (val == "none") {
        c.topology_cache[0] = '\0';
        return;
    }
    bool ok = !val.empty() && val[0] == '/' && val.size() < DB_PATH_MAX;
    for (size_t i = 0; ok && i < val.size(); i++) {
        unsigned char ch = static_cast<unsigned char>(val[i]);
        ok = ch > 0x20 && ch < 0x7f;
        if (ok && ch == '%') {
            ok = i + 1 < val.size() && (val[i + 1] == 'n' || val[i + 1] == 'h' || val[i + 1] == '%');
            i++;
        }
    }
    if (!ok)
        throw Error("plugstack.conf: " + quoted("topology_cache", val) +
                    ": expected none, or an absolute path of at most 1023 characters in which % "
                    "only starts %n (node name), %h (host name) or %%");
    copy_out(val, c.topology_cache, sizeof c.topology_cache);
}

}  // namespace

db_config parse_config(int argc, const char *const *argv) {
    db_config c = default_config();
    const char *keys = "valid keys: default, ports, master_addr, topology_cache";
    struct Key {
        const char *name;
        void (*set)(db_config &, std::string_view);
        bool seen;
    } table[] = {{"default", set_default, false},
                 {"ports", set_ports, false},
                 {"master_addr", set_master_addr, false},
                 {"topology_cache", set_topology_cache, false}};
    for (int i = 0; i < argc; i++) {
        std::string_view arg = argv[i] ? argv[i] : "";
        size_t eq = arg.find('=');
        if (eq == std::string_view::npos || eq == 0)
            throw Error("plugstack.conf argument \"" + std::string(arg) + "\": expected key=value (" + keys + ")");
        std::string_view key = arg.substr(0, eq), val = arg.substr(eq + 1);
        Key *k = std::find_if(std::begin(table), std::end(table), [&](const Key &x) { return key == x.name; });
        if (k == std::end(table))
            throw Error("plugstack.conf: unknown key \"" + std::string(key) + "\" in \"" + std::string(arg) + "\" (" +
                        keys + ")");
        if (k->seen) throw Error("plugstack.conf: key \"" + std::string(key) + "\" given twice");
        k->seen = true;
        k->set(c, val);
    }
    return c;
}

std::string format_master_addr(const db_config &cfg, std::string_view node_name, const char *node_addr) {
    switch (cfg.addr_kind) {
    case DB_ADDR_SUFFIX: return std::string(node_name) + cfg.addr_suffix;
    case DB_ADDR_NODEADDR:
        if (!node_addr || !*node_addr)
            throw Error("master_addr=addr: no NodeAddr known for node \"" + std::string(node_name) + "\"");
        return node_addr;
    default: return std::string(node_name);
    }
}

bool distribution_is_arbitrary(const char *dist) { return dist && std::strncmp(dist, "arbitrary", 9) == 0; }

}  // namespace db
