#include "auth.hh"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "rt.hh"

namespace db::rt::auth {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Says what the MAC is for: a proof made for one purpose is never valid
// for another.
constexpr char kLabel[] = "dist-bind tcp bootstrap v2 handshake";

}  // namespace

Secret::~Secret() { wipe(key_.data(), key_.size()); }

bool Secret::parse_hex(std::string_view hex) {
    std::array<uint8_t, kKeyBytes> k{};
    bool ok = hex.size() == 2 * kKeyBytes;
    for (size_t i = 0; ok && i < kKeyBytes; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        k[i] = static_cast<uint8_t>(ok ? hi << 4 | lo : 0);
    }
    if (ok) key_ = k;
    set_ = ok;
    wipe(k.data(), k.size());
    return ok;
}

Nonce fresh_nonce() {
    Nonce n{};
    size_t got = 0;
    while (got < n.size()) {
        ssize_t r = getrandom(n.data() + got, n.size() - got, 0);
        if (r > 0) {
            got += static_cast<size_t>(r);
        } else if (r < 0 && errno != EINTR) {
            char buf[128];
            fail(DISTBIND_ERR_SYSTEM, std::string("getrandom failed: ") + strerror_r(errno, buf, sizeof buf));
        }
    }
    return n;
}

Mac prove(const Secret &s, Role role, const std::vector<uint8_t> &hello_body, const Nonce &server_nonce) {
    if (!s.set()) fail(DISTBIND_ERR_INTERNAL, "no secret to prove with");
    std::vector<uint8_t> msg(kLabel, kLabel + sizeof kLabel);  // with its NUL: the label ends there
    msg.push_back(static_cast<uint8_t>(role));
    msg.insert(msg.end(), hello_body.begin(), hello_body.end());
    msg.insert(msg.end(), server_nonce.begin(), server_nonce.end());
    Mac out{};
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), s.key(), static_cast<int>(kKeyBytes), msg.data(), msg.size(), out.data(), &len) ||
        len != out.size())
        fail(DISTBIND_ERR_SYSTEM, "HMAC-SHA256 failed in libcrypto");
    return out;
}

bool same(const Mac &a, const uint8_t *b) { return CRYPTO_memcmp(a.data(), b, a.size()) == 0; }

void wipe(void *p, size_t n) { OPENSSL_cleanse(p, n); }

}  // namespace db::rt::auth
