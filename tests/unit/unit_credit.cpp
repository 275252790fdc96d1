// tests/unit/unit_credit.cpp - the credit engine (src/credit) driven by hand:
// one Engine per rank in one process, the test carrying credit bytes and
// system messages between them.  A test per rule (GASNet's Portals
// dynamic scheme, its ibv conduit's slack and hidden replies, the demand
// policy, the 16-bit limits), then random interleavings checked for
// conservation after every step, then threads sharing one engine.
//
// Not covered: the scavenger skipping a peer whose state lock another
// thread holds (spin_try_lock); a single thread never holds one across a
// call, so that skip cannot be provoked from here.
#include "credit/credit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace credit = sluice::credit;
using credit::Config;
using credit::CreditByte;
using credit::Engine;
using credit::Peer;
using credit::PeerCredits;
using credit::Policy;
using credit::SysKind;
using credit::SysMessage;

namespace {

// Small numbers a test can follow by hand: no epoch, no scavenging and no
// slack unless the test asks for them.
Config config_for(Policy policy, Peer nodes) {
    Config c;
    c.policy = policy;
    c.nodes = nodes;
    c.per_peer = 4;
    c.min_credits = 4;
    c.max_per_peer = 40;
    c.banked = 0;
    c.epoch_length = 1u << 30;
    c.low_water = 1;
    c.slack = 0;
    c.ask_extra = 0;
    return c;
}

CreditByte decode(std::uint8_t b) { return CreditByte::decode(b); }

std::uint8_t with_extra(std::uint8_t b, unsigned extra) {
    CreditByte c = decode(b);
    c.extra = static_cast<std::uint8_t>(extra);
    return c.encode();
}

SysMessage sys(SysKind kind, Peer peer, unsigned count = 0, bool urgent = false, bool epoch = false) {
    SysMessage m;
    m.peer = peer;
    m.kind = kind;
    m.count = static_cast<std::uint16_t>(count);
    m.urgent = urgent;
    m.epoch = epoch;
    return m;
}

std::vector<Peer> destinations(const std::vector<SysMessage> &ms, SysKind kind) {
    std::vector<Peer> out;
    for (const SysMessage &m : ms)
        if (m.kind == kind) out.push_back(m.peer);
    return out;
}

// One engine per rank, as if each ran in its own process.
class Cluster {
public:
    explicit Cluster(Config c) {
        for (Peer r = 0; r < c.nodes; ++r) {
            c.me = r;
            engines_.push_back(std::make_unique<Engine>(c));
        }
    }
    Engine &operator[](Peer r) { return *engines_.at(r); }
    Peer size() const { return static_cast<Peer>(engines_.size()); }

    // x's request of n credits to y, which must go.
    std::uint8_t send(Peer x, Peer y, unsigned n) {
        std::uint8_t b = 0;
        EXPECT_TRUE((*this)[x].request_begin(y, n, b)) << x << " -> " << y << ", " << n << " credits";
        return b;
    }
    // y runs x's request and replies; x takes the reply.  Returns its byte.
    std::uint8_t serve(Peer x, Peer y, std::uint8_t request) {
        (*this)[y].request_arrived(x, request);
        const std::uint8_t r = (*this)[y].reply_byte(x, request);
        (*this)[x].reply_arrived(y, r);
        return r;
    }
    std::uint8_t roundtrip(Peer x, Peer y, unsigned n) { return serve(x, y, send(x, y, n)); }
    // x's 1-credit request to y wants extra credits, as a stalled
    // sender's next request does; returns what y granted.
    unsigned ask_extra(Peer x, Peer y) {
        const CreditByte r = decode(serve(x, y, with_extra(send(x, y, 1), CreditByte::want)));
        EXPECT_NE(r.extra, CreditByte::reclaim);
        return r.extra;
    }
    // The system messages rank r has queued (m.peer: their destination).
    std::vector<SysMessage> take(Peer r) {
        std::vector<SysMessage> out;
        SysMessage buf[8];
        while (std::size_t n = (*this)[r].sys_take(buf, 8)) out.insert(out.end(), buf, buf + n);
        return out;
    }
    void deliver(Peer from, SysMessage m) {
        const Peer to = m.peer;
        m.peer = from;
        (*this)[to].sys_arrived(m);
    }
    // Takes rank r's system messages and delivers them; returns them.
    std::vector<SysMessage> pass(Peer r) {
        const auto out = take(r);
        for (const SysMessage &m : out) deliver(r, m);
        return out;
    }
    // Delivers system messages until no engine has any.
    void settle() {
        for (bool any = true; any;) {
            any = false;
            for (Peer r = 0; r < size(); ++r)
                for (const SysMessage &m : take(r)) {
                    deliver(r, m);
                    any = true;
                }
        }
    }
    // Requests from `via` until y ends an epoch: y's new epoch has no
    // request counted yet.
    void epoch_end(Peer y, Peer via) {
        const std::uint64_t e = (*this)[y].epoch();
        for (int i = 0; i < 100000 && (*this)[y].epoch() == e; ++i) roundtrip(via, y, 1);
        ASSERT_EQ((*this)[y].epoch(), e + 1);
    }
    // Demand: x's first request to y stalls, asks, and is granted.
    // Demand: x asks y for n and is granted them; its waiting request
    // then goes and is answered unless `fresh` (granted, not yet sent).
    void borrow(Peer x, Peer y, unsigned n, bool fresh = false) {
        std::uint8_t b = 0;
        ASSERT_FALSE((*this)[x].request_begin(y, n, b));
        const auto asks = take(x);
        ASSERT_EQ(asks.size(), 1u);
        deliver(x, asks[0]);
        const auto grants = take(y);
        ASSERT_EQ(grants.size(), 1u);
        ASSERT_EQ(grants[0].kind, SysKind::grant);
        deliver(y, grants[0]);
        if (!fresh) roundtrip(x, y, n);
    }
    // With nothing in flight every loan matches the borrower's view and
    // every lender accounts for all its credits.
    void expect_balanced() {
        for (Peer y = 0; y < size(); ++y) {
            EXPECT_EQ((*this)[y].credits_accounted(), (*this)[y].config().total_credits()) << "rank " << y;
            for (Peer x = 0; x < size(); ++x) {
                if (x == y) continue;
                EXPECT_EQ((*this)[y].peer(x).loan_credits, (*this)[x].peer(y).send_credits)
                    << "lender " << y << " borrower " << x;
            }
        }
    }

private:
    std::vector<std::unique_ptr<Engine>> engines_;
};

// A revoke from `lender` delivered to `borrower`, made by hand so a test
// controls its urgent and E bits (the lender's own scavenger is tested in
// CreditScavenge); returns the borrower's give, not yet delivered.
SysMessage give_for_revoke(Cluster &c, Peer borrower, Peer lender, bool urgent, bool epoch) {
    c[borrower].sys_arrived(sys(SysKind::revoke, lender, 0, urgent, epoch));
    const auto out = c.take(borrower);
    EXPECT_EQ(out.size(), 1u);
    if (out.empty()) return sys(SysKind::give, lender);
    EXPECT_EQ(out[0].kind, SysKind::give);
    EXPECT_EQ(out[0].peer, lender);
    return out[0];
}

} // namespace

// ---- the credit byte ----------------------------------------------------------

TEST(CreditByte, RoundTripAll256) {
    for (unsigned v = 0; v < 256; ++v) {
        const CreditByte b = CreditByte::decode(static_cast<std::uint8_t>(v));
        EXPECT_EQ(b.epoch, (v & 0x80u) != 0) << v;
        EXPECT_EQ(b.extra, (v >> 4) & 7u) << v;
        EXPECT_EQ(b.count, v & 15u) << v;
        EXPECT_EQ(b.encode(), v);
    }
}

TEST(CreditByte, FieldsAndReclaim) {
    EXPECT_EQ(CreditByte::reclaim, 7);
    EXPECT_EQ((CreditByte{true, 7, 15}.encode()), 0xFF);
    EXPECT_EQ((CreditByte{false, CreditByte::reclaim, 3}.encode()), 0x73);
    EXPECT_EQ((CreditByte{true, 0, 0}.encode()), 0x80);
    const CreditByte r = CreditByte::decode(0x73);
    EXPECT_FALSE(r.epoch);
    EXPECT_EQ(r.extra, CreditByte::reclaim);
    EXPECT_EQ(r.count, 3);
}

TEST(CreditByte, PolicyNames) {
    for (Policy p : {Policy::off, Policy::fixed, Policy::dynamic, Policy::demand}) {
        Policy q = Policy::off;
        EXPECT_TRUE(credit::policy_parse(credit::policy_name(p), q));
        EXPECT_EQ(q, p);
    }
    Policy q = Policy::off;
    EXPECT_TRUE(credit::policy_parse("static", q));
    EXPECT_EQ(q, Policy::fixed);
    EXPECT_FALSE(credit::policy_parse("Dynamic", q));
    EXPECT_STREQ(credit::sys_kind_name(SysKind::give), "give");
}

// ---- request_begin ----------------------------------------------------------------

TEST(CreditRequest, TakesCreditsAndStallsWithoutTouchingTheByte) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.per_peer = 8;
    Engine e(cfg);
    std::uint8_t b = 0;
    ASSERT_TRUE(e.request_begin(1, 3, b));
    EXPECT_EQ(decode(b).count, 3);
    EXPECT_EQ(decode(b).extra, 0);
    EXPECT_FALSE(decode(b).epoch);
    ASSERT_TRUE(e.request_begin(1, 5, b));
    EXPECT_EQ(e.peer(1).send_inuse, 8);
    EXPECT_EQ(e.peer(1).send_max, 8);
    EXPECT_EQ(e.peer(1).send_credits, 8);
    b = 0xAB;
    EXPECT_FALSE(e.request_begin(1, 1, b));
    EXPECT_EQ(b, 0xAB);  // outputs are set only on success
    EXPECT_EQ(e.peer(1).send_inuse, 8);
    EXPECT_EQ(e.totals().requests_sent, 2u);
    EXPECT_EQ(e.totals().stalls, 1u);
}

TEST(CreditRequest, OneStallPerEpisodeNotPerRetry) {
    Cluster c(config_for(Policy::dynamic, 2));
    const std::uint8_t first = c.send(1, 0, 4);
    std::uint8_t b = 0;
    for (int i = 0; i < 10; ++i) EXPECT_FALSE(c[1].request_begin(0, 1, b));
    EXPECT_EQ(c[1].totals().stalls, 1u);
    EXPECT_EQ(c[1].peer(0).send_stalls, 1);
    c.serve(1, 0, first);
    const std::uint8_t second = c.send(1, 0, 4);  // the episode ends
    for (int i = 0; i < 10; ++i) EXPECT_FALSE(c[1].request_begin(0, 1, b));
    EXPECT_EQ(c[1].totals().stalls, 2u);
    EXPECT_EQ(c[1].peer(0).send_stalls, 2);
    c.serve(1, 0, second);
}

TEST(CreditRequest, OffAndSelfAlwaysGo) {
    Cluster off(config_for(Policy::off, 2));
    std::uint8_t b = 0;
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(off[0].request_begin(1, 15, b));
    EXPECT_EQ(decode(b).count, 15);
    EXPECT_EQ(off[0].peer(1).send_inuse, 0);
    EXPECT_EQ(off[0].totals().stalls, 0u);
    EXPECT_EQ(off[0].totals().requests_sent, 1000u);
    EXPECT_FALSE(off[1].reply_needed(0, b));
    EXPECT_EQ(decode(off[1].reply_byte(0, b)).count, 15);
    EXPECT_EQ(off[0].config().total_credits(), 0u);
    EXPECT_EQ(off[0].credits_accounted(), 0u);

    Config cfg = config_for(Policy::dynamic, 3);
    cfg.banked = 20;
    Engine e(cfg);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(e.request_begin(0, 15, b));
    EXPECT_EQ(e.peer(0).send_inuse, 0);
    EXPECT_EQ(e.peer(0).send_credits, 0);
    EXPECT_EQ(e.totals().stalls, 0u);
    // Self is never lent extra and never enters the scavenge list.
    const CreditByte r = decode(e.reply_byte(0, with_extra(b, 6)));
    EXPECT_EQ(r.extra, 0);
    EXPECT_EQ(r.count, 15);
    EXPECT_FALSE(e.reply_needed(0, b));
    EXPECT_EQ(e.bank(), 20u);
    EXPECT_EQ(e.scavenge_list_size(), 0u);
}

TEST(CreditRequest, CountKeptWithin1To15) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.per_peer = 20;
    Engine e(cfg);
    std::uint8_t b = 0;
    ASSERT_TRUE(e.request_begin(1, 0, b));
    EXPECT_EQ(decode(b).count, 1);
    ASSERT_TRUE(e.request_begin(1, 99, b));
    EXPECT_EQ(decode(b).count, 15);
    EXPECT_EQ(e.peer(1).send_inuse, 16);
}

// ---- fixed: static credits, slack, hidden replies (GASNet ibv) -----------------------

