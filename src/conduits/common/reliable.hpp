// src/conduits/common/reliable.hpp - reliable, ordered delivery over a
// network that loses, repeats and reorders packets (udp's datagrams; a
// verbs UD queue pair; a raw datagram provider), as a pure state machine:
// no sockets, no buffers, no clock of its own.  The caller passes the time
// in, keeps the packets (by sequence number), sends what it is told to and
// feeds in what arrives.  README.md in this folder; udp's README.md
// ("Design") describes the protocol as udp runs it.
//
// One Sender and one Receiver per ordered pair of endpoints:
//  - Sequence numbers start 1024 short of 2^32 and wrap through 0, compared
//    by their signed difference (so the wrap is crossed early in every job).
//  - The receiver accepts the next expected number, holds later ones within
//    its window until the hole before them is filled, and drops older ones
//    as duplicates (acknowledging again: the ack was evidently lost).
//  - Acks are cumulative (the last number received in order) plus a 32-bit
//    selective ack: bit i set when number ack + 2 + i is also held.  An ack
//    rides on data going back, or goes alone after the ack delay, at once
//    after a quarter window of data, on a hole, on a duplicate.
//  - The sender keeps at most `window` packets in flight.  Each waits for
//    its ack for the retransmission timeout: smoothed round trip plus four
//    times its deviation (samples only from packets sent once: Karn), at
//    least rto_min, doubling with every retry of that packet, at most
//    rto_max.  A selective ack that shows later packets but not the first
//    one in flight resends that one at once (once; then its timer rules).
//  - A peer that leaves data unacknowledged for peer_timeout is silent.
// Not thread-safe: udp calls it under its lock.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "conduits/common/fifo.hpp"

namespace sluice::conduit::common::reliable {

// Sequence numbers wrap: compared by signed distance.
inline std::int32_t seq_diff(std::uint32_t a, std::uint32_t b) { return static_cast<std::int32_t>(a - b); }
inline constexpr std::uint32_t first_seq = 0u - 1024;
inline constexpr unsigned sack_bits = 32;
inline constexpr std::uint64_t no_deadline = ~std::uint64_t{0};
// The time of a packet sent before the clock was read (Sender::stamp):
// never a clock's reading.
inline constexpr std::uint64_t unstamped = ~std::uint64_t{0};

struct Config {
    unsigned window = 64;                         // packets in flight, sender
    unsigned recv_window = 64;                    // packets a receiver holds out of order and accepts ahead
    std::uint64_t ack_delay_ns = 50'000;          // an ack alone waits this long for data to ride on
    std::uint64_t rto_min_ns = 10'000'000;
    std::uint64_t rto_max_ns = 200'000'000;
    std::uint64_t rto_initial_ns = 10'000'000;    // before any round trip is measured
    std::uint64_t peer_timeout_ns = 30'000'000'000;
};

// ---- sending ----------------------------------------------------------------

class Sender {
public:
    explicit Sender(const Config &c = Config{}) : config_(c), rto_ns_(std::max(c.rto_initial_ns, c.rto_min_ns)) {}

    // Whether the window has room for one more packet in flight.
    bool window_open() const { return in_flight_.size() < config_.window; }
    std::size_t in_flight() const { return in_flight_.size(); }
    // The number the next packet gets; sent() takes it.
    std::uint32_t next_seq() const { return next_seq_; }

    // The number of the oldest packet in flight (next_seq() when none):
    // the caller's packets in flight are numbered from it.
    std::uint32_t oldest() const { return next_seq_ - static_cast<std::uint32_t>(in_flight_.size()); }

    // A packet leaves for the first time at `now`; the window must be open.
    // Returns its number.  `now` may be `unstamped` when the caller reads
    // the clock only once the packet has left (off a latency path): stamp()
    // then gives the time, before anything else is asked of this Sender.
    std::uint32_t sent(std::uint64_t now) {
        if (in_flight_.empty()) waiting_since_ns_ = now;
        in_flight_.push_back(Flight{next_seq_, now, 1, false});
        if (now != unstamped) due_ns_ = std::min(due_ns_, now + timeout_of(in_flight_.back()));
        return next_seq_++;
    }
    // The packets sent unstamped (the newest ones in flight) left at `now`.
    void stamp(std::uint64_t now) {
        for (std::size_t j = in_flight_.size(); j-- && in_flight_[j].sent_ns == unstamped;) {
            in_flight_[j].sent_ns = now;
            due_ns_ = std::min(due_ns_, now + timeout_of(in_flight_[j]));
        }
        if (waiting_since_ns_ == unstamped) waiting_since_ns_ = now;
    }

