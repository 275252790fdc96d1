// spawners/local/stream.hpp - a non-blocking stream socket that carries
// protocol.hpp frames ({type, length} + bytes), buffered both ways so a
// launcher never waits on one peer.  Used for the local launcher's rank
// sockets and for the ssh spawner's control connections between hosts.
#pragma once

#include "spawners/local/protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace sluice::spawner::local {

// An owned file descriptor, closed on destruction.
class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    ~UniqueFd() { reset(); }
    UniqueFd(UniqueFd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd &operator=(UniqueFd &&other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    void reset();

private:
    int fd_ = -1;
};

// One or more whole frames, shared by every peer they go to (an allgather
// result is the same bytes for every rank).
using Frames = std::shared_ptr<const std::string>;
Frames frame_make(std::uint32_t type, std::string_view payload);

class MessageStream {
public:
    MessageStream() = default;
    explicit MessageStream(UniqueFd fd);  // makes it non-blocking

    int fd() const { return fd_.get(); }
    bool is_open() const { return static_cast<bool>(fd_); }
    // Closes the descriptor and drops unsent output; received bytes stay
    // for next() unless `drop_input`.
    void close(bool drop_input = false);

    // Reads what has arrived, at most `budget` bytes.  False when the peer
    // closed or failed (the descriptor is then closed).
    bool read_some(std::size_t budget);

    enum class Parse { none, message, oversize };
    // The next whole message received.  `oversize`: its header announced more
    // than max_message bytes (header.length says how many); the stream is out
    // of step and should be closed.
    Parse next(MessageHeader &header, std::string &payload);

    void send(Frames frames);
    void send(std::uint32_t type, std::string_view payload) { send(frame_make(type, payload)); }
    // Writes what the socket takes now.  False when the peer is gone (the
    // descriptor is then closed and the output dropped).
    bool write_some();
    bool wants_write() const { return !output_.empty(); }

private:
    struct Outgoing {
        Frames bytes;
        std::size_t sent = 0;
    };
    UniqueFd fd_;
    std::string input_;
    std::size_t parsed_ = 0;  // bytes of input_ already handed out by next()
    std::deque<Outgoing> output_;
};

} // namespace sluice::spawner::local
