#include "bootstrap/tcp/auth.hh"

#include <sodium.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "core/rt.hh"

namespace db::rt::auth {

namespace {

// Says what the MAC is for: a proof made for one purpose is never valid
// for another.
constexpr char kLabel[] = "dist-bind tcp bootstrap v2 handshake";

}  // namespace

void fill_random(uint8_t *p, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r > 0) {
            got += static_cast<size_t>(r);
        } else if (r < 0 && errno != EINTR) {
            char buf[128];
            fail(DISTBIND_ERR_SYSTEM, std::string("getrandom failed: ") + strerror_r(errno, buf, sizeof buf));
        }
    }
}

NoncePool::~NoncePool() { wipe(buf_.data(), sizeof buf_); }

Nonce NoncePool::next() {
    if (left_ == 0) {
        fill_random(buf_.data()->data(), sizeof buf_);
        left_ = kBatch;
    }
    Nonce &n = buf_[--left_];
    Nonce out = n;
    wipe(n.data(), n.size());
    return out;
}

static_assert(sizeof(crypto_auth_hmacsha256_state) == Key::kStateBytes && alignof(crypto_auth_hmacsha256_state) <= 16,
              "libsodium's HMAC-SHA256 state does not fit Key's");

Key::~Key() { wipe(state_, sizeof state_); }

void Key::prepare() {
    if (ready_) return;
    if (!secret_->set()) fail(DISTBIND_ERR_INTERNAL, "no secret to prove with");
    // No sodium_init(): it only picks faster implementations of what has
    // several and seeds libsodium's random numbers, and what is used here
    // (HMAC-SHA256, sodium_memcmp, sodium_memzero) has one implementation
    // and draws nothing.  It costs a dozen cpuid instructions, 0.2 ms per
    // process in a VM, which 256 ranks on a node would pay at once.
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, secret_->key(), kKeyBytes);
    crypto_auth_hmacsha256_update(&st, reinterpret_cast<const uint8_t *>(kLabel), sizeof kLabel);  // with its NUL
    // Kept as bytes (auth.hh does not include sodium.h) and copied back
    // into a state for each proof.
    std::memcpy(state_, &st, sizeof st);
    sodium_memzero(&st, sizeof st);
    ready_ = true;
}

Mac Key::prove(Role role, const std::vector<uint8_t> &hello_body, const Nonce &server_nonce) {
    prepare();
    const uint8_t r = static_cast<uint8_t>(role);
    crypto_auth_hmacsha256_state st;
    std::memcpy(&st, state_, sizeof st);
    crypto_auth_hmacsha256_update(&st, &r, 1);
    crypto_auth_hmacsha256_update(&st, hello_body.data(), hello_body.size());
    crypto_auth_hmacsha256_update(&st, server_nonce.data(), server_nonce.size());
    Mac out{};
    crypto_auth_hmacsha256_final(&st, out.data());
    sodium_memzero(&st, sizeof st);
    return out;
}

Proofs Key::prove_both(const std::vector<uint8_t> &hello_body, const Nonce &server_nonce) {
    return Proofs{prove(Role::Client, hello_body, server_nonce), prove(Role::Server, hello_body, server_nonce)};
}

bool same(const Mac &a, const uint8_t *b) { return sodium_memcmp(a.data(), b, a.size()) == 0; }

}  // namespace db::rt::auth
