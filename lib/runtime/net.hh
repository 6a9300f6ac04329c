// Sockets for the TCP bootstrap: IPv4 only, every call bounded by a
// Deadline, and a small framed message format.  Nothing here knows about
// ranks or trees (tcp.cc does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rt.hh"

namespace db::rt::net {

// Owns one file descriptor.
class Socket {
  public:
    Socket() = default;
    explicit Socket(int fd) : fd_(fd) {}
    Socket(Socket &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    Socket &operator=(Socket &&o) noexcept;
    Socket(const Socket &) = delete;
    Socket &operator=(const Socket &) = delete;
    ~Socket() { close(); }
    int fd() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    void close();

  private:
    int fd_ = -1;
};

struct Addr {
    uint32_t ip = 0;    // network byte order
    uint16_t port = 0;  // host byte order
    std::string str() const;
};

// getaddrinfo for IPv4.  Returns 0, or EAI_* (EAI_AGAIN and friends are
// worth retrying).
int resolve(const std::string &host, unsigned port, Addr &out);

// A listening socket, or -errno in `err`.
Socket listen_on(const Addr &a, int &err);
// The address a socket is bound to (for a connected one: the local end).
Addr local_addr(int fd);

// Connect within the deadline; on failure returns an empty Socket and the
// errno in `err` (ETIMEDOUT when the deadline passed).
Socket connect_to(const Addr &a, const Deadline &d, int &err);
Socket accept_from(const Socket &listener, int &err);

enum class Io { Ok, Eof, Timeout, Error, Garbage };
struct IoResult {
    Io kind = Io::Ok;
    int err = 0;
    bool ok() const { return kind == Io::Ok; }
    std::string str() const;
};

enum class Msg : uint16_t { Hello = 1, Welcome, Reject, Tree, Abort, Up, Down, Missing };

struct Message {
    Msg type{};
    uint16_t op = 0;
    uint32_t seq = 0;
    std::vector<uint8_t> body;
};

// The largest body of any message (a collective's whole payload plus its
// framing).
constexpr size_t kMaxBody = (size_t{1} << 30) + 64;
// What a connection that has not yet proved it is a rank of this step may
// send: a registration (Hello) is a few hundred bytes, an answer from
// rank 0 (Welcome, Reject) carries one message.
constexpr size_t kMaxHello = 4096;
constexpr size_t kMaxReply = 65536;

IoResult send_msg(int fd, Msg type, uint16_t op, uint32_t seq, const void *body, size_t len, const Deadline &d);
// A body longer than max_body is refused (Io::Garbage) before anything is
// allocated for it.
IoResult recv_msg(int fd, Message &m, const Deadline &d, size_t max_body = kMaxBody);

// Without consuming anything: the type of the message waiting on fd, or
// 0 when none is there yet, or -1 when the peer has closed.
int peek_type(int fd);

// Index into fds of one that is readable (or closed), -1 when the deadline
// passed first.
int wait_readable(const std::vector<int> &fds, const Deadline &d);

// Little-endian encoding of message bodies.
class Writer {
  public:
    Writer &u16(uint16_t v) { return put(v, 2); }
    Writer &u32(uint32_t v) { return put(v, 4); }
    Writer &u64(uint64_t v) { return put(v, 8); }
    Writer &str(const std::string &s);
    Writer &bytes(const void *p, size_t n);
    const std::vector<uint8_t> &data() const { return b_; }

  private:
    Writer &put(uint64_t v, int n);
    std::vector<uint8_t> b_;
};

// Reads until the body runs out; then ok() is false and every value 0.
class Reader {
  public:
    explicit Reader(const std::vector<uint8_t> &b) : p_(b.data()), n_(b.size()) {}
    uint16_t u16() { return static_cast<uint16_t>(get(2)); }
    uint32_t u32() { return static_cast<uint32_t>(get(4)); }
    uint64_t u64() { return get(8); }
    std::string str();
    const uint8_t *bytes(size_t n);
    bool ok() const { return ok_; }
    size_t left() const { return n_; }

  private:
    uint64_t get(int n);
    const uint8_t *p_;
    size_t n_;
    bool ok_ = true;
};

std::string errno_str(int err);

}  // namespace db::rt::net
