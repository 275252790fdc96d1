// tests/perf/sockets.cpp - the bare UDP ping-pong and TCP stream the udp
// section compares Sluice's udp conduit with (sockets.hpp).
#include "tests/perf/sockets.hpp"

#include "tests/perf/bench_common.hpp"
#include "tests/perf/driver.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <set>
#include <signal.h>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace sluice::perf {
namespace {

constexpr double silence_ns = 1e9; // a peer quiet this long has stopped

sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}
std::uint16_t bound_port(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0)
        return 0;
    return ntohs(a.sin_port);
}
// Large buffers: as root past net.core.[rw]mem_max (the FORCE options),
// otherwise up to it.
void set_buffers(int fd, int bytes) {
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}
void close_fd(int &fd) {
    if (fd >= 0)
        close(fd);
    fd = -1;
}

} // namespace

// ---- UDP ping-pong ---------------------------------------------------------------
UdpPingPong::~UdpPingPong() { close_fd(fd_); }

bool UdpPingPong::open() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0)
        return false;
    sockaddr_in a = loopback(0);
    if (bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        close_fd(fd_);
        return false;
    }
    // A blocking recv gives up after resend_ns, so the blocking variant
    // resends too; recv(MSG_DONTWAIT) is not affected.
    timeval tv{0, static_cast<suseconds_t>(resend_ns / 1000)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    port_ = bound_port(fd_);
    return port_ != 0;
}

bool UdpPingPong::connect_to(std::uint16_t peer_port) {
    sockaddr_in a = loopback(peer_port);
    return fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
}

bool UdpPingPong::receive(std::uint64_t &value, UdpWait wait) {
    return recv(fd_, &value, sizeof value, wait == UdpWait::spin ? MSG_DONTWAIT : 0) ==
           static_cast<ssize_t>(sizeof value);
}

double UdpPingPong::ping(std::uint32_t n, std::uint32_t lead, UdpWait wait,
                         std::vector<double> *trips) {
    double t0 = now_ns();
    double previous = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
        if (i == lead)
            t0 = now_ns();
        const std::uint64_t mine = ++seq_;
        (void)send(fd_, &mine, sizeof mine, 0);
        const double sent = now_ns();
        if (trips && i > lead)
            trips->push_back(sent - previous);
        previous = sent;
        double last_send = sent;
        for (;;) {
            std::uint64_t got = 0;
            if (receive(got, wait)) {
                if (got == mine)
                    break;
                continue; // an answer to a ping sent again: already counted
            }
            const double t = now_ns();
            if (t - sent > silence_ns)
                return nan_value;
            if (t - last_send > resend_ns) {
                (void)send(fd_, &mine, sizeof mine, 0);
                last_send = t;
                ++resends_;
            }
        }
    }
    const double end = now_ns();
    if (trips && n > lead)
        trips->push_back(end - previous);
    return end - t0;
}

void UdpPingPong::pong(std::uint32_t n, UdpWait wait, Idle idle) {
    const std::uint64_t first = seq_ + 1, last = seq_ + n;
    seq_ = last;
    double heard = now_ns();
    bool started = false; // a ping of this chunk came (not an old one sent again)
    for (;;) {
        std::uint64_t got = 0;
        if (receive(got, started ? wait : UdpWait::spin)) {
            started = started || got >= first;
            heard = now_ns();
            (void)send(fd_, &got, sizeof got, 0);
            if (got >= last) {
                for (int extra = 0; extra < 2; ++extra)
                    (void)send(fd_, &got, sizeof got, 0);
                return;
            }
        } else if (now_ns() - heard > silence_ns) {
            return;
        } else if (!started && idle) {
            idle();
        }
    }
}

// ---- TCP stream ----------------------------------------------------------------------
TcpStream::~TcpStream() {
    close_fd(fd_);
    close_fd(listen_fd_);
    if (buffer_)
        munmap(buffer_, buffer_size_);
}

char *TcpStream::buffer_of(std::size_t bytes) {
    if (buffer_size_ < bytes) {
        if (buffer_)
            munmap(buffer_, buffer_size_);
        void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        buffer_ = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
        buffer_size_ = buffer_ ? bytes : 0;
        if (buffer_)
            std::memset(buffer_, 1, bytes);
    }
    return buffer_;
}

