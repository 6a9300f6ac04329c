// PMI2's values are short strings in which ';' and '=' are reserved: a
// rank's bytes travel as URL-safe base64, in chunks (pmi2.cc), the first
// one "<total bytes>,<base64>".  Pure, so the fuzzers run the same code.
#include <algorithm>
#include <cstring>

#include "bootstrap/pmi2.hh"

namespace db::rt {

// URL-safe base64 without padding: PMI2's wire format reserves ';' and '='.
static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string b64_encode_bytes(const uint8_t *p, size_t n) {
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = static_cast<uint32_t>(p[i]) << 16;
        if (i + 1 < n) v |= static_cast<uint32_t>(p[i + 1]) << 8;
        if (i + 2 < n) v |= p[i + 2];
        out += kB64[(v >> 18) & 63];
        out += kB64[(v >> 12) & 63];
        if (i + 1 < n) out += kB64[(v >> 6) & 63];
        if (i + 2 < n) out += kB64[v & 63];
    }
    return out;
}

bool b64_decode_bytes(const char *s, size_t n, std::vector<uint8_t> &out) {
    auto val = [](char c) -> int {
        const char *at = std::strchr(kB64, c);
        return c && at ? static_cast<int>(at - kB64) : -1;
    };
    if (n % 4 == 1) return false;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        size_t m = std::min<size_t>(4, n - i);
        for (size_t j = 0; j < 4; j++) {
            int d = j < m ? val(s[i + j]) : 0;
            if (d < 0) return false;
            v = v << 6 | static_cast<uint32_t>(d);
        }
        // The bits a short last group leaves over must be 0: one encoding
        // per byte string.
        if ((m == 2 && (v & 0xffff)) || (m == 3 && (v & 0xff))) return false;
        out.push_back(static_cast<uint8_t>(v >> 16));
        if (m > 2) out.push_back(static_cast<uint8_t>(v >> 8));
        if (m > 3) out.push_back(static_cast<uint8_t>(v));
    }
    return true;
}

bool pmi2_first_chunk(const char *val, uint64_t max_total, uint64_t &total, const char *&data) {
    const char *comma = std::strchr(val, ',');
    if (!comma || comma == val || comma - val > 20) return false;
    uint64_t n = 0;
    for (const char *p = val; p < comma; p++) {
        if (*p < '0' || *p > '9') return false;
        n = n * 10 + static_cast<uint64_t>(*p - '0');
        if (n > max_total) return false;  // every digit: no wrap while max_total < 2^60
    }
    total = n;
    data = comma + 1;
    return true;
}

}  // namespace db::rt
