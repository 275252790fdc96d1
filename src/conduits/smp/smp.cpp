// src/conduits/smp/smp.cpp - the shared-memory conduit.
//
// One host region per host, created by the host's lowest rank: a header, the
// barrier flags and, for every ordered pair of local ranks (self included), a
// request queue and a reply queue.  A queue is two rings (ring.hpp): a line
// ring of four 64-byte lines, through which every record passes in order, and
// a large ring for records longer than a line, each announced by a marker in
// the line ring.  Every rank's segment is its own
// shared-memory object mapped by every local rank, so Put/Get and AM Long
// payloads are plain memcpy.  So is every rank's payload pool, through which
// its Medium payloads longer than a page go to any local peer (PoolLayout).  Objects are created O_CREAT|O_EXCL, mode 0600,
// under random names, and unlinked as soon as every local rank has mapped
// them; the launcher also learns each name, to unlink it after a crash.
#include "conduits/smp/smp.hpp"

#include "base/flag.hpp"
#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "conduits/smp/ring.hpp"
#include "core/topology.hpp"
#include "spawners/bootstrap.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <cstddef>
#include <cstdio>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace sluice::conduit::smp {
namespace {

constexpr std::uint64_t region_magic = 0x534c55494345534dull;  // "SLUICESM"
constexpr std::size_t record_header = 16;  // control word, handler..flags, length, credit byte, unused
constexpr unsigned line_args = (line_size - record_header) / 4;  // a Short with at most 12 arguments is one 64-byte line

// A Long record's target address follows the arguments, 8-aligned.
constexpr std::size_t long_address_at(unsigned nargs) {
    return (record_header + 4u * nargs + 7) & ~std::size_t{7};
}
constexpr std::size_t max_long_bytes = 1u << 20;
constexpr std::size_t max_medium_limit = 1u << 20;
constexpr unsigned max_barrier_rounds = 16;

// Memory this rank reads most (the queues it consumes, its segment) on its
// own NUMA node when it is bound within one (core/topology.hpp); what was
// done goes to SLUICE_VERBOSE.
void place_local(const char *what, void *addr, std::size_t length) {
    std::string said;
    (void)core::topology::memory_local(addr, length, said);
    base::say("smp: %s: %s", what, said.c_str());
}

// The line ring: four lines.  A message that waits alone (a round trip)
// then lands in one of the same four lines each time, and such a line moves
// between two cores faster than a line new to the exchange: driven
// directly, a 64 KiB ring costs 1.1-1.25x a bare cache-line ping-pong and a
// ring of four lines 1.0x; in the runtime the AM Short round trip dropped
// by 10-15 % (src/conduits/smp/README.md, Design).  Floods still stream:
// the consumer hands its head back after every line (ring.hpp).
constexpr std::size_t line_ring_bytes = 4 * line_size;
// The category value of a marker: the record is the next one of the large ring.
constexpr std::uint32_t marker_category = 3;
constexpr std::uint32_t marker_info = marker_category << 8;
constexpr bool is_marker(std::uint32_t info) { return (info >> 8 & 0xff) == marker_category; }
// The category value of a Medium whose header and arguments are this line
// and whose payload is the next raw run of the large ring.
constexpr std::uint32_t aside_category = 4;
// The same for a prepared Medium (negotiated payload): its raw run is the
// size reserved at prepare, in bytes 13..15, since the payload may be
// shorter; with `flag_skip` in its flags it was cancelled: nothing runs.
constexpr std::uint32_t prepared_category = 5;
constexpr std::uint8_t flag_skip = 0x80;
constexpr bool is_aside(std::uint32_t info) { return (info >> 8 & 0xfe) == aside_category; }
// The category value of a Medium whose header and arguments are this line
// and whose payload is a block of the sender's payload pool: the block's
// number in bytes 13..15.
constexpr std::uint32_t pooled_category = 6;
constexpr bool is_pooled(std::uint32_t info) { return (info >> 8 & 0xff) == pooled_category; }

// A Medium payload longer than this goes through the sender's pool.
constexpr std::size_t pool_least = 4096;

// A rank's payload pool: a busy word per block, each on its own line, then
// the blocks, the first half for requests and the second for replies (so a
// reply never waits for a block that only a request handler would free).
// The sender takes the next free block of its half round the pool, and the
// receiver frees it after the handler.  A round trip of large Mediums then
// writes lines the reader last touched a pool ago, long out of its cache,
// not lines it read a few messages before, and blocks of whole pages with
// one page more do not all start in the same cache sets: 16 KiB round trips
// of the bare copies run 3.5 us through a 64 KiB ring and 1.2 us through a
// 2 MiB pool here (tests/perf/copy-pattern, docs/performance.md).
struct alignas(line_size) PoolFlag {
    std::atomic<std::uint32_t> busy;
};
struct PoolLayout {
    std::size_t stride = 0;  // bytes per block: whole pages, one more than the largest payload needs
    std::size_t half = 0;    // blocks per half
    std::size_t data = 0;    // where the blocks start: after the flags, on a page
    std::size_t bytes = 0;   // the whole pool; 0: no pool

    // The layout of `pool` bytes for payloads up to `max_medium`: at least
    // two blocks per half.
    static PoolLayout of(std::size_t pool, std::size_t max_medium) {
        PoolLayout l;
        if (pool == 0) return l;
        const std::size_t page = SLUICE_PAGE_SIZE;
        l.stride = (max_medium + page - 1) / page * page + page;
        l.half = std::max<std::size_t>(pool / l.stride / 2, 2);
        l.data = (2 * l.half * sizeof(PoolFlag) + page - 1) / page * page;
        l.bytes = l.data + 2 * l.half * l.stride;
        return l;
    }
};

// One direction of one queue: where its two rings start in the region.
constexpr std::size_t queue_footprint(std::size_t ring) {
    return ring_footprint(line_ring_bytes) + ring_footprint(ring);
}

struct alignas(line_size) RegionHeader {
    std::uint64_t magic;
    std::uint32_t local_count;
    std::uint32_t barrier_rounds;
    std::uint64_t ring_bytes;
    std::uint64_t pool_bytes;
    std::uint32_t wait_block;  // SLUICE_WAIT=block on this host (every rank the same)
};

// Block mode (base::idle): how many threads of a rank sleep, on a line of
// its own.  A sender that commits a record to a rank whose count is not 0
// rings that rank's doorbell, a datagram to its abstract-namespace socket.
struct alignas(line_size) WakeWord {
    std::atomic<std::uint32_t> sleepers;
};

struct alignas(line_size) BarrierFlag {
    std::atomic<std::uint64_t> epoch;
};

// A shared-memory mapping and, while set-up lasts, its name.
class SharedObject {
public:
    SharedObject() = default;
    SharedObject(const SharedObject &) = delete;
    SharedObject &operator=(const SharedObject &) = delete;
    ~SharedObject() { reset(); }

