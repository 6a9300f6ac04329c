// The step's secret (DIST_BIND_SECRET): read with the settings, used by the
// TCP bootstrap's proofs (bootstrap/tcp/auth.hh).  Here, under everything,
// so that the settings can hold it without knowing the bootstrap.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace db::rt {

// 256 bits; wiped when it goes.
class Secret {
  public:
    static constexpr size_t kBytes = 32;
    Secret() = default;
    Secret(const Secret &o) = default;
    Secret &operator=(const Secret &o) = default;
    ~Secret();
    // 64 hex digits (either case).  false, and nothing kept, otherwise.
    bool parse_hex(std::string_view hex);
    bool set() const { return set_; }
    const uint8_t *key() const { return key_.data(); }

  private:
    std::array<uint8_t, kBytes> key_{};
    bool set_ = false;
};

// Overwrite memory the compiler may not optimise the write away from.
void wipe(void *p, size_t n);

}  // namespace db::rt
