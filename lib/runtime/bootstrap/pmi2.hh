// Slurm's PMI2 (pmi2.cc): the exchange, and its encoding of bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/exchange.hh"

namespace db::rt {

// The task was started by a PMI2 server (PMI_FD is set).
bool pmi2_has_server(const Env &env);
std::unique_ptr<Exchange> make_pmi2(const ExchangeConfig &c);

// PMI2's encoding of bytes.
std::string b64_encode_bytes(const uint8_t *p, size_t n);
bool b64_decode_bytes(const char *s, size_t n, std::vector<uint8_t> &out);
// The first chunk of a rank's bytes in PMI2, "<total>,<base64>": false
// unless total is decimal digits and at most max_total.
bool pmi2_first_chunk(const char *val, uint64_t max_total, uint64_t &total, const char *&data);

}  // namespace db::rt
