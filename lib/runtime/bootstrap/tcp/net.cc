#include "bootstrap/tcp/net.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace db::rt::tcp {

namespace {

void tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool wait_fd(int fd, short events, const Deadline &d) {
    for (;;) {
        pollfd p{fd, events, 0};
        int n = poll(&p, 1, d.ms_left());
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR) return true;  // let the next read/write report it
    }
}

IoResult write_all(int fd, const uint8_t *p, size_t n, const Deadline &d) {
    while (n > 0) {
        ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= static_cast<size_t>(w);
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_fd(fd, POLLOUT, d)) return {Io::Timeout, 0};
            continue;
        }
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) return {Io::Eof, errno};
        return {Io::Error, errno};
    }
    return {};
}

IoResult read_all(int fd, uint8_t *p, size_t n, const Deadline &d) {
    while (n > 0) {
        ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
        if (r > 0) {
            p += r;
            n -= static_cast<size_t>(r);
            continue;
        }
        if (r == 0) return {Io::Eof, 0};
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_fd(fd, POLLIN, d)) return {Io::Timeout, 0};
            continue;
        }
        if (errno == ECONNRESET) return {Io::Eof, errno};
        return {Io::Error, errno};
    }
    return {};
}

}  // namespace

Socket &Socket::operator=(Socket &&o) noexcept {
    if (this != &o) {
        close();
        fd_ = o.fd_;
        o.fd_ = -1;
    }
    return *this;
}

void Socket::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

int resolve(const std::string &host, unsigned port, Addr &out) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0) return rc;
    out.ip = reinterpret_cast<sockaddr_in *>(res->ai_addr)->sin_addr.s_addr;
    out.port = static_cast<uint16_t>(port);
    freeaddrinfo(res);
    return 0;
}

namespace {

// A non-blocking TCP socket marked SO_REUSEADDR: an earlier step's
// connections in TIME_WAIT must not keep a port from a later listener (the
// next step's rank 0, a daemon); only a live listener should.
Socket reusable_socket(int &err) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s) {
        err = errno;
        return s;
    }
    int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    return s;
}

sockaddr_in to_sockaddr(const Addr &a) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = a.ip;
    sa.sin_port = htons(a.port);
    return sa;
}

}  // namespace

Socket listen_on(const Addr &a, int &err) {
    Socket s = reusable_socket(err);
    if (!s) return s;
    sockaddr_in sa = to_sockaddr(a);
    if (::bind(s.fd(), reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || ::listen(s.fd(), SOMAXCONN) != 0) {
        err = errno;
        return Socket();
    }
    err = 0;
    return s;
}

Addr local_addr(int fd) {
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    Addr a;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len) == 0) {
        a.ip = sa.sin_addr.s_addr;
        a.port = ntohs(sa.sin_port);
    }
    return a;
}

Socket connect_start(const Addr &a, int &err) {
    // The end that closes first keeps its port in TIME_WAIT for a minute:
    // reusable, so that port does not block a later listener either.
    Socket s = reusable_socket(err);
    if (!s) return s;
    sockaddr_in sa = to_sockaddr(a);
    if (::connect(s.fd(), reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 && errno != EINPROGRESS &&
        errno != EINTR) {
        err = errno;
        return Socket();
    }
    tune(s.fd());
    err = 0;
    return s;
}

int connect_error(int fd) {
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) return errno;
    return soerr;
}

Socket accept_from(const Socket &listener, int &err) {
    for (;;) {
        int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            tune(fd);
            err = 0;
            return Socket(fd);
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        err = errno;
        return Socket();
    }
}

std::string IoResult::str() const {
    switch (kind) {
    case Io::Ok: return "ok";
    case Io::Eof: return "connection closed";
    case Io::Timeout: return "timed out";
    case Io::Garbage: return "not a dist-bind message";
    case Io::Error: return errno_str(err);
    }
    return "?";
}

int route_from(const Addr &to, uint32_t &ip) {
    Socket s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s) return -errno;
    sockaddr_in sa = to_sockaddr(to);
    if (sa.sin_port == 0) sa.sin_port = htons(9);  // any port: nothing is sent
    if (::connect(s.fd(), reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) return -errno;
    ip = local_addr(s.fd()).ip;
    return 0;
}

long send_some(int fd, const uint8_t *p, size_t n) {
    for (;;) {
        ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w >= 0) return w;
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
}

long recv_some(int fd, uint8_t *p, size_t n) {
    for (;;) {
        ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
        if (r > 0) return r;
        if (r == 0) return -1;
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
}

IoResult send_all(int fd, const std::vector<uint8_t> &bytes, const Deadline &d) {
    return write_all(fd, bytes.data(), bytes.size(), d);
}

IoResult send_msg(int fd, Msg type, uint16_t op, uint32_t seq, const void *body, size_t len, const Deadline &d) {
    if (len > kMaxBody) return {Io::Error, EMSGSIZE};
    uint8_t h[kHeader];
    encode_header(h, type, op, seq, static_cast<uint32_t>(len));
    // One write for small messages, so a reader never sees half of one.
    if (len <= 65536) {
        std::vector<uint8_t> all(h, h + kHeader);
        if (len) all.insert(all.end(), static_cast<const uint8_t *>(body), static_cast<const uint8_t *>(body) + len);
        return write_all(fd, all.data(), all.size(), d);
    }
    IoResult r = write_all(fd, h, kHeader, d);
    if (r.ok()) r = write_all(fd, static_cast<const uint8_t *>(body), len, d);
    return r;
}

IoResult recv_msg(int fd, Message &m, const Deadline &d, size_t max_body) {
    uint8_t h[kHeader];
    IoResult r = read_all(fd, h, kHeader, d);
    if (!r.ok()) return r;
    Header hd;
    if (!decode_header(h, max_body, hd)) return {Io::Garbage, 0};
    m.type = hd.type;
    m.op = hd.op;
    m.seq = hd.seq;
    m.body.resize(hd.len);
    if (hd.len) r = read_all(fd, m.body.data(), hd.len, d);
    return r;
}

int peek_type(int fd) {
    uint8_t h[kHeader];
    for (;;) {
        ssize_t n = ::recv(fd, h, sizeof h, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return -1;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        if (static_cast<size_t>(n) < kHeader) return 0;
        Header hd;
        return decode_header(h, kMaxBody, hd) ? static_cast<int>(hd.type) : 0;
    }
}

int wait_readable(const std::vector<int> &fds, const Deadline &d) {
    std::vector<pollfd> p(fds.size());
    for (size_t i = 0; i < fds.size(); i++) p[i] = {fds[i], POLLIN, 0};
    for (;;) {
        int n = poll(p.data(), p.size(), d.ms_left());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        for (size_t i = 0; i < p.size(); i++)
            if (p[i].revents) return static_cast<int>(i);
    }
}

std::string errno_str(int err) {
    char buf[128];
    // GNU strerror_r returns the message, which may not be buf.
    return strerror_r(err, buf, sizeof buf);
}

}  // namespace db::rt::tcp
