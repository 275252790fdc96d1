// sluice/am_prepare.hpp - negotiated-payload AMs in C++ (the rules are
// sluice.h's, section "negotiated-payload AMs").  Included by
// <sluice/sluice.hpp>.
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace sluice {

// A prepared message: write the payload into buffer(), then commit it, or
// cancel it.  One that goes out of scope neither committed nor cancelled
// is cancelled.  At most one per thread at a time (sluice.h).
class PreparedAm {
public:
    PreparedAm() = default;
    PreparedAm(const PreparedAm &) = delete;
    PreparedAm &operator=(const PreparedAm &) = delete;
    ~PreparedAm() {
        if (live_) (void)sluice_am_cancel();
    }

    std::span<std::byte> buffer() const { return {static_cast<std::byte *>(data_), size_}; }
    void *data() const { return data_; }
    std::size_t size() const { return size_; }
    explicit operator bool() const { return live_; }

    // A Medium: the first `length` bytes of buffer(), with the arguments
    // (as many as the prepare said).  On an error it stays prepared.
    template <class... A>
    [[nodiscard]] Status commit(HandlerIndex h, std::size_t length, A... args) {
        return finish(sluice_am_commit(h, length, nullptr, pack_(args...).data(), sizeof...(A)));
    }
    // A Long, to `dest_addr` in the target's segment.
    template <class... A>
    [[nodiscard]] Status commit_long(HandlerIndex h, std::size_t length, void *dest_addr, A... args) {
        return finish(sluice_am_commit(h, length, dest_addr, pack_(args...).data(), sizeof...(A)));
    }
    [[nodiscard]] Status cancel() { return finish(sluice_am_cancel()); }

private:
    friend Status prepare_request(Category, Rank, std::size_t, std::size_t, unsigned, PreparedAm &, unsigned);
    friend Status prepare_reply(Category, Token, std::size_t, std::size_t, unsigned, PreparedAm &, unsigned);
    template <class... A>
    static std::array<std::uint32_t, sizeof...(A) ? sizeof...(A) : 1> pack_(A... a) {
        static_assert(sizeof...(A) <= SLUICE_AM_MAX_ARGS, "at most 16 AM arguments");
        return {static_cast<std::uint32_t>(a)...};
    }
    // A failed prepare sets nothing (and a live one stays live).
    Status start(sluice_status_t s) {
        if (s == SLUICE_OK) live_ = true;
        return static_cast<Status>(s);
    }
    Status finish(sluice_status_t s) {
        if (s == SLUICE_OK) live_ = false;
        return static_cast<Status>(s);
    }

    void *data_ = nullptr;
    std::size_t size_ = 0;
    bool live_ = false;
};

// `nargs`: the argument count the commit will pass.  flags: 0 or
// SLUICE_FLAG_IMMEDIATE.
[[nodiscard]] inline Status prepare_request(Category c, Rank dest, std::size_t least, std::size_t most, unsigned nargs,
                                            PreparedAm &out, unsigned flags = 0) {
    return out.start(sluice_am_prepare_request(static_cast<sluice_am_category_t>(c), dest, least, most, nargs, flags,
                                               &out.data_, &out.size_));
}
[[nodiscard]] inline Status prepare_reply(Category c, Token token, std::size_t least, std::size_t most, unsigned nargs,
                                          PreparedAm &out, unsigned flags = 0) {
    return out.start(sluice_am_prepare_reply(static_cast<sluice_am_category_t>(c), token, least, most, nargs, flags,
                                             &out.data_, &out.size_));
}
inline std::size_t max_medium_for(Rank dest, unsigned nargs) { return sluice_am_max_medium_for(dest, nargs); }
inline std::size_t max_long_for(Rank dest, unsigned nargs) { return sluice_am_max_long_for(dest, nargs); }

} // namespace sluice
