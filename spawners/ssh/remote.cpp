// spawners/ssh/remote.cpp - the ssh command line, starting ssh, and the TCP
// sockets of the control connections (remote.hpp).
#include "sluice_config.h"

#include "spawners/ssh/remote.hpp"

#include "base/knobs.hpp"
#include "spawners/job_spec.hpp"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sluice::spawner::ssh {
namespace {

using local::UniqueFd;

// This program's path.  Run from a build tree, the binary in .libs needs the
// library path that libtool's wrapper script beside .libs sets: use that.
std::string this_program() {
    char buffer[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
    if (n <= 0) return "sluicerun";
    std::string path(buffer, static_cast<std::size_t>(n));
    const std::size_t slash = path.rfind('/');
    const std::string dir = path.substr(0, slash);
    std::string base = path.substr(slash + 1);
    constexpr std::string_view libs = "/.libs";
    if (dir.size() > libs.size() && dir.compare(dir.size() - libs.size(), libs.size(), libs) == 0) {
        if (base.rfind("lt-", 0) == 0) base.erase(0, 3);
        const std::string wrapper = dir.substr(0, dir.size() - libs.size()) + "/" + base;
        std::ifstream in(wrapper);
        char magic[2] = {};
        if (in.read(magic, 2) && magic[0] == '#' && magic[1] == '!') return wrapper;
    }
    return path;
}

std::string address_text(const sockaddr *address, socklen_t length, bool with_port) {
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (::getnameinfo(address, length, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return "?";
    std::string text = host;
    if (text.rfind("::ffff:", 0) == 0 && text.find('.') != std::string::npos) text.erase(0, 7);  // IPv4 in IPv6
    if (!with_port) return text;
    return (text.find(':') != std::string::npos ? "[" + text + "]" : text) + ":" + port;
}

} // namespace

std::string remote_command(const std::string &job_id, unsigned host) {
    const std::string &knob = base::knob_string(base::Knob::SSH_REMOTE_CMD);
    const std::string program = knob.empty() ? shell_quote(this_program()) : knob;
    return "exec " + program + " --ssh-node --job=" + shell_quote(job_id) + " --host=" + std::to_string(host);
}

std::vector<std::string> ssh_command(const std::string &host, const std::string &remote) {
    std::vector<std::string> argv = words_split(base::knob_string(base::Knob::SSH_CMD));
    if (argv.empty()) argv.push_back("ssh");
    for (auto &word : words_split(base::knob_string(base::Knob::SSH_OPTIONS))) argv.push_back(std::move(word));
    for (const char *word : {"-T", "-o", "BatchMode=yes"}) argv.push_back(word);
    argv.push_back(host);
    argv.push_back(remote);
    return argv;
}

pid_t ssh_spawn(const std::vector<std::string> &argv, UniqueFd &stdin_write, std::string &error) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) < 0) {
        error = std::string("cannot create a pipe: ") + std::strerror(errno) + "; raise `ulimit -n`";
        return -1;
    }
    UniqueFd reading(pipe_fds[0]), writing(pipe_fds[1]);
    std::vector<char *> args;
    for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        error = std::string("cannot fork ssh: ") + std::strerror(errno) + "; raise `ulimit -u`";
        return -1;
    }
    if (pid == 0) {
        ::dup2(reading.get(), 0);
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) ::signal(sig, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execvp(args[0], args.data());
        ::dprintf(2, "sluicerun: cannot run %s: %s (SLUICE_SSH_CMD)\n", args[0], std::strerror(errno));
        ::_exit(127);
    }
    stdin_write = std::move(writing);
    return pid;
}

std::string address_toward(const std::string &host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo *found = nullptr;
    if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || !found) return {};
    std::string text;
    // A UDP connect sends nothing; it only picks the route and its source.
    UniqueFd probe(::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_storage mine{};
    socklen_t length = sizeof mine;
    if (probe && ::connect(probe.get(), found->ai_addr, found->ai_addrlen) == 0 &&
        ::getsockname(probe.get(), reinterpret_cast<sockaddr *>(&mine), &length) == 0)
        text = address_text(reinterpret_cast<sockaddr *>(&mine), length, false);
    ::freeaddrinfo(found);
    return text == "?" ? std::string() : text;
}

UniqueFd listener_open(unsigned &port, std::string &error) {
    // Both address families on one socket where IPv6 exists, else IPv4.
    UniqueFd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_storage address{};
    socklen_t length;
    if (fd) {
        int off = 0;
        ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
        auto *a6 = reinterpret_cast<sockaddr_in6 *>(&address);
        a6->sin6_family = AF_INET6;
        a6->sin6_addr = in6addr_any;
        length = sizeof *a6;
    } else {
        fd = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        auto *a4 = reinterpret_cast<sockaddr_in *>(&address);
        a4->sin_family = AF_INET;
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
        length = sizeof *a4;
    }
    if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr *>(&address), length) < 0 || ::listen(fd.get(), 128) < 0 ||
        ::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&address), &length) < 0) {
        error = std::string("cannot listen for control connections: ") + std::strerror(errno);
        return {};
    }
    port = ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&address)->sin6_port
                                               : reinterpret_cast<sockaddr_in *>(&address)->sin_port);
    return fd;
}

std::string connect_first(const std::vector<std::string> &addresses, unsigned port, double seconds, UniqueFd &socket,
                          std::string &connected) {
    std::string errors;
    for (const std::string &address : addresses) {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV;
        addrinfo *found = nullptr;
        const std::string service = std::to_string(port);
        if (int rc = ::getaddrinfo(address.c_str(), service.c_str(), &hints, &found); rc != 0 || !found) {
            errors += "; " + address + ": " + ::gai_strerror(rc);
            continue;
        }
        UniqueFd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        int err = fd ? 0 : errno;
        if (fd && ::connect(fd.get(), found->ai_addr, found->ai_addrlen) < 0) {
            err = errno;
            if (err == EINPROGRESS) {
                pollfd p{fd.get(), POLLOUT, 0};
                int n;
                while ((n = ::poll(&p, 1, static_cast<int>(seconds * 1000))) < 0 && errno == EINTR) {
                }
                socklen_t len = sizeof err;
                if (n == 0) err = ETIMEDOUT;
                else if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
            }
        }
        ::freeaddrinfo(found);
        if (err == 0) {
            nodelay_set(fd.get());
            socket = std::move(fd);
            connected = address + ":" + service;
            return {};
        }
        errors += "; " + address + ":" + service + ": " + std::strerror(err);
    }
    return errors.empty() ? "no address to try" : errors.substr(2);
}

void nodelay_set(int fd) {
    int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

std::string peer_name(int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&address), &length) < 0) return "?";
    return address_text(reinterpret_cast<sockaddr *>(&address), length, true);
}

} // namespace sluice::spawner::ssh