    // What every name of the job's shared objects begins with.
    static std::string job_prefix(const std::string &job) { return "/sluice." + job + "."; }

    Status create(const std::string &job, const char *what, std::size_t bytes, std::string &error) {
        for (int attempt = 0; attempt < 8; ++attempt) {
            unsigned char r[8];
            if (::getrandom(r, sizeof r, 0) != sizeof r) { error = "getrandom failed"; return Status::resource; }
            char hex[17];
            for (int i = 0; i < 8; ++i) std::snprintf(hex + 2 * i, 3, "%02x", r[i]);
            std::string name = job_prefix(job) + what + "." + hex;
            int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
            if (fd < 0 && errno == EEXIST) continue;
            if (fd < 0) { error = "shm_open(" + name + "): " + std::strerror(errno); return Status::resource; }
            name_ = name;
            owner_ = true;
            Status s = map_fd(fd, bytes, true, error);
            ::close(fd);
            return s;
        }
        error = "could not find a free shared-memory name";
        return Status::resource;
    }

    Status open(const std::string &name, std::size_t bytes, std::string &error) {
        int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
        if (fd < 0) { error = "shm_open(" + name + "): " + std::strerror(errno); return Status::resource; }
        Status s = map_fd(fd, bytes, false, error);
        ::close(fd);
        return s;
    }

    void unlink() {
        if (owner_ && !name_.empty()) ::shm_unlink(name_.c_str());
        owner_ = false;
    }
    void reset() {
        unlink();
        if (base_) ::munmap(base_, bytes_);
        base_ = nullptr;
        bytes_ = 0;
    }
    char *base() const { return static_cast<char *>(base_); }
    std::size_t bytes() const { return bytes_; }
    const std::string &name() const { return name_; }

private:
    Status map_fd(int fd, std::size_t bytes, bool size_it, std::string &error) {
        if (size_it && ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
            error = "ftruncate of " + std::to_string(bytes) + " bytes: " + std::strerror(errno) +
                    " (is /dev/shm large enough?)";
            return Status::resource;
        }
        void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) { error = std::string("mmap: ") + std::strerror(errno); return Status::resource; }
        base_ = p;
        bytes_ = bytes;
        return Status::ok;
    }

    void *base_ = nullptr;
    std::size_t bytes_ = 0;
    std::string name_;
    bool owner_ = false;
};

using base::flag_try_take;

// Spinlock in private memory, serializing the producers of one ring.
using base::SpinLock;

struct alignas(line_size) Outgoing {
    SpinLock lock;         // for the request queue (see record_begin for replies)
    RingProducer line[2];  // [0] requests, [1] replies: every record or its marker
    RingProducer ring[2];  // records longer than a line
};

// A queue I consume (its line ring and large ring) and the flag its
// consumer holds.
struct InRing {
    std::atomic<bool> busy{false};
    RingConsumer line;
    RingConsumer ring;
    Rank source = 0;       // the producer
    char *pool = nullptr;  // the producer's payload pool, as mapped here
};

struct alignas(line_size) Incoming {
    InRing q[2];  // [0] requests, [1] replies
};

// The ring whose head record this thread is dispatching, so exit from
// inside its handler can hand the record back (dispatch_abandon).
thread_local InRing *current_dispatch = nullptr;

// Rings hold at least two of the largest records, so a full-size Medium
// always fits once the consumer catches up (64 KiB rings hold three 16 KiB
// Mediums; Shorts pass through the four-line ring, four at a time), and at
// most 256 MiB (ring.hpp's size field).
std::size_t ring_bytes_from_knobs(std::size_t &max_medium) {
    max_medium = std::clamp<std::size_t>(base::knob_size(knob(Knob::SMP_MAX_MEDIUM)), 512, max_medium_limit);
    const std::size_t largest_record = line_align(record_header + 4 * 16 + 8 + max_medium);
    std::size_t ring = std::max(base::knob_size(knob(Knob::SMP_RING_SIZE)), 2 * largest_record);
    std::size_t pow2 = SLUICE_PAGE_SIZE;
    while (pow2 < ring && pow2 < max_ring_bytes) pow2 <<= 1;
    return pow2;
}

unsigned rounds_for(std::size_t n) {
    unsigned r = 0;
    while ((std::size_t{1} << r) < n) ++r;
    return r;
}

std::size_t region_bytes(std::size_t local, std::size_t ring) {
    return sizeof(RegionHeader) + local * max_barrier_rounds * sizeof(BarrierFlag) + local * sizeof(WakeWord) +
           local * local * 2 * queue_footprint(ring);
}

