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
// 256 ranks on a node pay at once (make bench); libsodium's costs ~0.1 ms
// in a VM, nearly all of it mapping the SHA-256 code and tables into the
// process, and that first run is most of what the secret costs a set-up
// (handshake.hh).  The shipped library links libsodium in statically
// (lib/runtime/build.mk): what it uses then lies beside the rest of the
// library's code, with no second library to relocate and map in each
// rank.  Key makes the HMAC's state after the key once, so that later
// proofs hash only their bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/secret.hh"

namespace db::rt::auth {

constexpr size_t kKeyBytes = Secret::kBytes;
constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

// Which end is proving: the one that accepted the connection or the one
// that opened it.
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

// Both ends' proofs for one handshake, made together: each end makes them
// at its first step of the handshake and later only compares, so the
// HMAC's code runs once per handshake and end, while it is in the cache
// (with hundreds of ranks to a core, a rank's next turn finds it cold).
struct Proofs {
    Mac client{}, server{};
};

// The secret, ready to prove with.  The proof of `role` for one handshake
// is HMAC-SHA256 keyed with the secret over a label, the role, the Hello's
// body as the client sent it (client rank, server rank, world size, step,
// the client's nonce) and the server's nonce.  What comes before the role
// is the same in every proof, so the HMAC's state after it is made once
// (prepare) and copied for each proof: a proof then hashes only its own
// bytes, four SHA-256 blocks instead of six.
class Key {
  public:
    // s must outlive the Key.
    explicit Key(const Secret &s) : secret_(&s) {}
    Key(const Key &) = delete;
    Key &operator=(const Key &) = delete;
    ~Key();
    // Make the state now (else the first proof does): in a new process
    // that first run of the HMAC's code also maps its pages (0.05 to 0.2
    // ms in a VM), which is better paid where the rank waits anyway.
    void prepare();
    Mac prove(Role role, const std::vector<uint8_t> &hello_body, const Nonce &server_nonce);
    Proofs prove_both(const std::vector<uint8_t> &hello_body, const Nonce &server_nonce);

    // libsodium's crypto_auth_hmacsha256_state (auth.cc checks the size).
    static constexpr size_t kStateBytes = 208;

  private:
    const Secret *secret_;
    bool ready_ = false;
    alignas(16) uint8_t state_[kStateBytes] = {};
};

// Constant-time comparison.
bool same(const Mac &a, const uint8_t *b);

}  // namespace db::rt::auth
