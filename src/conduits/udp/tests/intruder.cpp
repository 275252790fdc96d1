// src/conduits/udp/tests/intruder.cpp - strangers on the udp conduit's sockets.
//
// intruder [datagrams]: run with SLUICE_ROUTE=network and SLUICE_UDP_STATS=1.
// Every rank finds its own udp sockets (their ports in /proc/net/udp, by
// the inodes of its descriptors in /proc/self/fd), the ranks allgather the
// receiving ports, and each rank sends the next one `datagrams` of each kind
// of garbage: random bytes (dropped as "magic"), a well-formed header with a
// wrong job secret, as a datagram from another job would carry ("secret"),
// and 10-byte stubs that start like a Sluice datagram and datagrams longer
// than the job's MTU allows ("truncated").  It also wiretaps what its own
// conduit sends the next rank (this program's send and sendto come before
// libc's, so the conduit's calls reach them first: what an observer on the
// path reads), and with what it read, the job's secret (the old 64-bit tag)
// and the sequence and transmission numbers in use, it sends as an attacker
// who knows them would: a request with the secret, the next sequence number
// and a marked argument but no key to sign it ("forged"); a datagram read
// off the wire, sent again unchanged ("replay"); and one cut short inside
// its AM section ("truncated").  It sends them twice: from an ordinary
// socket of its own (an unknown address), and from a socket bound with
// SO_REUSEPORT to its own send port, an address the next rank knows.
// Meanwhile the ranks run request/reply round trips to each other, which
// must all complete, and no handler may see a marked argument.  Each rank
// prints "INTRUDER rank R known magic N secret N truncated N forged N replay
// N unknown magic N secret N truncated N forged N replay N delivered N" with
// what it sent and how many marked requests its handler ran; the driver
// (udp_driver.cpp) checks the receivers' udp counters against those figures.
// A case of sluice-udp-check.
#include "conduits/udp/tests/udp_check.hpp"

#include "conduits/udp/mac.hpp"
#include "conduits/udp/wire.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace wire = sluice::conduit::udp::wire;

// ---- the wiretap ------------------------------------------------------------
// The last request (a data datagram with an AM section, not a reply) this
// rank's conduit sent to rank `dest`, as it left (signed).
namespace tap {
std::mutex lock;
std::uint32_t source = ~0u, dest = ~0u;  // set before the first send is looked at
std::vector<std::uint8_t> last;
thread_local bool intruding = false;  // this thread sends the intruder's datagrams: not the conduit's

void look(const void *bytes, std::size_t n) {
    if (intruding) return;
    const auto *b = static_cast<const std::uint8_t *>(bytes);
    if (n < wire::header_bytes + wire::am_fixed_bytes || n > 256 || b[4] != static_cast<std::uint8_t>(wire::Kind::data) ||
        !(b[5] & 1) || (b[wire::header_bytes + 3] & 3) || b[wire::header_bytes + 2] == 0)
        return;  // byte 5 bit 0: an AM section; AM flags 1 and 2: a reply, a system AM; byte 2: arguments
    std::uint32_t from, to;
    std::memcpy(&from, b + wire::at_source, 4);
    std::memcpy(&to, b + wire::at_source + 4, 4);
    std::lock_guard<std::mutex> g(lock);
    if (from != source || to != dest) return;
    last.assign(b, b + n);
}
} // namespace tap

extern "C" ssize_t send(int fd, const void *bytes, std::size_t n, int flags) {
    static auto real = reinterpret_cast<ssize_t (*)(int, const void *, std::size_t, int)>(::dlsym(RTLD_NEXT, "send"));
    tap::look(bytes, n);
    return real(fd, bytes, n, flags);
}

extern "C" ssize_t sendto(int fd, const void *bytes, std::size_t n, int flags, const sockaddr *to, socklen_t to_length) {
    static auto real = reinterpret_cast<ssize_t (*)(int, const void *, std::size_t, int, const sockaddr *, socklen_t)>(
        ::dlsym(RTLD_NEXT, "sendto"));
    tap::look(bytes, n);
    return real(fd, bytes, n, flags, to, to_length);
}

extern "C" int sendmmsg(int fd, mmsghdr *messages, unsigned count, int flags) {
    static auto real = reinterpret_cast<int (*)(int, mmsghdr *, unsigned, int)>(::dlsym(RTLD_NEXT, "sendmmsg"));
    for (unsigned i = 0; i < count; ++i)
        if (messages[i].msg_hdr.msg_iovlen == 1)
            tap::look(messages[i].msg_hdr.msg_iov[0].iov_base, messages[i].msg_hdr.msg_iov[0].iov_len);
    return real(fd, messages, count, flags);
}

