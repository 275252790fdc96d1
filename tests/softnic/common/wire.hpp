// tests/softnic/common/wire.hpp - what the software NICs' wires between
// hosts share (verbs/wire.cpp, gni/wire.cpp): whole messages on a TCP
// stream, a poster's connections to the other hosts, and the listener
// whose threads serve requests from them.  Each NIC keeps its own request
// and answer formats and what serving one means.
#pragma once

#include <netinet/in.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace softnic_common {

// Sends `head` then `body` whole; false when the connection broke.
bool send_all(int fd, const void *head, std::size_t head_len, const void *body, std::size_t body_len);
// Receives exactly `len` bytes; false when the connection broke or closed.
bool receive_all(int fd, void *buffer, std::size_t len);

// A poster's connections, one per other host.  One thread uses a Links at
// a time; a connection that broke during an exchange is dropped, and the
// next get connects again.
class Links {
public:
    Links() = default;
    Links(const Links &) = delete;
    Links &operator=(const Links &) = delete;
    ~Links();
    // The connection to `host` at `to`, or -1 when nothing listens there.
    // An idle connection whose peer closed (its process ended, or stopped
    // serving) is replaced first.
    int get(std::uint32_t host, const sockaddr_in &to);
    void drop(std::uint32_t host);

private:
    std::vector<int> fds_;
};

// Serving other hosts: every process of a host that uses the NIC listens
// at the host's address, sharing the port with the host's other such
// processes (SO_REUSEPORT), so any live one serves.  A thread per
// connection calls `serve_one` each time a request starts to arrive; it
// reads the request, carries it out and answers, and returns false to end
// the connection.  The threads are detached: a Server is never destroyed.
class Server {
public:
    using ServeOne = bool (*)(int fd);
    // `nic` and `port_knob` name the NIC and its port variable in the one
    // line printed when the port cannot be listened on.
    Server(const char *nic, const char *port_knob, ServeOne serve_one);
    // The first start listens at `at`; each start is matched by a stop,
    // and the last stop ends the listening: peers connect again, to
    // another process of the host.  A request being served still gets its
    // answer, and stop waits (1 s at most) for it: its poster would count
    // it lost.
    void start(const sockaddr_in &at);
    void stop();

private:
    void accept_loop(int listener);
    void serve_connection(int fd);
    int listen_at(const sockaddr_in &at);

    const char *nic_;
    const char *port_knob_;
    ServeOne serve_one_;
    std::mutex mutex_;
    std::condition_variable idle_;
    unsigned started_ = 0;
    int listener_ = -1;
    std::vector<int> connections_;  // served, each by its thread
    unsigned busy_ = 0;             // of them, serving a request
};

} // namespace softnic_common