// GASNet's AM_CREDITS_TOTAL (Config::send_total): the credits in use over
// every lender together, whatever each lent.
TEST(CreditSendTotal, BoundsTheCreditsInUseOverEveryPeer) {
    Config cfg = config_for(Policy::dynamic, 4);
    cfg.per_peer = 8;
    cfg.send_total = 10;
    Cluster c(cfg);
    const std::uint8_t to1 = c.send(0, 1, 4);
    const std::uint8_t to2 = c.send(0, 2, 4);
    EXPECT_EQ(c[0].send_total_inuse(), 8u);
    std::uint8_t b = 0xAB;
    EXPECT_FALSE(c[0].request_begin(3, 4, b));  // rank 3 lent 8, the total has 2 left
    EXPECT_EQ(b, 0xAB);
    EXPECT_EQ(c[0].peer(3).send_inuse, 0);
    for (int i = 0; i < 5; ++i) EXPECT_FALSE(c[0].request_begin(3, 4, b));
    EXPECT_EQ(c[0].totals().total_stalls, 1u);  // one per episode
    EXPECT_EQ(c[0].totals().stalls, 0u);        // no peer's own credits were short
    ASSERT_TRUE(c[0].request_begin(3, 2, b));   // what is left still goes
    c[3].request_arrived(0, b);
    c[0].reply_arrived(3, c[3].reply_byte(0, b));
    c.serve(0, 1, to1);                          // a reply gives back its credits
    EXPECT_EQ(c[0].send_total_inuse(), 4u);
    const std::uint8_t to3 = c.send(0, 3, 4);
    EXPECT_EQ(c[0].send_total_inuse(), 8u);
    // A peer short of its own credits gives its reservation back.
    ASSERT_TRUE(c[0].request_begin(3, 2, b));
    EXPECT_FALSE(c[0].request_begin(3, 4, b));   // rank 3: 6 of 8 in use
    EXPECT_EQ(c[0].send_total_inuse(), 10u);
    c[0].request_cancel(3, b);                   // a cancelled request gives back too
    EXPECT_EQ(c[0].send_total_inuse(), 8u);
    c.serve(0, 2, to2);
    c.serve(0, 3, to3);
    EXPECT_EQ(c[0].send_total_inuse(), 0u);
}

TEST(CreditSendTotal, CreditsReturnedOnARequestUnderFixed) {
    Config cfg = config_for(Policy::fixed, 2);
    cfg.per_peer = 8;
    cfg.slack = 3;
    cfg.send_total = 7;  // the least it may be: 1 peer x slack 3 + a full-size request of 4
    Cluster c(cfg);
    for (int i = 0; i < 2; ++i) {
        const std::uint8_t x = c.send(1, 0, 1);
        c[0].request_arrived(1, x);
        EXPECT_FALSE(c[0].reply_needed(1, x));  // held back at rank 0: still in use at rank 1
    }
    EXPECT_EQ(c[1].send_total_inuse(), 2u);
    const std::uint8_t four = c.send(1, 0, 4);
    std::uint8_t b = 0;
    EXPECT_FALSE(c[1].request_begin(0, 2, b));  // 8 > 7, though rank 0 lent 2 more
    EXPECT_EQ(c[1].totals().total_stalls, 1u);
    const std::uint8_t back = c.send(0, 1, 1);  // carries the 2 held back home
    c[1].request_arrived(0, back);
    EXPECT_EQ(c[1].send_total_inuse(), 4u);
    EXPECT_TRUE(c[1].request_begin(0, 2, b));
    c[0].request_arrived(1, b);
    c[1].reply_arrived(0, c[0].reply_byte(1, b));
    c.serve(1, 0, four);
    EXPECT_EQ(c[1].send_total_inuse(), 0u);
}

TEST(CreditSendTotal, NormalizeKeepsAFullSizeRequestPossible) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.send_total = 2;  // below min_credits 4
    const auto changed = cfg.normalize();
    EXPECT_EQ(cfg.send_total, 4u);
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_NE(changed[0].find("send_total raised to min_credits"), std::string::npos) << changed[0];
    Config fixed = config_for(Policy::fixed, 5);
    fixed.per_peer = 8;
    fixed.slack = 2;
    fixed.send_total = 4;
    fixed.normalize();
    EXPECT_EQ(fixed.send_total, 4u * 2 + 4);  // every peer's slack held back, and a full-size request
    Config unbounded = config_for(Policy::dynamic, 2);
    EXPECT_TRUE(unbounded.normalize().empty());
    EXPECT_EQ(unbounded.send_total, 0u);
}

TEST(CreditFixed, ReplyReturnsTheRequestsCredits) {
    Config cfg = config_for(Policy::fixed, 2);
    cfg.per_peer = 8;
    Cluster c(cfg);
    const std::uint8_t b1 = c.send(1, 0, 4), b2 = c.send(1, 0, 4);
    std::uint8_t b = 0;
    EXPECT_FALSE(c[1].request_begin(0, 1, b));
    EXPECT_EQ(c[1].peer(0).send_wanted, 0);  // fixed credits are never lent extra
    c[0].request_arrived(1, b1);
    c[0].request_arrived(1, b2);
    EXPECT_EQ(c[0].peer(1).loan_busy, 8);
    EXPECT_TRUE(c[0].reply_needed(1, b1));  // slack 0: every request is answered
    const std::uint8_t r = c[0].reply_byte(1, b1);
    EXPECT_EQ(decode(r).count, 4);
    EXPECT_EQ(decode(r).extra, 0);
    c[1].reply_arrived(0, r);
    EXPECT_EQ(c[1].peer(0).send_inuse, 4);
    EXPECT_EQ(decode(c.send(1, 0, 4)).extra, 0);
    c[1].reply_arrived(0, c[0].reply_byte(1, b2));
    EXPECT_EQ(c[1].peer(0).send_credits, 8);
    EXPECT_EQ(c[0].peer(1).loan_credits, 8);
}

TEST(CreditFixed, SlackBanksThenHiddenReplyCarriesAll) {
    Config cfg = config_for(Policy::fixed, 2);
    cfg.per_peer = 8;
    cfg.slack = 3;
    Cluster c(cfg);
    std::uint8_t b[4];
    for (auto &x : b) {
        x = c.send(1, 0, 1);
        c[0].request_arrived(1, x);
    }
    EXPECT_FALSE(c[0].reply_needed(1, b[0]));
    EXPECT_FALSE(c[0].reply_needed(1, b[1]));
    EXPECT_FALSE(c[0].reply_needed(1, b[2]));
    EXPECT_EQ(c[0].peer(1).owed, 3);
    EXPECT_EQ(c[0].peer(1).loan_busy, 1);
    EXPECT_EQ(c[0].totals().hidden_replies, 0u);
    EXPECT_TRUE(c[0].reply_needed(1, b[3]));  // 3 + 1 > slack
    EXPECT_EQ(c[0].totals().hidden_replies, 1u);
    const std::uint8_t r = c[0].reply_byte(1, b[3]);
    EXPECT_EQ(decode(r).count, 4);
    EXPECT_EQ(c[0].peer(1).owed, 0);
    EXPECT_EQ(c[0].peer(1).loan_busy, 0);
    EXPECT_EQ(c[1].peer(0).send_inuse, 4);  // banked credits stay in use at the sender
    c[1].reply_arrived(0, r);
    EXPECT_EQ(c[1].peer(0).send_inuse, 0);

    // Larger requests: 2 banks, 2 + 2 > 3 needs the hidden reply.
    const std::uint8_t d1 = c.send(1, 0, 2), d2 = c.send(1, 0, 2);
    c[0].request_arrived(1, d1);
    c[0].request_arrived(1, d2);
    EXPECT_FALSE(c[0].reply_needed(1, d1));
    EXPECT_TRUE(c[0].reply_needed(1, d2));
    const std::uint8_t r2 = c[0].reply_byte(1, d2);
    EXPECT_EQ(decode(r2).count, 4);
    c[1].reply_arrived(0, r2);
    EXPECT_EQ(c[1].peer(0).send_inuse, 0);
}

TEST(CreditFixed, BankedCreditsRideOnTheNextRequestBack) {
    Config cfg = config_for(Policy::fixed, 2);
    cfg.per_peer = 8;
    cfg.slack = 3;
    Cluster c(cfg);
    for (int i = 0; i < 2; ++i) {
        const std::uint8_t x = c.send(1, 0, 1);
        c[0].request_arrived(1, x);
        EXPECT_FALSE(c[0].reply_needed(1, x));
    }
    EXPECT_EQ(c[1].peer(0).send_inuse, 2);
    const std::uint8_t back = c.send(0, 1, 1);
    EXPECT_EQ(decode(back).extra, 2);  // XXX: the credits banked for rank 1
    EXPECT_EQ(decode(back).count, 1);
    EXPECT_EQ(c[0].peer(1).owed, 0);
    c[1].request_arrived(0, back);
    EXPECT_EQ(c[1].peer(0).send_inuse, 0);
    const std::uint8_t r = c[1].reply_byte(0, back);
    EXPECT_EQ(decode(r).count, 1);
    c[0].reply_arrived(1, r);
    EXPECT_EQ(c[0].peer(1).send_inuse, 0);

    // At most 7 ride on a request; the rest on the next reply.
    cfg.per_peer = 15;
    cfg.slack = 11;
    Cluster d(cfg);
    for (int i = 0; i < 9; ++i) {
        const std::uint8_t x = d.send(1, 0, 1);
        d[0].request_arrived(1, x);
        EXPECT_FALSE(d[0].reply_needed(1, x));
    }
    const std::uint8_t back2 = d.send(0, 1, 1);
    EXPECT_EQ(decode(back2).extra, 7);
    EXPECT_EQ(d[0].peer(1).owed, 2);
    d.serve(0, 1, back2);
    EXPECT_EQ(d[1].peer(0).send_inuse, 2);
    EXPECT_EQ(decode(d.roundtrip(1, 0, 1)).count, 3);
    EXPECT_EQ(d[1].peer(0).send_inuse, 0);
    EXPECT_EQ(d[0].peer(1).owed, 0);
}

TEST(CreditFixed, NormalizeLowersSlackSoAFullRequestFits) {
    Config cfg = config_for(Policy::fixed, 2);
    cfg.per_peer = 6;
    cfg.slack = 5;
    Config n = cfg;
    const auto changed = n.normalize();
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_NE(changed[0].find("slack"), std::string::npos) << changed[0];
    EXPECT_EQ(n.slack, 2u);

    Cluster c(cfg);  // the engine normalizes its copy
    EXPECT_EQ(c[0].config().slack, 2u);
    for (int i = 0; i < 2; ++i) {
        const std::uint8_t x = c.send(1, 0, 1);
        c[0].request_arrived(1, x);
        EXPECT_FALSE(c[0].reply_needed(1, x));
    }
    const std::uint8_t full = c.send(1, 0, 4);  // 6 - 2 banked still fits 4
    c[0].request_arrived(1, full);
    EXPECT_TRUE(c[0].reply_needed(1, full));
    c[1].reply_arrived(0, c[0].reply_byte(1, full));
    EXPECT_EQ(c[1].peer(0).send_inuse, 0);

    for (unsigned per_peer = 0; per_peer <= 20; ++per_peer)
        for (unsigned slack = 0; slack <= 20; ++slack) {
            Config k = config_for(Policy::fixed, 2);
            k.per_peer = per_peer;
            k.slack = slack;
            k.normalize();
            EXPECT_GE(k.per_peer, k.min_credits + k.slack) << per_peer << " " << slack;
        }
}

// ---- dynamic: loans from the bank (GASNet Portals) ------------------------------------

TEST(CreditDynamic, StalledSenderAsksOnItsNextRequest) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.banked = 20;
    Cluster c(cfg);
    const std::uint8_t b1 = c.send(1, 0, 4);
    std::uint8_t b = 0;
    EXPECT_FALSE(c[1].request_begin(0, 4, b));
    EXPECT_EQ(c[1].peer(0).send_wanted, 2);  // two requests ask, each for as many as a reply may grant
    c.serve(1, 0, b1);
    const std::uint8_t b2 = c.send(1, 0, 4);
    EXPECT_EQ(decode(b2).extra, 7);  // on a request 7 is a wish, not a reclaim
    const CreditByte r = decode(c.serve(1, 0, b2));
    EXPECT_EQ(r.extra, 6);           // a reply grants at most 6
    EXPECT_EQ(r.count, 4);
    const PeerCredits loan = c[0].peer(1);
    EXPECT_EQ(loan.loan_credits, 10);
    EXPECT_EQ(loan.loan_given, 6);
    EXPECT_EQ(loan.loan_requested, 7);
    EXPECT_EQ(c[0].bank(), 14u);
    EXPECT_EQ(c[0].totals().granted, 6u);
    EXPECT_EQ(c[0].scavenge_list_size(), 1u);
    EXPECT_EQ(c[1].peer(0).send_credits, 10);
    EXPECT_EQ(c[1].peer(0).send_wanted, 1);
    EXPECT_EQ(decode(c.roundtrip(1, 0, 1)).extra, 6);  // the second
    EXPECT_EQ(c[1].peer(0).send_credits, 16);          // 4 x 4
    EXPECT_EQ(decode(c.send(1, 0, 1)).extra, 0);       // and no more
    EXPECT_EQ(c[1].peer(0).send_wanted, 0);
    c.expect_balanced();
}

// Beyond GASNet's schemes: a stall makes enough requests ask for 7 that the loan
// grows fourfold (a reply grants at most 6), instead of creeping up a few
// credits per stall.
TEST(CreditDynamic, StallAsksToQuadrupleTheLoan) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.per_peer = 10;
    cfg.banked = 100;
    Cluster c(cfg);
    std::vector<std::uint8_t> out;
    for (int i = 0; i < 10; ++i) out.push_back(c.send(1, 0, 1));
    std::uint8_t b = 0;
    EXPECT_FALSE(c[1].request_begin(0, 1, b));
    EXPECT_EQ(c[1].peer(0).send_wanted, 5);  // 5 x 6 = 30 more
    c.serve(1, 0, out[0]);
    out.erase(out.begin());
    unsigned asked = 0;
    for (int i = 0; i < 6; ++i) {
        const std::uint8_t x = c.send(1, 0, 1);
        asked += decode(x).extra == 7;
        c.serve(1, 0, x);  // each grants 6
    }
    EXPECT_EQ(asked, 5u);
    EXPECT_EQ(c[1].peer(0).send_credits, 40);
    EXPECT_FALSE(c[1].request_begin(0, 1, b) && decode(b).extra != 0) << "asked beyond the five";
    for (std::uint8_t x : out) c.serve(1, 0, x);
    if (c[1].peer(0).send_inuse) c.serve(1, 0, b);
    c.expect_balanced();
}

