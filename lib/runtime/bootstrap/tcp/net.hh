// Sockets for the TCP bootstrap: IPv4 only, every call bounded by a
// Deadline, and framed messages (their format is in wire.hh).  Nothing
// here knows about ranks or trees (tcp*.cc do).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rt.hh"
#include "bootstrap/tcp/wire.hh"

namespace db::rt::tcp {

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

// getaddrinfo for IPv4.  Returns 0, or EAI_* (EAI_AGAIN and friends are
// worth retrying).
int resolve(const std::string &host, unsigned port, Addr &out);

// A listening socket, or -errno in `err`.
Socket listen_on(const Addr &a, int &err);
// The address a socket is bound to (for a connected one: the local end).
Addr local_addr(int fd);

// Start a connection without waiting: the socket becomes writable when it
// is up (or failed: connect_error says which).
Socket connect_start(const Addr &a, int &err);
int connect_error(int fd);
Socket accept_from(const Socket &listener, int &err);

// The address of this host that traffic to `to` leaves from (no packet is
// sent): where a rank listens for its parent.  -errno on failure.
int route_from(const Addr &to, uint32_t &ip);

// Whatever of p the socket takes now, without waiting; -1 on error.
long send_some(int fd, const uint8_t *p, size_t n);
// Up to n bytes that are there now: 0 when none yet, -1 on end of stream
// or error.
long recv_some(int fd, uint8_t *p, size_t n);

enum class Io { Ok, Eof, Timeout, Error, Garbage };
struct IoResult {
    Io kind = Io::Ok;
    int err = 0;
    bool ok() const { return kind == Io::Ok; }
    std::string str() const;
};

struct Message {
    Msg type{};
    uint16_t op = 0;
    uint32_t seq = 0;
    std::vector<uint8_t> body;
};

// Bytes already framed (one or more messages), within the deadline.
IoResult send_all(int fd, const std::vector<uint8_t> &bytes, const Deadline &d);
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

std::string errno_str(int err);

}  // namespace db::rt::tcp
