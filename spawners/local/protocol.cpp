// spawners/local/protocol.cpp - whole-message I/O on a rank's control socket.
//
// The rank side of the local spawner uses these on its blocking descriptor;
// the launcher frames the same header itself on non-blocking sockets so it
// never waits on one rank.
#include "spawners/local/protocol.hpp"

#include <cerrno>
#include <utility>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace sluice::spawner::local {
namespace {

// Someone may have made the descriptor non-blocking (an exec'd program that
// shares it, a library that likes O_NONBLOCK): wait instead of failing.
bool wait_ready(int fd, short events) {
    pollfd p{fd, events, 0};
    for (;;) {
        int n = ::poll(&p, 1, -1);
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

// MSG_NOSIGNAL: a launcher that went away must give EPIPE, not kill the rank.
ssize_t send_vector(int fd, iovec *iov, int count) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(count);
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::writev(fd, iov, count);
    return n;
}

bool write_all(int fd, iovec *iov, int count) {
    while (count > 0) {
        ssize_t n = send_vector(fd, iov, count);
        if (n < 0) {
            if (errno == EINTR) continue;
            if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_ready(fd, POLLOUT)) continue;
            return false;
        }
        auto left = static_cast<std::size_t>(n);
        while (count > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            ++iov;
            --count;
        }
        if (count > 0) {
            iov->iov_base = static_cast<char *>(iov->iov_base) + left;
            iov->iov_len -= left;
        }
    }
    return true;
}

// False on EOF (even a clean one: a message never ends early) or error.
bool read_all(int fd, void *data, std::size_t len) {
    auto *p = static_cast<char *>(data);
    while (len > 0) {
        ssize_t n = ::read(fd, p, len);
        if (n == 0) return false;
        if (n < 0) {
            if (errno == EINTR) continue;
            if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_ready(fd, POLLIN)) continue;
            return false;
        }
        p += n;
        len -= static_cast<std::size_t>(n);
    }
    return true;
}

} // namespace

bool message_send(int fd, MessageType type, const void *data, std::size_t len) {
    if (len > max_message) {
        errno = EMSGSIZE;
        return false;
    }
    MessageHeader header{static_cast<std::uint32_t>(type), static_cast<std::uint32_t>(len)};
    iovec iov[2] = {{&header, sizeof header}, {const_cast<void *>(data), len}};
    return write_all(fd, iov, len ? 2 : 1);
}

bool message_receive(int fd, MessageType &type, std::string &payload) {
    MessageHeader header;
    if (!read_all(fd, &header, sizeof header)) return false;
    // A length past the limit means the stream is out of step; nothing after
    // it can be trusted.
    if (header.length > max_message) {
        errno = EPROTO;
        return false;
    }
    std::string bytes(header.length, '\0');
    if (header.length && !read_all(fd, bytes.data(), bytes.size())) return false;
    type = static_cast<MessageType>(header.type);
    payload = std::move(bytes);
    return true;
}

} // namespace sluice::spawner::local
