// Shared by the fuzz harnesses: taking typed values off the input, and a
// check that stops the run (libFuzzer then saves the input) when an
// invariant breaks.  The same harness source builds for libFuzzer (clang,
// `make fuzz`) and for the replay driver (`make check`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                                    \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            std::fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                                   \
            std::fprintf(stderr, "\n");                                                          \
            std::abort();                                                                        \
        }                                                                                        \
    } while (0)

// Values off the front of the input; zeros once it runs out.
class Take {
  public:
    Take(const uint8_t *p, size_t n) : p_(p), n_(n) {}
    uint8_t u8() { return n_ ? (n_--, *p_++) : 0; }
    uint32_t u32() {
        uint32_t v = 0;
        for (int i = 0; i < 4; i++) v |= static_cast<uint32_t>(u8()) << (8 * i);
        return v;
    }
    // Up to the next '\n' (or everything left), without it.
    std::string line() {
        std::string out;
        while (n_ && *p_ != '\n') out += static_cast<char>(u8());
        if (n_) u8();
        return out;
    }
    std::string rest() {
        std::string out(reinterpret_cast<const char *>(p_), n_);
        p_ += n_;
        n_ = 0;
        return out;
    }
    size_t left() const { return n_; }

  private:
    const uint8_t *p_;
    size_t n_;
};
