// The strict parsers of what Slurm and users hand the plugin and library
// (lib/common/text.cc): Slurm hostlists, tasks-per-node lists, GPU lists,
// port lists, numbers.  The first byte picks one; the rest is its input.
// Every input is also an environment, one entry a line, for the index the
// plan reads environments through (lib/common/env_index.cc), and a record
// (DIST_BIND_SET, lib/common/record.cc) that libdistbind reads from the
// program's environment.
#include <cstring>
#include <string>
#include <vector>

#include "env_index.hh"
#include "fuzz.hh"
#include "record.hh"
#include "text.hh"

namespace {

// How many hosts a list names, from hostlist_nth alone: the first index it
// has no host for (it refuses a list it cannot read, or one too long to
// count, whatever the index).
size_t host_count(const std::string &s) {
    size_t lo = 1, hi = (1u << 24) + 1;  // host lo-1 exists; host hi does not
    db::hostlist_nth(s, 0);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        try {
            db::hostlist_nth(s, mid);
            lo = mid + 1;
        } catch (const db::Error &) {
            hi = mid;
        }
    }
    return lo;
}

void hostlist(const std::string &s, uint32_t pick) {
    size_t n;
    try {
        n = host_count(s);
    } catch (const db::Error &) {
        return;
    }
    FUZZ_CHECK(n >= 1 && n <= (1u << 24), "count %zu", n);
    // Any host inside is a plain name.
    size_t i = pick % n;
    std::string h = db::hostlist_nth(s, i);
    FUZZ_CHECK(!h.empty() && h.find_first_of("[],") == std::string::npos, "host %zu of %s is \"%s\"", i, s.c_str(),
               h.c_str());
}

void tasks(const std::string &s, uint32_t cap) {
    cap %= 4096;
    try {
        auto v = db::parse_tasks_per_node(s, "SLURM_STEP_TASKS_PER_NODE", cap, "fuzz");
        FUZZ_CHECK(!v.empty() && v.size() <= cap, "%zu nodes, cap %u", v.size(), cap);
        for (uint32_t c : v) FUZZ_CHECK(c > 0, "a node with 0 tasks");
    } catch (const db::Error &e) {
        FUZZ_CHECK(std::strstr(e.what(), "SLURM_STEP_TASKS_PER_NODE=\""), "message %s", e.what());
    }
}

void gpus(const std::string &s) {
    try {
        auto v = db::parse_gpu_list(s, "CUDA_VISIBLE_DEVICES");
        FUZZ_CHECK(!v.empty(), "empty list accepted");
        for (size_t i = 0; i < v.size(); i++)
            for (size_t j = i + 1; j < v.size(); j++) FUZZ_CHECK(v[i] != v[j], "GPU %s twice", v[i].c_str());
        FUZZ_CHECK(db::join(v) == s, "not the list it came from");
    } catch (const db::Error &) {}
}

void numbers(const std::string &s) {
    uint64_t v;
    if (db::parse_uint(s, UINT64_MAX, v))
        FUZZ_CHECK(std::to_string(v) == s || s[0] == '0', "%s read as %llu", s.c_str(),
                   static_cast<unsigned long long>(v));
    try {
        unsigned p = db::first_port(s, "SLURM_STEP_RESV_PORTS");
        FUZZ_CHECK(p >= 1 && p <= 65535, "port %u", p);
    } catch (const db::Error &) {}
    std::string q = db::quoted("X", s);
    FUZZ_CHECK(q.size() <= s.size() + 8 && q.size() <= 120 + 8 + 3, "quoted too long");
}

// put(): the first entry of each name answered anew, alternately as absent
// and as NAME=again, and 40 names no line has added with no room asked for
// them (past the room, the index keeps a list), every third by probe() and
// its put(): every prefix of every line is then answered as put() said,
// else as a scan of the environment.
void env_puts(const std::vector<std::string> &lines, const std::vector<const char *> &env) {
    std::vector<std::string> names, given;  // given: what put() points at, complete before the first put()
    for (const std::string &l : lines) {
        const size_t eq = l.find('=');
        if (eq == std::string::npos) continue;
        std::string name = l.substr(0, eq);
        if (db::env_get(env.data(), name) != l.c_str() + eq + 1) continue;  // a later entry of its name
        given.push_back(names.size() % 2 ? name + "=again" : std::string());
        names.push_back(std::move(name));
    }
    for (int i = 0; i < 40; i++) {
        names.push_back("DB_FUZZ_NEW_" + std::to_string(i));
        given.push_back(names.back() + "=" + std::to_string(i));
    }
    db::EnvIndex index(env.data());
    for (size_t i = 0; i < names.size(); i++) {
        const char *entry = given[i].empty() ? nullptr : given[i].c_str();
        if (i % 3) {
            index.put(names[i], entry);
            continue;
        }
        // Every third by one lookup (probe), which answers as get() does.
        const char *before = index.get(names[i]);
        const db::EnvIndex::Probe p = index.probe(names[i], db::EnvIndex::hash(names[i]));
        FUZZ_CHECK(p.value == before, "probe(\"%s\") says %s, get() %s", names[i].c_str(), p.value ? p.value : "(none)",
                   before ? before : "(none)");
        index.put(p, names[i], entry);
    }
    auto expect = [&](std::string_view name) -> const char * {
        if (name.find('=') == std::string_view::npos)
            for (size_t i = names.size(); i-- > 0;)  // the last put() of a name wins
                if (names[i] == name) return given[i].empty() ? nullptr : given[i].c_str() + name.size() + 1;
        return db::env_get(env.data(), name);
    };
    std::vector<std::string> probes(lines);
    for (const std::string &g : given) probes.push_back(g);
    for (const std::string &l : probes)
        for (size_t n = 0; n <= l.size() && n <= 64; n++) {
            const std::string_view name(l.data(), n);
            const char *want = expect(name), *got = index.get(name);
            FUZZ_CHECK(got == want, "\"%.*s\" after put(): the index says %s, want %s", static_cast<int>(n), l.data(),
                       got ? got : "(none)", want ? want : "(none)");
        }
}

