// spawners/local/stream.cpp - buffered, non-blocking frame I/O for the
// launchers (stream.hpp).
#include "spawners/local/stream.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sluice::spawner::local {

void UniqueFd::reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

Frames frame_make(std::uint32_t type, std::string_view payload) {
    auto bytes = std::make_shared<std::string>();
    MessageHeader header{type, static_cast<std::uint32_t>(payload.size())};
    bytes->reserve(sizeof header + payload.size());
    bytes->append(reinterpret_cast<const char *>(&header), sizeof header);
    bytes->append(payload);
    return bytes;
}

MessageStream::MessageStream(UniqueFd fd) : fd_(std::move(fd)) {
    if (fd_) ::fcntl(fd_.get(), F_SETFL, ::fcntl(fd_.get(), F_GETFL) | O_NONBLOCK);
}

void MessageStream::close(bool drop_input) {
    fd_.reset();
    output_.clear();
    if (drop_input) {
        input_.clear();
        parsed_ = 0;
    }
}

bool MessageStream::read_some(std::size_t budget) {
    char chunk[65536];
    while (fd_ && budget > 0) {
        ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, MSG_DONTWAIT);
        if (n < 0 && errno == ENOTSOCK) n = ::read(fd_.get(), chunk, sizeof chunk);  // a pipe
        if (n > 0) {
            input_.append(chunk, static_cast<std::size_t>(n));
            budget -= std::min<std::size_t>(budget, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        close();
        return false;
    }
    return static_cast<bool>(fd_);
}

MessageStream::Parse MessageStream::next(MessageHeader &header, std::string &payload) {
    if (input_.size() - parsed_ < sizeof header) return Parse::none;
    std::memcpy(&header, input_.data() + parsed_, sizeof header);
    if (header.length > max_message) return Parse::oversize;
    if (input_.size() - parsed_ - sizeof header < header.length) {
        // Keep only the partial message, so the buffer never grows past one.
        input_.erase(0, parsed_);
        parsed_ = 0;
        return Parse::none;
    }
    payload.assign(input_, parsed_ + sizeof header, header.length);
    parsed_ += sizeof header + header.length;
    if (parsed_ == input_.size()) {
        input_.clear();
        parsed_ = 0;
    }
    return Parse::message;
}

void MessageStream::send(Frames frames) {
    if (fd_ && frames && !frames->empty()) output_.push_back({std::move(frames), 0});
}

bool MessageStream::write_some() {
    while (fd_ && !output_.empty()) {
        Outgoing &out = output_.front();
        const char *data = out.bytes->data() + out.sent;
        const std::size_t left = out.bytes->size() - out.sent;
        ssize_t n = ::send(fd_.get(), data, left, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK) n = ::write(fd_.get(), data, left);  // a pipe
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        if (n < 0) {
            close();
            return false;
        }
        out.sent += static_cast<std::size_t>(n);
        if (out.sent == out.bytes->size()) output_.pop_front();
    }
    return static_cast<bool>(fd_);
}

} // namespace sluice::spawner::local
