// The --dist-bind value and the plugstack.conf arguments (lib/plan/options.cc):
// every input gives a request/config or one message naming what was wrong.
#include <cstring>
#include <vector>

#include "db_core.h"
#include "fuzz.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Take in(data, size);
    std::string value = in.line();
    char err[DB_ERRLEN] = "";
    db_request r;
    std::memset(&r, 0xAB, sizeof r);
    if (db_request_parse(value.c_str(), &r, err, sizeof err) == 0) {
        FUZZ_CHECK(r.mode > DB_MODE_UNSET && r.mode <= DB_MODE_ENV, "mode %d", r.mode);
        FUZZ_CHECK(r.port <= 65535 && (r.verbose == 0 || r.verbose == 1) && (r.share == 0 || r.share == 1), "flags");
        FUZZ_CHECK(r.mode != DB_MODE_OFF || (!r.verbose && !r.share && !r.port), "off with modifiers");
    } else {
        FUZZ_CHECK(std::strlen(err) > 0 && std::strstr(err, "--dist-bind"), "message %s", err);
    }

    // The rest: plugstack arguments, one per line (as Slurm splits them).
    std::vector<std::string> args;
    while (in.left() && args.size() < 16) args.push_back(in.line());
    std::vector<const char *> argv;
    for (const std::string &a : args) argv.push_back(a.c_str());
    db_config c;
    if (db_config_parse(static_cast<int>(argv.size()), argv.data(), &c, err, sizeof err) == 0) {
        FUZZ_CHECK(c.port_lo >= 1 && c.port_lo <= c.port_hi && c.port_hi <= 65535, "ports %u-%u", c.port_lo, c.port_hi);
        FUZZ_CHECK(c.def.port == 0, "a default port");
        FUZZ_CHECK(std::memchr(c.addr_suffix, 0, sizeof c.addr_suffix), "suffix unterminated");
        FUZZ_CHECK(std::memchr(c.topology_cache, 0, sizeof c.topology_cache), "cache path unterminated");
        FUZZ_CHECK(!c.topology_cache[0] || c.topology_cache[0] == '/', "relative cache path %s", c.topology_cache);
        db_request eff = db_effective(&c, nullptr);
        FUZZ_CHECK(eff.mode != DB_MODE_UNSET, "effective mode unset");
    } else {
        FUZZ_CHECK(std::strncmp(err, "plugstack.conf", 14) == 0, "message %s", err);
    }
    return 0;
}