bool TcpStream::listen_any() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0)
        return false;
    // Set before listen: the accepted socket inherits them, and the window
    // scale is chosen at the handshake.
    set_buffers(listen_fd_, buffer_bytes);
    sockaddr_in a = loopback(0);
    if (bind(listen_fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        listen(listen_fd_, 1) != 0) {
        close_fd(listen_fd_);
        return false;
    }
    port_ = bound_port(listen_fd_);
    return port_ != 0;
}

bool TcpStream::connect_to(std::uint16_t peer_port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0)
        return false;
    set_buffers(fd_, buffer_bytes);
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a = loopback(peer_port);
    return connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
}

bool TcpStream::accept_one() {
    fd_ = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    close_fd(listen_fd_);
    if (fd_ < 0)
        return false;
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return true;
}

double TcpStream::write_messages(std::uint32_t count, std::size_t bytes) {
    const char *data = buffer_of(bytes);
    if (!data || fd_ < 0)
        return nan_value;
    const double t0 = now_ns();
    for (std::uint32_t i = 0; i < count; ++i)
        for (std::size_t done = 0; done < bytes;) {
            const ssize_t w = write(fd_, data + done, bytes - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return nan_value;
            done += static_cast<std::size_t>(w);
        }
    char answer = 0;
    ssize_t r;
    do
        r = read(fd_, &answer, 1);
    while (r < 0 && errno == EINTR);
    return r == 1 ? now_ns() - t0 : nan_value;
}

bool TcpStream::read_messages(std::uint32_t count, std::size_t bytes, Idle idle) {
    char *data = buffer_of(bytes);
    if (!data || fd_ < 0)
        return false;
    for (pollfd p{fd_, POLLIN, 0}; idle && poll(&p, 1, 0) == 0;)
        idle();
    for (std::uint32_t i = 0; i < count; ++i)
        for (std::size_t done = 0; done < bytes;) {
            const ssize_t r = read(fd_, data + done, bytes - done);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return false;
            done += static_cast<std::size_t>(r);
        }
    const char answer = 1;
    return write(fd_, &answer, 1) == 1;
}

// ---- the driver's forked ping-pong -----------------------------------------------
double udp_pingpong_forked(long iters, UdpWait wait, double timeout) {
    UdpPingPong a, b;
    if (!a.open() || !b.open() || !a.connect_to(b.port()) || !b.connect_to(a.port()))
        return nan_value;
    void *page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
                      0);
    if (page == MAP_FAILED)
        return nan_value;
    auto *result = static_cast<double *>(page);
    *result = nan_value;
    const std::vector<int> cpus = usable_cpus(2);
    const auto total = static_cast<std::uint32_t>(warmup_of(iters) + iters);
    const auto lead = static_cast<std::uint32_t>(warmup_of(iters));

    pid_t responder = fork();
    if (responder == 0) {
        if (cpus.size() == 2)
            pin_to(cpus[1]);
        b.pong(total, wait);
        _exit(0);
    }
    pid_t measurer = fork();
    if (measurer == 0) {
        if (cpus.size() == 2)
            pin_to(cpus[0]);
        *result = a.ping(total, lead, wait) / static_cast<double>(iters);
        _exit(0);
    }
    reap_pair(responder, measurer, timeout);
    const double ns = *result;
    munmap(page, 4096);
    return ns;
}

// ---- UDP sockets of this process ----------------------------------------------------
int udp_sockets_open() {
    std::set<unsigned long long> udp;
    for (const char *table : {"/proc/net/udp", "/proc/net/udp6"}) {
        std::ifstream f(table);
        std::string line;
        std::getline(f, line); // column titles
        while (std::getline(f, line)) {
            std::istringstream l(line);
            std::string field;
            unsigned long long inode = 0;
            for (int i = 0; i < 9 && l >> field; ++i) {
            }
            if (l >> inode)
                udp.insert(inode);
        }
    }
    int count = 0;
    if (DIR *d = opendir("/proc/self/fd")) {
        while (dirent *e = readdir(d)) {
            char link[64] = {};
            const std::string path = std::string("/proc/self/fd/") + e->d_name;
            const ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
            unsigned long long inode = 0;
            if (n > 0 && std::sscanf(link, "socket:[%llu]", &inode) == 1 && udp.count(inode))
                ++count;
        }
        closedir(d);
    }
    return count;
}

} // namespace sluice::perf