class SmpTransport final : public Transport {
public:
    SmpTransport() : Transport("smp", Capabilities{}) {}
    ~SmpTransport() override {
        fini_impl();
        if (doorbell_ >= 0) ::close(doorbell_);
    }

protected:
    Status init_impl() override {
        const TransportSetup &s = setup();
        std::size_t max_medium = 0;
        ring_bytes_ = ring_bytes_from_knobs(max_medium);
        pool_ = PoolLayout::of(base::knob_size(knob(Knob::SMP_PAYLOAD_POOL)), max_medium);
        Capabilities &caps = capabilities_mutable();
        caps.max_medium = max_medium;
        caps.max_long = max_long_bytes;
        // Longs up to half the largest go as one ring record (the payload
        // copied into the peer's segment, then the header); larger ones as
        // two-part Longs (src/am): the same copy by put_impl, then two AMs.
        caps.max_packed_long = max_long_bytes / 2;
        caps.native_rma = true;
        caps.load_store = true;
        caps.inline_limit = max_medium;
        caps.native_barrier = true;
        caps.prepare_medium = true;
        caps.prepare_max_args = line_args;

        locals_ = s.peers;  // ascending, includes me
        local_index_.assign(s.size, -1);
        for (std::size_t i = 0; i < locals_.size(); ++i) local_index_[locals_[i]] = static_cast<int>(i);
        me_ = static_cast<std::size_t>(local_index_[s.rank]);
        const std::size_t local = locals_.size();
        rounds_ = rounds_for(local);
        block_ = base::idle_action == base::IdleAction::block;
        if (block_) {
            if (Status st = doorbell_open(); st != Status::ok) return st;
        }

        // The host's lowest rank creates the region; everyone learns its
        // name through one bootstrap allgather.
        std::string error, name;
        const std::size_t bytes = region_bytes(local, ring_bytes_);
        s.bootstrap->cleanup_register_job(SharedObject::job_prefix(s.job_id));
        if (me_ == 0) {
            if (Status st = region_.create(s.job_id, "host", bytes, error); st != Status::ok)
                return base::report(st, "init (smp)", "raise the /dev/shm size or lower SLUICE_SMP_RING_SIZE",
                                    "cannot create the host region of %zu bytes: %s", bytes, error.c_str());
            s.bootstrap->cleanup_register(region_.name());
            auto *h = reinterpret_cast<RegionHeader *>(region_.base());
            h->local_count = static_cast<std::uint32_t>(local);
            h->barrier_rounds = rounds_;
            h->ring_bytes = ring_bytes_;
            h->pool_bytes = pool_.bytes;
            h->wait_block = block_;
            h->magic = region_magic;
            name = region_.name();
        }
        std::vector<std::string> names;
        if (!s.bootstrap->allgather(name.data(), name.size(), names))
            return base::report(Status::bootstrap, "init (smp)", "check that every rank started", "allgather of the host region name failed");
        if (me_ != 0) {
            if (Status st = region_.open(names[locals_[0]], bytes, error); st != Status::ok)
                return base::report(st, "init (smp)", "check /dev/shm", "cannot map the host region: %s", error.c_str());
            auto *h = reinterpret_cast<RegionHeader *>(region_.base());
            if (h->magic != region_magic || h->local_count != local || h->ring_bytes != ring_bytes_ ||
                h->pool_bytes != pool_.bytes)
                return base::report(Status::state, "init (smp)",
                                    "give every rank the same SLUICE_SMP_RING_SIZE, SLUICE_SMP_MAX_MEDIUM and "
                                    "SLUICE_SMP_PAYLOAD_POOL",
                                    "the host region's layout differs from this rank's");
            if (h->wait_block != static_cast<std::uint32_t>(block_))
                return base::report(Status::state, "init (smp)", "give every rank of a host the same SLUICE_WAIT",
                                    "rank %u waits by %s, rank %u (this host's first) by %s", s.rank,
                                    block_ ? "blocking" : "spinning", locals_[0], block_ ? "spinning" : "blocking");
        }
        if (Status st = pools_map(); st != Status::ok) return st;
        if (!s.bootstrap->barrier())
            return base::report(Status::bootstrap, "init (smp)", nullptr, "bootstrap barrier failed");
        region_.unlink();  // every local rank has it mapped now
        pool_mine_.unlink();

        char *base = region_.base();
        flags_ = reinterpret_cast<BarrierFlag *>(base + sizeof(RegionHeader));
        wake_ = reinterpret_cast<WakeWord *>(base + sizeof(RegionHeader) + local * max_barrier_rounds * sizeof(BarrierFlag));
        char *rings = reinterpret_cast<char *>(wake_ + local);
        auto line_at = [&](std::size_t dst, std::size_t src, int kind) {
            return reinterpret_cast<RingShared *>(rings + ((dst * local + src) * 2 + kind) * queue_footprint(ring_bytes_));
        };
        auto ring_at = [&](std::size_t dst, std::size_t src, int kind) {
            return reinterpret_cast<RingShared *>(reinterpret_cast<char *>(line_at(dst, src, kind)) +
                                                  ring_footprint(line_ring_bytes));
        };
        // The queues this rank consumes, on its own NUMA node.
        place_local("queues in", line_at(me_, 0, 0), local * 2 * queue_footprint(ring_bytes_));
        out_ = std::vector<Outgoing>(local);
        in_ = std::vector<Incoming>(local);
        for (std::size_t p = 0; p < local; ++p) {
            for (int kind = 0; kind < 2; ++kind) {
                out_[p].line[kind].attach(line_at(p, me_, kind), line_ring_bytes, false);
                out_[p].ring[kind].attach(ring_at(p, me_, kind), ring_bytes_, true);
                in_[p].q[kind].line.attach(line_at(me_, p, kind), line_ring_bytes);
                in_[p].q[kind].ring.attach(ring_at(me_, p, kind), ring_bytes_);
            }
            in_[p].q[0].source = in_[p].q[1].source = locals_[p];
            in_[p].q[0].pool = in_[p].q[1].pool = pool_views_[p];
        }
        // The scan order: every peer's rings, then my own.
        for (int mode = 0; mode < 2; ++mode) {
            std::vector<InRing *> &scan = scan_[mode];
            const auto add = [&](Incoming &in) {
                if (mode == 0) scan.push_back(&in.q[0]);
                scan.push_back(&in.q[1]);
            };
            scan.clear();
            for (std::size_t p = 0; p < local; ++p)
                if (p != me_) add(in_[p]);
            scan_peers_[mode] = scan.size();
            add(in_[me_]);
        }
        views_.assign(s.size, nullptr);
        segment_bases_.assign(s.size, 0);
        return Status::ok;
    }