TEST(CreditDynamic, GrantsStayWithinMaxPerPeer) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.banked = 20;
    cfg.max_per_peer = 10;
    Cluster c(cfg);
    EXPECT_EQ(c.ask_extra(1, 0), 6u);
    EXPECT_EQ(c.ask_extra(1, 0), 0u);
    EXPECT_EQ(c[0].peer(1).loan_credits, 10);
    cfg.max_per_peer = 8;
    Cluster d(cfg);
    EXPECT_EQ(d.ask_extra(1, 0), 4u);
    EXPECT_EQ(d[1].peer(0).send_credits, 8);
    d.expect_balanced();
}

TEST(CreditDynamic, GrantsStayWithinLenderLimitPerEpoch) {
    Config cfg = config_for(Policy::dynamic, 3);
    cfg.banked = 60;
    cfg.lender_limit = 8;
    cfg.epoch_length = 64;
    Cluster c(cfg);
    ASSERT_NO_FATAL_FAILURE(c.epoch_end(0, 2));
    unsigned granted = 0;
    for (int i = 0; i < 4; ++i) {
        granted += c.ask_extra(1, 0);
        EXPECT_LE(c[0].peer(1).loan_given, cfg.lender_limit) << "after ask " << i;
    }
    EXPECT_LE(granted, cfg.lender_limit);
    EXPECT_GT(granted, 0u);
    ASSERT_NO_FATAL_FAILURE(c.epoch_end(0, 2));
    EXPECT_GT(c.ask_extra(1, 0), 0u);  // loan_given decayed: lending resumes
    c.expect_balanced();
}

TEST(CreditDynamic, RefusedWhenTheBankIsShort) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.banked = 5;
    Cluster c(cfg);
    EXPECT_EQ(c.ask_extra(1, 0), 0u);
    EXPECT_EQ(c[0].bank(), 5u);
    EXPECT_EQ(c[0].peer(1).loan_credits, 4);
    EXPECT_EQ(c[0].peer(1).loan_requested, CreditByte::want);
    EXPECT_EQ(c[0].scavenge_list_size(), 0u);
    c.expect_balanced();
    cfg.banked = 6;  // a reply's most
    Cluster d(cfg);
    EXPECT_EQ(d.ask_extra(1, 0), 6u);
    EXPECT_EQ(d[0].bank(), 0u);
    EXPECT_EQ(d.ask_extra(1, 0), 0u);
    EXPECT_EQ(d[0].scavenge_list_size(), 1u);
    d.expect_balanced();
}

TEST(CreditDynamic, ScavengeListHoldsPeersAboveTheFloor) {
    Config cfg = config_for(Policy::dynamic, 4);
    cfg.banked = 20;
    Cluster c(cfg);
    c.ask_extra(1, 0);
    c.ask_extra(2, 0);
    c.roundtrip(3, 0, 4);  // at the floor: not listed
    EXPECT_EQ(c[0].scavenge_list_size(), 2u);
    c.deliver(1, give_for_revoke(c, 1, 0, false, false));
    EXPECT_EQ(c[0].peer(1).loan_credits, 4);
    EXPECT_EQ(c[0].scavenge_list_size(), 1u);
    c.deliver(2, give_for_revoke(c, 2, 0, false, false));
    EXPECT_EQ(c[0].scavenge_list_size(), 0u);
    EXPECT_EQ(c[0].bank(), 20u);
    EXPECT_EQ(c[0].totals().revoked, 12u);
    c.expect_balanced();
}

// The borrower's answer to a revoke, GASNet's SYS_CREDIT_REVOKE: what exceeds
// max(min_credits, send_max, send_inuse), nothing after a recent stall,
// within revoke_limit per epoch.  Rank 0 lends 16 to rank 1 first.
class CreditRevoke : public ::testing::Test {
protected:
    void lend16(Config cfg) {
        cfg.banked = 20;
        c = std::make_unique<Cluster>(cfg);
        ASSERT_EQ(c->ask_extra(1, 0), 6u);
        ASSERT_EQ(c->ask_extra(1, 0), 6u);
        ASSERT_EQ((*c)[1].peer(0).send_credits, 16);
    }
    std::unique_ptr<Cluster> c;
};

TEST_F(CreditRevoke, GivesWhatExceedsRecentUse) {
    ASSERT_NO_FATAL_FAILURE(lend16(config_for(Policy::dynamic, 2)));
    const std::uint8_t a = c->send(1, 0, 4), b = c->send(1, 0, 4);
    c->serve(1, 0, a);
    c->serve(1, 0, b);
    const SysMessage g = give_for_revoke(*c, 1, 0, false, false);
    EXPECT_EQ(g.count, 8);  // 16 - max(4, send_max 8, 0)
    EXPECT_EQ((*c)[1].peer(0).send_credits, 8);
    EXPECT_EQ((*c)[1].peer(0).send_revoked, 8);
    c->deliver(1, g);
    EXPECT_EQ((*c)[0].peer(1).loan_credits, 8);
    EXPECT_EQ((*c)[0].bank(), 16u);
    EXPECT_EQ((*c)[0].totals().revoked, 8u);
    c->expect_balanced();
}

TEST_F(CreditRevoke, KeepsCreditsInUse) {
    ASSERT_NO_FATAL_FAILURE(lend16(config_for(Policy::dynamic, 2)));
    const std::uint8_t r[3] = {c->send(1, 0, 4), c->send(1, 0, 4), c->send(1, 0, 4)};
    // The E bit decays send_max 12 -> 3 first; the 12 in use are still kept.
    // A full-size request stays free beyond them (some may be held back at
    // the lender): 16 - (4 + 12) = nothing to give.
    const SysMessage g = give_for_revoke(*c, 1, 0, false, true);
    EXPECT_EQ((*c)[1].peer(0).send_max, 3);
    EXPECT_EQ(g.count, 0);
    c->deliver(1, g);
    for (std::uint8_t x : r) c->serve(1, 0, x);
    EXPECT_EQ((*c)[1].peer(0).send_credits, 16);
    c->expect_balanced();
}

TEST_F(CreditRevoke, NothingAfterARecentStall) {
    ASSERT_NO_FATAL_FAILURE(lend16(config_for(Policy::dynamic, 2)));
    const std::uint8_t r[2] = {c->send(1, 0, 4), c->send(1, 0, 4)};
    std::uint8_t b = 0;
    EXPECT_FALSE((*c)[1].request_begin(0, 12, b));  // 8 free: a stall, with send_max only 8
    for (std::uint8_t x : r) c->serve(1, 0, x);
    const SysMessage g = give_for_revoke(*c, 1, 0, false, false);
    EXPECT_EQ(g.count, 0);  // 8 beyond recent use, but it stalled
    c->deliver(1, g);
    EXPECT_EQ((*c)[0].peer(1).loan_credits, 16);
    c->expect_balanced();
}

TEST_F(CreditRevoke, AtMostRevokeLimitPerEpoch) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.revoke_limit = 5;
    ASSERT_NO_FATAL_FAILURE(lend16(cfg));
    const SysMessage g1 = give_for_revoke(*c, 1, 0, false, false);
    EXPECT_EQ(g1.count, 5);
    const SysMessage g2 = give_for_revoke(*c, 1, 0, false, false);
    EXPECT_EQ(g2.count, 0);
    // The E bit decays send_revoked 5 -> 1: 4 more may go.
    const SysMessage g3 = give_for_revoke(*c, 1, 0, false, true);
    EXPECT_EQ(g3.count, 4);
    for (const SysMessage &g : {g1, g2, g3}) c->deliver(1, g);
    EXPECT_EQ((*c)[1].peer(0).send_credits, 7);
    c->expect_balanced();
}

TEST_F(CreditRevoke, UrgentGivesAllNotInUseDespiteStallsAndLimit) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.revoke_limit = 2;
    ASSERT_NO_FATAL_FAILURE(lend16(cfg));
    std::uint8_t r[4];
    for (auto &x : r) x = c->send(1, 0, 4);
    std::uint8_t b = 0;
    EXPECT_FALSE((*c)[1].request_begin(0, 1, b));
    for (int i = 0; i < 2; ++i) c->serve(1, 0, r[i]);
    const SysMessage g = give_for_revoke(*c, 1, 0, true, false);
    EXPECT_EQ(g.count, 4);  // 16 - (floor 4 + 8 in use)
    c->deliver(1, g);
    for (int i = 2; i < 4; ++i) c->serve(1, 0, r[i]);
    EXPECT_EQ((*c)[1].peer(0).send_credits, 12);
    c->expect_balanced();
}

// ---- credits held back (return_batch) ---------------------------------------------------

// Rank 1 holds 16 of rank 0's credits; its 1-credit requests get no reply.
class CreditHeldBack : public CreditRevoke {
protected:
    // x's request of n credits to y arrives and its handler does not reply:
    // whether a hidden reply must go (and then its byte, delivered).
    bool unanswered(Peer x, Peer y, unsigned n, std::uint8_t extra = 0) {
        std::uint8_t b = c->send(x, y, n);
        if (extra) b = with_extra(b, extra);
        (*c)[y].request_arrived(x, b);
        if (!(*c)[y].reply_needed(x, b)) return false;
        (*c)[x].reply_arrived(y, (*c)[y].reply_byte(x, b));
        return true;
    }
};

TEST_F(CreditHeldBack, AHiddenReplyPerBatchCarriesThemAll) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.return_batch = 8;
    ASSERT_NO_FATAL_FAILURE(lend16(cfg));
    for (int i = 0; i < 8; ++i) EXPECT_FALSE(unanswered(1, 0, 1)) << i;
    EXPECT_EQ((*c)[0].peer(1).owed, 8);
    EXPECT_EQ((*c)[1].peer(0).send_inuse, 8);
    EXPECT_TRUE(unanswered(1, 0, 1));  // 9 > the batch: the hidden reply carries 9
    EXPECT_EQ((*c)[0].peer(1).owed, 0);
    EXPECT_EQ((*c)[1].peer(0).send_inuse, 0);
    EXPECT_EQ((*c)[0].totals().held_back, 8u);
    EXPECT_EQ((*c)[0].totals().hidden_replies, 1u);
    c->expect_balanced();
}

TEST_F(CreditHeldBack, TheSenderKeepsAFullSizeRequest) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.return_batch = 15;
    ASSERT_NO_FATAL_FAILURE(lend16(cfg));
    // 16 lent, a full-size request is 4: at most 12 held back.
    int held = 0;
    while (!unanswered(1, 0, 1)) ++held;
    EXPECT_EQ(held, 12);
    std::uint8_t b = 0;
    for (int i = 0; i < 4; ++i) EXPECT_FALSE(unanswered(1, 0, 1));
    EXPECT_TRUE((*c)[1].request_begin(0, 4, b));  // 4 held, 4 free beyond them and the 4 sent
    c->serve(1, 0, b);
    EXPECT_EQ((*c)[1].peer(0).send_inuse, 0);  // the reply carried the held ones home
    c->expect_balanced();
}

TEST_F(CreditHeldBack, NotWhenTheSenderAsksNorWithoutABatchNorUnderASendTotal) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.return_batch = 8;
    ASSERT_NO_FATAL_FAILURE(lend16(cfg));
    EXPECT_FALSE(unanswered(1, 0, 1));
    EXPECT_TRUE(unanswered(1, 0, 1, CreditByte::want));  // a stalled sender asks: the reply goes now, with the held one
    EXPECT_EQ((*c)[1].peer(0).send_inuse, 0);
    c->expect_balanced();

    cfg.return_batch = 0;
    ASSERT_NO_FATAL_FAILURE(lend16(cfg));
    EXPECT_TRUE(unanswered(1, 0, 1));

    cfg.return_batch = 8;
    cfg.send_total = 64;
    ASSERT_NO_FATAL_FAILURE(lend16(cfg));
    EXPECT_TRUE(unanswered(1, 0, 1));
}

// Credits held back for a peer's requests ride home on this rank's next
// request to it (a stencil's neighbours need no hidden replies).
TEST(CreditReturns, RideHomeOnARequestTheOtherWay) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.per_peer = 8;
    cfg.return_batch = 8;
    Cluster c(cfg);
    auto hold_one = [&] {
        const std::uint8_t b = c.send(1, 0, 1);
        c[0].request_arrived(1, b);
        EXPECT_FALSE(c[0].reply_needed(1, b));
    };
    hold_one();
    hold_one();
    EXPECT_EQ(c[0].peer(1).owed, 2);
    EXPECT_EQ(c[1].peer(0).send_inuse, 2);
    const std::uint8_t r = c.send(0, 1, 1);
    EXPECT_EQ(decode(r).extra, 2);
    EXPECT_EQ(c[0].peer(1).owed, 0);
    c[1].request_arrived(0, r);
    EXPECT_EQ(c[1].peer(0).send_inuse, 0) << "the request carried them home";
    c[0].reply_arrived(1, c[1].reply_byte(0, r));
    c.expect_balanced();

    // A request that is cancelled keeps them held.
    hold_one();
    const std::uint8_t x = c.send(0, 1, 1);
    EXPECT_EQ(decode(x).extra, 1);
    c[0].request_cancel(1, x);
    EXPECT_EQ(c[0].peer(1).owed, 1);
    c.roundtrip(0, 1, 1);
    EXPECT_EQ(c[1].peer(0).send_inuse, 0);
    c.expect_balanced();

    // At most 6: 7 on a request is a want.
    for (int i = 0; i < 4; ++i) hold_one();
    EXPECT_EQ(c[0].peer(1).owed, 4);
}

// ---- the scavenger (GASNet's scavenge_for_credits) ---------------------------------------

