#include "text.hh"

#include <cstring>
#include <limits>

namespace db {

std::string quoted(std::string_view name, std::string_view value) {
    constexpr size_t kShown = 120;
    std::string out(name);
    out += "=\"";
    if (value.size() > kShown) {
        out.append(value.substr(0, kShown));
        out += "...";
    } else {
        out.append(value);
    }
    out += '"';
    return out;
}

bool parse_uint(std::string_view s, uint64_t max, uint64_t &out) {
    if (s.empty() || s.size() > 20) return false;
    uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        unsigned d = static_cast<unsigned>(c - '0');
        if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
        v = v * 10 + d;
    }
    if (v > max) return false;
    out = v;
    return true;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (;;) {
        size_t pos = s.find(sep, start);
        if (pos == std::string_view::npos) {
            out.push_back(s.substr(start));
            return out;
        }
        out.push_back(s.substr(start, pos - start));
        start = pos + 1;
    }
}

namespace {

// One bracket group of a hostlist term: "1-3,7" -> ranges with zero padding.
struct Range {
    uint64_t lo, hi;
    size_t width;
};
struct Group {
    std::string prefix;         // text before the bracket
    std::vector<Range> ranges;  // empty for the trailing text-only group
    // Saturates just above kMaxHosts: callers only compare with it.
    uint64_t size() const;
};
using Term = std::vector<Group>;

// Hostlists longer than this are not plausible step node lists.
constexpr uint64_t kMaxHosts = 1u << 24;

uint64_t Group::size() const {
    if (ranges.empty()) return 1;
    uint64_t n = 0;
    for (const Range &r : ranges) {
        n += r.hi - r.lo + 1;  // each range is below 2^29 hosts: no wrap
        if (n > kMaxHosts) return kMaxHosts + 1;
    }
    return n;
}

[[noreturn]] void bad_hostlist(std::string_view list, std::string_view why) {
    throw Error(quoted("hostlist", list) + ": " + std::string(why));
}

Term parse_term(std::string_view list, std::string_view term) {
    Term t;
    size_t i = 0;
    while (i < term.size()) {
        size_t open = term.find('[', i);
        Group g;
        if (open == std::string_view::npos) {
            g.prefix = std::string(term.substr(i));
            if (g.prefix.find(']') != std::string::npos) bad_hostlist(list, "unbalanced ']'");
            t.push_back(std::move(g));
            break;
        }
        size_t close = term.find(']', open);
        if (close == std::string_view::npos) bad_hostlist(list, "unbalanced '['");
        g.prefix = std::string(term.substr(i, open - i));
        if (g.prefix.find(']') != std::string::npos) bad_hostlist(list, "unbalanced ']'");
        for (std::string_view part : split(term.substr(open + 1, close - open - 1), ',')) {
            size_t dash = part.find('-');
            std::string_view a = part.substr(0, dash);
            std::string_view b = dash == std::string_view::npos ? a : part.substr(dash + 1);
            Range r{};
            if (!parse_uint(a, kMaxHosts * 16, r.lo) || !parse_uint(b, kMaxHosts * 16, r.hi) || r.hi < r.lo)
                bad_hostlist(list, "bad range \"" + std::string(part) + "\" (expected N or N-M with N <= M)");
            r.width = a.size();
            g.ranges.push_back(r);
        }
        t.push_back(std::move(g));
        i = close + 1;
    }
    if (t.empty()) bad_hostlist(list, "empty host name");
    return t;
}

uint64_t term_size(std::string_view list, const Term &t) {
    // Checked before multiplying: "a[0-16777215]b[...]" with 2^40 hosts in
    // b would wrap the product to a small number.
    uint64_t n = 1;
    for (const Group &g : t) {
        uint64_t m = g.size();
        if (m > kMaxHosts / n) bad_hostlist(list, "too many hosts");
        n *= m;
    }
    return n;
}

std::string term_nth(const Term &t, uint64_t index) {
    // Mixed radix, rightmost group fastest.
    std::vector<uint64_t> digit(t.size(), 0);
    for (size_t g = t.size(); g-- > 0;) {
        uint64_t n = t[g].size();
        digit[g] = index % n;
        index /= n;
    }
    std::string out;
    for (size_t g = 0; g < t.size(); g++) {
        out += t[g].prefix;
        if (t[g].ranges.empty()) continue;
        uint64_t k = digit[g];
        for (const Range &r : t[g].ranges) {
            uint64_t n = r.hi - r.lo + 1;
            if (k < n) {
                std::string num = std::to_string(r.lo + k);
                if (num.size() < r.width) out.append(r.width - num.size(), '0');
                out += num;
                break;
            }
            k -= n;
        }
    }
    return out;
}

// Top-level terms: commas outside brackets separate hosts.
std::vector<Term> parse_hostlist(std::string_view list) {
    if (list.empty()) bad_hostlist(list, "empty");
    std::vector<Term> terms;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= list.size(); i++) {
        char c = i < list.size() ? list[i] : ',';
        if (c == '[') {
            if (++depth > 1) bad_hostlist(list, "nested '['");
        } else if (c == ']') {
            if (--depth < 0) bad_hostlist(list, "unbalanced ']'");
        } else if (c == ',' && depth == 0) {
            std::string_view term = list.substr(start, i - start);
            if (term.empty()) bad_hostlist(list, "empty host name");
            terms.push_back(parse_term(list, term));
            start = i + 1;
        } else if (c == ' ' || c == '\t' || c == '\n') {
            bad_hostlist(list, "whitespace in host list");
        }
    }
    if (depth != 0) bad_hostlist(list, "unbalanced '['");
    return terms;
}

}  // namespace