    // A Medium longer than a line whose header and arguments fit one goes
    // as that line with its payload aside, in the large ring: the consumer
    // then reads the line it polls and the payload, not a marker first and
    // the record only after it.  Each way is compiled on its own, so the
    // others (a Long) carry nothing of it.
    Status send_impl(Rank peer, const AmMessage &m) override {
        const AmHeader &h = m.header;
        const std::size_t args_end = record_header + 4u * h.nargs;
        if (h.category == AmCategory::medium && args_end <= line_size && args_end + h.payload_length > line_size) {
            if (h.payload_length > pool_least && pool_.bytes) return send_pooled(peer, m);
            return send_record<true>(peer, m);
        }
        return send_record<false>(peer, m);
    }
    // A Medium whose payload goes in a block of my pool: the line first (so
    // a full queue takes no block), then the block, the copy, the commit.
    Status send_pooled(Rank peer, const AmMessage &m) {
        const AmHeader &h = m.header;
        Outgoing *o;
        RingSlot none;
        const RingSlot slot = record_begin(peer, h.flags, record_header + 4u * h.nargs, o, none);
        if (__builtin_expect(!slot.at, 0)) return Status::not_ready;
        const unsigned kind = h.flags & am_flag_reply;
        const std::size_t block = pool_take(kind);
        if (__builtin_expect(block == no_block, 0)) {
            if (kind == 0) o->lock.unlock();
            return Status::not_ready;
        }
        std::memcpy(pool_block(pool_mine_.base(), block), m.payload, h.payload_length);
        char *r = slot.at;
        const auto length = static_cast<std::uint32_t>(h.payload_length);
        std::memcpy(r + 8, &length, 4);
        r[12] = static_cast<char>(h.credit);
        for (int i = 0; i < 3; ++i) r[13 + i] = static_cast<char>(block >> 8 * i);
        record_args(r, m.args, h.nargs);
        record_end(*o, h.flags, slot, none, record_info(h.handler, pooled_category, h.nargs, h.flags));
        return Status::ok;
    }
    template <bool aside> Status send_record(Rank peer, const AmMessage &m) {
        const AmHeader &h = m.header;
        const std::size_t args_end = record_header + 4u * h.nargs;
        std::size_t size = args_end;
        if (h.category == AmCategory::long_)
            size = long_address_at(h.nargs) + 8;
        else if (h.category == AmCategory::medium && !aside)
            size = args_end + h.payload_length;
        Outgoing *o;
        RingSlot other;
        const RingSlot slot = record_begin(peer, h.flags, size, o, other, aside ? h.payload_length : 0);
        if (__builtin_expect(!slot.at, 0)) return Status::not_ready;
        char *r = slot.at;
        const auto length = static_cast<std::uint32_t>(h.payload_length);
        std::memcpy(r + 8, &length, 4);
        r[12] = static_cast<char>(h.credit);
        record_args(r, m.args, h.nargs);
        if (h.category == AmCategory::long_) {
            std::memcpy(r + long_address_at(h.nargs), &h.dest_addr, 8);
            // The payload lands in the target's segment before the header
            // is published, so the handler sees it.
            if (h.payload_length)
                std::memcpy(translate(peer, h.dest_addr), m.payload, h.payload_length);
        } else if (h.category == AmCategory::medium && h.payload_length) {
            std::memcpy(aside ? other.at : r + args_end, m.payload, h.payload_length);
        }
        const std::uint32_t category = aside ? aside_category : static_cast<std::uint32_t>(h.category);
        record_end(*o, h.flags, slot, other, record_info(h.handler, category, h.nargs, h.flags), aside);
        return Status::ok;
    }

    // Negotiated payload: the Medium's line and its raw run in the large
    // ring are reserved (the request queue's lock held, as a send holds it)
    // and the caller writes the payload into the run; commit writes the line
    // and publishes both, as a Medium with its payload aside.
    Status prepare_impl(PreparedSend &p, std::size_t least, std::size_t most) override {
        Outgoing *o;
        RingSlot raw;
        const std::size_t line = record_header + 4u * p.nargs;
        if (most > pool_least && pool_.bytes) return prepare_pooled(p, most, line);
        std::size_t size = most;
        // A raw run of 0 bytes would be no run: reserve a byte at least.
        RingSlot slot = record_begin(p.peer, p.flags, line, o, raw, std::max<std::size_t>(size, 1));
        if (!slot.at && least < most) {
            size = least;
            slot = record_begin(p.peer, p.flags, line, o, raw, std::max<std::size_t>(size, 1));
        }
        if (!slot.at) return Status::not_ready;
        p.buffer = raw.at;
        p.size = size;
        p.state[0] = reinterpret_cast<std::uintptr_t>(slot.at);
        p.state[1] = std::uint64_t{slot.span} << 32 | slot.control;
        p.state[2] = reinterpret_cast<std::uintptr_t>(raw.at);
        p.state[3] = std::uint64_t{raw.span} << 32 | raw.control;
        p.state[4] = std::max<std::size_t>(size, 1);
        p.state[5] = 0;
        return Status::ok;
    }
    // The same with the payload in a block of my pool (state[5] set): the
    // line is reserved first, then the block, which holds `most` bytes.
    Status prepare_pooled(PreparedSend &p, std::size_t most, std::size_t line) {
        Outgoing *o;
        RingSlot none;
        const RingSlot slot = record_begin(p.peer, p.flags, line, o, none);
        if (!slot.at) return Status::not_ready;
        const unsigned kind = p.flags & am_flag_reply;
        const std::size_t block = pool_take(kind);
        if (block == no_block) {
            if (kind == 0) o->lock.unlock();
            return Status::not_ready;
        }
        p.buffer = pool_block(pool_mine_.base(), block);
        p.size = most;
        p.state[0] = reinterpret_cast<std::uintptr_t>(slot.at);
        p.state[1] = std::uint64_t{slot.span} << 32 | slot.control;
        p.state[4] = block;
        p.state[5] = 1;
        return Status::ok;
    }
    void commit_impl(PreparedSend &p, const AmMessage &m) override {
        const AmHeader &h = m.header;
        prepared_publish(p, h.handler, h.flags, h.credit, static_cast<std::uint32_t>(h.payload_length), m.args, h.nargs);
    }
    // A record the receiver skips keeps both rings in step: the raw run,
    // and any filler its reservation wrote, are consumed as usual (a pool
    // block is freed by the receiver, as after a handler).
    void cancel_impl(PreparedSend &p) override {
        prepared_publish(p, 0, static_cast<std::uint8_t>((p.flags & am_flag_reply) | flag_skip), 0, 0, nullptr, 0);
    }
    void prepared_publish(const PreparedSend &p, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                          std::uint32_t length, const std::uint32_t *args, unsigned nargs) {
        const RingSlot slot{reinterpret_cast<char *>(p.state[0]), static_cast<std::uint32_t>(p.state[1]),
                            static_cast<std::uint32_t>(p.state[1] >> 32)};
        const RingSlot raw{reinterpret_cast<char *>(p.state[2]), static_cast<std::uint32_t>(p.state[3]),
                           static_cast<std::uint32_t>(p.state[3] >> 32)};
        char *r = slot.at;
        std::memcpy(r + 8, &length, 4);
        r[12] = static_cast<char>(credit);
        // Bytes 13..15: the raw run reserved (at most 1 MiB), or the block.
        const auto reserved = static_cast<std::uint32_t>(p.state[4]);
        for (int i = 0; i < 3; ++i) r[13 + i] = static_cast<char>(reserved >> 8 * i);
        record_args(r, args, nargs);
        Outgoing &o = out_[static_cast<std::size_t>(local_index_[p.peer])];
        if (p.state[5])
            record_end(o, flags, slot, RingSlot{}, record_info(handler, pooled_category, nargs, flags));
        else
            record_end(o, flags, slot, raw, record_info(handler, prepared_category, nargs, flags), true);
    }

