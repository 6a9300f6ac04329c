// The per-step secret of the TCP bootstrap and the handshake's proofs.
//
// srun --dist-bind draws 256 random bits per step and hands them to every
// task as DIST_BIND_SECRET (64 hex digits).  Every connection between two
// ranks begins with a challenge-response in which each end proves that it
// knows the secret: HMAC-SHA256 keyed with it, over what the connecting
// end claims (its rank, the rank it wants, world size, step) and a fresh
// nonce from each end.  The cryptography is libsodium's (HMAC-SHA256,
// constant-time comparison, wiping): OpenSSL 3's libcrypto does the same,
// but its first HMAC in a process costs 3-9 ms of provider set-up, which
// 256 ranks on a node pay at once (make bench); libsodium's costs ~0.1 ms.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace db::rt::auth {

constexpr size_t kKeyBytes = 32;
constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

// The key; wiped when it goes.
class Secret {
  public:
    Secret() = default;
    Secret(const Secret &o) = default;
    Secret &operator=(const Secret &o) = default;
    ~Secret();
    // 64 hex digits (either case).  false, and nothing kept, otherwise.
    bool parse_hex(std::string_view hex);
    bool set() const { return set_; }
    const uint8_t *key() const { return key_.data(); }

  private:
    std::array<uint8_t, kKeyBytes> key_{};
    bool set_ = false;
};

// Which end is proving: the one that accepted the connection (it proves
// first, answering the Hello) or the one that opened it.
enum class Role : uint8_t { Server = 'S', Client = 'C' };

// n bytes from the kernel's random source (getrandom); throws
// Failure(SYSTEM) if it fails.
void fill_random(uint8_t *p, size_t n);

// Nonces drawn from the kernel several at a time (one system call for a
// rank's whole set-up, or for rank 0's next 16 challenges); each is handed
// out once and wiped from the pool as it goes.  One per handle: never
// shared across a fork.
class NoncePool {
  public:
    NoncePool() = default;
    NoncePool(const NoncePool &) = delete;
    NoncePool &operator=(const NoncePool &) = delete;
    ~NoncePool();
    Nonce next();

  private:
    static constexpr size_t kBatch = 16;
    std::array<Nonce, kBatch> buf_{};
    size_t left_ = 0;
};

// The proof of `role` for one handshake: HMAC over the Hello's body as the
// client sent it (client rank, server rank, world size, step, the client's
// nonce) and the server's nonce.
Mac prove(const Secret &s, Role role, const std::vector<uint8_t> &hello_body, const Nonce &server_nonce);

// Both ends' proofs for one handshake, made together: each end makes them
// at its first step of the handshake and later only compares, so the
// HMAC's code runs once per handshake and end, while it is in the cache
// (with hundreds of ranks to a core, a rank's next turn finds it cold).
struct Proofs {
    Mac client{}, server{};
};
Proofs prove_both(const Secret &s, const std::vector<uint8_t> &hello_body, const Nonce &server_nonce);

// Constant-time comparison.
bool same(const Mac &a, const uint8_t *b);

// Overwrite memory the compiler may not optimise the write away from.
void wipe(void *p, size_t n);

}  // namespace db::rt::auth