    // An ack arrived at `now`.  `freed(seq)` is called for every packet it
    // acknowledges, oldest first (the caller frees its buffer); returns
    // the number of a packet to resend at once (a hole the selective ack
    // shows), or no_resend.
    static constexpr std::int64_t no_resend = -1;
    template <class Freed> std::int64_t acked(std::uint32_t ack, std::uint32_t sack, std::uint64_t now, Freed freed) {
        heard_ns_ = now;
        bool any = false;
        while (!in_flight_.empty() && seq_diff(in_flight_.front().seq, ack) <= 0) {
            const Flight f = in_flight_.pop_front();
            if (f.tries == 1) rtt_sample(now - f.sent_ns);  // Karn: never from a retransmission
            freed(f.seq);
            any = true;
        }
        if (any) waiting_since_ns_ = now;
        if (!sack || in_flight_.empty()) return no_resend;
        const std::uint32_t front = in_flight_.front().seq;
        for (unsigned i = 0; i < sack_bits; ++i) {
            if (!(sack >> i & 1)) continue;
            const std::uint32_t index = ack + 2 + i - front;
            if (index < in_flight_.size()) in_flight_[index].sacked = true;
        }
        Flight &hole = in_flight_.front();
        if (hole.sacked || hole.tries != 1) return no_resend;
        resent(hole, now);
        return hole.seq;
    }

    // The timers at `now`: `resend(seq)` for every packet whose timeout
    // has passed (its retry count goes up, its timeout doubles).  Returns
    // true when the peer has acknowledged nothing for peer_timeout while
    // data waited.  next_due() is then the earliest deadline left.
    template <class Resend> bool timers(std::uint64_t now, Resend resend) {
        std::uint64_t due = no_deadline;
        for (std::size_t j = 0; j < in_flight_.size(); ++j) {
            Flight &f = in_flight_[j];
            if (f.sacked) continue;
            if (now - f.sent_ns >= timeout_of(f)) {
                resent(f, now);
                resend(f.seq);
            }
            due = std::min(due, f.sent_ns + timeout_of(f));
        }
        bool silent = false;
        if (!in_flight_.empty()) {
            const std::uint64_t since = std::max(heard_ns_, waiting_since_ns_);
            silent = now - since > config_.peer_timeout_ns;
            due = std::min(due, since + config_.peer_timeout_ns + 1);
        }
        due_ns_ = due;
        return silent;
    }
    // When timers() next has something to do (no_deadline: nothing in flight).
    std::uint64_t next_due() const { return due_ns_; }

    // Something valid came from the peer at `now` (any packet: it lives).
    void heard(std::uint64_t now) { heard_ns_ = now; }

    std::uint64_t srtt_ns() const { return srtt_ns_; }
    std::uint64_t rttvar_ns() const { return rttvar_ns_; }
    std::uint64_t rto_ns() const { return rto_ns_; }
    std::uint64_t retransmitted() const { return retransmitted_; }
    // The timeout of the packet with `tries` transmissions so far.
    std::uint64_t timeout(unsigned tries) const {
        return std::min(rto_ns_ << std::min<unsigned>(tries - 1, 16), config_.rto_max_ns);
    }

private:
    struct Flight {
        std::uint32_t seq;
        std::uint64_t sent_ns;
        std::uint16_t tries;
        bool sacked;
    };
    std::uint64_t timeout_of(const Flight &f) const { return timeout(f.tries); }
    void resent(Flight &f, std::uint64_t now) {
        ++f.tries;
        ++retransmitted_;
        f.sent_ns = now;
        due_ns_ = std::min(due_ns_, now + timeout_of(f));
    }
    // One round trip sample into the smoothed round trip and its
    // deviation; the timeout is srtt + 4 x deviation, within [rto_min, rto_max].
    void rtt_sample(std::uint64_t sample) {
        if (!srtt_ns_) {
            srtt_ns_ = sample;
            rttvar_ns_ = sample / 2;
        } else {
            const std::uint64_t delta = srtt_ns_ > sample ? srtt_ns_ - sample : sample - srtt_ns_;
            rttvar_ns_ = (3 * rttvar_ns_ + delta) / 4;
            srtt_ns_ = (7 * srtt_ns_ + sample) / 8;
        }
        rto_ns_ = std::clamp(srtt_ns_ + 4 * rttvar_ns_, config_.rto_min_ns, config_.rto_max_ns);
    }