    // The latency path, kept to what a Short of one line to another rank
    // needs while the line ring has room: no calls.  Anything else (myself,
    // more than 12 arguments, another thread holding the request queue, a
    // full ring) goes the general way.
    Status send_short_impl(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                           const std::uint32_t *args, unsigned nargs) override {
        const auto li = static_cast<std::size_t>(local_index_[peer]);
        const unsigned kind = flags & am_flag_reply;
        Outgoing &o = out_[li];
        if (__builtin_expect(li != me_ && nargs <= line_args && (kind || flag_try_take(o.lock.flag())), 1)) {
            const RingSlot slot = o.line[kind].reserve_inline(record_header + 4u * nargs);
            if (__builtin_expect(slot.at != nullptr, 1)) {
                slot.at[12] = static_cast<char>(credit);
                record_args(slot.at, args, nargs);
                record_end(o, flags, slot, RingSlot{}, record_info(handler, 0, nargs, flags));
                return Status::ok;
            }
            if (!kind) o.lock.unlock();
        }
        return send_short_general(peer, handler, flags, credit, args, nargs);
    }

    [[gnu::noinline]] Status send_short_general(Rank peer, std::uint8_t handler, std::uint8_t flags,
                                                 std::uint8_t credit, const std::uint32_t *args, unsigned nargs) {
        Outgoing *o;
        RingSlot marker;
        const RingSlot slot = record_begin(peer, flags, record_header + 4u * nargs, o, marker);
        if (__builtin_expect(!slot.at, 0)) return Status::not_ready;
        slot.at[12] = static_cast<char>(credit);
        record_args(slot.at, args, nargs);
        record_end(*o, flags, slot, marker, record_info(handler, 0, nargs, flags));
        return Status::ok;
    }

    // The empty poll is the common case: test each ring's next control word
    // in a leaf scan and drain only rings with something in them.  My own
    // rings, last in the scan, are looked at only once a message to myself
    // has been sent.
    int poll_impl(PollMode mode) override {
        const int m = mode == PollMode::all ? 0 : 1;
        InRing *const *scan = scan_[m].data();
        const std::size_t end = self_used_.load(std::memory_order_relaxed) ? scan_[m].size() : scan_peers_[m];
        for (std::size_t i = 0; i < end; ++i)
            if (__builtin_expect(scan[i]->line.ready(), 0)) return poll_from(scan, i, end);
        return 0;
    }

    Status segment_create_impl(std::size_t size, void **base, std::string &key) override {
        if (size == 0) {
            *base = nullptr;
            key.clear();
            return Status::ok;
        }
        std::string error;
        if (Status st = segment_.create(setup().job_id, "seg", size, error); st != Status::ok)
            return base::report(st, "segment_attach (smp)", "ask for a smaller segment or enlarge /dev/shm",
                                "cannot create a %zu-byte segment: %s", size, error.c_str());
        setup().bootstrap->cleanup_register(segment_.name());
        place_local("segment", segment_.base(), size);
        *base = segment_.base();
        key = segment_.name();
        return Status::ok;
    }

    Status segment_connect_impl(const std::vector<SegmentRecord> &all) override {
        peer_segments_.resize(setup().size);
        for (Rank r : locals_) {
            const SegmentRecord &rec = all[r];
            segment_bases_[r] = rec.base;
            if (rec.size == 0) continue;
            if (r == setup().rank) {
                views_[r] = segment_.base();
                continue;
            }
            peer_segments_[r] = std::make_unique<SharedObject>();
            std::string error;
            if (Status st = peer_segments_[r]->open(rec.key, rec.size, error); st != Status::ok)
                return base::report(st, "segment_attach (smp)", "check /dev/shm and the process limits on mappings",
                                    "cannot map the segment of rank %u: %s", r, error.c_str());
            views_[r] = peer_segments_[r]->base();
        }
        return Status::ok;
    }

    void setup_done_impl() override { segment_.unlink(); }
    // The queues this rank consumes, a request and a reply queue from each
    // local rank (the other ranks' payload pools are theirs).
    std::size_t receive_buffer_bytes_impl() override { return in_.size() * 2 * queue_footprint(ring_bytes_); }

    void *peer_segment_view_impl(Rank peer) const override {
        return peer < views_.size() ? views_[peer] : nullptr;
    }

    // Complete at once (a copy through the mapping); src/rma normally copies
    // itself and comes here only for the two-part Long's payload.
    Status put_impl(Rank peer, void *remote, const void *local, std::size_t n, RmaOp *, bool &) override {
        std::memcpy(translate(peer, reinterpret_cast<std::uint64_t>(remote)), local, n);
        return Status::ok;
    }
    Status get_impl(void *local, Rank peer, const void *remote, std::size_t n, RmaOp *, bool &) override {
        std::memcpy(local, translate(peer, reinterpret_cast<std::uint64_t>(remote)), n);
        return Status::ok;
    }