namespace sluice_test::udp_check {
namespace {

enum : sluice_handler_t { h_ask = 90, h_answer };

// A forged request's argument: never a genuine one's (those count from 0).
constexpr std::uint32_t marked = 0x80000000u;

std::atomic<std::uint64_t> answers{0}, marked_delivered{0};

void on_ask(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    if (args[0] & marked) {
        marked_delivered.fetch_add(1);
        return;
    }
    std::uint32_t back = args[0] + 1;
    TOK(sluice_am_reply_short(token, h_answer, &back, 1));
}
void on_answer(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) { answers.fetch_add(1); }

// The local port of this process's unconnected IPv4 UDP socket (there is
// one: the conduit's receiving socket), or with `connected` the port its
// sockets connected to peers send from (they share it; a peer socket,
// connected too, is bound to the receiving port and does not count), from
// /proc/net/udp and the socket inodes of /proc/self/fd.
std::uint16_t own_udp_port(bool connected) {
    std::set<unsigned long> inodes;
    DIR *d = ::opendir("/proc/self/fd");
    TCHECK(d != nullptr, "cannot list /proc/self/fd");
    while (dirent *e = ::readdir(d)) {
        char link[64] = {}, path[300];
        std::snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        unsigned long inode = 0;
        if (::readlink(path, link, sizeof link - 1) > 0 && std::sscanf(link, "socket:[%lu]", &inode) == 1)
            inodes.insert(inode);
    }
    ::closedir(d);
    std::FILE *f = std::fopen("/proc/net/udp", "r");
    TCHECK(f != nullptr, "cannot read /proc/net/udp");
    char line[512];
    // The file is read in pieces while other processes' connects move
    // sockets in the table: a line may come twice, hence sets.
    std::set<std::uint16_t> unconnected_ports, connected_ports;
    while (std::fgets(line, sizeof line, f)) {
        unsigned address = 0, local_port = 0, remote = 0, remote_port = 0;
        unsigned long inode = 0;
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
        if (std::sscanf(line, " %*d: %x:%x %x:%x %*x %*x:%*x %*x:%*x %*x %*u %*u %lu", &address, &local_port, &remote,
                        &remote_port, &inode) == 5 &&
            inodes.count(inode))
            (remote != 0 || remote_port != 0 ? connected_ports : unconnected_ports)
                .insert(static_cast<std::uint16_t>(local_port));
    }
    std::fclose(f);
    TCHECK(unconnected_ports.size() == 1, "%zu unconnected udp ports in this process (run with SLUICE_ROUTE=network)",
           unconnected_ports.size());
    if (!connected) return *unconnected_ports.begin();
    connected_ports.erase(*unconnected_ports.begin());
    TCHECK(connected_ports.size() == 1, "%zu send udp ports in this process", connected_ports.size());
    return *connected_ports.begin();
}

// A socket that sends from the local port `port` (host order), shared with
// the conduit's sockets bound there, or from a port of its own (0).
int socket_from(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    TCHECK(fd >= 0, "socket");
    const int on = 1;
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    at.sin_port = htons(port);
    TCHECK(::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) == 0 &&
               ::bind(fd, reinterpret_cast<sockaddr *>(&at), sizeof at) == 0,
           "cannot bind a socket to port %u: %s", port, std::strerror(errno));
    return fd;
}

} // namespace

