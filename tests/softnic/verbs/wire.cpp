// tests/softnic/verbs/wire.cpp - work between hosts, over TCP (wire.hpp).
//
// A request is a fixed header (the work request's fields the target needs,
// and who sent it) and then the payload of a send or write (an atomic's:
// its compare_add and swap operands); an answer is the verdict and then the
// bytes of an RDMA_READ (an atomic's: the old value).  Both ends are this
// build on one machine, so the headers go in the machine's byte order.
#include "wire.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

namespace softnic {
namespace {

constexpr std::uint32_t wire_magic = 0x736e6977;  // "wins"

struct Request {
    std::uint32_t magic;
    std::uint32_t opcode;  // ibv_wr_opcode
    std::uint32_t ud;
    std::uint32_t dest_qpn;
    std::uint32_t qkey;
    std::uint32_t imm;
    std::uint32_t rkey;
    std::uint32_t length;   // of the operation
    std::uint32_t payload;  // bytes after the header: a send's or write's
    std::uint32_t src_qpn;
    std::uint16_t dlid, src_lid;
    std::uint8_t global;
    std::uint8_t pad[7];
    std::uint64_t remote_addr;
    std::uint8_t dgid[16];
    std::uint8_t src_gid[16];
};

struct Answer {
    std::uint32_t magic;
    Verdict::Kind kind;
    ibv_wc_status status;
    std::uint32_t length;  // bytes after the answer: an RDMA_READ's
};

// ---- whole messages on a stream socket ----

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

sockaddr_in wire_address(std::uint32_t host) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(wire_port());
    a.sin_addr = host_address(host);
    return a;
}

// ---- serving other hosts ----

// Never destroyed: detached threads use it until the process ends.
struct Server {
    std::mutex mutex;
    std::condition_variable idle;
    unsigned opened = 0;  // devices open
    int listener = -1;
    std::vector<int> connections;  // served, each by its thread
    unsigned busy = 0;             // of them, serving a request
};
Server &server = *new Server;

void set_busy(int change) {
    std::lock_guard<std::mutex> g(server.mutex);
    server.busy += static_cast<unsigned>(change);
    if (server.busy == 0) server.idle.notify_all();
}

bool decode(const Request &r, Work &k) {
    const bool read = r.opcode == IBV_WR_RDMA_READ;
    const bool atomic = atomic_opcode(static_cast<ibv_wr_opcode>(r.opcode));
    const bool known = read || atomic || r.opcode == IBV_WR_SEND || r.opcode == IBV_WR_SEND_WITH_IMM ||
                       r.opcode == IBV_WR_RDMA_WRITE || r.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    // An atomic's payload is its two operands.
    const std::uint32_t payload = read ? 0 : atomic ? 2 * atomic_bytes : r.length;
    if (r.magic != wire_magic || !known || r.length > max_msg || r.payload != payload) return false;
    k.opcode = static_cast<ibv_wr_opcode>(r.opcode);
    k.remote_qpn = r.dest_qpn;
    k.remote_qkey = r.qkey;
    k.imm = r.imm;
    k.rkey = r.rkey;
    k.length = r.length;
    k.remote_addr = r.remote_addr;
    k.dlid = r.dlid;
    k.global = r.global != 0;
    std::memcpy(k.dgid, r.dgid, sizeof k.dgid);
    k.payload.resize(r.payload);
    return true;
}

// Serves the requests that come on `fd`, one at a time, until it closes.
void serve_connection(int fd) {
    Work k{};
    Request r;
    std::vector<std::uint8_t> read;
    bool answered = true;
    while (answered && receive_all(fd, &r, sizeof r) && decode(r, k) &&
           receive_all(fd, k.payload.data(), k.payload.size())) {
        set_busy(+1);
        Source source{r.src_qpn, r.src_lid, {}};
        std::memcpy(source.gid.raw, r.src_gid, sizeof source.gid.raw);
        Arrival arrival;
        read.clear();
        lock();
        const Verdict v = serve(k, r.ud != 0, source, read, arrival);
        unlock();
        const bool bytes = v.kind == Verdict::Kind::done && v.status == IBV_WC_SUCCESS;
        const Answer a{wire_magic, v.kind, v.status, bytes ? static_cast<std::uint32_t>(read.size()) : 0};
        answered = send_all(fd, &a, sizeof a, read.data(), a.length);
        std::vector<Notice> notices;
        lock();
        arrive(arrival, notices);
        unlock();
        notify(notices);
        set_busy(-1);
    }
    std::lock_guard<std::mutex> g(server.mutex);
    server.connections.erase(std::find(server.connections.begin(), server.connections.end(), fd));
    ::close(fd);
}

void accept_loop(int listener) {
    for (;;) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINVAL || errno == EBADF || errno == ENOTSOCK) break;  // shut down: the last device closed
            if (errno != EINTR && errno != ECONNABORTED) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
        }
        set_no_delay(fd);
        {
            std::lock_guard<std::mutex> g(server.mutex);
            if (server.listener != listener) {
                ::close(fd);
                break;
            }
            server.connections.push_back(fd);
        }
        std::thread(serve_connection, fd).detach();
    }
    ::close(listener);
}