    // Dissemination barrier on shared flags (each flag has one writer per
    // round, and epochs only grow, so a fast rank can never erase a signal).
    Status barrier_impl(bool (*poll_fn)(void *), void *context) override {
        const std::size_t local = locals_.size();
        const std::uint64_t epoch = ++barrier_epoch_;
        for (unsigned k = 0; k < rounds_; ++k) {
            std::size_t partner = (me_ + (std::size_t{1} << k)) % local;
            flags_[partner * max_barrier_rounds + k].epoch.store(epoch, std::memory_order_release);
            if (block_) ring(partner);
            auto &mine = flags_[me_ * max_barrier_rounds + k].epoch;
            barrier_wait_.store(&mine, std::memory_order_relaxed);
            barrier_epoch_wanted_ = epoch;
            while (mine.load(std::memory_order_acquire) < epoch)
                if (!poll_fn(context)) {
                    barrier_wait_.store(nullptr, std::memory_order_relaxed);
                    return Status::transport;
                }
        }
        barrier_wait_.store(nullptr, std::memory_order_relaxed);
        return Status::ok;
    }

    // Block mode: this rank counts as sleeping from here, so every record
    // committed to it after this rings its doorbell; a record committed
    // before is seen by the scan that follows (the sender's fence and ours
    // order the two: one of us sees the other).
    bool wake_prepare_impl(WakeSet &w) override {
        if (!block_) return Transport::wake_prepare_impl(w);
        wake_[me_].sleepers.fetch_add(1, std::memory_order_seq_cst);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        for (InRing *q : scan_[0])
            if (q->line.ready()) return false;
        if (const auto *b = barrier_wait_.load(std::memory_order_relaxed);
            b && b->load(std::memory_order_acquire) >= barrier_epoch_wanted_)
            return false;
        w.add(doorbell_);
        return true;
    }
    void wake_finish_impl() override {
        if (!block_) return;
        // The last thread of this rank to wake empties the doorbell: while
        // another still sleeps, a ring it has not seen stays readable.
        if (wake_[me_].sleepers.fetch_sub(1, std::memory_order_relaxed) != 1) return;
        char drain[64];
        while (::recv(doorbell_, drain, sizeof drain, MSG_DONTWAIT) > 0) {}
    }

    void dispatch_abandon_impl() override {
        InRing *d = current_dispatch;
        if (!d) return;
        std::uint32_t size, info;
        if (char *r = d->line.peek(size, info)) {  // released only after its handler
            std::uint32_t big;
            if (is_marker(info) && d->ring.peek(big)) d->ring.release(big);
            if (is_pooled(info)) pool_free(d->pool, record_block(r));
            d->line.release(size);
        }
        d->line.publish();
        d->ring.publish();
        d->busy.store(false, std::memory_order_release);
        current_dispatch = nullptr;
    }

    void fini_impl() override {
        pool_peers_.clear();
        pool_mine_.reset();
        peer_segments_.clear();
        segment_.reset();
        region_.reset();
        scan_[0].clear();
        scan_[1].clear();
        in_.clear();
        out_.clear();
    }

private:
    // Space for a `size`-byte record to `peer` in its request or reply queue
    // (by `flags`); `at` is null while there is none.  A record of one line
    // goes in the line ring; a longer one in the large ring, and `other`
    // is then its marker's place in the line ring (else `other.at` is
    // null).  With `raw` bytes to go aside, the record is one line and
    // `other` the raw run for them in the large ring.  Replies need no
    // lock: a reply to P is sent only by the thread running a handler for a
    // request from P, which holds the flag of P's request queue (src/am
    // refuses replies from any other thread).
    [[gnu::always_inline]] RingSlot record_begin(Rank peer, std::uint8_t flags, std::size_t size, Outgoing *&o,
                                                 RingSlot &other, std::size_t raw = 0) {
        const std::size_t li = static_cast<std::size_t>(local_index_[peer]);
        if (__builtin_expect(li == me_, 0) && !self_used_.load(std::memory_order_relaxed))
            self_used_.store(true, std::memory_order_relaxed);
        const unsigned kind = flags & am_flag_reply;  // 0 requests, 1 replies
        o = &out_[li];
        if (kind == 0) o->lock.lock();
        RingSlot slot;
        other = {};
        if (raw) {
            slot = o->line[kind].reserve(size);
            if (slot.at && !(other = o->ring[kind].reserve(raw)).at) slot = {};  // both stay unused
        } else if (size <= line_size) {
            slot = o->line[kind].reserve(size);
        } else if ((other = o->line[kind].reserve(sizeof(std::uint64_t))).at) {
            slot = o->ring[kind].reserve(size);  // the marker's slot stays unused if this fails
        }
        if (__builtin_expect(!slot.at, 0) && kind == 0) o->lock.unlock();
        return slot;
    }
    // A record: its first word (ring.hpp) carries the control word and the
    // info word: handler, category, argument count and flags.  Bytes 8..11
    // hold the payload length of a Medium or Long, byte 12 the credit byte
    // (0 without am_flag_credit), and the arguments start at byte 16.  A Short without arguments is one 8-byte store.
    // `category`: an AmCategory's value, or aside_category.
    static std::uint32_t record_info(std::uint8_t handler, std::uint32_t category, unsigned nargs,
                                     std::uint8_t flags) {
        return std::uint32_t{handler} | (category & 0xff) << 8 | nargs << 16 | std::uint32_t{flags} << 24;
    }
    static void record_args(char *r, const std::uint32_t *args, unsigned nargs) {
        auto *out = reinterpret_cast<std::uint32_t *>(r + record_header);
        for (unsigned i = 0; i < nargs; ++i) out[i] = args[i];
    }
    // Publishes the record, then its marker if it has one: the consumer
    // finds the large ring's record in place when it reads the marker.  A
    // record with its payload aside (`raw`) goes after that payload.
    // Then reads the line ring's head (RingProducer::refresh_head): four
    // lines fill in four round trips, and the consumer hands its head back
    // after every line, so the read that reserve() would otherwise make on
    // every fourth send, a miss on the latency path, is made here, while the
    // message is on its way (AM Short round trip 1.32 to 1.18 x the
    // ping-pong, README.md).  Inlined into each send path: as a call
    // it held back the Long round trip by about 30 ns.
    [[gnu::always_inline]] void record_end(Outgoing &o, std::uint8_t flags, const RingSlot &slot, const RingSlot &other,
                    std::uint32_t info, bool raw = false) {
        const unsigned kind = flags & am_flag_reply;
        if (raw) {
            o.ring[kind].commit_raw(other);
            o.line[kind].commit(slot, info);
        } else if (other.at) {
            o.ring[kind].commit(slot, info);
            o.line[kind].commit(other, marker_info);
        } else {
            o.line[kind].commit(slot, info);
        }
        o.line[kind].refresh_head();
        if (kind == 0) o.lock.unlock();
        if (__builtin_expect(block_, 0)) ring(static_cast<std::size_t>(&o - out_.data()));
    }

