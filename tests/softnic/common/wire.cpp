// tests/softnic/common/wire.cpp - see wire.hpp.
#include "wire.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace softnic_common {
namespace {

void set_option(int fd, int level, int name, const void *value, socklen_t size) {
    (void)::setsockopt(fd, level, name, value, size);
}

void set_timeout(int fd, int name, long seconds) {
    const timeval t{seconds, 0};
    set_option(fd, SOL_SOCKET, name, &t, sizeof t);
}

void set_no_delay(int fd) {
    // Requests and answers are small and waited for: Nagle would hold them.
    const int one = 1;
    set_option(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// A connection that is idle has nothing to read: readable means closed by
// the peer.
bool still_open(int fd) {
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) == 0;
}

// Waits until something arrives on `fd` (or it closes, or its reading was
// shut down): false only when it cannot be waited on.
bool await_readable(int fd) {
    for (;;) {
        pollfd p{fd, POLLIN | POLLRDHUP, -1};
        const int n = ::poll(&p, 1, -1);
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

} // namespace

bool send_all(int fd, const void *head, std::size_t head_len, const void *body, std::size_t body_len) {
    iovec v[2] = {{const_cast<void *>(head), head_len}, {const_cast<void *>(body), body_len}};
    msghdr m{};
    m.msg_iov = v;
    m.msg_iovlen = body_len ? 2 : 1;
    while (m.msg_iovlen) {
        ssize_t n = ::sendmsg(fd, &m, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        for (; m.msg_iovlen && static_cast<std::size_t>(n) >= m.msg_iov->iov_len; ++m.msg_iov, --m.msg_iovlen)
            n -= static_cast<ssize_t>(m.msg_iov->iov_len);
        if (m.msg_iovlen) {
            m.msg_iov->iov_base = static_cast<char *>(m.msg_iov->iov_base) + n;
            m.msg_iov->iov_len -= static_cast<std::size_t>(n);
        }
    }
    return true;
}

bool receive_all(int fd, void *buffer, std::size_t len) {
    auto *p = static_cast<char *>(buffer);
    while (len) {
        const ssize_t n = ::recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= static_cast<std::size_t>(n);
    }
    return true;
}

// ---- a poster's connections ----

Links::~Links() {
    for (const int fd : fds_)
        if (fd >= 0) ::close(fd);
}

void Links::drop(std::uint32_t host) {
    if (host >= fds_.size() || fds_[host] < 0) return;
    ::close(fds_[host]);
    fds_[host] = -1;
}

int Links::get(std::uint32_t host, const sockaddr_in &to) {
    if (fds_.size() <= host) fds_.resize(host + 1, -1);
    if (fds_[host] >= 0 && !still_open(fds_[host])) drop(host);
    if (fds_[host] >= 0) return fds_[host];
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    set_timeout(fd, SO_SNDTIMEO, 2);  // connecting, then sending
    set_timeout(fd, SO_RCVTIMEO, 10);
    if (::connect(fd, reinterpret_cast<const sockaddr *>(&to), sizeof to) != 0) {
        ::close(fd);
        return -1;
    }
    set_timeout(fd, SO_SNDTIMEO, 10);
    set_no_delay(fd);
    fds_[host] = fd;
    return fd;
}

// ---- serving ----

Server::Server(const char *nic, const char *port_knob, ServeOne serve_one)
    : nic_(nic), port_knob_(port_knob), serve_one_(serve_one) {}

void Server::serve_connection(int fd) {
    while (await_readable(fd)) {
        {
            std::lock_guard<std::mutex> g(mutex_);
            ++busy_;
        }
        const bool more = serve_one_(fd);
        {
            std::lock_guard<std::mutex> g(mutex_);
            if (--busy_ == 0) idle_.notify_all();
        }
        if (!more) break;
    }
    std::lock_guard<std::mutex> g(mutex_);
    connections_.erase(std::find(connections_.begin(), connections_.end(), fd));
    ::close(fd);
}

void Server::accept_loop(int listener) {
    for (;;) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINVAL || errno == EBADF || errno == ENOTSOCK) break;  // shut down: the last stop
            if (errno != EINTR && errno != ECONNABORTED) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
        }
        set_no_delay(fd);
        {
            std::lock_guard<std::mutex> g(mutex_);
            if (listener_ != listener) {
                ::close(fd);
                break;
            }
            connections_.push_back(fd);
        }
        std::thread([this, fd] { serve_connection(fd); }).detach();
    }
    ::close(listener);
}

int Server::listen_at(const sockaddr_in &at) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (fd >= 0) {
        set_option(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        set_option(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        if (::bind(fd, reinterpret_cast<const sockaddr *>(&at), sizeof at) == 0 && ::listen(fd, 64) == 0) return fd;
    }
    char name[INET_ADDRSTRLEN];
    std::fprintf(stderr, "%s: cannot listen on %s:%u for other hosts (%s): %s\n", nic_,
                 ::inet_ntop(AF_INET, &at.sin_addr, name, sizeof name), ntohs(at.sin_port), port_knob_,
                 std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return -1;
}

void Server::start(const sockaddr_in &at) {
    std::lock_guard<std::mutex> g(mutex_);
    if (started_++ > 0) return;
    listener_ = listen_at(at);
    if (listener_ >= 0) {
        const int listener = listener_;
        std::thread([this, listener] { accept_loop(listener); }).detach();
    }
}

void Server::stop() {
    std::unique_lock<std::mutex> g(mutex_);
    if (started_ == 0 || --started_ > 0) return;
    // Wakes the threads, which close their sockets.  Only reading is shut
    // down, so a request being served still gets its answer.
    if (listener_ >= 0) ::shutdown(listener_, SHUT_RDWR);
    listener_ = -1;
    for (const int fd : connections_) ::shutdown(fd, SHUT_RD);
    idle_.wait_for(g, std::chrono::seconds(1), [this] { return busy_ == 0; });
}

} // namespace softnic_common
