// spawners/local/bootstrap_local.cpp - the rank side of spawner `local`: the
// launcher (sluicerun) forked us and holds the other end of a control socket.
// The ssh spawner's ranks speak the same protocol to their host's control
// process, under the name "ssh" (local_create_named).
#include "spawners/bootstrap.hpp"
#include "spawners/local/protocol.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <unistd.h>

namespace sluice::spawner::local {
namespace {

class LocalBootstrap final : public Bootstrap {
public:
    LocalBootstrap(const char *name, int fd, std::uint32_t rank, std::uint32_t size)
        : name_(name), fd_(fd), rank_(rank), size_(size) {}
    ~LocalBootstrap() override {
        if (fd_ >= 0) ::close(fd_);
    }
    const char *name() const override { return name_; }
    std::uint32_t rank() const override { return rank_; }
    std::uint32_t size() const override { return size_; }

    bool allgather(const void *in, std::size_t len, std::vector<std::string> &out) override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!message_send(fd_, MessageType::allgather, in, len)) return false;
        MessageType type;
        std::string payload;
        if (!message_receive(fd_, type, payload) || type != MessageType::allgather_result)
            return false;
        out.clear();
        std::size_t at = 0;
        for (std::uint32_t r = 0; r < size_; ++r) {
            std::uint32_t n;
            if (at + sizeof n > payload.size()) return false;
            std::memcpy(&n, payload.data() + at, sizeof n);
            at += sizeof n;
            if (at + n > payload.size()) return false;
            out.emplace_back(payload.data() + at, n);
            at += n;
        }
        return true;
    }
    void exit_notify(int code, bool) override {
        // No lock: this may run from a signal-driven exit while another
        // thread is in a bootstrap call; a short message write is atomic on
        // a stream socket in practice, and the exit path owns the process.
        std::int32_t c = code;
        (void)message_send(fd_, MessageType::exit_notify, &c, sizeof c);
    }
    [[noreturn]] void abort(int code) override {
        std::int32_t c = code;
        (void)message_send(fd_, MessageType::abort, &c, sizeof c);
        ::_exit(code);
    }
    void fini() override {
        std::lock_guard<std::mutex> lock(mutex_);
        (void)message_send(fd_, MessageType::fini, nullptr, 0);
    }
    void cleanup_register(const std::string &name) override {
        std::lock_guard<std::mutex> lock(mutex_);
        (void)message_send(fd_, MessageType::cleanup, name.data(), name.size());
    }

private:
    const char *name_;
    int fd_;
    std::uint32_t rank_, size_;
    std::mutex mutex_;
};

bool parse_u32(const char *s, std::uint32_t &out) {
    if (!s || !*s) return false;
    char *end = nullptr;
    errno = 0;
    unsigned long v = std::strtoul(s, &end, 10);
    if (errno || *end || v > 0xffffffffu) return false;
    out = static_cast<std::uint32_t>(v);
    return true;
}

} // namespace

bool local_probe() { return std::getenv(env_fd) != nullptr; }

std::unique_ptr<Bootstrap> local_create_named(const char *name, std::string &error);
std::unique_ptr<Bootstrap> local_create(std::string &error) { return local_create_named("local", error); }

std::unique_ptr<Bootstrap> local_create_named(const char *name, std::string &error) {
    std::uint32_t fd, rank, size;
    if (!parse_u32(std::getenv(env_fd), fd) || !parse_u32(std::getenv(env_rank), rank) ||
        !parse_u32(std::getenv(env_size), size) || size == 0 || rank >= size) {
        error = "SLUICE_LOCAL_FD, SLUICE_RANK or SLUICE_SIZE is missing or malformed; "
                "fix: start the program with sluicerun, not by hand";
        return nullptr;
    }
    if (::fcntl(static_cast<int>(fd), F_GETFD) < 0) {
        error = "the control socket SLUICE_LOCAL_FD=" + std::to_string(fd) +
                " is not open; fix: start the program with sluicerun (something else started it)";
        return nullptr;
    }
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    // Children of ranks must not think they are ranks.
    ::unsetenv(env_fd);
    ::unsetenv(env_rank);
    ::unsetenv(env_size);
    return std::make_unique<LocalBootstrap>(name, static_cast<int>(fd), rank, size);
}

} // namespace sluice::spawner::local