    // The payload pool (PoolLayout).
    static constexpr std::size_t no_block = ~std::size_t{0};
    static std::size_t record_block(const char *r) {
        const auto *u = reinterpret_cast<const unsigned char *>(r);
        return std::size_t{u[13]} | std::size_t{u[14]} << 8 | std::size_t{u[15]} << 16;
    }
    PoolFlag &pool_flag(char *pool, std::size_t block) const {
        return reinterpret_cast<PoolFlag *>(pool)[block];
    }
    char *pool_block(char *pool, std::size_t block) const { return pool + pool_.data + block * pool_.stride; }
    // A free block of my pool's half for `kind` (0 requests, 1 replies),
    // marked busy; no_block while every one is in flight.  Its busy word was
    // cleared (release) after the receiver's handler: once it reads 0 the
    // receiver is done with the old payload.
    std::size_t pool_take(unsigned kind) {
        PoolHalf &h = pool_half_[kind];
        base::SpinGuard guard(h.lock);
        for (std::size_t n = 0; n < pool_.half; ++n) {
            const std::size_t block = kind * pool_.half + h.next;
            if (++h.next == pool_.half) h.next = 0;
            PoolFlag &f = pool_flag(pool_mine_.base(), block);
            if (f.busy.load(std::memory_order_acquire) == 0) {
                f.busy.store(1, std::memory_order_relaxed);
                return block;
            }
        }
        return no_block;
    }
    void pool_free(char *pool, std::size_t block) {
        pool_flag(pool, block).busy.store(0, std::memory_order_release);
    }
    // Creates my pool and maps every local peer's (one bootstrap
    // allgather of the names).
    Status pools_map() {
        const TransportSetup &s = setup();
        const std::size_t local = locals_.size();
        pool_views_.assign(local, nullptr);
        if (!pool_.bytes) return Status::ok;
        std::string error;
        if (Status st = pool_mine_.create(s.job_id, "pool", pool_.bytes, error); st != Status::ok)
            return base::report(st, "init (smp)", "raise the /dev/shm size or lower SLUICE_SMP_PAYLOAD_POOL (0: none)",
                                "cannot create the payload pool of %zu bytes: %s", pool_.bytes, error.c_str());
        s.bootstrap->cleanup_register(pool_mine_.name());
        std::vector<std::string> names;
        if (!s.bootstrap->allgather(pool_mine_.name().data(), pool_mine_.name().size(), names))
            return base::report(Status::bootstrap, "init (smp)", "check that every rank started",
                                "allgather of the payload pool names failed");
        pool_peers_.resize(local);
        for (std::size_t p = 0; p < local; ++p) {
            if (p == me_) {
                pool_views_[p] = pool_mine_.base();
                continue;
            }
            pool_peers_[p] = std::make_unique<SharedObject>();
            if (Status st = pool_peers_[p]->open(names[locals_[p]], pool_.bytes, error); st != Status::ok)
                return base::report(st, "init (smp)", "check /dev/shm and the process limits on mappings",
                                    "cannot map the payload pool of rank %u: %s", locals_[p], error.c_str());
            pool_views_[p] = pool_peers_[p]->base();
        }
        return Status::ok;
    }

    char *translate(Rank peer, std::uint64_t addr) const {
        return static_cast<char *>(views_[peer]) + (addr - segment_bases_[peer]);
    }

    // Runs the record of scan[first], which has one, then one record of each
    // later ring in the scan that has one.
    [[gnu::noinline]] int poll_from(InRing *const *scan, std::size_t first, std::size_t end) {
        int n = drain(*scan[first]);
        for (std::size_t i = first + 1; i < end; ++i)
            if (scan[i]->line.ready()) n += drain(*scan[i]);
        return n;
    }