// Rank 0 lends; 1..borrowers() borrow 6 each; 5 triggers scavenges (each
// of its wants is a grant attempt that the 5 credits left in the bank
// cannot meet, and the bank is always below low_water); 6 ends rank 0's
// epochs.
class CreditScavenge : public ::testing::Test {
protected:
    static constexpr Peer lender = 0, trigger_rank = 5, epoch_rank = 6;
    void SetUp() override {
        Config cfg = config_for(Policy::dynamic, 7);
        cfg.banked = 6 * borrowers() + 5;
        cfg.low_water = 1000;
        cfg.epoch_length = 64;
        cfg.scavenge_targets = targets();
        c = std::make_unique<Cluster>(cfg);
        ASSERT_NO_FATAL_FAILURE(c->epoch_end(lender, epoch_rank));
    }
    virtual unsigned targets() const { return 4; }
    virtual unsigned borrowers() const { return 1; }
    // The revokes the next scavenge sends.
    std::vector<Peer> scavenge() {
        c->ask_extra(trigger_rank, lender);
        const auto out = c->take(lender);
        for (const SysMessage &m : out) EXPECT_FALSE(m.urgent);
        revokes_.insert(revokes_.end(), out.begin(), out.end());
        return destinations(out, SysKind::revoke);
    }
    // Two of the lender's epochs: a want of 7 decays to 1, then 0 (until
    // then the scavenger skips the peer that asked).
    void two_epochs() {
        for (int i = 0; i < 2; ++i) ASSERT_NO_FATAL_FAILURE(c->epoch_end(lender, epoch_rank));
    }
    // Delivers the revokes sent so far and their gives.
    void answer_revokes() {
        for (const SysMessage &m : revokes_) c->deliver(lender, m);
        revokes_.clear();
        c->settle();
    }
    std::unique_ptr<Cluster> c;
    std::vector<SysMessage> revokes_;
};

TEST_F(CreditScavenge, SkipsAPeerThatAskedThisEpoch) {
    EXPECT_EQ(c->ask_extra(1, lender), 6u);
    EXPECT_TRUE(c->take(lender).empty());  // that grant's scavenge skipped it
    EXPECT_TRUE(scavenge().empty());
    ASSERT_NO_FATAL_FAILURE(c->epoch_end(lender, epoch_rank));  // loan_requested 7 -> 1
    EXPECT_TRUE(c->take(lender).empty());
    EXPECT_TRUE(scavenge().empty());                             // it still asked lately
    ASSERT_NO_FATAL_FAILURE(c->epoch_end(lender, epoch_rank));  // 1 -> 0
    const auto out = c->take(lender);
    EXPECT_TRUE(out.empty());
    c->ask_extra(trigger_rank, lender);
    const auto revokes = c->take(lender);
    ASSERT_EQ(revokes.size(), 1u);
    EXPECT_EQ(revokes[0].kind, SysKind::revoke);
    EXPECT_EQ(revokes[0].peer, 1u);
    EXPECT_FALSE(revokes[0].urgent);
    EXPECT_TRUE(revokes[0].epoch);  // first message to rank 1 since the epoch ended
    revokes_ = revokes;
    answer_revokes();
    c->expect_balanced();
}

TEST_F(CreditScavenge, OneRevokeInFlightPerPeerAndNoneAtTheFloor) {
    EXPECT_EQ(c->ask_extra(1, lender), 6u);
    ASSERT_NO_FATAL_FAILURE(two_epochs());
    EXPECT_EQ(scavenge(), std::vector<Peer>{1});
    EXPECT_TRUE(scavenge().empty());  // still in flight
    EXPECT_TRUE(scavenge().empty());
    ASSERT_EQ(revokes_.size(), 1u);
    answer_revokes();
    EXPECT_EQ((*c)[lender].peer(1).loan_credits, 4);  // gave the 6 it never used
    EXPECT_TRUE(scavenge().empty());                   // at the floor now
    c->expect_balanced();
}

TEST_F(CreditScavenge, ZeroGiveSkippedUntilTheNextEpoch) {
    EXPECT_EQ(c->ask_extra(1, lender), 6u);
    ASSERT_NO_FATAL_FAILURE(two_epochs());
    const std::uint8_t a = c->send(1, lender, 4), b = c->send(1, lender, 6);  // all 10 in use
    EXPECT_EQ(scavenge(), std::vector<Peer>{1});
    answer_revokes();
    EXPECT_EQ((*c)[lender].peer(1).loan_credits, 10);  // gave 0
    EXPECT_TRUE(scavenge().empty());
    EXPECT_TRUE(scavenge().empty());
    ASSERT_NO_FATAL_FAILURE(c->epoch_end(lender, epoch_rank));
    EXPECT_EQ(scavenge(), std::vector<Peer>{1});
    answer_revokes();
    c->serve(1, lender, a);
    c->serve(1, lender, b);
    c->expect_balanced();
}

class CreditScavengeTargets : public CreditScavenge {
    unsigned targets() const override { return 2; }
    unsigned borrowers() const override { return 4; }
};

TEST_F(CreditScavengeTargets, AtMostTargetsPerScavengeAndEveryoneInTurn) {
    for (Peer b = 1; b <= 4; ++b) EXPECT_EQ(c->ask_extra(b, lender), 6u);
    c->take(lender);
    ASSERT_NO_FATAL_FAILURE(two_epochs());
    std::vector<Peer> first = scavenge(), second = scavenge();
    EXPECT_EQ(first.size(), 2u);
    EXPECT_EQ(second.size(), 2u);
    first.insert(first.end(), second.begin(), second.end());
    std::sort(first.begin(), first.end());
    EXPECT_EQ(first, (std::vector<Peer>{1, 2, 3, 4}));
    EXPECT_TRUE(scavenge().empty());
    answer_revokes();
    c->expect_balanced();
}

// ---- epochs ------------------------------------------------------------------------

TEST(CreditEpoch, EndsEveryEpochLengthRequestsReceived) {
    Config cfg = config_for(Policy::dynamic, 3);
    cfg.epoch_length = 5;
    Cluster c(cfg);
    for (int i = 0; i < 4; ++i) c.roundtrip(1, 0, 1);
    EXPECT_EQ(c[0].epoch(), 0u);
    c.roundtrip(2, 0, 1);  // requests from every peer count
    EXPECT_EQ(c[0].epoch(), 1u);
    EXPECT_EQ(c[0].totals().epochs, 1u);
    for (int i = 0; i < 10; ++i) c.roundtrip(0, 1, 1);  // sent ones do not
    EXPECT_EQ(c[0].epoch(), 1u);
    for (int i = 0; i < 5; ++i) c.roundtrip(2, 0, 1);
    EXPECT_EQ(c[0].epoch(), 2u);
}

TEST(CreditEpoch, LoanStatisticsDecayByFourPerEpoch) {
    Config cfg = config_for(Policy::dynamic, 3);
    cfg.banked = 200;
    cfg.max_per_peer = 400;
    cfg.lender_limit = 1000;
    cfg.epoch_length = 32;
    Cluster c(cfg);
    ASSERT_NO_FATAL_FAILURE(c.epoch_end(0, 2));
    for (int i = 0; i < 10; ++i) EXPECT_EQ(c.ask_extra(1, 0), 6u);
    ASSERT_NO_FATAL_FAILURE(c.epoch_end(0, 2));
    c.roundtrip(0, 1, 1);  // touching rank 1 applies the decay
    EXPECT_EQ(c[0].peer(1).loan_requested, 70 >> 2);  // ten wants of 7
    EXPECT_EQ(c[0].peer(1).loan_given, 60 >> 2);      // ten grants of 6
    EXPECT_EQ(c[0].peer(1).loan_credits, 64);  // loans themselves never decay
    for (int i = 0; i < 10; ++i) EXPECT_EQ(c.ask_extra(1, 0), 6u);
    ASSERT_NO_FATAL_FAILURE(c.epoch_end(0, 2));
    ASSERT_NO_FATAL_FAILURE(c.epoch_end(0, 2));
    c.roundtrip(0, 1, 1);
    EXPECT_EQ(c[0].peer(1).loan_requested, 87 >> 4);  // two epochs at once
    EXPECT_EQ(c[0].peer(1).loan_given, 75 >> 4);
    c.roundtrip(0, 1, 1);
    EXPECT_EQ(c[0].peer(1).loan_given, 75 >> 4);  // and only once
}

TEST(CreditEpoch, NextMessageToEachPeerCarriesTheBitOnce) {
    Config cfg = config_for(Policy::dynamic, 4);
    cfg.per_peer = 8;
    cfg.epoch_length = 16;
    Cluster c(cfg);
    EXPECT_FALSE(decode(c.roundtrip(1, 0, 1)).epoch);
    EXPECT_FALSE(decode(c.send(0, 1, 1)).epoch);
    ASSERT_NO_FATAL_FAILURE(c.epoch_end(0, 3));
    EXPECT_TRUE(decode(c.roundtrip(1, 0, 1)).epoch);  // a reply
    EXPECT_FALSE(decode(c.roundtrip(1, 0, 1)).epoch);
    EXPECT_FALSE(decode(c.send(0, 1, 1)).epoch);
    EXPECT_TRUE(decode(c.send(0, 2, 1)).epoch);  // a request, to another peer
    EXPECT_FALSE(decode(c.send(0, 2, 1)).epoch);

    // Three epochs: still one bit, and the receiver decays once.
    const std::uint8_t a = c.send(1, 0, 4), b = c.send(1, 0, 4);
    c.serve(1, 0, a);
    c.serve(1, 0, b);
    EXPECT_EQ(c[1].peer(0).send_max, 8);
    for (int i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(c.epoch_end(0, 3));
    EXPECT_TRUE(decode(c.roundtrip(1, 0, 1)).epoch);
    EXPECT_EQ(c[1].peer(0).send_max, 2);
    EXPECT_FALSE(decode(c.roundtrip(1, 0, 1)).epoch);
    EXPECT_EQ(c[1].peer(0).send_max, 2);
}

TEST(CreditEpoch, SystemMessagesCarryTheBit) {
    Config cfg = config_for(Policy::dynamic, 3);
    cfg.per_peer = 8;
    cfg.epoch_length = 16;
    Cluster c(cfg);
    c.roundtrip(0, 1, 1);
    ASSERT_NO_FATAL_FAILURE(c.epoch_end(0, 2));
    const SysMessage g = give_for_revoke(c, 0, 1, false, false);  // rank 0 borrows from 1
    EXPECT_TRUE(g.epoch);
    EXPECT_EQ(g.count, 4);
    c.deliver(0, g);
    EXPECT_FALSE(decode(c.send(0, 1, 1)).epoch);
}

TEST(CreditEpoch, ReceiverOfTheBitDecaysSendStatistics) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.per_peer = 16;
    Cluster c(cfg);
    for (int i = 0; i < 16; ++i) {
        std::uint8_t r[4];
        for (auto &x : r) x = c.send(1, 0, 4);
        std::uint8_t b = 0;
        EXPECT_FALSE(c[1].request_begin(0, 1, b));
        for (std::uint8_t x : r) c.serve(1, 0, x);
    }
    c.deliver(1, give_for_revoke(c, 1, 0, true, false));
    PeerCredits s = c[1].peer(0);
    EXPECT_EQ(s.send_stalls, 16);
    EXPECT_EQ(s.send_max, 16);
    EXPECT_EQ(s.send_revoked, 12);
    c.roundtrip(1, 0, 1);  // no bit: no decay
    EXPECT_EQ(c[1].peer(0).send_stalls, 16);

    const auto req = static_cast<std::uint8_t>(c.send(0, 1, 1) | 0x80);  // a request with the bit
    c.serve(0, 1, req);
    s = c[1].peer(0);
    EXPECT_EQ(s.send_stalls, 4);
    EXPECT_EQ(s.send_max, 4);
    EXPECT_EQ(s.send_revoked, 3);

    const std::uint8_t mine = c.send(1, 0, 1);  // a reply with the bit
    c[0].request_arrived(1, mine);
    c[1].reply_arrived(0, static_cast<std::uint8_t>(c[0].reply_byte(1, mine) | 0x80));
    s = c[1].peer(0);
    EXPECT_EQ(s.send_stalls, 1);
    EXPECT_EQ(s.send_max, 1);
    EXPECT_EQ(s.send_revoked, 0);

    c.deliver(1, give_for_revoke(c, 1, 0, false, true));  // a system message with the bit
    EXPECT_EQ(c[1].peer(0).send_stalls, 0);
    c.expect_balanced();
}

// ---- demand ------------------------------------------------------------------------

Config demand_config(Peer nodes) {
    Config c = config_for(Policy::demand, nodes);
    c.banked = 16;
    return c;
}

TEST(CreditDemand, FirstRequestAsksAndGoesWhenGranted) {
    Cluster c(demand_config(3));
    EXPECT_EQ(c[1].peer(0).send_credits, 0);
    std::uint8_t b = 0xAB;
    EXPECT_FALSE(c[1].request_begin(0, 2, b));
    EXPECT_EQ(b, 0xAB);
    const auto asks = c.take(1);
    ASSERT_EQ(asks.size(), 1u);
    EXPECT_EQ(asks[0].kind, SysKind::ask);
    EXPECT_EQ(asks[0].peer, 0u);
    EXPECT_EQ(asks[0].count, 4);  // a full-size request's worth
    EXPECT_FALSE(c[1].request_begin(0, 2, b));
    EXPECT_TRUE(c.take(1).empty());  // one ask in flight per peer
    EXPECT_EQ(c[1].totals().stalls, 1u);
    c.deliver(1, asks[0]);
    EXPECT_EQ(c[0].bank(), 12u);
    EXPECT_EQ(c[0].peer(1).loan_credits, 4);
    EXPECT_EQ(c[0].scavenge_list_size(), 1u);
    const auto grants = c.take(0);
    ASSERT_EQ(grants.size(), 1u);
    EXPECT_EQ(grants[0].kind, SysKind::grant);
    EXPECT_EQ(grants[0].count, 4);
    c.deliver(0, grants[0]);
    EXPECT_EQ(c[1].peer(0).send_credits, 4);
    EXPECT_EQ(decode(c.roundtrip(1, 0, 2)).count, 2);
    EXPECT_EQ(c[1].peer(0).send_inuse, 0);

    EXPECT_FALSE(c[2].request_begin(0, 8, b));  // larger than min_credits: asks for all of it
    const auto big = c.take(2);
    ASSERT_EQ(big.size(), 1u);
    EXPECT_EQ(big[0].count, 8);
    c.deliver(2, big[0]);
    c.settle();
    c.roundtrip(2, 0, 8);
    c.expect_balanced();
}