int listen_on_wire() {
    const sockaddr_in a = wire_address(static_cast<std::uint32_t>(host_index()));
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (fd >= 0) {
        set_option(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        set_option(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        if (::bind(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0 && ::listen(fd, 64) == 0) return fd;
    }
    char name[INET_ADDRSTRLEN];
    std::fprintf(stderr, "softnic: cannot listen on %s:%u for other hosts (SOFTNIC_WIRE_PORT): %s\n",
                 ::inet_ntop(AF_INET, &a.sin_addr, name, sizeof name), wire_port(), std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return -1;
}

// ---- posting to other hosts ----

// One connection per host, used by the thread that has work on the wire
// (verbs.cpp: one at a time).
std::vector<int> &links = *new std::vector<int>;

// A link that is idle has nothing to read: readable means closed by the
// peer (its process ended, or closed its last device).
bool still_open(int fd) {
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) == 0;
}

void drop_link(std::uint32_t host) {
    ::close(links[host]);
    links[host] = -1;
}

// The connection to `host`'s processes, or -1 if none listens.
int link_to(std::uint32_t host) {
    if (links.size() < host_count()) links.resize(host_count(), -1);
    if (links[host] >= 0 && !still_open(links[host])) drop_link(host);
    if (links[host] >= 0) return links[host];
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    set_timeout(fd, SO_SNDTIMEO, 2);  // connecting, then sending
    set_timeout(fd, SO_RCVTIMEO, 10);
    const sockaddr_in a = wire_address(host);
    if (::connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    set_timeout(fd, SO_SNDTIMEO, 10);
    set_no_delay(fd);
    links[host] = fd;
    return fd;
}

Request request_of(const Work &k, bool ud, const Source &source) {
    Request r{};
    r.magic = wire_magic;
    r.opcode = k.opcode;
    r.ud = ud;
    r.dest_qpn = k.remote_qpn;
    r.qkey = k.remote_qkey;
    r.imm = k.imm;
    r.rkey = k.rkey;
    r.length = k.length;
    r.payload = static_cast<std::uint32_t>(k.payload.size());
    r.src_qpn = source.qpn;
    r.dlid = k.dlid;
    r.src_lid = source.lid;
    r.global = k.global;
    r.remote_addr = k.remote_addr;
    std::memcpy(r.dgid, k.dgid, sizeof r.dgid);
    std::memcpy(r.src_gid, source.gid.raw, sizeof r.src_gid);
    return r;
}

} // namespace

Verdict wire_exchange(const Work &k, bool ud, const Source &source, std::vector<std::uint8_t> &read) {
    const auto host = static_cast<std::uint32_t>(k.host);
    const int fd = link_to(host);
    if (fd < 0) return {Verdict::Kind::absent, IBV_WC_SUCCESS};
    const Request r = request_of(k, ud, source);
    Answer a{};
    if (send_all(fd, &r, sizeof r, k.payload.data(), k.payload.size()) && receive_all(fd, &a, sizeof a) &&
        a.magic == wire_magic && a.kind <= Verdict::Kind::absent && a.length <= max_msg) {
        read.resize(a.length);
        if (receive_all(fd, read.data(), a.length)) return {a.kind, a.status};
    }
    // As a lost packet: retried, on a new connection, until the transport
    // timeout.
    drop_link(host);
    return {Verdict::Kind::absent, IBV_WC_SUCCESS};
}

void serving_start() {
    if (!several_hosts()) return;
    std::lock_guard<std::mutex> g(server.mutex);
    if (server.opened++ > 0) return;
    server.listener = listen_on_wire();
    if (server.listener >= 0) std::thread(accept_loop, server.listener).detach();
}

void serving_stop() {
    if (!several_hosts()) return;
    std::unique_lock<std::mutex> g(server.mutex);
    if (server.opened == 0 || --server.opened > 0) return;
    // Wakes the threads, which close their sockets: peers connect again,
    // to a process of this host that still has a device open.  A request
    // being served still gets its answer (only reading is shut down), and
    // the process waits for it: its poster would count it lost.
    if (server.listener >= 0) ::shutdown(server.listener, SHUT_RDWR);
    server.listener = -1;
    for (const int fd : server.connections) ::shutdown(fd, SHUT_RD);
    server.idle.wait_for(g, std::chrono::seconds(1), [] { return server.busy == 0; });
}

} // namespace softnic