    // Runs the handler of the next record in one ring: one per ring per
    // poll, so a busy ring cannot starve the others, and so the poll that
    // ran a reply handler returns to its caller (often waiting for just that
    // reply) without first reading the ring's next line, a load that would
    // hold back the caller's next send.  Floods lose nothing to it (about
    // 2 ns per message, sluice-bench am_short_flood).  The consumer's head goes
    // back to the producer every quarter ring (RingConsumer::release), not
    // per record: a store to a line the producer reads is a transfer.
    __attribute__((noinline)) int drain(InRing &in) {
        if (!flag_try_take(in.busy)) return 0;
        std::uint32_t line_bytes, info;
        char *const at = in.line.peek(line_bytes, info);
        if (!at) {
            in.busy.store(false, std::memory_order_release);
            return 0;
        }
        char *r = at;
        std::uint32_t size = line_bytes, aside_bytes = 0;
        char *aside = nullptr;
        std::size_t block = no_block;
        if (is_pooled(info)) {
            block = record_block(r);
            if (info >> 24 & flag_skip) {  // a cancelled prepared Medium
                pool_free(in.pool, block);
                in.line.release(line_bytes);
                in.busy.store(false, std::memory_order_release);
                return 1;
            }
            aside = pool_block(in.pool, block);
            info = (info & ~0xff00u) | std::uint32_t{static_cast<std::uint8_t>(AmCategory::medium)} << 8;
        } else if (is_marker(info)) {
            r = in.ring.peek(size, info);  // published before its marker
            assert(r && "smp marker without its record");
        } else if (is_aside(info)) [[unlikely]] {
            std::memcpy(&aside_bytes, r + 8, 4);
            if ((info >> 8 & 0xff) == prepared_category) {
                const auto *u = reinterpret_cast<const unsigned char *>(r);
                aside_bytes = std::uint32_t{u[13]} | std::uint32_t{u[14]} << 8 | std::uint32_t{u[15]} << 16;
            }
            aside = in.ring.take(aside_bytes);  // published before this line
            if (info >> 24 & flag_skip) {  // a cancelled prepared Medium
                in.ring.release(aside_bytes);
                in.line.release(line_bytes);
                in.busy.store(false, std::memory_order_release);
                return 1;
            }
            info = (info & ~0xff00u) | std::uint32_t{static_cast<std::uint8_t>(AmCategory::medium)} << 8;
        }
        assert(size >= record_header && size <= ring_bytes_ && "corrupt smp ring record");
        InRing *outer = current_dispatch;  // a reply waiting for room polls replies
        current_dispatch = &in;
        // Arguments are read in place: the record stays ours until release.
        const auto *args = reinterpret_cast<const std::uint32_t *>(r + record_header);
        if (__builtin_expect(!(info & 0xff00u), 1)) {
            // A Short: no header to build.  Byte 12 is its credit byte (0
            // without am_flag_credit): every path that writes a record
            // writes it.
            deliver_short(in.source, static_cast<std::uint8_t>(info), static_cast<std::uint8_t>(info >> 24),
                          static_cast<std::uint8_t>(r[12]), args, static_cast<std::uint8_t>(info >> 16));
        } else {
            AmHeader h;
            h.handler = static_cast<std::uint8_t>(info);
            h.category = static_cast<AmCategory>(info >> 8 & 0xff);
            h.nargs = static_cast<std::uint8_t>(info >> 16);
            h.flags = static_cast<std::uint8_t>(info >> 24);
            h.source = in.source;
            void *payload = nullptr;
            if (h.flags & am_flag_credit) h.credit = static_cast<std::uint8_t>(r[12]);
            if (h.category != AmCategory::short_) {
                std::uint32_t length;
                std::memcpy(&length, r + 8, 4);
                h.payload_length = length;
            }
            if (h.category == AmCategory::long_) {
                std::memcpy(&h.dest_addr, r + long_address_at(h.nargs), 8);
                payload = reinterpret_cast<void *>(h.dest_addr);
            } else if (h.category == AmCategory::medium) {
                payload = aside ? aside : r + record_header + 4u * h.nargs;
            }
            deliver(h, args, payload);
        }
        current_dispatch = outer;
        if (r != at) in.ring.release(size);
        else if (block != no_block) pool_free(in.pool, block);
        else if (aside) in.ring.release(aside_bytes);
        in.line.release(line_bytes);
        in.busy.store(false, std::memory_order_release);
        return 1;
    }

    // Block mode: this rank's doorbell, a datagram socket in the abstract
    // namespace (nothing left in the file system), named by the job and the
    // rank; every local rank's address.
    Status doorbell_open() {
        doorbell_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (doorbell_ < 0)
            return base::report(Status::resource, "init (smp)", "raise the limit on open files (ulimit -n)",
                                "SLUICE_WAIT=block: socket(AF_UNIX) failed: %s", std::strerror(errno));
        doorbells_.resize(locals_.size());
        for (std::size_t i = 0; i < locals_.size(); ++i) {
            sockaddr_un &a = doorbells_[i];
            a = {};
            a.sun_family = AF_UNIX;
            std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "sluice.%s.wake.%u", setup().job_id.c_str(), locals_[i]);
        }
        const sockaddr_un &mine = doorbells_[me_];
        if (::bind(doorbell_, reinterpret_cast<const sockaddr *>(&mine), doorbell_length(mine)) != 0)
            return base::report(Status::resource, "init (smp)", "check that no other job uses this job id (SLUICE_JOB_ID)",
                                "SLUICE_WAIT=block: cannot bind the doorbell socket @%s: %s", mine.sun_path + 1,
                                std::strerror(errno));
        return Status::ok;
    }
    static socklen_t doorbell_length(const sockaddr_un &a) {
        return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + std::strlen(a.sun_path + 1));
    }
    // A record or barrier flag for local rank `li` is published: wake it if
    // it sleeps.  The fence orders the publication before the read of its
    // count (wake_prepare_impl orders the other way).  A doorbell whose
    // socket is full already rings.
    void ring(std::size_t li) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (wake_[li].sleepers.load(std::memory_order_relaxed) == 0) return;
        const char one = 1;
        (void)::sendto(doorbell_, &one, 1, MSG_DONTWAIT, reinterpret_cast<const sockaddr *>(&doorbells_[li]),
                       doorbell_length(doorbells_[li]));
    }

    bool block_ = false;
    int doorbell_ = -1;
    std::vector<sockaddr_un> doorbells_;  // by local index
    WakeWord *wake_ = nullptr;            // by local index, in the region
    std::atomic<const std::atomic<std::uint64_t> *> barrier_wait_{nullptr};  // the flag this rank's barrier waits on
    std::uint64_t barrier_epoch_wanted_ = 0;

    std::size_t ring_bytes_ = 0;
    PoolLayout pool_;
    struct alignas(line_size) PoolHalf {
        base::SpinLock lock;
        std::size_t next = 0;
    };
    PoolHalf pool_half_[2];
    SharedObject pool_mine_;
    std::vector<std::unique_ptr<SharedObject>> pool_peers_;  // per local index; mine null
    std::vector<char *> pool_views_;                          // per local index
    std::vector<Rank> locals_;
    std::vector<int> local_index_;
    std::size_t me_ = 0;
    std::atomic<bool> self_used_{false};
    unsigned rounds_ = 0;
    std::uint64_t barrier_epoch_ = 0;
    SharedObject region_;
    SharedObject segment_;
    std::vector<std::unique_ptr<SharedObject>> peer_segments_;
    BarrierFlag *flags_ = nullptr;
    std::vector<Outgoing> out_;
    std::vector<Incoming> in_;
    // The rings a poll looks at, [0] for PollMode::all and [1] for replies
    // only: every peer's, then my own, which only the first scan_peers_ leave out.
    std::vector<InRing *> scan_[2];
    std::size_t scan_peers_[2] = {0, 0};
    std::vector<void *> views_;
    std::vector<std::uint64_t> segment_bases_;
};

} // namespace

std::unique_ptr<Transport> make_smp_transport() { return std::make_unique<SmpTransport>(); }

} // namespace sluice::conduit::smp