TEST(CreditDemand, NoAskWhileRequestsAreInFlight) {
    Cluster c(demand_config(2));
    ASSERT_NO_FATAL_FAILURE(c.borrow(1, 0, 4));
    const std::uint8_t a = c.send(1, 0, 4);
    std::uint8_t b = 0;
    EXPECT_FALSE(c[1].request_begin(0, 4, b));
    EXPECT_TRUE(c.take(1).empty());  // its reply brings the credits back
    c.serve(1, 0, a);
    c.roundtrip(1, 0, 4);
    c.settle();
    c.expect_balanced();
}

// The hang CI once met (8 ranks, silent handlers, a bank of 16): a
// borrower whose last requests the lender holds back goes quiet, and an
// asker waits for the bank.  The urgent revoke carries the held credits
// home, so the quiet borrower gives them back and the asker is granted.
TEST(CreditDemand, AnUrgentRevokeCarriesHeldCreditsHome) {
    Config cfg = demand_config(3);
    cfg.return_batch = 8;
    cfg.reclaim_after = 0;  // every reply may reclaim
    Cluster c(cfg);
    ASSERT_NO_FATAL_FAILURE(c.borrow(1, 0, 12));
    const unsigned lent = c[0].peer(1).loan_credits;
    ASSERT_EQ(c[0].bank(), cfg.banked - lent);
    const std::uint8_t r = c.send(1, 0, 2);
    c[0].request_arrived(1, r);
    EXPECT_FALSE(c[0].reply_needed(1, r));  // held back: rank 1 still has a full request
    EXPECT_EQ(c[0].peer(1).owed, 2);
    EXPECT_EQ(c[1].peer(0).send_inuse, 2);
    const std::uint8_t a = c.send(1, 0, 4);  // in flight while the revoke comes
    // Rank 2 asks for more than the bank has: urgent revoke of rank 1.
    std::uint8_t b2 = 0;
    ASSERT_FALSE(c[2].request_begin(0, 12, b2));
    c.pass(2);
    const auto revokes = c.take(0);
    ASSERT_EQ(destinations(revokes, SysKind::revoke), std::vector<Peer>{1});
    EXPECT_TRUE(revokes[0].urgent);
    EXPECT_EQ(revokes[0].returned, 2);
    EXPECT_EQ(c[0].peer(1).owed, 0);
    c.deliver(0, revokes[0]);
    EXPECT_EQ(c[1].peer(0).send_inuse, 4);  // the held 2 came home
    const auto gives = c.take(1);
    ASSERT_EQ(gives.size(), 1u);
    EXPECT_EQ(gives[0].count, lent - 4 - cfg.min_credits);  // keeps the 4 in flight and a full request
    c.deliver(1, gives[0]);
    // While rank 2 waits, rank 0 holds nothing back: the in-flight
    // request's credits are reclaimed for it.
    c[0].request_arrived(1, a);
    EXPECT_TRUE(c[0].reply_needed(1, a));
    const std::uint8_t ra = c[0].reply_byte(1, a);
    EXPECT_EQ(decode(ra).extra, CreditByte::reclaim);
    c[1].reply_arrived(0, ra);
    c.settle();
    EXPECT_TRUE(c[2].request_begin(0, 12, b2)) << "the asker was granted";
    c.serve(2, 0, b2);
    c.settle();
    c.expect_balanced();
}

TEST(CreditDemand, EmptyBankQueuesTheAskAndRevokesUrgently) {
    Cluster c(demand_config(7));
    for (Peer x = 1; x <= 4; ++x) ASSERT_NO_FATAL_FAILURE(c.borrow(x, 0, 4));
    ASSERT_EQ(c[0].bank(), 0u);
    std::uint8_t b = 0;
    EXPECT_FALSE(c[5].request_begin(0, 4, b));
    c.deliver(5, c.take(5).at(0));
    EXPECT_EQ(c[0].waiting_askers(), 1u);
    const auto revokes = c.take(0);
    EXPECT_TRUE(destinations(revokes, SysKind::grant).empty());
    EXPECT_EQ(destinations(revokes, SysKind::revoke), (std::vector<Peer>{1, 2, 3, 4}));
    for (const SysMessage &m : revokes) EXPECT_TRUE(m.urgent);

    c.deliver(0, revokes[0]);  // idle: gives everything
    const auto give = c.take(revokes[0].peer);
    ASSERT_EQ(give.size(), 1u);
    EXPECT_EQ(give[0].count, 4);
    EXPECT_EQ(c[revokes[0].peer].peer(0).send_credits, 0);
    c.deliver(revokes[0].peer, give[0]);
    EXPECT_EQ(destinations(c.pass(0), SysKind::grant), std::vector<Peer>{5});
    EXPECT_EQ(c[0].waiting_askers(), 0u);
    for (std::size_t i = 1; i < revokes.size(); ++i) c.deliver(0, revokes[i]);
    c.settle();
    EXPECT_EQ(c[0].bank(), 12u);
    c.roundtrip(5, 0, 4);
    c.expect_balanced();
}

Config reclaim_at_once(Config c) {
    c.reclaim_after = 0;
    return c;
}

// Rank 0's bank of 16 all lent (4 to rank 1, 12 to rank 2), rank 1's four
// 1-credit requests `r` in flight to it, and rank 3's ask for 4 (its
// request byte `b`) waiting there; rank 0's revokes in `revokes`, not
// delivered.
void asker_waits(Cluster &c, std::uint8_t (&r)[4], std::uint8_t &b, std::vector<SysMessage> &revokes) {
    ASSERT_NO_FATAL_FAILURE(c.borrow(1, 0, 4));
    ASSERT_NO_FATAL_FAILURE(c.borrow(2, 0, 12));
    ASSERT_EQ(c[0].bank(), 0u);
    for (auto &x : r) x = c.send(1, 0, 1);
    EXPECT_FALSE(c[3].request_begin(0, 4, b));
    c.deliver(3, c.take(3).at(0));
    ASSERT_EQ(c[0].waiting_askers(), 1u);
    revokes = c.take(0);
}

TEST(CreditDemand, RepliesReclaimForWaitingAskers) {
    Cluster c(reclaim_at_once(demand_config(4)));
    std::uint8_t r[4], b = 0;
    std::vector<SysMessage> revokes;  // held back while the replies reclaim
    ASSERT_NO_FATAL_FAILURE(asker_waits(c, r, b, revokes));
    EXPECT_EQ(revokes.size(), 2u);
    for (int i = 0; i < 4; ++i) {
        c[0].request_arrived(1, r[i]);
        const std::uint8_t reply = c[0].reply_byte(1, r[i]);
        EXPECT_EQ(decode(reply).extra, CreditByte::reclaim) << i;
        EXPECT_EQ(decode(reply).count, 1);
        c[1].reply_arrived(0, reply);
        EXPECT_EQ(c[1].peer(0).send_credits, 3 - i);
        EXPECT_EQ(c[0].peer(1).loan_credits, 3 - i);
        const auto grants = destinations(c.pass(0), SysKind::grant);
        // The fourth reclaimed credit completes the asker's grant.
        EXPECT_EQ(grants, i < 3 ? std::vector<Peer>{} : std::vector<Peer>{3}) << i;
    }
    EXPECT_EQ(c[0].totals().reclaimed, 4u);
    EXPECT_EQ(c[0].waiting_askers(), 0u);
    for (const SysMessage &m : revokes) c.deliver(0, m);
    c.settle();
    EXPECT_EQ(c[2].peer(0).send_credits, 0);  // idle: gave its 12
    EXPECT_NE(decode(c.roundtrip(3, 0, 4)).extra, CreditByte::reclaim);  // nobody waits now
    c.expect_balanced();
}

// reclaim_after: while askers wait, a borrower keeps its loan for that
// many of its requests here; the replies after them reclaim.  (A reply to
// a borrower's last request in flight serves the askers even before: the
// property test below found the hang without it.)
TEST(CreditDemand, ABorrowerKeepsItsLoanForItsTurn) {
    Config cfg = demand_config(4);
    {
        // Rank 1's turn ends with its second request below.
        Cluster probe(cfg);
        ASSERT_NO_FATAL_FAILURE(probe.borrow(1, 0, 4));
        cfg.reclaim_after = probe[0].peer(1).loan_served + 2u;
    }
    Cluster c(cfg);
    std::uint8_t r[4], b = 0;
    std::vector<SysMessage> revokes;  // held back while the replies go
    ASSERT_NO_FATAL_FAILURE(asker_waits(c, r, b, revokes));
    for (int i = 0; i < 4; ++i) {
        c[0].request_arrived(1, r[i]);
        const std::uint8_t reply = c[0].reply_byte(1, r[i]);
        EXPECT_EQ(decode(reply).extra == CreditByte::reclaim, i >= 1) << i;
        c[1].reply_arrived(0, reply);
        c.pass(0);
    }
    EXPECT_EQ(c[0].totals().reclaimed, 3u);
    EXPECT_EQ(c[0].waiting_askers(), 1u) << "3 reclaimed credits do not make the ask's 4";
    for (const SysMessage &m : revokes) c.deliver(0, m);
    c.settle();
    EXPECT_EQ(c[0].waiting_askers(), 0u) << "rank 2, idle, gave its loan back: the asker was granted";
    EXPECT_TRUE(c[3].request_begin(0, 4, b));
    c.serve(3, 0, b);
    c.settle();
    c.expect_balanced();
}

TEST(CreditDemand, HeldCreditsStayWhileAskersWait) {
    Config cfg = demand_config(4);
    cfg.scavenge_targets = 1;  // the asker's scavenge revokes rank 2's loan, listed first
    Cluster c(cfg);
    ASSERT_NO_FATAL_FAILURE(c.borrow(2, 0, 8));
    ASSERT_NO_FATAL_FAILURE(c.borrow(1, 0, 8));
    ASSERT_EQ(c[0].bank(), 0u);
    ASSERT_NO_FATAL_FAILURE(c.borrow(0, 1, 4));
    const std::uint8_t b = c.send(1, 0, 1);
    c[0].request_arrived(1, b);
    ASSERT_FALSE(c[0].reply_needed(1, b));
    ASSERT_EQ(c[0].peer(1).owed, 1);
    std::uint8_t a = 0;
    EXPECT_FALSE(c[3].request_begin(0, 4, a));
    c.deliver(3, c.take(3).at(0));
    ASSERT_EQ(c[0].waiting_askers(), 1u);
    ASSERT_EQ(c[0].peer(1).owed, 1);
    const std::uint8_t r = c.send(0, 1, 1);
    EXPECT_EQ(decode(r).extra, 0) << "held for a reply that may reclaim them";
    EXPECT_EQ(c[0].peer(1).owed, 1);
}

// Askers wait at rank 0 and rank 1 is within its turn: its credits are
// held back even when it wants more (nothing is lent while askers wait)
// and even for its last request here, which serves the askers instead;
// their scavenge sends no second revoke while the first is unanswered,
// and the next one carries what is held home.
TEST(CreditDemand, HeldBackWithinATurnWhileAskersWaitOneRoundOfRevokes) {
    Config cfg = demand_config(4);
    cfg.scavenge_targets = 1;
    Cluster c(cfg);
    ASSERT_NO_FATAL_FAILURE(c.borrow(2, 0, 8));
    ASSERT_NO_FATAL_FAILURE(c.borrow(1, 0, 8));
    ASSERT_EQ(c[0].bank(), 0u);
    std::uint8_t busy[8];
    for (auto &x : busy) x = c.send(2, 0, 1);  // rank 2's whole loan in flight
    std::uint8_t a = 0;
    EXPECT_FALSE(c[3].request_begin(0, 4, a));
    c.deliver(3, c.take(3).at(0));
    ASSERT_EQ(c[0].waiting_askers(), 1u);
    const auto first = c.take(0);
    ASSERT_EQ(destinations(first, SysKind::revoke), std::vector<Peer>{2});

    const std::uint8_t b = with_extra(c.send(1, 0, 1), CreditByte::want);
    c[0].request_arrived(1, b);
    EXPECT_FALSE(c[0].reply_needed(1, b)) << "held, though it wants more and is rank 1's last request here";
    EXPECT_EQ(c[0].peer(1).owed, 1);
    EXPECT_TRUE(c.take(0).empty()) << "no second revoke while rank 2's is unanswered";

    c.deliver(0, first.at(0));
    const auto gives = c.take(2);
    ASSERT_EQ(gives.size(), 1u);
    EXPECT_EQ(gives[0].count, 0) << "rank 2 uses all it holds";
    c.deliver(2, gives[0]);
    const auto second = c.take(0);
    ASSERT_EQ(destinations(second, SysKind::revoke), std::vector<Peer>{1});
    EXPECT_EQ(second.at(0).returned, 1) << "the held credit goes home with it";
    EXPECT_EQ(c[0].peer(1).owed, 0);
    for (const SysMessage &m : second) c.deliver(0, m);
    c.settle();
    EXPECT_EQ(c[0].waiting_askers(), 0u) << "rank 1's idle loan came back: the asker was granted";
    for (auto x : busy) c.serve(2, 0, x);
    EXPECT_TRUE(c[3].request_begin(0, 4, a));
    c.serve(3, 0, a);
    c.settle();
    c.expect_balanced();
}