    Config config_;
    std::uint32_t next_seq_ = first_seq;
    Fifo<Flight> in_flight_;
    std::uint64_t srtt_ns_ = 0, rttvar_ns_ = 0, rto_ns_;
    std::uint64_t heard_ns_ = 0, waiting_since_ns_ = 0;
    std::uint64_t due_ns_ = no_deadline;
    std::uint64_t retransmitted_ = 0;
};

// ---- receiving --------------------------------------------------------------

class Receiver {
public:
    enum class Arrival : std::uint8_t {
        in_order,     // the next expected: deliver it, then every held one next_held() gives
        early,        // later than expected, within the window: hold it until next_held() names it
        duplicate,    // had it (delivered, or already held): drop it
        beyond,       // past the window: drop it (the sender resends it)
    };

    explicit Receiver(const Config &c = Config{})
        : config_(c), held_(std::bit_ceil(std::max(c.recv_window, 1u)), false) {}

    // A data packet numbered `seq` arrived at `now`.
    Arrival data(std::uint32_t seq, std::uint64_t now) {
        const std::int32_t ahead = seq_diff(seq, expected_);
        if (ahead < 0) {
            owe(now, true);  // had it: the ack was lost
            return Arrival::duplicate;
        }
        if (ahead >= static_cast<std::int32_t>(config_.recv_window)) return Arrival::beyond;
        if (ahead > 0) {
            owe(now, true);  // a hole: tell the sender at once
            if (slot(seq)) return Arrival::duplicate;
            slot(seq) = true;
            ++held_count_;
            return Arrival::early;
        }
        ++expected_;
        owe(now, ++pending_ >= std::max(1u, config_.window / 4));
        return Arrival::in_order;
    }

    // After an in_order arrival: the number of the held packet that is now
    // next in order (deliver it), or false when there is none.
    bool next_held(std::uint32_t &seq) {
        if (!held_count_ || !slot(expected_)) return false;
        slot(expected_) = false;
        --held_count_;
        seq = expected_++;
        return true;
    }

    // A probe ("are you there") arrived: answer with an ack at once.
    void probed(std::uint64_t now) { owe(now, true); }

    // What every packet going back carries.
    std::uint32_t ack() const { return expected_ - 1; }
    std::uint32_t sack() const {
        if (!held_count_) return 0;
        std::uint32_t bits = 0;
        for (unsigned i = 0; i < sack_bits && i + 1 < config_.recv_window; ++i)
            if (slot(expected_ + 1 + i)) bits |= 1u << i;
        return bits;
    }
    std::uint32_t expected() const { return expected_; }
    std::size_t held() const { return held_count_; }

    // Acks: owed at all, and when one must go alone (now for a hole, a
    // duplicate, a probe, a quarter window; else after the ack delay).
    bool ack_owed() const { return owed_; }
    bool ack_due(std::uint64_t now) const { return owed_ && (now_ || now >= due_ns_); }
    std::uint64_t ack_deadline() const { return !owed_ ? no_deadline : now_ ? 0 : due_ns_; }
    // A packet (data or an ack alone) on its way back carries the ack.
    void ack_carried() {
        owed_ = now_ = false;
        pending_ = 0;
    }

private:
    void owe(std::uint64_t now, bool at_once) {
        if (!owed_) due_ns_ = now + config_.ack_delay_ns;
        owed_ = true;
        now_ |= at_once;
    }
    std::vector<bool>::reference slot(std::uint32_t seq) { return held_[seq & (held_.size() - 1)]; }
    bool slot(std::uint32_t seq) const { return held_[seq & (held_.size() - 1)]; }

    Config config_;
    std::uint32_t expected_ = first_seq;
    std::vector<bool> held_;  // early packets, by the low bits of their number
    std::size_t held_count_ = 0;
    bool owed_ = false, now_ = false;
    std::uint64_t due_ns_ = 0;
    unsigned pending_ = 0;
};

} // namespace sluice::conduit::common::reliable
