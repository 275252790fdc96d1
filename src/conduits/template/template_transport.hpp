// src/conduits/template/template_transport.hpp - the template conduit's
// transport class, its constants and the small types its hooks share.
// The hooks are defined in template_setup.cpp (init, segment, memory
// domain, teardown) and template.cpp (sends, polls, RDMA), the split every
// conduit folder follows; each definition says what a real conduit does
// there.
#pragma once

#include "conduits/transport.hpp"

#include <sys/mman.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::conduit::template_::detail {

// Messages each queue may hold before send_impl answers not_ready.  It
// stands for the bounded space a real wire has (ring slots, preposted
// receive buffers, send descriptors) and keeps the retry path exercised.
constexpr std::size_t queue_depth = 256;

// Largest Medium payload.  A real conduit derives it from its eager buffer
// or MTU size minus its header.
constexpr std::size_t medium_limit = 64 * 1024;

// Messages one poll_impl call delivers at most, so a handler that sends to
// its own rank cannot keep a poll from returning.
constexpr int poll_budget = 64;

constexpr unsigned max_args = 16;

// RDMA operations the "NIC" holds before put_impl/get_impl answer not_ready
// (a real conduit: send-queue depth, completion-queue size).
constexpr std::size_t rdma_depth = 64;

// Largest Long packed into one message; larger Longs go as two-part Longs
// (payload by put_rc_impl, header by AM; src/am).  A real conduit puts its
// eager-buffer size here.
constexpr std::size_t packed_long_limit = 64 * 1024;

// The capabilities the template declares (template_setup.cpp says what
// each field means to the layers above).
Capabilities declared_capabilities(bool registration);

// One message in flight: the header, its arguments and a copy of the
// payload (the sender's buffer is valid only during the send call).
struct QueuedMessage {
    AmHeader header;
    std::array<std::uint32_t, max_args> args{};
    std::vector<std::byte> payload;
};

// The segment: an anonymous private mapping, unmapped on destruction.  A
// conduit whose peers map segments (like smp) uses shared memory instead; a
// conduit with RDMA registers this memory and publishes the remote key.
class AnonymousMapping {
public:
    AnonymousMapping() = default;
    AnonymousMapping(const AnonymousMapping &) = delete;
    AnonymousMapping &operator=(const AnonymousMapping &) = delete;
    ~AnonymousMapping() { reset(); }

    bool map(std::size_t bytes) {
        void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                         0);
        if (p == MAP_FAILED) return false;
        base_ = p;
        size_ = bytes;
        return true;
    }
    void reset() {
        if (base_) ::munmap(base_, size_);
        base_ = nullptr;
        size_ = 0;
    }
    void *base() const { return base_; }
    std::size_t size() const { return size_; }
    bool contains(std::uint64_t address, std::uint64_t length) const {
        auto begin = reinterpret_cast<std::uint64_t>(base_);
        return address >= begin && length <= size_ && address - begin <= size_ - length;
    }

private:
    void *base_ = nullptr;
    std::size_t size_ = 0;
};

class TemplateTransport final : public Transport {
public:
    explicit TemplateTransport(bool registration)
        : Transport(registration ? "template_registered" : "template", declared_capabilities(registration)) {
        regions_.emplace_back();  // handle 0 names no registration
    }
    ~TemplateTransport() override { release(); }

protected:
    Status init_impl() override;
    Status send_impl(Rank peer, const AmMessage &m) override;
    int poll_impl(PollMode mode) override;
    Status segment_create_impl(std::size_t size, void **base, std::string &key) override;
    Status segment_connect_impl(const std::vector<SegmentRecord> &all) override;

    // After a barrier that follows segment_connect_impl: drop what served
    // only the set-up (unlink shm names, free connect files).  Nothing here.
    void setup_done_impl() override {}

    // Where `peer`'s segment is mapped in this process, only for load_store
    // conduits.  The template does not claim load_store (see
    // declared_capabilities), so it answers null for every peer.
    void *peer_segment_view_impl(Rank) const override { return nullptr; }
    Status mem_register_impl(void *base, std::size_t size, std::uint64_t, std::uint64_t &handle,
                             std::string &rkey) override;
    void mem_deregister_impl(std::uint64_t handle) override;
    Status key_unpack_impl(Rank peer, std::uint64_t base, std::uint64_t size, const std::string &rkey) override;
    Status put_impl(Rank peer, void *remote, const void *local, std::size_t n, RmaOp *op, bool &later) override;
    Status get_impl(void *local, Rank peer, const void *remote, std::size_t n, RmaOp *op, bool &later) override;
    Status put_rc_impl(Rank peer, void *remote, const void *local, std::size_t n, const AmMessage &notify,
                       RmaOp *op, bool &later) override;
    Status barrier_impl(bool (*poll_fn)(void *), void *context) override;

    // The handler running on this thread called exit and will never return.
    // A conduit that delivers in place from its receive buffer (a ring slot,
    // a preposted buffer) releases that slot here, or hands the message back,
    // so the queue it came from keeps moving for the exit protocol.  The
    // template pops each message before delivering it: nothing is held; it
    // only forgets that this thread was delivering (its nested-poll rule).
    void dispatch_abandon_impl() override;

    // Releases everything in reverse order of creation: segment
    // registrations, connections, buffers, the device.  Core calls it once,
    // after the last AM; the destructor calls it again, so it is idempotent.
    void fini_impl() override { release(); }

private:
    Status message_copy(const AmMessage &m, QueuedMessage &q) const;

    // One posted RDMA operation of the template's "NIC".
    struct Rdma {
        enum Kind : std::uint8_t { put, get };
        Kind kind = put;
        std::uint64_t offset = 0;  // into the peer's (here: my) segment
        void *local = nullptr;
        std::size_t n = 0;
        RmaOp *op = nullptr;
        bool notify = false;
        QueuedMessage message;     // the notification of a put_rc
    };
    struct Region {
        std::uint64_t base = 0;
        std::size_t size = 0;
        bool live = false;
        char *alias = nullptr;  // the pages registered, mapped again (shared memory)
    };
    struct PackedKey {
        std::uint64_t index = 0;
        std::uint64_t check = 0;
    };
    static constexpr std::uint64_t key_check = 0x5a17ce5a17ce5a17ull;
    Status rdma_post(Rank peer, Rdma::Kind kind, void *remote, void *local, std::size_t n, const AmMessage *notify,
                     RmaOp *op, bool &later);
    Status local_check(void *local, std::size_t n, std::uint64_t handle, void *&reach);
    int rdma_progress();
    void land_and_deliver(QueuedMessage &q);  // marks this thread as delivering here, then land
    void land(QueuedMessage &q);
    void release();

    std::mutex mutex_;
    std::deque<QueuedMessage> requests_;
    std::deque<QueuedMessage> replies_;
    std::deque<Rdma> rdma_;
    std::vector<Region> regions_;
    std::uint64_t peer_key_ = 0;  // the region index my (only) peer published
    AnonymousMapping segment_;
};

} // namespace sluice::conduit::template_::detail