TEST(CreditDemand, AsksAreServedFirstComeFirstServed) {
    Cluster c(demand_config(9));
    for (Peer x = 1; x <= 4; ++x) ASSERT_NO_FATAL_FAILURE(c.borrow(x, 0, 4));
    std::uint8_t b = 0;
    EXPECT_FALSE(c[5].request_begin(0, 8, b));  // asks 8
    c.deliver(5, c.take(5).at(0));
    EXPECT_FALSE(c[6].request_begin(0, 4, b));
    c.deliver(6, c.take(6).at(0));
    auto revokes = c.take(0);
    ASSERT_EQ(destinations(revokes, SysKind::revoke).size(), 4u);
    std::vector<Peer> granted;
    std::vector<SysMessage> later;  // held back until the order is checked
    auto give_back = [&](std::size_t i) {
        c.deliver(0, revokes[i]);
        c.deliver(revokes[i].peer, c.take(revokes[i].peer).at(0));
        for (const SysMessage &m : c.take(0)) {
            if (m.kind == SysKind::grant) granted.push_back(m.peer);
            later.push_back(m);
        }
    };
    give_back(0);  // bank 4: the head needs 8, so rank 6 waits too
    EXPECT_TRUE(granted.empty());
    EXPECT_FALSE(c[7].request_begin(0, 4, b));  // a late ask the bank could serve
    c.deliver(7, c.take(7).at(0));
    EXPECT_TRUE(destinations(c.take(0), SysKind::grant).empty());
    EXPECT_EQ(c[0].waiting_askers(), 3u);
    for (std::size_t i = 1; i < 4; ++i) give_back(i);
    EXPECT_EQ(granted, (std::vector<Peer>{5, 6, 7}));
    for (const SysMessage &m : later) c.deliver(0, m);
    c.settle();
    for (Peer x : {5u, 6u, 7u}) {
        int tries = 0;
        while (!c[x].request_begin(0, x == 5 ? 8 : 4, b) && ++tries < 10) c.settle();
        ASSERT_LT(tries, 10) << x;
        c.serve(x, 0, b);
    }
    c.settle();
    c.expect_balanced();
}

// An asker whose grant has not been used yet holds credits with nothing in
// use, like an idle peer; taking them back before its request goes sends
// it asking again, and two askers can then pass the credits back and forth
// without either request ever going.
TEST(CreditDemand, FreshGrantIsNotRevokedBeforeItsRequestGoes) {
    Cluster c(demand_config(4));
    ASSERT_NO_FATAL_FAILURE(c.borrow(1, 0, 12));
    ASSERT_NO_FATAL_FAILURE(c.borrow(2, 0, 4, true));  // granted, its request not sent yet
    ASSERT_EQ(c[0].bank(), 0u);
    std::uint8_t b = 0;
    EXPECT_FALSE(c[3].request_begin(0, 4, b));
    c.deliver(3, c.take(3).at(0));
    const auto revokes = destinations(c.take(0), SysKind::revoke);
    EXPECT_EQ(revokes, std::vector<Peer>{1}) << "rank 2 was revoked before its first request could go";
}

// A rank holding fewer credits than its waiting request needs hands them
// back with its ask (and asks for the whole request): holding some while
// waiting for more is how two askers deadlock on an empty bank.
TEST(CreditDemand, AskReturnsCreditsTooFewForTheRequest) {
    Cluster c(demand_config(3));
    ASSERT_NO_FATAL_FAILURE(c.borrow(1, 0, 4));
    ASSERT_EQ(c[0].bank(), 12u);
    std::uint8_t b = 0;
    EXPECT_FALSE(c[1].request_begin(0, 6, b));  // holds 4, needs 6
    const auto asks = c.take(1);
    ASSERT_EQ(asks.size(), 1u);
    EXPECT_EQ(asks[0].count, 6);
    EXPECT_EQ(asks[0].returned, 4);
    EXPECT_EQ(c[1].peer(0).send_credits, 0);
    c.deliver(1, asks[0]);
    EXPECT_EQ(c[0].peer(1).loan_credits, 6);  // 4 back, 6 lent
    EXPECT_EQ(c[0].bank(), 10u);
    c.deliver(0, c.take(0).at(0));
    EXPECT_TRUE(c[1].request_begin(0, 6, b));
    c.serve(1, 0, b);
    c.expect_balanced();
}

// ask_extra: an ask wants that many beyond its request, so a rank that
// goes on sending does not stall again on its next request.
TEST(CreditDemand, AskWantsAskExtraBeyondTheRequest) {
    Config cfg = demand_config(2);
    cfg.ask_extra = 5;
    Cluster c(cfg);
    std::uint8_t b = 0;
    EXPECT_FALSE(c[1].request_begin(0, 2, b));
    const auto asks = c.take(1);
    ASSERT_EQ(asks.size(), 1u);
    EXPECT_EQ(asks[0].count, 9);  // min_credits 4 + 5
    c.deliver(1, asks[0]);
    c.deliver(0, c.take(0).at(0));
    EXPECT_EQ(c[1].peer(0).send_credits, 9);
    c.roundtrip(1, 0, 2);
    c.expect_balanced();
}

// System messages may overtake each other: an urgent revoke sent before a
// grant can arrive after it.  The grant is for a request still waiting,
// so the borrower keeps it (its next ask would return it if too few).
TEST(CreditDemand, RevokeThatCrossedAGrantLeavesItForTheRequest) {
    Cluster c(demand_config(4));
    ASSERT_NO_FATAL_FAILURE(c.borrow(1, 0, 12));
    std::uint8_t b = 0;
    EXPECT_FALSE(c[2].request_begin(0, 4, b));
    c.deliver(2, c.take(2).at(0));
    const auto grant = c.take(0);  // bank 4: granted at once
    ASSERT_EQ(destinations(grant, SysKind::grant), std::vector<Peer>{2});
    EXPECT_FALSE(c[3].request_begin(0, 4, b));
    c.deliver(3, c.take(3).at(0));  // bank 0: rank 3 waits, rank 1 is revoked
    EXPECT_EQ(destinations(c.take(0), SysKind::revoke), std::vector<Peer>{1});
    // As if an urgent revoke had been sent to rank 2 before its grant (rank
    // 0 would not send one now: the grant is fresh, see above).
    c.deliver(0, grant[0]);
    c[2].sys_arrived(SysMessage{0, SysKind::revoke, false, true, 0, 0});
    const auto give = c.take(2);
    ASSERT_EQ(give.size(), 1u);
    EXPECT_EQ(give[0].count, 0) << "the grant for the waiting request was given back";
    EXPECT_TRUE(c[2].request_begin(0, 4, b));
}

// ---- limits ------------------------------------------------------------------------

TEST(CreditLimits, NormalizeClampsAndSaysWhy) {
    auto one_change = [](Config c, const char *field) {
        const auto changed = c.normalize();
        EXPECT_EQ(changed.size(), 1u) << field;
        if (!changed.empty()) {
            EXPECT_NE(changed[0].find(field), std::string::npos) << changed[0];
        }
        EXPECT_TRUE(c.normalize().empty()) << field;  // idempotent
        return c;
    };
    Config base = config_for(Policy::dynamic, 8);
    EXPECT_TRUE(Config(base).normalize().empty());
    Config c = base;
    c.min_credits = 0;
    EXPECT_EQ(one_change(c, "min_credits").min_credits, 1u);
    c = base;
    c.min_credits = 16;
    c.per_peer = 16;
    EXPECT_EQ(one_change(c, "min_credits").min_credits, 15u);
    c = base;
    c.max_per_peer = 1u << 20;
    EXPECT_EQ(one_change(c, "max_per_peer").max_per_peer, 65505u);
    c = base;
    c.max_per_peer = 2;
    c.per_peer = 2;
    const auto low = c.normalize();
    EXPECT_EQ(c.max_per_peer, 4u);
    EXPECT_EQ(c.per_peer, 4u);
    EXPECT_EQ(low.size(), 2u);
    c = base;
    c.epoch_length = 0;
    EXPECT_EQ(one_change(c, "epoch_length").epoch_length, 1u);
    c = base;
    c.scavenge_targets = 0;
    EXPECT_EQ(one_change(c, "scavenge_targets").scavenge_targets, 1u);
    c = base;
    c.sys_outstanding = 0;
    EXPECT_EQ(one_change(c, "sys_outstanding").sys_outstanding, 1u);
    c = base;
    c.per_peer = 1000;
    // Lowered to max_per_peer: the line should say so, not "raised to min_credits".
    EXPECT_EQ(one_change(c, "max_per_peer").per_peer, 40u);
    c = config_for(Policy::demand, 8);
    c.per_peer = 8;
    c.banked = 3;
    const auto d = c.normalize();
    EXPECT_EQ(d.size(), 2u);
    EXPECT_EQ(c.per_peer, 0u);
    EXPECT_EQ(c.banked, 15u);
    c = config_for(Policy::fixed, 8);
    c.per_peer = 2;
    c.slack = 9;
    const auto f = c.normalize();
    EXPECT_EQ(f.size(), 2u);
    EXPECT_EQ(c.per_peer, 4u);
    EXPECT_EQ(c.slack, 0u);
}

// "returns what was changed, one line each" (credit.hpp): every field.
TEST(CreditLimits, NormalizeReportsEveryChangedField) {
    Config c = config_for(Policy::dynamic, 0);
    c.credit_bytes = 0;
    const auto changed = c.normalize();
    EXPECT_EQ(c.nodes, 1u);
    EXPECT_EQ(c.credit_bytes, 256u);
    EXPECT_EQ(changed.size(), 2u) << "nodes 0 -> 1 and credit_bytes 0 -> 256 were changed silently";
}

TEST(CreditLimits, LoansFitIn16Bits) {
    Config cfg = config_for(Policy::dynamic, 3);
    cfg.max_per_peer = 100000;
    cfg.per_peer = 100000;
    cfg.banked = 7;
    Engine e(cfg);
    EXPECT_EQ(e.config().max_per_peer, 65505u);
    EXPECT_LT(e.config().max_per_peer + 2 * credit::max_request_credits, 65536u);
    EXPECT_EQ(e.peer(1).send_credits, 65505);
    EXPECT_EQ(e.peer(1).loan_credits, 65505);
    EXPECT_EQ(e.config().total_credits(), 2u * 65505 + 7);
    EXPECT_EQ(e.credits_accounted(), e.config().total_credits());
    std::uint8_t b = 0;
    for (int i = 0; i < 4367; ++i) ASSERT_TRUE(e.request_begin(1, 15, b));
    EXPECT_EQ(e.peer(1).send_inuse, 65505);
    EXPECT_FALSE(e.request_begin(1, 1, b));
}

TEST(CreditLimits, GrantsStopAtMaxPerPeerWithoutWrapping) {
    Config cfg = config_for(Policy::dynamic, 2);
    cfg.max_per_peer = 70000;
    cfg.banked = 70000;
    cfg.lender_limit = 1u << 30;
    Cluster c(cfg);
    int asks = 0;
    while (c.ask_extra(1, 0) > 0 && asks < 20000) ++asks;
    EXPECT_EQ(asks, (65505 - 4 + 5) / 6);
    EXPECT_EQ(c[0].peer(1).loan_credits, 65505);
    EXPECT_EQ(c[1].peer(0).send_credits, 65505);
    EXPECT_EQ(c[0].bank(), 70000u - 65501);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(c.ask_extra(1, 0), 0u);
    EXPECT_EQ(c[0].peer(1).loan_requested, 65535);  // saturated, not wrapped
    c.expect_balanced();
}

TEST(CreditLimits, CountersSaturate) {
    Engine e(config_for(Policy::dynamic, 2));
    const std::uint8_t four_back = CreditByte{false, 0, 4}.encode();
    for (int i = 0; i < 65600; ++i) {
        std::uint8_t b = 0;
        ASSERT_TRUE(e.request_begin(1, 4, b));
        ASSERT_FALSE(e.request_begin(1, 1, b));
        e.reply_arrived(1, four_back);
    }
    EXPECT_EQ(e.totals().stalls, 65600u);
    EXPECT_EQ(e.peer(1).send_stalls, 65535);
    EXPECT_EQ(e.peer(1).send_inuse, 0);

    Config big = config_for(Policy::dynamic, 2);
    big.per_peer = 65505;
    big.max_per_peer = 65505;
    Engine f(big);
    f.sys_arrived(sys(SysKind::grant, 1, 65535));
    EXPECT_EQ(f.peer(1).send_credits, 65505);
    f.reply_arrived(1, CreditByte{false, 6, 0}.encode());
    EXPECT_EQ(f.peer(1).send_credits, 65505);
}

// ---- system messages -------------------------------------------------------------------

TEST(CreditSys, InitiationsBeyondOutstandingWaitForAnswers) {
    Config cfg = demand_config(5);
    cfg.sys_outstanding = 2;
    Cluster c(cfg);
    std::uint8_t b = 0;
    for (Peer y = 1; y <= 3; ++y) EXPECT_FALSE(c[0].request_begin(y, 4, b));
    const auto first = c.take(0);
    EXPECT_EQ(destinations(first, SysKind::ask), (std::vector<Peer>{1, 2}));
    EXPECT_FALSE(c[0].sys_pending());
    c.deliver(0, first[0]);
    c.deliver(1, c.take(1).at(0));  // the grant frees a place
    EXPECT_EQ(destinations(c.pass(0), SysKind::ask), std::vector<Peer>{3});
    c.deliver(0, first[1]);
    c.settle();
    for (Peer y = 1; y <= 3; ++y) c.roundtrip(0, y, 4);
    c.expect_balanced();
}

TEST(CreditSys, RefusedMessageIsQueuedAgain) {
    Config cfg = demand_config(3);
    cfg.sys_outstanding = 1;
    Cluster c(cfg);
    std::uint8_t b = 0;
    EXPECT_FALSE(c[0].request_begin(1, 4, b));
    EXPECT_FALSE(c[0].request_begin(2, 4, b));
    auto out = c.take(0);
    ASSERT_EQ(out.size(), 1u);
    c[0].sys_refused(out[0]);
    EXPECT_TRUE(c[0].sys_pending());
    const auto again = c.take(0);
    ASSERT_EQ(again.size(), 1u);  // the same ask, and its place is still taken
    EXPECT_EQ(again[0].peer, 1u);
    EXPECT_EQ(again[0].kind, SysKind::ask);
    EXPECT_EQ(again[0].count, out[0].count);
    EXPECT_EQ(c[0].totals().sys_refused, 1u);
    EXPECT_EQ(c[0].totals().sys_sent, 1u);
    c.deliver(0, again[0]);
    const auto grant = c.take(1);
    ASSERT_EQ(grant.size(), 1u);
    c[1].sys_refused(grant[0]);  // answers too
    const auto grant2 = c.take(1);
    ASSERT_EQ(grant2.size(), 1u);
    EXPECT_EQ(grant2[0].kind, SysKind::grant);
    c.deliver(1, grant2[0]);
    EXPECT_EQ(destinations(c.take(0), SysKind::ask), std::vector<Peer>{2});
}