int case_intruder(int argc, char **argv) {
    const int per_kind = argc > 2 ? std::atoi(argv[2]) : 100;
    TOK(sluice_handler_register(h_ask, on_ask, SLUICE_AM_SHORT, 1));
    TOK(sluice_handler_register(h_answer, on_answer, SLUICE_AM_SHORT, 1));
    TOK(sluice_segment_attach(1 << 16));
    std::vector<std::uint32_t> ports(nranks);
    const std::uint32_t mine = own_udp_port(false);
    TOK(sluice_allgather(&mine, ports.data(), sizeof mine));
    const sluice_rank_t next = (me + 1) % nranks;
    {
        std::lock_guard<std::mutex> g(tap::lock);
        tap::source = me;
        tap::dest = next;
    }

    // [0]: from my send port, known to `next`; [1]: from a port of its own.
    const int fds[2] = {socket_from(own_udp_port(true)), socket_from(0)};
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(static_cast<std::uint16_t>(ports[next]));
    enum { magic, secret, truncated, forged, replay, kinds };
    int sent[2][kinds] = {};  // [known, unknown][kind]
    const int round_trips = std::max(200, per_kind);
    for (int i = 0; i < round_trips; ++i) {
        std::uint32_t n = static_cast<std::uint32_t>(i);
        TOK(sluice_am_request_short(next, h_ask, &n, 1));
        // Strangers' datagrams between the job's own, one of each kind per
        // round trip.
        for (int from = 0; from < 2 && i < per_kind; ++from) {
            const int fd = fds[from];
            std::uint8_t d[wire::header_bytes + 150];
            TCHECK(::getrandom(d, sizeof d, 0) == sizeof d, "getrandom");
            const std::size_t len = wire::header_bytes + d[0] % 150;
            d[0] = 0;  // never the magic by chance
            auto send_kind = [&](int kind, const void *bytes, std::size_t n) {
                tap::intruding = true;
                if (::sendto(fd, bytes, n, 0, reinterpret_cast<sockaddr *>(&to), sizeof to) == static_cast<ssize_t>(n))
                    ++sent[from][kind];
                tap::intruding = false;
            };
            send_kind(magic, d, len);
            // A well-formed Short from rank `me` with another secret, as the
            // conduit's own encoder writes it.
            wire::Header w;
            w.kind = wire::Kind::data;
            std::memcpy(&w.secret, d + 8, 8);  // random
            w.source = me;
            w.dest = next;
            w.seq = 1 + static_cast<std::uint32_t>(i);
            wire::Am am;
            am.handler = h_ask;
            std::uint8_t h[wire::header_bytes + wire::am_fixed_bytes];
            const std::size_t hn = wire::encode(w, &am, nullptr, 0, h, sizeof h, 1u << 20);
            TCHECK(hn == sizeof h, "encoded %zu bytes", hn);
            send_kind(secret, h, hn);
            send_kind(truncated, h, 10);
            // Longer than the job's datagrams (the driver sets
            // SLUICE_UDP_MTU=576): the receive truncates it, so it is
            // dropped as truncated whatever its header says.
            std::uint8_t big[1200] = {};
            std::memcpy(big, h, hn);
            send_kind(truncated, big, sizeof big);
            // With what the wiretap read: the request just sent (a round
            // trip's only data datagram to `next`).
            std::vector<std::uint8_t> heard;
            {
                std::lock_guard<std::mutex> g(tap::lock);
                heard = tap::last;
            }
            TCHECK(!heard.empty(), "the wiretap read nothing this rank sent to rank %u", next);
            // Sent again as it was: authentic, and a replay.
            send_kind(replay, heard.data(), heard.size());
            // Cut short inside its AM section.
            send_kind(truncated, heard.data(), wire::header_bytes + 8);
            // The forgery: the job's secret (bytes 8-15 of what was read),
            // the sequence number the next rank expects next and a fresh
            // transmission number, a marked argument, and a tag made without
            // the key (zero, as a job without MACs sends; or the heard one).
            wire::Datagram parsed;
            wire::Expect anyone{};
            std::memcpy(&anyone.secret, heard.data() + 8, 8);
            anyone.me = next;
            anyone.size = nranks;
            anyone.max_message = 1u << 20;
            anyone.refused_source = next;
            std::vector<std::uint8_t> unsigned_copy = heard;
            std::memset(unsigned_copy.data() + wire::at_tag, 0, wire::mac_tag_bytes);
            TCHECK(wire::decode(unsigned_copy.data(), unsigned_copy.size(), anyone, parsed) == wire::Drop::none,
                   "the wiretapped datagram does not parse");
            parsed.header.seq += 1;
            parsed.header.number += 1000;
            TCHECK(parsed.am.nargs >= 1, "a request without its argument");
            parsed.am.args[0] = marked | static_cast<std::uint32_t>(i);
            std::uint8_t f[256];
            const std::size_t fn = wire::encode(parsed.header, &parsed.am, nullptr, 0, f, sizeof f, 1u << 20);
            TCHECK(fn == heard.size(), "forged %zu bytes", fn);
            if (i % 2) std::memcpy(f + wire::at_tag, heard.data() + wire::at_tag, wire::mac_tag_bytes);
            send_kind(forged, f, fn);
        }
        WAIT_UNTIL(answers.load() == static_cast<std::uint64_t>(i) + 1);
    }
    for (int fd : fds) ::close(fd);
    TOK(sluice_barrier());
    // Marked requests sent before the barrier have arrived by now; a late
    // one would be delivered by finalize's polls, and the counters show it.
    std::printf("INTRUDER rank %u known magic %d secret %d truncated %d forged %d replay %d "
                "unknown magic %d secret %d truncated %d forged %d replay %d delivered %llu\n",
                me, sent[0][magic], sent[0][secret], sent[0][truncated], sent[0][forged], sent[0][replay],
                sent[1][magic], sent[1][secret], sent[1][truncated], sent[1][forged], sent[1][replay],
                static_cast<unsigned long long>(marked_delivered.load()));
    std::fflush(stdout);
    TOK(sluice_finalize());  // the conduit prints its counters (SLUICE_UDP_STATS=1)
    if (me == 0) {
        std::printf("PASS intruder on %u ranks\n", nranks);
        std::fflush(stdout);
    }
    return 0;
}

} // namespace sluice_test::udp_check