// The index finds what a scan finds, the same entry: for every prefix of
// every line as the name (names with '=', the empty name, a name twice).
void env_lookups(const std::string &s) {
    std::vector<std::string> lines;
    for (std::string_view line : db::split(s, '\n')) lines.emplace_back(line.substr(0, line.find('\0')));
    std::vector<const char *> env;
    for (const std::string &l : lines) env.push_back(l.c_str());
    env.push_back(nullptr);
    const db::EnvIndex index(env.data());
    for (const std::string &l : lines)
        for (size_t n = 0; n <= l.size() && n <= 64; n++) {
            const std::string_view name(l.data(), n);
            const char *scan = db::env_get(env.data(), name), *indexed = index.get(name);
            FUZZ_CHECK(indexed == scan, "\"%.*s\": the index says %s, a scan %s", static_cast<int>(n), l.data(),
                       indexed ? indexed : "(none)", scan ? scan : "(none)");
        }
    env_puts(lines, env);
}

// A record is read or refused with one error naming it; what it names as
// changed is a name it holds.  What RecordWriter writes for the lines it
// was given reads back: its place, and nothing changed.
void record(const std::string &s, uint32_t arg) {
    std::vector<std::string> lines;
    for (std::string_view line : db::split(s, '\n')) lines.emplace_back(line.substr(0, line.find('\0')));
    std::vector<const char *> env;
    for (const std::string &l : lines) env.push_back(l.c_str());
    env.push_back(nullptr);
    const std::string rec = s.substr(0, s.find('\0'));
    try {
        const db::RecordPlace p = db::record_place(rec.c_str());
        FUZZ_CHECK(p.world >= 1 && p.rank < p.world && p.local_rank < p.world, "place %s", rec.c_str());
        for (const std::string &n : db::record_mismatches(rec.c_str(), env.data()))
            FUZZ_CHECK(rec.find(n + ":") != std::string::npos, "%s is not in %s", n.c_str(), rec.c_str());
    } catch (const db::Error &e) {
        FUZZ_CHECK(std::strncmp(e.what(), "DIST_BIND_SET=\"", 15) == 0, "message %s", e.what());
    }
    const db::RecordPlace want{arg % 7, arg % 5, 7 + arg % 9};
    db::RecordWriter w(want, 0);
    std::vector<std::string> seen;
    for (const std::string &l : lines) {
        const size_t eq = l.find('=');
        if (eq == 0 || eq == std::string::npos || eq > 128) continue;
        const std::string name = l.substr(0, eq);
        if (name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
                std::string::npos ||
            db::env_get(env.data(), name) != l.c_str() + eq + 1)
            continue;  // not a name, or a later entry of its name
        w.set(name, l.substr(eq + 1));
    }
    const std::string out = w.take();
    const db::RecordPlace got = db::record_place(out.c_str());
    FUZZ_CHECK(got.rank == want.rank && got.local_rank == want.local_rank && got.world == want.world, "place of %s",
               out.c_str());
    if (out.size() <= 16384) {
        const std::vector<std::string> changed = db::record_mismatches(out.c_str(), env.data());
        FUZZ_CHECK(changed.empty(), "%s changed in %s", changed.front().c_str(), out.c_str());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Take in(data, size);
    uint8_t which = in.u8();
    uint32_t arg = in.u32();
    std::string s = in.rest();
    switch (which % 4) {
    case 0: hostlist(s, arg); break;
    case 1: tasks(s, arg); break;
    case 2: gpus(s); break;
    default: numbers(s); break;
    }
    env_lookups(s);
    record(s, arg);
    return 0;
}