TEST(CreditSys, AnswersAreNotLimited) {
    Config cfg = demand_config(5);
    cfg.sys_outstanding = 1;
    Cluster c(cfg);
    std::uint8_t b = 0;
    for (Peer x = 1; x <= 3; ++x) {
        EXPECT_FALSE(c[x].request_begin(0, 4, b));
        c.deliver(x, c.take(x).at(0));
    }
    EXPECT_EQ(destinations(c.take(0), SysKind::grant), (std::vector<Peer>{1, 2, 3}));
}

// Asks and revokes share the sys_outstanding places.  Two lenders whose
// banks are short each ask the other: if a rank's own waiting ask holds its
// only place, the urgent revoke that would refill its bank (from an idle
// borrower) is deferred behind it, and neither ask is ever answered.
TEST(CreditSys, OwnAsksDoNotHoldBackRevokes) {
    Config cfg = demand_config(3);
    cfg.sys_outstanding = 1;
    Cluster c(cfg);
    ASSERT_NO_FATAL_FAILURE(c.borrow(2, 0, 15));  // rank 2 holds nearly all, idle
    ASSERT_NO_FATAL_FAILURE(c.borrow(2, 1, 15));
    std::uint8_t b = 0;
    EXPECT_FALSE(c[0].request_begin(1, 4, b));
    EXPECT_FALSE(c[1].request_begin(0, 4, b));
    c.settle();
    EXPECT_TRUE(c[0].request_begin(1, 4, b)) << "rank 0 bank " << c[0].bank() << ", rank 1 bank " << c[1].bank()
                                             << ", rank 2 still holds " << c[2].peer(0).send_credits << " and "
                                             << c[2].peer(1).send_credits;
    EXPECT_TRUE(c[1].request_begin(0, 4, b));
}

// ---- conservation and defaults ---------------------------------------------------------

TEST(CreditConservation, AccountedEqualsTotalFromTheStart) {
    for (Policy p : {Policy::off, Policy::fixed, Policy::dynamic, Policy::demand})
        for (Peer nodes : {1u, 2u, 17u, 300u}) {
            Config cfg = config_for(p, nodes);
            cfg.banked = 20;
            Engine e(cfg);
            const std::uint64_t peers = nodes - 1;
            const std::uint64_t want = p == Policy::off ? 0
                                       : p == Policy::fixed ? peers * 4
                                       : p == Policy::dynamic ? peers * 4 + 20
                                                              : 20;
            EXPECT_EQ(e.config().total_credits(), want) << credit::policy_name(p) << " " << nodes;
            EXPECT_EQ(e.config().receive_bytes(), want * e.config().credit_bytes);
            EXPECT_EQ(e.credits_accounted(), want) << credit::policy_name(p) << " " << nodes;
            std::uint8_t b = 0;
            for (Peer q : {1u, 200u, nodes - 1})
                if (q < nodes && q != 0) (void)e.request_begin(q, 1, b);
            EXPECT_EQ(e.credits_accounted(), want) << credit::policy_name(p) << " " << nodes;
        }
}

TEST(CreditDefaults, DynamicForSmallJobsDemandForLarge) {
    for (Peer n : {1u, 2u, 3u, 16u, 64u, 512u, 1000u, 1024u}) {
        Config c = Config::defaults(n, n - 1);
        EXPECT_EQ(c.policy, Policy::dynamic) << n;
        EXPECT_EQ(c.me, n - 1);
        EXPECT_GE(c.per_peer, c.min_credits) << n;
        EXPECT_TRUE(c.normalize().empty()) << n;
    }
    for (Peer n : {1025u, 4096u, 100000u, 1000000u}) {
        Config c = Config::defaults(n, 7);
        EXPECT_EQ(c.policy, Policy::demand) << n;
        EXPECT_EQ(c.per_peer, 0u) << n;
        EXPECT_GE(c.banked, credit::max_request_credits) << n;
        EXPECT_TRUE(c.normalize().empty()) << n;
    }
}

// Memory per rank never shrinks as the job grows, within a policy (the
// switch to demand at 1025 ranks is meant to save memory).
TEST(CreditDefaults, DynamicMemoryMonotoneInJobSize) {
    Peer first_drop = 0;
    std::uint64_t before = 0, after = 0;
    for (Peer n = 3; n <= 1024 && !first_drop; ++n) {
        before = Config::defaults(n - 1, 0).receive_bytes();
        after = Config::defaults(n, 0).receive_bytes();
        if (after < before) first_drop = n;
    }
    EXPECT_EQ(first_drop, 0u) << "receive_bytes falls from " << before << " at " << first_drop - 1 << " ranks to "
                              << after << " at " << first_drop;
    EXPECT_LT(Config::defaults(1025, 0).receive_bytes(), Config::defaults(1024, 0).receive_bytes());
}

TEST(CreditDefaults, DemandMemoryBoundedWhateverTheJobSize) {
    const std::uint64_t cap = Config::defaults(100000, 0).receive_bytes();
    std::uint64_t last = 0;
    for (std::uint64_t n = 1025; n <= (1u << 31); n = n * 3 / 2) {
        const Config c = Config::defaults(static_cast<Peer>(n), 0);
        EXPECT_GE(c.receive_bytes(), last) << n;
        EXPECT_LE(c.receive_bytes(), cap) << n;
        if (n >= 100000) {
            EXPECT_EQ(c.receive_bytes(), cap) << n;
        }
        last = c.receive_bytes();
    }
    // And the engine's own state follows the peers it talks to.
    Engine e(Config::defaults(100000, 0));
    const std::size_t idle = e.state_bytes();
    std::uint8_t b = 0;
    for (Peer q : {1u, 50000u, 99999u}) EXPECT_FALSE(e.request_begin(q, 4, b));
    EXPECT_LT(idle, 16u * 1024);
    EXPECT_LT(e.state_bytes() - idle, 8u * 1024);
    EXPECT_EQ(e.credits_accounted(), e.config().total_credits());
}

// ---- property: random interleavings ----------------------------------------------------
//
// 4 to 8 engines with random small limits.  Each step is one of: a send
// (a new request or a retry of a stalled one, one stalled request per
// ordered pair), a request arriving, a handler finishing (replying, or not:
// then reply_needed decides), a reply arriving, a system message arriving
// or being refused.  Nothing is ordered: any message in flight may be
// delivered next, whatever its link.  After every step: conservation per
// lender and borrower, exact in-use counts, no overflow at a receiver.

namespace {

struct Request {
    Peer from, to;
    std::uint8_t byte;
};
struct Sys {
    Peer from;
    SysMessage m;  // m.peer: destination
};

class World {
public:
    World(Policy policy, std::uint32_t seed) : rng_(seed) {
        Config c;
        c.policy = policy;
        c.nodes = 4 + pick(5);
        c.min_credits = 1 + pick(4);
        c.per_peer = c.min_credits + pick(4);
        c.max_per_peer = c.min_credits + pick(30);
        c.banked = pick(40);
        c.epoch_length = 2 + pick(30);
        c.revoke_limit = 1 + pick(8);
        c.lender_limit = 1 + pick(12);
        c.scavenge_targets = 1 + pick(3);
        c.low_water = pick(24);
        c.slack = pick(4);
        c.sys_outstanding = 1 + pick(3);
        reply_percent_ = 50 + pick(50);
        c.send_total = pick(2) ? 0 : c.min_credits + pick(20);
        c.reclaim_after = pick(3) ? pick(40) : 0;
        for (Peer r = 0; r < c.nodes; ++r) {
            c.me = r;
            e_.push_back(std::make_unique<Engine>(c));
        }
        cfg_ = e_[0]->config();
        n_ = cfg_.nodes;
        pending_.assign(n_ * n_, 0);
        for (auto *a : {&rq_, &ar_, &rp_, &reclaim_, &grant_, &give_, &ride_}) a->assign(n_ * n_, 0);
    }

    // One random action, then the checks.  False: why() says what broke.
    bool step() {
        for (;;) {
            const unsigned a = pick(11);
            if (a < 3) {
                if (!send_one(pick(n_), pick(20) == 0 ? n_ : pick(n_))) return false;
                break;
            }
            if (a < 5 && !requests_.empty()) { arrive(take_random(requests_)); break; }
            if (a < 7 && !arrived_.empty()) {
                if (!handle(take_random(arrived_), pick(100) < reply_percent_)) return false;
                break;
            }
            if (a < 9 && !replies_.empty()) { reply_arrive(take_random(replies_)); break; }
            if (a < 11 && !sys_.empty()) { sys_deliver(take_random(sys_), pick(10) == 0); break; }
        }
        collect();
        return check();
    }

    // Everything delivered, every handler replies, every stalled request
    // retried, until nothing moves; then nothing may be left stalled.
    bool drain() {
        for (int round = 0; round < 20000; ++round) {
            collect();
            if (idle() && std::all_of(pending_.begin(), pending_.end(), [](unsigned p) { return p == 0; })) {
                // Credits held back (return_batch) come home with the next
                // reply: one more request from each such borrower, answered.
                bool held = false;
                if (cfg_.policy == Policy::dynamic || cfg_.policy == Policy::demand)
                    for (Peer x = 0; x < n_; ++x)
                        for (Peer y = 0; y < n_; ++y)
                            if (x != y && e_[y]->peer(x).owed != 0) {
                                pending_[x * n_ + y] = 1;
                                held = true;
                            }
                if (!held) return finish();
            }
            std::shuffle(requests_.begin(), requests_.end(), rng_);
            std::shuffle(arrived_.begin(), arrived_.end(), rng_);
            std::shuffle(replies_.begin(), replies_.end(), rng_);
            std::shuffle(sys_.begin(), sys_.end(), rng_);
            for (const Request &r : std::exchange(requests_, {})) arrive(r);
            for (const Request &r : std::exchange(arrived_, {}))
                if (!handle(r, true)) return false;
            for (const Request &r : std::exchange(replies_, {})) reply_arrive(r);
            for (const Sys &s : std::exchange(sys_, {})) sys_deliver(s, false);
            for (Peer x = 0; x < n_; ++x)
                for (Peer y = 0; y < n_; ++y)
                    if (pending_[x * n_ + y] && !send_one(x, y)) return false;
            collect();
            if (!check()) return false;
            if (idle() && !std::all_of(pending_.begin(), pending_.end(), [](unsigned p) { return p == 0; })) {
                for (std::size_t k = 0; k < pending_.size(); ++k)
                    if (pending_[k]) return fail("stalled for good: " + std::to_string(k / n_) + " -> " +
                                                 std::to_string(k % n_) + ", " + std::to_string(pending_[k]) +
                                                 " credits; " + state(k / n_, k % n_) + "\n" + dump(k % n_));
            }
        }
        return fail("drain did not finish");
    }

    const std::string &why() const { return why_; }

private:
    unsigned pick(unsigned n) { return static_cast<unsigned>(rng_() % n); }
    template <class T> T take_random(std::vector<T> &v) {
        std::swap(v[pick(static_cast<unsigned>(v.size()))], v.back());
        T t = v.back();
        v.pop_back();
        return t;
    }
    bool idle() const { return requests_.empty() && arrived_.empty() && replies_.empty() && sys_.empty(); }
    bool fail(std::string s) {
        why_ = std::move(s);
        return false;
    }
    std::string state(Peer x, Peer y) const {
        const PeerCredits s = e_[x]->peer(y), l = e_[y]->peer(x);
        return "send_credits " + std::to_string(s.send_credits) + " send_inuse " + std::to_string(s.send_inuse) +
               " | lender loan " + std::to_string(l.loan_credits) + " busy " + std::to_string(l.loan_busy) +
               " owed " + std::to_string(l.owed) + " bank " + std::to_string(e_[y]->bank()) + " askers " +
               std::to_string(e_[y]->waiting_askers());
    }

    // The lender's side of every loan, and the limits in force.
    std::string dump(Peer y) const {
        std::string d = "config: nodes " + std::to_string(n_) + " min " + std::to_string(cfg_.min_credits) +
                        " per_peer " + std::to_string(cfg_.per_peer) + " max " + std::to_string(cfg_.max_per_peer) +
                        " banked " + std::to_string(cfg_.banked) + " sys_outstanding " +
                        std::to_string(cfg_.sys_outstanding) + " targets " + std::to_string(cfg_.scavenge_targets) +
                        "\nrank " + std::to_string(y) + " lends:";
        for (Peer x = 0; x < n_; ++x) {
            if (x == y) continue;
            const PeerCredits l = e_[y]->peer(x), s = e_[x]->peer(y);
            d += " [" + std::to_string(x) + ": loan " + std::to_string(l.loan_credits) + " busy " +
                 std::to_string(l.loan_busy) + ", it holds " + std::to_string(s.send_credits) + " uses " +
                 std::to_string(s.send_inuse) + " waits " + std::to_string(pending_[x * n_ + y]) + "]";
        }
        for (Peer r = 0; r < n_; ++r) {
            d += "\nrank " + std::to_string(r) + ": bank " + std::to_string(e_[r]->bank()) + " askers " +
                 std::to_string(e_[r]->waiting_askers()) + " waits for";
            for (Peer x = 0; x < n_; ++x)
                if (pending_[r * n_ + x]) d += " " + std::to_string(x);
        }
        return d;
    }

