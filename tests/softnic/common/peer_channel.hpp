// tests/softnic/common/peer_channel.hpp - how the two processes of a NIC's
// rules.cpp tell each other what they need out of band: a pair of pipes
// when one forked the other on one host, or, when hosts.sh runs them on two
// hosts, files in a folder both see, each written whole (a temporary beside
// it, then renamed) before it appears under its name.  Header only:
// rules.cpp is built on its own, not with the NIC.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

namespace softnic_common {

// Writes `bytes` from `data` as the file `path`, which a reader sees whole
// or not at all.  False when it cannot.
inline bool file_publish(const std::string &path, const void *data, std::size_t bytes) {
    const std::string tmp = path + ".tmp";
    FILE *f = std::fopen(tmp.c_str(), "wb");
    if (!f) return false;
    const bool written = std::fwrite(data, bytes, 1, f) == 1;
    return std::fclose(f) == 0 && written && std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Reads `bytes` into `data` from the file `path`; false while it is not
// there.
inline bool file_read(const std::string &path, void *data, std::size_t bytes) {
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    const bool got = std::fread(data, bytes, 1, f) == 1;
    std::fclose(f);
    return got;
}

enum class Hearing { heard, waiting, broken };

// Messages, in order, each read with the size it was written with: over
// the pipes, or as the folder's files "<me>-<n>" (this side's n-th) and
// "<other>-<n>" (the other side's).
class PeerChannel {
public:
    PeerChannel(int in, int out) : in_(in), out_(out) {}
    PeerChannel(std::string dir, std::string me, std::string other)
        : dir_(std::move(dir)), me_(std::move(me)), other_(std::move(other)) {}

    // False when the exchange broke.
    bool tell(const void *data, std::size_t bytes) {
        if (dir_.empty()) return ::write(out_, data, bytes) == static_cast<ssize_t>(bytes);
        return file_publish(dir_ + "/" + me_ + "-" + std::to_string(told_++), data, bytes);
    }

    // The other side's next message, if it comes within about `wait_ms`;
    // broken when its pipe closed.
    Hearing try_hear(void *data, std::size_t bytes, int wait_ms) {
        if (dir_.empty()) {
            pollfd p{in_, POLLIN, 0};
            if (::poll(&p, 1, wait_ms) <= 0) return Hearing::waiting;
            return ::read(in_, data, bytes) == static_cast<ssize_t>(bytes) ? Hearing::heard : Hearing::broken;
        }
        if (file_read(dir_ + "/" + other_ + "-" + std::to_string(heard_), data, bytes)) {
            ++heard_;
            return Hearing::heard;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
        return Hearing::waiting;
    }

    // Waits `timeout_ms` at most; false when nothing came or the exchange
    // broke.
    bool hear(void *data, std::size_t bytes, int timeout_ms) {
        for (int waited = 0; waited < timeout_ms; waited += 10) {
            const Hearing h = try_hear(data, bytes, 10);
            if (h != Hearing::waiting) return h == Hearing::heard;
        }
        return false;
    }

private:
    int in_ = -1, out_ = -1;
    std::string dir_, me_, other_;
    int told_ = 0, heard_ = 0;
};

} // namespace softnic_common
