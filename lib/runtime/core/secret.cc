#include "core/secret.hh"

#include <sodium.h>

namespace db::rt {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

Secret::~Secret() { wipe(key_.data(), key_.size()); }

bool Secret::parse_hex(std::string_view hex) {
    std::array<uint8_t, kBytes> k{};
    bool ok = hex.size() == 2 * kBytes;
    for (size_t i = 0; ok && i < kBytes; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        k[i] = static_cast<uint8_t>(ok ? hi << 4 | lo : 0);
    }
    if (ok) key_ = k;
    set_ = ok;
    wipe(k.data(), k.size());
    return ok;
}

void wipe(void *p, size_t n) { sodium_memzero(p, n); }

}  // namespace db::rt