    // x sends to y (y == n_: to itself) its stalled request, or a new one.
    bool send_one(Peer x, Peer y) {
        if (y == n_) y = x;
        unsigned &p = pending_[x * n_ + y];
        const unsigned n = p ? p : 1 + pick(cfg_.min_credits);
        std::uint8_t b = 0;
        if (!e_[x]->request_begin(y, n, b)) {
            if (x == y || cfg_.policy == Policy::off) return fail("request to self or under off stalled");
            p = n;
            return true;
        }
        p = 0;
        if (decode(b).count != n) return fail("credit byte count " + std::to_string(decode(b).count));
        if (x != y) requests_.push_back(Request{x, y, b});
        return true;
    }
    void arrive(const Request &r) {
        e_[r.to]->request_arrived(r.from, r.byte);
        arrived_.push_back(r);
    }
    bool handle(const Request &r, bool reply) {
        if (!reply && !e_[r.to]->reply_needed(r.from, r.byte)) {
            // Banked (fixed), held back (dynamic, demand: return_batch) or
            // nothing to return (off); held back only while the sender keeps
            // a full-size request beyond it.
            const PeerCredits l = e_[r.to]->peer(r.from);
            if ((cfg_.policy == Policy::dynamic || cfg_.policy == Policy::demand) &&
                (l.owed > cfg_.return_batch || l.loan_credits < l.owed + cfg_.min_credits))
                return fail("held back beyond the batch or the sender's full-size request: " + state(r.from, r.to));
            return true;
        }
        replies_.push_back(Request{r.to, r.from, e_[r.to]->reply_byte(r.from, r.byte)});
        return true;
    }
    void reply_arrive(const Request &r) { e_[r.to]->reply_arrived(r.from, r.byte); }
    void sys_deliver(const Sys &s, bool refuse) {
        if (refuse) {
            e_[s.from]->sys_refused(s.m);
            return;
        }
        SysMessage m = s.m;
        m.peer = s.from;
        e_[s.m.peer]->sys_arrived(m);
    }
    void collect() {
        SysMessage buf[16];
        for (Peer r = 0; r < n_; ++r)
            while (std::size_t k = e_[r]->sys_take(buf, 16))
                for (std::size_t i = 0; i < k; ++i) sys_.push_back(Sys{r, buf[i]});
    }

    // [borrower * n + lender] sums of what is in flight between them.
    bool check() {
        const bool fixed = cfg_.policy == Policy::fixed;
        if (cfg_.policy == Policy::off) {
            for (const auto &e : e_)
                if (e->credits_accounted() != 0 || e->totals().stalls != 0) return fail("off keeps no credits");
            return true;
        }
        for (auto *a : {&rq_, &ar_, &rp_, &reclaim_, &grant_, &give_, &ride_}) std::fill(a->begin(), a->end(), 0);
        for (const Request &r : requests_) {
            rq_[r.from * n_ + r.to] += decode(r.byte).count;
            if (fixed || decode(r.byte).extra != CreditByte::want) ride_[r.to * n_ + r.from] += decode(r.byte).extra;
        }
        for (const Request &r : arrived_) ar_[r.from * n_ + r.to] += decode(r.byte).count;
        for (const Request &r : replies_) {  // from: the lender, to: the borrower
            const CreditByte b = decode(r.byte);
            rp_[r.to * n_ + r.from] += b.count;
            if (fixed) continue;
            if (b.extra == CreditByte::reclaim) reclaim_[r.to * n_ + r.from] += b.count;
            else grant_[r.to * n_ + r.from] += b.extra;
        }
        for (const Sys &s : sys_) {
            if (s.m.kind == SysKind::grant) grant_[s.m.peer * n_ + s.from] += s.m.count;
            if (s.m.kind == SysKind::give) give_[s.from * n_ + s.m.peer] += s.m.count;
            if (s.m.kind == SysKind::ask) give_[s.from * n_ + s.m.peer] += s.m.returned;  // held, handed back
            if (s.m.kind == SysKind::revoke) rp_[s.m.peer * n_ + s.from] += s.m.returned;  // held back, going home
        }
        for (Peer y = 0; y < n_; ++y) {
            const std::uint64_t total = e_[y]->config().total_credits();
            if (e_[y]->credits_accounted() != total)
                return fail("rank " + std::to_string(y) + " accounts " + std::to_string(e_[y]->credits_accounted()) +
                            " of " + std::to_string(total));
            long long queued = 0;
            for (Peer x = 0; x < n_; ++x) {
                if (x == y) continue;
                const std::size_t k = x * n_ + y;
                const PeerCredits l = e_[y]->peer(x), s = e_[x]->peer(y);
                auto who = [&] { return " (lender " + std::to_string(y) + ", borrower " + std::to_string(x) + ")"; };
                if (l.loan_credits + reclaim_[k] != s.send_credits + grant_[k] + give_[k])
                    return fail("loan " + std::to_string(l.loan_credits) + " != send " +
                                std::to_string(s.send_credits) + " + grants " + std::to_string(grant_[k]) +
                                " + gives " + std::to_string(give_[k]) + " - reclaims " +
                                std::to_string(reclaim_[k]) + who());
                const long long inuse = rq_[k] + ar_[k] + rp_[k] + l.owed + ride_[k];
                if (s.send_inuse != inuse)
                    return fail("send_inuse " + std::to_string(s.send_inuse) + " != " + std::to_string(inuse) + who());
                if (l.loan_busy != ar_[k])
                    return fail("loan_busy " + std::to_string(l.loan_busy) + " != " + std::to_string(ar_[k]) + who());
                if (rq_[k] + ar_[k] > l.loan_credits)
                    return fail("overflow: " + std::to_string(rq_[k] + ar_[k]) + " queued, " +
                                std::to_string(l.loan_credits) + " lent" + who());
                if (s.send_inuse > s.send_credits) return fail("in use beyond credits" + who());
                if (fixed && (l.owed > cfg_.slack || l.loan_credits != cfg_.per_peer))
                    return fail("fixed credits moved or slack exceeded" + who());
                queued += rq_[k] + ar_[k];
            }
            if (queued > static_cast<long long>(total)) return fail("overflow at rank " + std::to_string(y));
            if (cfg_.send_total != 0 && cfg_.policy != Policy::off) {
                unsigned inuse = 0;
                for (Peer x = 0; x < n_; ++x)
                    if (x != y) inuse += e_[y]->peer(x).send_inuse;
                if (e_[y]->send_total_inuse() != inuse || inuse > cfg_.send_total)
                    return fail("rank " + std::to_string(y) + ": send total " +
                                std::to_string(e_[y]->send_total_inuse()) + ", in use " + std::to_string(inuse) +
                                ", bound " + std::to_string(cfg_.send_total));
            }
        }
        return true;
    }

    bool finish() {
        if (cfg_.policy == Policy::fixed) {
            // Banked slack rides back on the next message: send one each way.
            for (Peer x = 0; x < n_; ++x)
                for (Peer y = 0; y < n_; ++y) {
                    if (x == y) continue;
                    std::uint8_t b = 0;
                    if (!e_[x]->request_begin(y, cfg_.min_credits, b))
                        return fail("a full-size request does not fit with the credits held back: " + state(x, y));
                    e_[y]->request_arrived(x, b);
                    e_[x]->reply_arrived(y, e_[y]->reply_byte(x, b));
                }
        }
        for (Peer y = 0; y < n_; ++y) {
            if (e_[y]->sys_pending() || e_[y]->waiting_askers() != 0)
                return fail("rank " + std::to_string(y) + " still has system messages or askers");
            for (Peer x = 0; x < n_; ++x) {
                if (x == y) continue;
                const PeerCredits l = e_[y]->peer(x), s = e_[x]->peer(y);
                if (s.send_inuse || l.loan_busy || l.owed) return fail("left in use: " + state(x, y));
                if (cfg_.policy != Policy::off && l.loan_credits != s.send_credits)
                    return fail("left unbalanced: " + state(x, y));
            }
        }
        return check();
    }

    std::mt19937 rng_;
    Config cfg_;
    Peer n_ = 0;
    unsigned reply_percent_ = 100;
    std::vector<std::unique_ptr<Engine>> e_;
    std::vector<Request> requests_, arrived_, replies_;  // replies_: from the replier to the requester
    std::vector<Sys> sys_;
    std::vector<unsigned> pending_;  // [x * n + y]: credits of x's stalled request to y
    std::vector<long long> rq_, ar_, rp_, reclaim_, grant_, give_, ride_;
    std::string why_;
};

} // namespace

class CreditProperty : public ::testing::TestWithParam<Policy> {};

TEST_P(CreditProperty, RandomInterleavingsConserveCredits) {
    // Sanitizer builds (make check SLUICE_TEST_SUBSET=tsan or asan) run 20
    // seeds: the full 200 take a minute under ThreadSanitizer, and the
    // plain build covers them.
    const char *subset = std::getenv("SLUICETEST_SUBSET");
    const bool reduced = subset && *subset && std::strcmp(subset, "full") != 0;
    const int seeds = reduced ? 20 : 200, steps = 2000;
    for (int seed = 1; seed <= seeds; ++seed) {
        World w(GetParam(), static_cast<std::uint32_t>(seed));
        for (int i = 0; i < steps; ++i) ASSERT_TRUE(w.step()) << "seed " << seed << " step " << i << ": " << w.why();
        ASSERT_TRUE(w.drain()) << "seed " << seed << " at the end: " << w.why();
    }
}

INSTANTIATE_TEST_SUITE_P(Credit, CreditProperty,
                         ::testing::Values(Policy::off, Policy::fixed, Policy::dynamic, Policy::demand),
                         [](const ::testing::TestParamInfo<Policy> &i) { return credit::policy_name(i.param); });

// ---- threads ------------------------------------------------------------------------------

// Four threads send through rank 0's engine, two of them to the same peer,
// while one thread runs the peers: their handlers, their own requests to
// rank 0 (rank 0's lender side under the same locks), and every system
// message.
TEST(CreditThreads, SendersShareOneEngine) {
    Config cfg = config_for(Policy::dynamic, 4);
    cfg.banked = 24;
    cfg.max_per_peer = 16;
    cfg.lender_limit = 16;
    cfg.revoke_limit = 8;
    cfg.epoch_length = 32;
    cfg.low_water = 12;
    Cluster c(cfg);
    struct Sent {
        Peer to;
        std::uint8_t byte;
    };
    constexpr unsigned per_thread = 2000;
    std::mutex mu;
    std::vector<Sent> wire;
    std::atomic<unsigned> senders_left{4};
    std::atomic<std::uint64_t> taken{0};
    std::uint64_t returned = 0;

    std::thread runner([&] {
        std::vector<Sent> batch;
        SysMessage buf[16];
        std::minstd_rand rng(99);
        for (unsigned round = 0;; ++round) {
            const bool last = senders_left.load() == 0;
            {
                std::lock_guard<std::mutex> g(mu);
                batch.swap(wire);
            }
            for (const Sent &s : batch) {
                c[s.to].request_arrived(0, s.byte);
                const std::uint8_t r = c[s.to].reply_byte(0, s.byte);
                returned += decode(r).count;
                c[0].reply_arrived(s.to, r);
            }
            const bool quiet = batch.empty();
            batch.clear();
            for (Peer p = 1; p <= 3; ++p) {
                std::uint8_t b[3];
                unsigned k = 0;
                while (k < 3 && c[p].request_begin(0, 1 + rng() % 4, b[k])) ++k;
                for (unsigned i = 0; i < k; ++i) {
                    c[0].request_arrived(p, b[i]);
                    c[p].reply_arrived(0, c[0].reply_byte(p, b[i]));
                }
            }
            for (Peer r = 0; r < 4; ++r)
                while (std::size_t n = c[r].sys_take(buf, 16))
                    for (std::size_t i = 0; i < n; ++i) c.deliver(r, buf[i]);
            if (last && quiet) break;
            if (quiet) std::this_thread::yield();
        }
    });
    std::vector<std::thread> senders;
    for (unsigned t = 0; t < 4; ++t)
        senders.emplace_back([&, t] {
            const Peer to = t == 3 ? 1 : t + 1;  // threads 0 and 3 share peer 1
            std::minstd_rand rng(t + 1);
            for (unsigned i = 0; i < per_thread; ++i) {
                const unsigned n = 1 + rng() % 4;
                std::uint8_t b = 0;
                while (!c[0].request_begin(to, n, b)) std::this_thread::yield();
                taken += n;
                std::lock_guard<std::mutex> g(mu);
                wire.push_back(Sent{to, b});
            }
            --senders_left;
        });
    for (auto &t : senders) t.join();
    runner.join();

    c.settle();
    EXPECT_EQ(c[0].totals().requests_sent, 4u * per_thread);
    EXPECT_EQ(taken.load(), returned);
    for (Peer p = 1; p <= 3; ++p) {
        EXPECT_EQ(c[0].peer(p).send_inuse, 0) << p;
        EXPECT_EQ(c[p].peer(0).loan_busy, 0) << p;
        EXPECT_EQ(c[0].peer(p).loan_busy, 0) << p;
    }
    c.expect_balanced();
}

// SLUICE_FLAG_IMMEDIATE: a request that took credits but found no room on
// the wire is cancelled; the engine is as if it had never begun, whatever
// its byte carried.
TEST(CreditCancel, GivesEverythingBackUnderEveryPolicy) {
    for (Policy policy : {Policy::fixed, Policy::dynamic, Policy::demand}) {
        Cluster k(policy == Policy::demand ? demand_config(2) : config_for(policy, 2));
        if (policy == Policy::demand) {
            ASSERT_NO_FATAL_FAILURE(k.borrow(0, 1, 4));  // the ask and its grant
        }
        const PeerCredits before = k[0].peer(1);
        std::uint8_t first = 0, again = 0;
        ASSERT_TRUE(k[0].request_begin(1, 4, first)) << credit::policy_name(policy);
        k[0].request_cancel(1, first);
        const PeerCredits after = k[0].peer(1);
        EXPECT_EQ(after.send_credits, before.send_credits) << credit::policy_name(policy);
        EXPECT_EQ(after.send_inuse, before.send_inuse) << credit::policy_name(policy);
        ASSERT_TRUE(k[0].request_begin(1, 4, again)) << credit::policy_name(policy);
        EXPECT_EQ(again, first) << credit::policy_name(policy);
        (void)k.serve(0, 1, again);
        EXPECT_EQ(k[0].peer(1).send_inuse, 0u) << credit::policy_name(policy);
    }
}