std::string hostlist_nth(std::string_view list, size_t index) {
    // The whole list is sized first: a list too long to count is refused
    // whatever the index.
    std::vector<Term> terms = parse_hostlist(list);
    uint64_t total = 0;
    for (const Term &t : terms) {
        total += term_size(list, t);
        if (total > kMaxHosts) bad_hostlist(list, "too many hosts");
    }
    uint64_t k = index;
    for (const Term &t : terms) {
        uint64_t n = term_size(list, t);
        if (k < n) return term_nth(t, k);
        k -= n;
    }
    bad_hostlist(list, "has no host number " + std::to_string(index));
}

std::vector<uint32_t> parse_tasks_per_node(std::string_view s, std::string_view name) {
    return parse_tasks_per_node(s, name, kMaxHosts, "the most dist-bind accepts");
}

std::vector<uint32_t> parse_tasks_per_node(std::string_view s, std::string_view name, uint64_t max_nodes,
                                           std::string_view limit) {
    const std::string what = quoted(name, s);
    const char *expected = "counts like \"3,2\" or \"2(x3),1\"";
    if (s.empty()) throw Error(what + ": empty, expected " + expected);
    // Parsed and counted first: the list is expanded only once its node
    // count is known to fit (a 20-byte "1(x16777215)" must not cost 64 MiB).
    std::vector<std::pair<uint32_t, uint64_t>> items;
    uint64_t nodes = 0;
    for (std::string_view item : split(s, ',')) {
        std::string_view count = item;
        uint64_t reps = 1;
        size_t paren = item.find('(');
        if (paren != std::string_view::npos) {
            count = item.substr(0, paren);
            std::string_view rep = item.substr(paren);
            if (rep.size() < 4 || rep.substr(0, 2) != "(x" || rep.back() != ')' ||
                !parse_uint(rep.substr(2, rep.size() - 3), kMaxHosts, reps) || reps == 0)
                throw Error(what + ": bad repeat \"" + std::string(item) + "\", expected " + expected);
        }
        uint64_t c;
        if (!parse_uint(count, UINT32_MAX, c) || c == 0)
            throw Error(what + ": bad count \"" + std::string(item) + "\", expected " + expected);
        nodes += reps;  // at most kMaxHosts per item, and s is far shorter than 2^40 items
        if (nodes > max_nodes)
            throw Error(what + ": more than " + std::to_string(max_nodes) + " nodes (" + std::string(limit) + ")");
        items.emplace_back(static_cast<uint32_t>(c), reps);
    }
    std::vector<uint32_t> out;
    out.reserve(static_cast<size_t>(nodes));
    for (const auto &it : items) out.insert(out.end(), static_cast<size_t>(it.second), it.first);
    return out;
}

namespace {
bool is_uuid_token(std::string_view t) {
    if (t.size() < 5 || t.size() > 128) return false;
    if (t.substr(0, 4) != "GPU-" && t.substr(0, 4) != "MIG-") return false;
    for (char c : t.substr(4)) {
        bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '/';
        if (!ok) return false;
    }
    return true;
}
}  // namespace

std::vector<std::string> parse_gpu_list(std::string_view s, std::string_view name) {
    // Every task parses its lists: the message's head is made only for an
    // error.
    auto what = [&] { return quoted(name, s); };
    if (s.empty()) throw Error(what() + ": empty GPU list, expected GPU indices like \"0,1\"");
    std::vector<std::string> out;
    for (std::string_view t : split(s, ',')) {
        uint64_t v;
        if (t.empty()) throw Error(what() + ": empty entry, expected GPU indices like \"0,1\"");
        if (!parse_uint(t, 999999, v) && !is_uuid_token(t))
            throw Error(what() + ": \"" + std::string(t) +
                        "\" is not a GPU (expected an index 0..999999 or a GPU-/MIG- UUID)");
        for (const std::string &seen : out)
            if (seen == t) throw Error(what() + ": GPU " + std::string(t) + " is listed twice");
        out.emplace_back(t);
    }
    return out;
}

unsigned first_port(std::string_view s, std::string_view name) {
    std::string_view first = s.substr(0, s.find_first_of(",-"));
    uint64_t v;
    if (!parse_uint(first, 65535, v) || v == 0)
        throw Error(quoted(name, s) + ": expected ports like \"12000-12003\" (1..65535)");
    return static_cast<unsigned>(v);
}

const char *env_get(const char *const *env, std::string_view name) {
    if (!env) return nullptr;
    for (; *env; env++) {
        const char *e = *env;
        if (std::strncmp(e, name.data(), name.size()) == 0 && e[name.size()] == '=') return e + name.size() + 1;
    }
    return nullptr;
}

void copy_out(std::string_view s, char *buf, size_t len) {
    if (!buf || len == 0) return;
    size_t n = s.size() < len - 1 ? s.size() : len - 1;
    std::memcpy(buf, s.data(), n);
    buf[n] = '\0';
}

std::string first_n(size_t n) {
    std::string out;
    out.reserve(n < 10 ? 2 * n : 3 * n);
    for (size_t i = 0; i < n; i++) {
        if (i) out += ',';
        if (i < 10)
            out += static_cast<char>('0' + i);
        else
            out += std::to_string(i);
    }
    return out;
}

std::string join(const std::vector<std::string> &v, char sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); i++) {
        if (i) out += sep;
        out += v[i];
    }
    return out;
}

}  // namespace db
