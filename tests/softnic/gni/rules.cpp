// tests/softnic/gni/rules.cpp - the software GNI NIC's rules, checked
// through the uGNI API as a conduit sees it.  First two processes (forked
// before either touches the NIC) exchange SMSG messages, FMA and BTE puts
// and gets and atomics, and check the rules between them: remote access
// errors, remote events, a BTE completion after its post, a full mailbox,
// peers that do not exist, and datagrams (a wildcard answering a directed
// one both ways, one waiting for a later wildcard, two directed ones
// crossing as one exchange, cancel, several clients of one wildcard); then
// one process with several domains checks each modelled limit:
// registration on both sides, the MDD limit, SMSG credits and message
// size, CQ overrun, FMA done at post and BTE after it, datagrams' limits,
// and argument checks.  Built by rules.sh against gni_pub.h and
// libugni.so.0, run under softnic-run.  Prints "ok: ..." per rule, exits
// non-zero if one is broken.
//
// hosts.sh runs the two processes' rules between two hosts: `rules A DIR`
// on one, `rules B DIR` on the other, meeting through files in DIR; and
// `rules attach` prints what GNI_CdmAttach answers (exit 0 on success).
#include <gni_pub.h>

#include "../common/peer_channel.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

int failures = 0;
const char *role = "";

void check(bool ok, const char *rule, const std::string &detail = "") {
    std::printf("%s: %s%s%s%s\n", ok ? "ok" : "FAIL", role, rule, detail.empty() ? "" : ": ", detail.c_str());
    if (!ok) ++failures;
}

std::string rc_name(gni_return_t rc) { return GNI_GetErrorString(rc); }

[[noreturn]] void die(const char *what, gni_return_t rc) {
    std::printf("FAIL: %s%s: %s\n", role, what, GNI_GetErrorString(rc));
    std::exit(1);
}

void must(gni_return_t rc, const char *what) {
    if (rc != GNI_RC_SUCCESS) die(what, rc);
}

struct Job {
    std::uint8_t ptag;
    std::uint32_t cookie;
};
Job job;

constexpr std::uint16_t credits = 4;
constexpr std::uint32_t max_message = 128;

// One communication domain with its NIC, two CQs (posts' local events; the
// remote events of its registered memory), a 64 KiB registered buffer and
// a registered mailbox for one peer.
struct Nic {
    std::uint32_t inst = 0, addr = 0;
    gni_cdm_handle_t cdm = nullptr;
    gni_nic_handle_t nic = nullptr;
    gni_cq_handle_t cq = nullptr, rx = nullptr;
    std::vector<std::uint64_t> buf = std::vector<std::uint64_t>(8192);
    gni_mem_handle_t buf_h{};
    std::vector<std::uint64_t> mbox;
    gni_smsg_attr_t smsg{};
    char *bytes() { return reinterpret_cast<char *>(buf.data()); }
    std::uint64_t at(std::size_t offset) { return reinterpret_cast<std::uint64_t>(bytes() + offset); }
};

// What a peer needs to know of a Nic, exchanged out of band; B adds a
// read-only registration and a deregistered handle.
struct Card {
    std::uint32_t inst, addr;
    gni_mem_handle_t buf_h;
    std::uint64_t buf;
    gni_smsg_attr_t smsg;
    std::uint64_t read_only, gone;
    gni_mem_handle_t read_only_h, gone_h;
};

Card card_of(Nic &n) { return Card{n.inst, n.addr, n.buf_h, n.at(0), n.smsg, 0, 0, {}, {}}; }

// How the two processes tell each other what they need out of band
// (common/peer_channel.hpp); a broken exchange ends the process.
class Channel : softnic_common::PeerChannel {
public:
    using PeerChannel::PeerChannel;

    template <class T> void tell(const T &v) {
        if (!PeerChannel::tell(&v, sizeof v)) fail_exchange();
    }
    // Waits 20 s at most.
    template <class T> T hear() {
        T v{};
        if (!PeerChannel::hear(&v, sizeof v, 20000)) fail_exchange();
        return v;
    }

private:
    [[noreturn]] static void fail_exchange() {
        std::printf("FAIL: %sthe exchange with the other process broke\n", role);
        std::exit(1);
    }
};

void open_nic(Nic &n, std::uint32_t inst, std::uint32_t cq_entries = 256) {
    n.inst = inst;
    must(GNI_CdmCreate(inst, job.ptag, job.cookie, 0, &n.cdm), "GNI_CdmCreate");
    must(GNI_CdmAttach(n.cdm, 0, &n.addr, &n.nic), "GNI_CdmAttach");
    must(GNI_CqCreate(n.nic, cq_entries, 0, GNI_CQ_NOBLOCK, nullptr, nullptr, &n.cq), "GNI_CqCreate");
    must(GNI_CqCreate(n.nic, 256, 0, GNI_CQ_NOBLOCK, nullptr, nullptr, &n.rx), "GNI_CqCreate (rx)");
    must(GNI_MemRegister(n.nic, n.at(0), n.buf.size() * 8, n.rx, GNI_MEM_READWRITE, 0, &n.buf_h), "GNI_MemRegister");
    n.smsg.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    n.smsg.mbox_maxcredit = credits;
    n.smsg.msg_maxsize = max_message;
    unsigned size = 0;
    must(GNI_SmsgBufferSizeNeeded(&n.smsg, &size), "GNI_SmsgBufferSizeNeeded");
    n.mbox.assign(size / 8 + 1, 0);
    n.smsg.msg_buffer = n.mbox.data();
    n.smsg.buff_size = size;
    n.smsg.mbox_offset = 0;
    must(GNI_MemRegister(n.nic, reinterpret_cast<std::uint64_t>(n.mbox.data()), size, n.rx, GNI_MEM_READWRITE, 0,
                         &n.smsg.mem_hndl),
         "GNI_MemRegister (mailbox)");
}

gni_ep_handle_t connect(Nic &n, Card &peer, bool smsg = true) {
    gni_ep_handle_t ep = nullptr;
    must(GNI_EpCreate(n.nic, n.cq, &ep), "GNI_EpCreate");
    must(GNI_EpBind(ep, peer.addr, peer.inst), "GNI_EpBind");
    if (smsg) must(GNI_SmsgInit(ep, &n.smsg, &peer.smsg), "GNI_SmsgInit");
    return ep;
}

gni_post_descriptor_t descriptor(gni_post_type_t type, std::uint64_t local, gni_mem_handle_t local_h,
                                 std::uint64_t remote, gni_mem_handle_t remote_h, std::uint64_t length) {
    gni_post_descriptor_t d{};
    d.type = type;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
    d.local_addr = local;
    d.local_mem_hndl = local_h;
    d.remote_addr = remote;
    d.remote_mem_hndl = remote_h;
    d.length = length;
    d.post_id = 0x5100 + static_cast<std::uint64_t>(type);
    return d;
}

// The next post event on `cq` (SMSG send completions are skipped);
// returns GetCompleted's code and sets `done` to its descriptor.
gni_return_t wait_post(gni_cq_handle_t cq, gni_post_descriptor_t **done, gni_cq_entry_t *event = nullptr) {
    for (;;) {
        gni_cq_entry_t e = 0;
        const gni_return_t rc = GNI_CqWaitEvent(cq, 5000, &e);
        if (rc == GNI_RC_TIMEOUT) return rc;
        if (GNI_CQ_GET_TYPE(e) != GNI_CQ_EVENT_TYPE_POST) continue;
        if (event) *event = e;
        return GNI_GetCompleted(cq, e, done);
    }
}

gni_return_t post_and_wait(Nic &n, gni_ep_handle_t ep, gni_post_descriptor_t &d, bool rdma,
                           gni_cq_entry_t *event = nullptr) {
    const gni_return_t rc = rdma ? GNI_PostRdma(ep, &d) : GNI_PostFma(ep, &d);
    if (rc != GNI_RC_SUCCESS) return rc;
    gni_post_descriptor_t *done = nullptr;
    const gni_return_t c = wait_post(n.cq, &done, event);
    return c == GNI_RC_SUCCESS && done != &d ? GNI_RC_DESCRIPTOR_ERROR : c;
}

// Waits for the next SMSG message; copies its bytes out and releases it.
bool receive(gni_ep_handle_t ep, std::string &message, std::uint8_t &tag) {
    for (int i = 0; i < 100000; ++i) {
        void *header = nullptr;
        tag = GNI_SMSG_ANY_TAG;
        const gni_return_t rc = GNI_SmsgGetNextWTag(ep, &header, &tag);
        if (rc == GNI_RC_SUCCESS) {
            message = static_cast<const char *>(header);
            return GNI_SmsgRelease(ep) == GNI_RC_SUCCESS;
        }
        if (rc != GNI_RC_NOT_DONE) return false;
        ::usleep(50);
    }
    return false;
}

gni_return_t send(gni_ep_handle_t ep, const std::string &m, std::uint32_t msg_id, std::uint8_t tag = 0) {
    return GNI_SmsgSendWTag(ep, const_cast<char *>(m.c_str()), static_cast<std::uint32_t>(m.size() + 1), nullptr, 0,
                            msg_id, tag);
}

std::string expect(gni_ep_handle_t ep) {
    std::string m;
    std::uint8_t tag = 0;
    return receive(ep, m, tag) ? m : "(nothing)";
}

// Counts the remote events of `type` from `inst` waiting on `cq`.
int drain(gni_cq_handle_t cq, std::uint64_t type, std::uint32_t inst) {
    int n = 0;
    gni_cq_entry_t e = 0;
    while (GNI_CqGetEvent(cq, &e) == GNI_RC_SUCCESS)
        if (GNI_CQ_GET_TYPE(e) == type && GNI_CQ_GET_INST_ID(e) == inst && GNI_CQ_REMOTE(e)) ++n;
    return n;
}

// Counts them until there are `want` (5 s at most), blocking in
// GNI_CqWaitEvent: an event that came over the wire is raised after its
// poster had the answer.
int await_events(gni_cq_handle_t cq, std::uint64_t type, std::uint32_t inst, int want) {
    int n = drain(cq, type, inst);
    for (int i = 0; i < 500 && n < want; ++i) {
        gni_cq_entry_t e = 0;
        if (GNI_CqWaitEvent(cq, 10, &e) == GNI_RC_SUCCESS && GNI_CQ_GET_TYPE(e) == type &&
            GNI_CQ_GET_INST_ID(e) == inst && GNI_CQ_REMOTE(e))
            ++n;
    }
    return n + drain(cq, type, inst);
}

// Whether `n` 64-bit words from `p` all hold `v`.
bool all_are(const std::uint64_t *p, std::size_t n, std::uint64_t v) {
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != v) return false;
    return true;
}

constexpr int fadds = 500;
constexpr std::size_t counter = 32768;  // B's counter word, in its buffer

constexpr std::size_t last_words = 8188;  // B's buffer's last 4 words, which no put may reach

// The NIC address GNI_CdmAttach gave is the one the job's environment
// names (softnic-run sets PMI_GNI_LOC_ADDR to the host's).
void check_address(const Nic &n) {
    const char *loc = std::getenv("PMI_GNI_LOC_ADDR");
    check(loc && std::strtoul(loc, nullptr, 0) == n.addr, "GNI_CdmAttach gives PMI_GNI_LOC_ADDR's NIC address",
          std::to_string(n.addr) + ", PMI_GNI_LOC_ADDR=" + (loc ? loc : "(unset)"));
}

// ---- datagrams ----

// One endpoint's datagram: the bytes it offers and the buffer the peer's
// land in (the NIC fills it at the test, so a Dgram never moves).
struct Dgram {
    explicit Dgram(gni_nic_handle_t nic) { must(GNI_EpCreate(nic, nullptr, &ep), "GNI_EpCreate"); }
    Dgram(gni_nic_handle_t nic, std::uint32_t address, std::uint32_t instance) : Dgram(nic) {
        must(GNI_EpBind(ep, address, instance), "GNI_EpBind");
    }
    ~Dgram() { GNI_EpDestroy(ep); }
    Dgram(const Dgram &) = delete;
    Dgram &operator=(const Dgram &) = delete;

    gni_return_t post(const std::string &text, std::uint64_t with_id) {
        id = with_id;
        std::memset(in, 0, sizeof in);
        std::memset(out, 0, sizeof out);
        std::snprintf(in, sizeof in, "%s", text.c_str());
        return GNI_EpPostDataWId(ep, in, sizeof in, out, sizeof out, id);
    }
    gni_return_t test() { return GNI_EpPostDataTestById(ep, id, &state, &address, &inst); }
    gni_return_t wait(std::uint32_t ms) { return GNI_EpPostDataWaitById(ep, id, ms, &state, &address, &inst); }
    // Whether `rc` (of test or wait) says it completed with `text` from
    // the domain at (peer_address, peer_inst).
    bool completed(gni_return_t rc, const std::string &text, std::uint32_t peer_address,
                   std::uint32_t peer_inst) const {
        return rc == GNI_RC_SUCCESS && state == GNI_POST_COMPLETED && text == out && address == peer_address &&
               inst == peer_inst;
    }
    std::string outcome(gni_return_t rc) const {
        return rc_name(rc) + ", state " + std::to_string(state) + ", \"" + out + "\" from " + std::to_string(address) +
               "/" + std::to_string(inst);
    }

    gni_ep_handle_t ep = nullptr;
    char in[64], out[64];
    std::uint64_t id = 0;
    gni_post_state_t state = GNI_POST_PENDING;
    std::uint32_t address = 0, inst = 0;
};

// The id GNI_PostDataProbeById names within `ms`, else GNI_DATAGRAM_ID_ANY.
std::uint64_t probe(gni_nic_handle_t nic, int ms) {
    for (int waited = 0;; ++waited) {
        std::uint64_t id = 0;
        if (GNI_PostDataProbeById(nic, &id) == GNI_RC_SUCCESS) return id;
        if (waited >= ms) return GNI_DATAGRAM_ID_ANY;
        ::usleep(1000);
    }
}

bool probe_idle(gni_nic_handle_t nic) {
    std::uint64_t id = 0;
    return GNI_PostDataProbeById(nic, &id) == GNI_RC_NO_MATCH;
}

// A domain of its own, for one more client of the other process.
struct Domain {
    gni_cdm_handle_t cdm = nullptr;
    gni_nic_handle_t nic = nullptr;
    std::uint32_t addr = 0;
    explicit Domain(std::uint32_t inst) {
        must(GNI_CdmCreate(inst, job.ptag, job.cookie, GNI_CDM_MODE_FAST_DATAGRAM_POLL, &cdm), "GNI_CdmCreate");
        must(GNI_CdmAttach(cdm, 0, &addr, &nic), "GNI_CdmAttach");
    }
    ~Domain() { GNI_CdmDestroy(cdm); }
    Domain(const Domain &) = delete;
    Domain &operator=(const Domain &) = delete;
};

// One wildcard of `n`, posted again after each match, serves three
// clients of the other process (instances first..first+2) and gets each
// one's bytes and address.
void serve_three(Channel &c, Nic &n, const Card &peer, std::uint32_t first) {
    Dgram w(n.nic);
    must(w.post("served", 180), "GNI_EpPostDataWId (wildcard)");
    c.tell(30);  // the clients post
    std::vector<std::uint32_t> from;
    bool ok = true;
    std::string detail;
    for (int k = 0; k < 3 && ok; ++k) {
        const std::uint64_t id = probe(n.nic, 5000);
        const gni_return_t rc = w.test();
        ok = id == 180 && w.completed(rc, "client " + std::to_string(w.inst), peer.addr, w.inst);
        detail = w.outcome(rc);
        from.push_back(w.inst);
        if (k < 2) must(w.post("served", 180), "GNI_EpPostDataWId (wildcard again)");
    }
    std::sort(from.begin(), from.end());
    check(ok && from == std::vector<std::uint32_t>{first, first + 1, first + 2},
          "one wildcard, posted again after each match, serves three clients of the other process", detail);
    (void)c.hear<int>();  // the clients are done
}

void be_three(Channel &c, const Card &peer, std::uint32_t first) {
    (void)c.hear<int>();  // the other process's wildcard is posted
    std::vector<std::unique_ptr<Domain>> domains;
    std::vector<std::unique_ptr<Dgram>> posts;
    for (std::uint32_t k = 0; k < 3; ++k) {
        domains.push_back(std::make_unique<Domain>(first + k));
        posts.push_back(std::make_unique<Dgram>(domains.back()->nic, peer.addr, peer.inst));
        must(posts.back()->post("client " + std::to_string(first + k), k), "GNI_EpPostDataWId (client)");
    }
    bool ok = true;
    std::string detail;
    for (auto &p : posts) {
        const gni_return_t rc = p->wait(5000);
        ok = ok && p->completed(rc, "served", peer.addr, peer.inst);
        detail = p->outcome(rc);
    }
    check(ok, "three clients' directed datagrams to the other process's one wildcard all complete", detail);
    posts.clear();
    domains.clear();
    c.tell(31);
}

// B's datagram rules, with A's in datagrams_a: a wildcard answering a
// directed datagram both ways, one waiting for a wildcard posted later,
// two directed datagrams crossing (one exchange; A's wildcard untouched),
// cancel (the cancelled datagram completes nobody's wildcard), a
// completed one that cannot be cancelled, and one wildcard serving
// several clients.
void datagrams_b(Channel &c, Nic &n, const Card &peer) {
    {
        Dgram w(n.nic);
        must(w.post("B's wildcard", 100), "GNI_EpPostDataWId (wildcard)");
        c.tell(10);
        const std::uint64_t id = probe(n.nic, 5000);
        const gni_return_t rc = w.test();
        check(id == 100 && w.completed(rc, "A dials B", peer.addr, peer.inst),
              "a wildcard datagram takes A's directed one: probed, A's bytes, address and instance",
              std::to_string(id) + ", " + w.outcome(rc));
        check(probe_idle(n.nic), "a tested datagram is released: GNI_PostDataProbeById finds nothing");
    }
    (void)c.hear<int>();  // A's wildcard is posted
    {
        Dgram d(n.nic, peer.addr, peer.inst);
        must(d.post("B dials A", 111), "GNI_EpPostDataWId");
        const gni_return_t rc = d.wait(5000);
        check(d.completed(rc, "A's wildcard", peer.addr, peer.inst),
              "a directed datagram to A's wildcard completes with its bytes and address", d.outcome(rc));
    }
    (void)c.hear<int>();  // A's directed datagram waits
    {
        Dgram w(n.nic);
        must(w.post("B's late wildcard", 121), "GNI_EpPostDataWId (wildcard)");
        const std::uint64_t id = probe(n.nic, 5000);
        const gni_return_t rc = w.test();
        check(id == 121 && w.completed(rc, "A waits", peer.addr, peer.inst),
              "a wildcard posted after A's directed datagram takes it", w.outcome(rc));
    }
    {
        Dgram d(n.nic, peer.addr, peer.inst);
        must(d.post("B waits", 130), "GNI_EpPostDataWId");
        const gni_return_t early = d.wait(200);
        const gni_post_state_t then = d.state;
        c.tell(13);  // A posts its wildcard now
        const gni_return_t rc = d.wait(5000);
        check(early == GNI_RC_TIMEOUT && then == GNI_POST_PENDING &&
                  d.completed(rc, "A's late wildcard", peer.addr, peer.inst),
              "a directed datagram waits (TIMEOUT, PENDING) until A posts a wildcard, then completes",
              rc_name(early) + ", then " + d.outcome(rc));
    }
    (void)c.hear<int>();  // A's directed datagram to B waits, with A's wildcard
    {
        Dgram d(n.nic, peer.addr, peer.inst);
        must(d.post("B crosses", 142), "GNI_EpPostDataWId");
        const gni_return_t rc = d.wait(5000);
        check(d.completed(rc, "A crosses", peer.addr, peer.inst) && probe_idle(n.nic),
              "B's directed datagram to A meets A's to B: one exchange, each side's bytes", d.outcome(rc));
        c.tell(15);
    }
    (void)c.hear<int>();  // both at once
    {
        Dgram d(n.nic, peer.addr, peer.inst);
        must(d.post("B at once", 151), "GNI_EpPostDataWId");
        const gni_return_t rc = d.wait(5000);
        check(d.completed(rc, "A at once", peer.addr, peer.inst) && probe_idle(n.nic),
              "directed datagrams posted at once by both processes: one exchange", d.outcome(rc));
    }
    (void)c.hear<int>();  // A cancelled a directed datagram to B
    {
        Dgram w(n.nic);
        must(w.post("B's wildcard 161", 161), "GNI_EpPostDataWId (wildcard)");
        const gni_return_t early = w.wait(300);
        const gni_post_state_t then = w.state;
        c.tell(18);  // A posts again
        const std::uint64_t id = probe(n.nic, 5000);
        const gni_return_t rc = w.test();
        check(early == GNI_RC_TIMEOUT && then == GNI_POST_PENDING && id == 161 &&
                  w.completed(rc, "A after cancel", peer.addr, peer.inst),
              "A's cancelled datagram completes nobody's wildcard; A's next one does",
              rc_name(early) + ", then " + w.outcome(rc));
    }
    {
        Dgram d(n.nic, peer.addr, peer.inst);
        must(d.post("B cancelled", 170), "GNI_EpPostDataWId");
        const gni_return_t cancel = GNI_EpPostDataCancelById(d.ep, 170);
        const gni_return_t t = d.test();
        check(cancel == GNI_RC_SUCCESS && t == GNI_RC_SUCCESS && d.state == GNI_POST_TERMINATED,
              "GNI_EpPostDataCancelById of B's directed datagram to A: TERMINATED", rc_name(cancel));
        c.tell(19);  // A posts a wildcard
        (void)c.hear<int>();  // it stayed pending
        must(d.post("B after cancel", 172), "GNI_EpPostDataWId (the same endpoint again)");
        const gni_return_t rc = d.wait(5000);
        check(d.completed(rc, "A's wildcard 171", peer.addr, peer.inst),
              "once tested, the endpoint posts again, and A's wildcard takes that one", d.outcome(rc));
    }
    be_three(c, peer, 21);
    serve_three(c, n, peer, 11);
}

void datagrams_a(Channel &c, Nic &n, const Card &peer) {
    (void)c.hear<int>();  // B's wildcard is posted
    {
        Dgram d(n.nic, peer.addr, peer.inst);
        must(d.post("A dials B", 101), "GNI_EpPostDataWId");
        const gni_return_t rc = d.wait(5000);
        check(d.completed(rc, "B's wildcard", peer.addr, peer.inst),
              "a directed datagram to B's wildcard completes with its bytes and address", d.outcome(rc));
    }
    {
        Dgram w(n.nic);
        must(w.post("A's wildcard", 110), "GNI_EpPostDataWId (wildcard)");
        c.tell(11);
        const std::uint64_t id = probe(n.nic, 5000);
        const gni_return_t rc = w.test();
        check(id == 110 && w.completed(rc, "B dials A", peer.addr, peer.inst),
              "a wildcard datagram takes B's directed one: probed, B's bytes, address and instance", w.outcome(rc));
    }
    {
        Dgram d(n.nic, peer.addr, peer.inst);
        must(d.post("A waits", 120), "GNI_EpPostDataWId");
        const gni_return_t early = d.wait(200);
        const gni_post_state_t then = d.state;
        c.tell(12);  // B posts its wildcard now
        const gni_return_t rc = d.wait(5000);
        check(early == GNI_RC_TIMEOUT && then == GNI_POST_PENDING &&
                  d.completed(rc, "B's late wildcard", peer.addr, peer.inst),
              "a directed datagram waits (TIMEOUT, PENDING) until B posts a wildcard, then completes",
              rc_name(early) + ", then " + d.outcome(rc));
    }
    (void)c.hear<int>();  // B's directed datagram waits
    {
        Dgram w(n.nic);
        must(w.post("A's late wildcard", 131), "GNI_EpPostDataWId (wildcard)");
        const std::uint64_t id = probe(n.nic, 5000);
        const gni_return_t rc = w.test();
        check(id == 131 && w.completed(rc, "B waits", peer.addr, peer.inst),
              "a wildcard posted after B's directed datagram takes it", w.outcome(rc));
    }
    {
        // A's directed datagram waits for B's (B has no wildcard); A's
        // wildcard is there too, and B's datagram must take A's directed one.
        Dgram w(n.nic), d(n.nic, peer.addr, peer.inst);
        must(w.post("A's idle wildcard", 140), "GNI_EpPostDataWId (wildcard)");
        must(d.post("A crosses", 141), "GNI_EpPostDataWId");
        c.tell(14);
        const gni_return_t rc = d.wait(5000);
        check(d.completed(rc, "B crosses", peer.addr, peer.inst),
              "A's directed datagram to B meets B's to A: one exchange, each side's bytes", d.outcome(rc));
        (void)c.hear<int>();  // B has checked its side
        const gni_return_t t = w.test();
        const bool idle = probe_idle(n.nic);
        check(t == GNI_RC_SUCCESS && w.state == GNI_POST_PENDING && idle,
              "the crossing datagrams leave A's wildcard alone: still PENDING, nothing else completed",
              rc_name(t) + ", state " + std::to_string(w.state));
        const gni_return_t cancel = GNI_EpPostDataCancelById(w.ep, 140);
        const std::uint64_t probed = probe(n.nic, 0);
        const gni_return_t t2 = w.test();
        const gni_return_t again = w.test();
        check(cancel == GNI_RC_SUCCESS && probed == 140 && t2 == GNI_RC_SUCCESS && w.state == GNI_POST_TERMINATED &&
                  again == GNI_RC_NO_MATCH,
              "a cancelled wildcard is TERMINATED, probed, and released by its test",
              rc_name(cancel) + ", " + rc_name(t2) + ", then " + rc_name(again));
    }
    {
        c.tell(16);  // both at once, no wildcard on either side
        Dgram d(n.nic, peer.addr, peer.inst);
        must(d.post("A at once", 150), "GNI_EpPostDataWId");
        const gni_return_t rc = d.wait(5000);
        check(d.completed(rc, "B at once", peer.addr, peer.inst) && probe_idle(n.nic),
              "directed datagrams posted at once by both processes: one exchange (A's side)", d.outcome(rc));
    }
    {
        Dgram d(n.nic, peer.addr, peer.inst);
        must(d.post("A cancelled", 160), "GNI_EpPostDataWId");
        const gni_return_t cancel = GNI_EpPostDataCancelById(d.ep, 160);
        const gni_return_t t = d.test();
        check(cancel == GNI_RC_SUCCESS && t == GNI_RC_SUCCESS && d.state == GNI_POST_TERMINATED,
              "GNI_EpPostDataCancelById of A's directed datagram to B: TERMINATED", rc_name(cancel));
        c.tell(17);  // B posts a wildcard
        (void)c.hear<int>();  // it stayed pending
        must(d.post("A after cancel", 162), "GNI_EpPostDataWId (the same endpoint again)");
        const gni_return_t rc = d.wait(5000);
        check(d.completed(rc, "B's wildcard 161", peer.addr, peer.inst),
              "once tested, the endpoint posts again, and B's wildcard takes that one", d.outcome(rc));
    }
    (void)c.hear<int>();  // B cancelled a directed datagram to A
    {
        Dgram w(n.nic);
        must(w.post("A's wildcard 171", 171), "GNI_EpPostDataWId (wildcard)");
        const gni_return_t early = w.wait(300);
        const gni_post_state_t then = w.state;
        c.tell(20);  // B posts again
        const std::uint64_t id = probe(n.nic, 5000);
        const gni_return_t cancel = GNI_EpPostDataCancelById(w.ep, 171);
        const gni_return_t rc = w.test();
        check(early == GNI_RC_TIMEOUT && then == GNI_POST_PENDING && id == 171 &&
                  w.completed(rc, "B after cancel", peer.addr, peer.inst),
              "B's cancelled datagram completes nobody's wildcard; B's next one does",
              rc_name(early) + ", then " + w.outcome(rc));
        check(cancel == GNI_RC_INVALID_STATE, "GNI_EpPostDataCancelById of a completed datagram: INVALID_STATE, "
              "the completion stands", rc_name(cancel));
    }
    serve_three(c, n, peer, 21);
    be_three(c, peer, 11);
}

// Process B (instance 2): receives, serves as the target, counts along.
int run_b(Channel &c) {
    role = "B: ";
    Nic n;
    open_nic(n, 2);
    check_address(n);
    for (int i = 0; i < 1024; ++i) n.buf[512 + i] = 0xb0000000u + i;  // what A gets
    for (std::size_t i = last_words; i < n.buf.size(); ++i) n.buf[i] = 0xe0e0;
    // For A's rules: memory A may only read, and a handle that is gone.
    std::vector<std::uint64_t> read_only(64, 0x0b0b), gone(64, 0x0c0c);
    Card mine = card_of(n), peer{};
    mine.read_only = reinterpret_cast<std::uint64_t>(read_only.data());
    mine.gone = reinterpret_cast<std::uint64_t>(gone.data());
    must(GNI_MemRegister(n.nic, mine.read_only, 512, n.rx, GNI_MEM_READ_ONLY, 0, &mine.read_only_h),
         "GNI_MemRegister (read-only)");
    must(GNI_MemRegister(n.nic, mine.gone, 512, n.rx, GNI_MEM_READWRITE, 0, &mine.gone_h), "GNI_MemRegister");
    must(GNI_MemDeregister(n.nic, &mine.gone_h), "GNI_MemDeregister");
    c.tell(mine);
    peer = c.hear<Card>();
    gni_ep_handle_t ep = connect(n, peer);
    std::string m;
    std::uint8_t tag = 0;
    bool in_order = true;
    for (int i = 1; i <= 3; ++i)
        in_order = in_order && receive(ep, m, tag) && m == "message " + std::to_string(i) && tag == i;
    check(in_order, "three SMSG messages arrive in order with their tags");
    must(send(ep, "ready", 10), "GNI_SmsgSendWTag");
    // Half the atomics on our own counter through a loopback endpoint.
    Card self = card_of(n);
    gni_ep_handle_t loop = connect(n, self, false);
    bool fadd_ok = true;
    for (int i = 0; i < fadds; ++i) {
        gni_post_descriptor_t d = descriptor(GNI_POST_AMO, n.at(16), n.buf_h, n.at(counter), n.buf_h, 8);
        d.amo_cmd = GNI_FMA_ATOMIC_FADD;
        d.first_operand = 1;
        fadd_ok = fadd_ok && post_and_wait(n, loop, d, false) == GNI_RC_SUCCESS;
    }
    const std::string done = expect(ep);
    check(fadd_ok && done == "fadd done" && n.buf[counter / 8] == 2 * fadds,
          "fetch-adds of two processes on one word all count", std::to_string(n.buf[counter / 8]));
    must(send(ep, "counted", 11), "GNI_SmsgSendWTag");
    const std::string end = expect(ep);
    bool fma = true, bte = true;
    for (int i = 0; i < 32; ++i) fma = fma && n.buf[i + 64] == 0xa0000000u + i;
    for (int i = 0; i < 1024; ++i) bte = bte && n.buf[i + 2048] == 0xa1000000u + i;
    check(end == "end", "the last message", end);
    check(fma, "A's FMA put is in B's memory");
    check(bte, "A's BTE put is in B's memory");
    check(n.buf[counter / 8] == 0x16, "A's atomics left their value in B's memory", std::to_string(n.buf[counter / 8]));
    const int smsg_events = drain(n.rx, GNI_CQ_EVENT_TYPE_SMSG, 1);
    check(smsg_events == 5, "each message raised an SMSG event with the sender's instance id on the mailbox's CQ",
          std::to_string(smsg_events));

    c.tell(1);  // A goes on: what B's registrations refuse, remote events
    (void)c.hear<int>();
    check(all_are(read_only.data(), read_only.size(), 0x0b0b) && all_are(gone.data(), gone.size(), 0x0c0c) &&
              all_are(&n.buf[last_words], n.buf.size() - last_words, 0xe0e0),
          "the puts and atomics B's registrations refused moved nothing");
    const int posts = await_events(n.rx, GNI_CQ_EVENT_TYPE_POST, 1, 2);
    check(posts == 2, "A's FMA and BTE puts with GNI_CQMODE_REMOTE_EVENT raised remote events with A's instance id",
          std::to_string(posts));
    (void)c.hear<int>();  // A found the mailbox full
    const std::string first = expect(ep);
    c.tell(2);  // one message released
    (void)c.hear<int>();  // A sent one more and found the mailbox full again
    bool order = first == "fill 0";
    for (int i = 1; i <= credits; ++i) order = order && expect(ep) == "fill " + std::to_string(i);
    void *header = nullptr;
    std::uint8_t any = GNI_SMSG_ANY_TAG;
    check(order && GNI_SmsgGetNextWTag(ep, &header, &any) == GNI_RC_NOT_DONE,
          "A's messages arrive in order across the full mailbox, the refused ones not at all");
    (void)c.hear<int>();  // A is done with transfers
    datagrams_b(c, n, peer);
    GNI_EpDestroy(loop);
    GNI_EpDestroy(ep);
    GNI_CdmDestroy(n.cdm);
    return failures ? 1 : 0;
}

// A: what B's registrations refuse (the transfer completes in error, its
// event's status not OK); remote events; a BTE completion after its post.
void rules_refused(Nic &n, gni_ep_handle_t ep, const Card &peer) {
    gni_cq_entry_t e = 0;
    auto refused = [&](gni_post_descriptor_t d, bool rdma, const char *rule) {
        const gni_return_t rc = post_and_wait(n, ep, d, rdma, &e);
        check(rc == GNI_RC_TRANSACTION_ERROR && !GNI_CQ_STATUS_OK(e), rule, rc_name(rc));
    };
    refused(descriptor(GNI_POST_FMA_PUT, n.at(0), n.buf_h, peer.buf + 65536 - 32, peer.buf_h, 64), false,
            "FMA put past the end of the other process's registration: TRANSACTION_ERROR");
    refused(descriptor(GNI_POST_FMA_GET, n.at(0), n.buf_h, peer.buf, gni_mem_handle_t{}, 64), false,
            "FMA get with no remote handle: TRANSACTION_ERROR");
    refused(descriptor(GNI_POST_RDMA_PUT, n.at(0), n.buf_h, peer.gone, peer.gone_h, 64), true,
            "BTE put with the other process's deregistered handle: TRANSACTION_ERROR");
    refused(descriptor(GNI_POST_FMA_PUT, n.at(0), n.buf_h, peer.read_only, peer.read_only_h, 64), false,
            "FMA put into the other process's read-only memory: TRANSACTION_ERROR");
    gni_post_descriptor_t amo = descriptor(GNI_POST_AMO, n.at(48), n.buf_h, peer.read_only, peer.read_only_h, 8);
    amo.amo_cmd = GNI_FMA_ATOMIC_FADD;
    amo.first_operand = 1;
    n.buf[6] = 0xdead;
    refused(amo, false, "an atomic on the other process's read-only memory: TRANSACTION_ERROR");
    check(n.buf[6] == 0xdead, "the refused atomic fetched nothing", std::to_string(n.buf[6]));
    gni_post_descriptor_t ro = descriptor(GNI_POST_RDMA_GET, n.at(0), n.buf_h, peer.read_only, peer.read_only_h, 64);
    const gni_return_t got = post_and_wait(n, ep, ro, true);
    check(got == GNI_RC_SUCCESS && all_are(n.buf.data(), 8, 0x0b0b),
          "BTE get from the other process's read-only memory", rc_name(got));

    gni_post_descriptor_t fput = descriptor(GNI_POST_FMA_PUT, n.at(0), n.buf_h, peer.buf + 49152, peer.buf_h, 64);
    fput.cq_mode = GNI_CQMODE_DUAL_EVENTS;
    check(post_and_wait(n, ep, fput, false) == GNI_RC_SUCCESS, "FMA put with a remote event");
    gni_post_descriptor_t bput = descriptor(GNI_POST_RDMA_PUT, n.at(0), n.buf_h, peer.buf + 49216, peer.buf_h, 64);
    bput.cq_mode = GNI_CQMODE_DUAL_EVENTS;
    const gni_return_t posted = GNI_PostRdma(ep, &bput);
    const gni_return_t none = GNI_CqGetEvent(n.cq, &e);
    gni_post_descriptor_t *done = nullptr;
    const gni_return_t later = wait_post(n.cq, &done);
    check(posted == GNI_RC_SUCCESS && none == GNI_RC_NOT_DONE && later == GNI_RC_SUCCESS && done == &bput,
          "BTE put with a remote event to the other process: its completion after GNI_PostRdma returned",
          rc_name(none) + " at first, then " + rc_name(later));
}

// A: B's mailbox for A holds `credits` messages; B releases one when told.
void rules_full_mailbox(Channel &c, gni_ep_handle_t ep) {
    int sent = 0;
    while (sent < credits && send(ep, "fill " + std::to_string(sent), 500 + sent) == GNI_RC_SUCCESS) ++sent;
    const gni_return_t full = send(ep, "refused", 520);
    check(sent == credits && full == GNI_RC_NOT_DONE, "a send to the other process's full mailbox: NOT_DONE",
          std::to_string(sent) + " sent, then " + rc_name(full));
    c.tell(2);
    (void)c.hear<int>();  // B released one
    const gni_return_t again = send(ep, "fill " + std::to_string(credits), 500 + credits);
    const gni_return_t full_again = send(ep, "refused", 521);
    check(again == GNI_RC_SUCCESS && full_again == GNI_RC_NOT_DONE,
          "the receiver's release gives one credit back: one more send, then NOT_DONE again",
          rc_name(again) + ", " + rc_name(full_again));
    c.tell(3);
}

// A: endpoints to peers that do not exist: transfers and sends complete in
// error.
void rules_no_peer(Nic &n, const Card &peer, bool far) {
    Card nobody = peer;
    nobody.inst = 99;
    gni_ep_handle_t ghost = connect(n, nobody);
    gni_post_descriptor_t d = descriptor(GNI_POST_FMA_PUT, n.at(0), n.buf_h, peer.buf, peer.buf_h, 8);
    const gni_return_t put = post_and_wait(n, ghost, d, false);
    const gni_return_t sent = send(ghost, "nobody", 600);
    check(put == GNI_RC_TRANSACTION_ERROR && sent == GNI_RC_TRANSACTION_ERROR,
          far ? "an instance id the other host does not have: TRANSACTION_ERROR"
              : "an instance id no process attached: TRANSACTION_ERROR",
          rc_name(put) + ", " + rc_name(sent));
    Card nowhere = peer;
    nowhere.addr = peer.addr + 100;
    gni_ep_handle_t lost = connect(n, nowhere, false);
    d = descriptor(GNI_POST_RDMA_PUT, n.at(0), n.buf_h, peer.buf, peer.buf_h, 8);
    const gni_return_t bte = post_and_wait(n, lost, d, true);
    check(bte == GNI_RC_TRANSACTION_ERROR, "a BTE put to an address that is no host's: TRANSACTION_ERROR",
          rc_name(bte));
    GNI_EpDestroy(lost);
    GNI_EpDestroy(ghost);
}

// Process A (instance 1): sends, puts, gets, and the atomics' other half;
// then what B refuses.  `far`: B is on another host.
void run_a(Channel &c, bool far) {
    role = "A: ";
    Nic n;
    open_nic(n, 1);
    check_address(n);
    Card mine = card_of(n);
    const Card peer = c.hear<Card>();
    c.tell(mine);
    check(far ? n.addr != peer.addr : n.addr == peer.addr,
          far ? "the two hosts' NIC addresses differ" : "the two processes of one host share its NIC address",
          std::to_string(n.addr) + " and " + std::to_string(peer.addr));
    Card b = peer;
    gni_ep_handle_t ep = connect(n, b);
    for (std::uint8_t i = 1; i <= 3; ++i) must(send(ep, "message " + std::to_string(i), 100 + i, i), "GNI_SmsgSendWTag");
    // Each send raised a local SMSG event with its message id.
    int ids = 0;
    gni_cq_entry_t e = 0;
    while (GNI_CqGetEvent(n.cq, &e) == GNI_RC_SUCCESS)
        if (GNI_CQ_GET_TYPE(e) == GNI_CQ_EVENT_TYPE_SMSG && GNI_CQ_GET_MSG_ID(e) == 100u + ids + 1) ++ids;
    check(ids == 3, "each SMSG send raised a local event with its message id", std::to_string(ids));
    check(expect(ep) == "ready", "B's answer arrives");

    for (int i = 0; i < 32; ++i) n.buf[i] = 0xa0000000u + i;
    gni_post_descriptor_t put = descriptor(GNI_POST_FMA_PUT, n.at(0), n.buf_h, peer.buf + 512, peer.buf_h, 256);
    check(post_and_wait(n, ep, put, false) == GNI_RC_SUCCESS, "FMA put to the other process");
    gni_post_descriptor_t get = descriptor(GNI_POST_FMA_GET, n.at(8192), n.buf_h, peer.buf + 4096, peer.buf_h, 512);
    bool got = post_and_wait(n, ep, get, false) == GNI_RC_SUCCESS;
    for (int i = 0; i < 64; ++i) got = got && n.buf[1024 + i] == 0xb0000000u + i;
    check(got, "FMA get from the other process");
    for (int i = 0; i < 1024; ++i) n.buf[2048 + i] = 0xa1000000u + i;
    gni_post_descriptor_t rput = descriptor(GNI_POST_RDMA_PUT, n.at(16384), n.buf_h, peer.buf + 16384, peer.buf_h, 8192);
    check(post_and_wait(n, ep, rput, true) == GNI_RC_SUCCESS, "BTE put to the other process");
    std::memset(n.bytes() + 40000, 0, 8192);
    gni_post_descriptor_t rget = descriptor(GNI_POST_RDMA_GET, n.at(40000), n.buf_h, peer.buf + 4096, peer.buf_h, 8192);
    got = post_and_wait(n, ep, rget, true) == GNI_RC_SUCCESS;
    for (int i = 0; i < 1024; ++i) got = got && n.buf[5000 + i] == 0xb0000000u + i;
    check(got, "BTE get from the other process");

    bool fadd_ok = true;
    for (int i = 0; i < fadds; ++i) {
        gni_post_descriptor_t d = descriptor(GNI_POST_AMO, n.at(24), n.buf_h, peer.buf + counter, peer.buf_h, 8);
        d.amo_cmd = GNI_FMA_ATOMIC_FADD;
        d.first_operand = 1;
        fadd_ok = fadd_ok && post_and_wait(n, ep, d, false) == GNI_RC_SUCCESS;
    }
    check(fadd_ok, "fetch-adds on the other process's word");
    must(send(ep, "fadd done", 12), "GNI_SmsgSendWTag");
    check(expect(ep) == "counted", "B has counted");
    gni_post_descriptor_t cas = descriptor(GNI_POST_AMO, n.at(32), n.buf_h, peer.buf + counter, peer.buf_h, 8);
    cas.amo_cmd = GNI_FMA_ATOMIC_CSWAP;
    cas.first_operand = 2 * fadds;
    cas.second_operand = 77;
    bool swapped = post_and_wait(n, ep, cas, false) == GNI_RC_SUCCESS;
    check(swapped && n.buf[4] == 2 * fadds, "compare-and-swap that matches returns the old value",
          std::to_string(n.buf[4]));
    cas.second_operand = 5;
    swapped = post_and_wait(n, ep, cas, false) == GNI_RC_SUCCESS;
    check(swapped && n.buf[4] == 77, "compare-and-swap that does not match returns the value and leaves it",
          std::to_string(n.buf[4]));
    // The other commands on the same word (77), each fetching form
    // returning what the one before left.
    struct Step {
        gni_fma_cmd_type_t cmd;
        std::uint64_t first, second, fetched;
        const char *what;
    };
    const Step steps[] = {
        {GNI_FMA_ATOMIC_FOR, 0x100, 0, 77, "FOR"},
        {GNI_FMA_ATOMIC_FXOR, 0x1, 0, 0x14d, "FXOR"},
        {GNI_FMA_ATOMIC_FAND, 0xf0f, 0, 0x14c, "FAND"},
        {GNI_FMA_ATOMIC_FAX, 0, 5, 0x10c, "FAX (a swap)"},
        {GNI_FMA_ATOMIC_FIMIN, static_cast<std::uint64_t>(-3), 0, 5, "FIMIN"},
        {GNI_FMA_ATOMIC_FIMAX, 2, 0, static_cast<std::uint64_t>(-3), "FIMAX (signed)"},
        {GNI_FMA_ATOMIC_IMIN, 9, 0, 0, "IMIN"},          // 2 stays
        {GNI_FMA_ATOMIC_OR, 0x40, 0, 0, "OR"},            // 0x42
        {GNI_FMA_ATOMIC_XOR, 0x3, 0, 0, "XOR"},           // 0x41
        {GNI_FMA_ATOMIC_AND, 0x1, 0, 0, "AND"},           // 1
        {GNI_FMA_ATOMIC_IMAX, 6, 0, 0, "IMAX"},           // 6
        {GNI_FMA_ATOMIC_AX, 0xff, 0x10, 0, "AX"},         // 0x16
        {GNI_FMA_ATOMIC_FADD, 0, 0, 0x16, "FADD of 0 reads what they left"},
    };
    for (const Step &st : steps) {
        gni_post_descriptor_t d = descriptor(GNI_POST_AMO, n.at(40), n.buf_h, peer.buf + counter, peer.buf_h, 8);
        d.amo_cmd = st.cmd;
        d.first_operand = st.first;
        d.second_operand = st.second;
        n.buf[5] = 0xdead;
        const bool posted = post_and_wait(n, ep, d, false) == GNI_RC_SUCCESS;
        const bool fetches = st.cmd == GNI_FMA_ATOMIC_FADD || st.cmd == GNI_FMA_ATOMIC_FOR ||
                             st.cmd == GNI_FMA_ATOMIC_FXOR || st.cmd == GNI_FMA_ATOMIC_FAND ||
                             st.cmd == GNI_FMA_ATOMIC_FAX || st.cmd == GNI_FMA_ATOMIC_FIMIN ||
                             st.cmd == GNI_FMA_ATOMIC_FIMAX;
        check(posted && n.buf[5] == (fetches ? st.fetched : 0xdead), (std::string("AMO ") + st.what).c_str(),
              std::to_string(n.buf[5]));
    }
    gni_post_descriptor_t bad = descriptor(GNI_POST_AMO, n.at(40), n.buf_h, peer.buf + counter, peer.buf_h, 8);
    bad.amo_cmd = static_cast<gni_fma_cmd_type_t>(200);
    check(GNI_PostFma(ep, &bad) == GNI_RC_INVALID_PARAM, "an unknown AMO command: INVALID_PARAM");
    must(send(ep, "end", 13), "GNI_SmsgSendWTag");
    (void)c.hear<int>();  // B has checked
    rules_refused(n, ep, peer);
    c.tell(1);
    rules_full_mailbox(c, ep);
    rules_no_peer(n, peer, far);
    c.tell(4);
    datagrams_a(c, n, peer);
    GNI_EpDestroy(ep);
    GNI_CdmDestroy(n.cdm);
}

// One process, two domains a and b of one host: the datagram limits.
void datagram_limits(Nic &a, Nic &b) {
    check(probe_idle(a.nic), "GNI_PostDataProbeById with no datagram done: NO_MATCH");
    Dgram d(a.nic, b.addr, b.inst);
    char big[GNI_DATAGRAM_MAXSIZE + 1] = {};
    check(GNI_EpPostDataWId(d.ep, big, sizeof big, d.out, sizeof d.out, 1) == GNI_RC_SIZE_ERROR,
          "a datagram above GNI_DATAGRAM_MAXSIZE: SIZE_ERROR");
    check(GNI_EpPostDataWId(nullptr, d.in, 8, d.out, 8, 1) == GNI_RC_INVALID_PARAM &&
              GNI_EpPostDataWId(d.ep, d.in, 8, d.out, 8, GNI_DATAGRAM_ID_ANY) == GNI_RC_INVALID_PARAM &&
              GNI_EpPostDataWId(d.ep, nullptr, 8, d.out, 8, 1) == GNI_RC_INVALID_PARAM,
          "GNI_EpPostDataWId without an endpoint, with GNI_DATAGRAM_ID_ANY or without its bytes: INVALID_PARAM");
    check(d.test() == GNI_RC_NO_MATCH, "GNI_EpPostDataTestById with nothing posted: NO_MATCH");
    must(d.post("to b", 2), "GNI_EpPostDataWId");
    const gni_return_t second = GNI_EpPostDataWId(d.ep, d.in, 8, d.out, 8, 3);
    check(second == GNI_RC_ERROR_RESOURCE, "a second datagram on one endpoint: ERROR_RESOURCE", rc_name(second));
    gni_post_state_t state = GNI_POST_PENDING;
    std::uint32_t address = 0, inst = 0;
    check(GNI_EpPostDataTestById(d.ep, 3, &state, &address, &inst) == GNI_RC_NO_MATCH &&
              GNI_EpPostDataCancelById(d.ep, 3) == GNI_RC_NO_MATCH,
          "an id the endpoint has not posted: NO_MATCH (test, cancel)");
    gni_return_t rc = d.wait(20);
    check(rc == GNI_RC_TIMEOUT && d.state == GNI_POST_PENDING && probe_idle(a.nic),
          "no wildcard yet: GNI_EpPostDataWaitById answers TIMEOUT, PENDING", rc_name(rc));
    {
        // b's wildcard takes only 4 of the 64 bytes.
        Dgram w(b.nic);
        std::memcpy(w.in, "wild", 5);
        std::memset(w.out, 'x', sizeof w.out);
        must(GNI_EpPostDataWId(w.ep, w.in, 5, w.out, 4, 10), "GNI_EpPostDataWId (wildcard)");
        w.id = 10;
        rc = d.test();
        const gni_return_t rw = w.test();
        check(d.completed(rc, "wild", b.addr, b.inst) && rw == GNI_RC_SUCCESS && w.state == GNI_POST_COMPLETED &&
                  std::memcmp(w.out, "to b", 4) == 0 && w.out[4] == 'x' && w.address == a.addr && w.inst == a.inst,
              "two domains of one process: each gets the other's bytes, cut to its out_len", d.outcome(rc));
    }
    {
        Dgram ghost(a.nic, a.addr, 99);
        must(ghost.post("nobody", 20), "GNI_EpPostDataWId");
        rc = ghost.wait(50);
        const gni_return_t cancel = GNI_EpPostDataCancelById(ghost.ep, 20);
        const std::uint64_t probed = probe(a.nic, 0);
        const gni_return_t t = ghost.test();
        check(rc == GNI_RC_TIMEOUT && cancel == GNI_RC_SUCCESS && probed == 20 && t == GNI_RC_SUCCESS &&
                  ghost.state == GNI_POST_TERMINATED,
              "a datagram to an instance id nobody attached stays PENDING; cancelled, it is probed and TERMINATED",
              rc_name(rc) + ", " + rc_name(cancel));
    }
    {
        // GNI_EpDestroy and GNI_EpUnbind cancel the endpoint's datagram.
        auto gone = std::make_unique<Dgram>(a.nic, b.addr, b.inst);
        must(gone->post("destroyed", 30), "GNI_EpPostDataWId");
        gone.reset();
        Dgram unbound(a.nic, b.addr, b.inst);
        must(unbound.post("unbound", 31), "GNI_EpPostDataWId");
        must(GNI_EpUnbind(unbound.ep), "GNI_EpUnbind");
        Dgram w(b.nic);
        must(w.post("b waits", 32), "GNI_EpPostDataWId (wildcard)");
        const gni_return_t early = w.wait(50);
        Dgram next(a.nic, b.addr, b.inst);
        must(next.post("a again", 33), "GNI_EpPostDataWId");
        rc = w.wait(1000);
        check(early == GNI_RC_TIMEOUT && w.completed(rc, "a again", a.addr, a.inst) && next.test() == GNI_RC_SUCCESS,
              "GNI_EpDestroy and GNI_EpUnbind cancel their endpoint's datagram: b's wildcard takes the next one",
              rc_name(early) + ", then " + w.outcome(rc));
    }
    {
        Dgram older(b.nic), newer(b.nic), dial(a.nic, b.addr, b.inst);
        must(older.post("older", 40), "GNI_EpPostDataWId (wildcard)");
        must(newer.post("newer", 41), "GNI_EpPostDataWId (wildcard)");
        must(dial.post("dial", 42), "GNI_EpPostDataWId");
        rc = dial.test();
        const gni_return_t left = newer.test();
        check(dial.completed(rc, "older", b.addr, b.inst) && left == GNI_RC_SUCCESS && newer.state == GNI_POST_PENDING,
              "two wildcards of a domain: a directed datagram takes the older", dial.outcome(rc));
        check(older.test() == GNI_RC_SUCCESS && older.state == GNI_POST_COMPLETED, "the older wildcard completed");
    }
    {
        // GNI_CdmDestroy cancels every datagram of the domain.
        Dgram w(b.nic);
        {
            Domain c(104);
            Dgram dial(c.nic, b.addr, b.inst);
            must(dial.post("from a destroyed domain", 50), "GNI_EpPostDataWId");
            GNI_CdmDestroy(c.cdm);
            c.cdm = nullptr;
        }
        must(w.post("b waits", 51), "GNI_EpPostDataWId (wildcard)");
        rc = w.wait(50);
        check(rc == GNI_RC_TIMEOUT && w.state == GNI_POST_PENDING,
              "GNI_CdmDestroy cancels its domain's datagrams: they complete nobody's wildcard", rc_name(rc));
    }
}

// One process: the modelled limits, each shown enforced.
void run_limits() {
    role = "";
    // Credentials: only the job's ptag and cookie.
    gni_cdm_handle_t cdm = nullptr;
    check(GNI_CdmCreate(50, static_cast<std::uint8_t>(job.ptag + 1), job.cookie, 0, &cdm) == GNI_RC_PERMISSION_ERROR,
          "GNI_CdmCreate with another ptag: PERMISSION_ERROR");
    check(GNI_CdmCreate(50, job.ptag, job.cookie + 1, 0, &cdm) == GNI_RC_PERMISSION_ERROR,
          "GNI_CdmCreate with another cookie: PERMISSION_ERROR");
    check(GNI_CdmCreate(50, job.ptag, job.cookie, 0, nullptr) == GNI_RC_INVALID_PARAM,
          "GNI_CdmCreate without a handle: INVALID_PARAM");

    Nic a, b;
    open_nic(a, 100);
    open_nic(b, 101);
    {
        gni_cdm_handle_t twin = nullptr;
        gni_nic_handle_t nic = nullptr;
        std::uint32_t addr = 0;
        must(GNI_CdmCreate(101, job.ptag, job.cookie, 0, &twin), "GNI_CdmCreate (twin)");
        check(GNI_CdmAttach(twin, 0, &addr, &nic) == GNI_RC_INVALID_PARAM,
              "GNI_CdmAttach of an instance id already attached: INVALID_PARAM");
        GNI_CdmDestroy(twin);
    }
    Card ca = card_of(a), cb = card_of(b);
    gni_ep_handle_t ab = connect(a, cb);
    gni_ep_handle_t ba = connect(b, ca);
    gni_post_descriptor_t *done = nullptr;
    gni_cq_entry_t e = 0;

    // Bad arguments.
    gni_cq_handle_t cq = nullptr;
    check(GNI_CqCreate(a.nic, 0, 0, GNI_CQ_NOBLOCK, nullptr, nullptr, &cq) == GNI_RC_INVALID_PARAM,
          "GNI_CqCreate of 0 entries: INVALID_PARAM");
    check(GNI_PostFma(ab, nullptr) == GNI_RC_INVALID_PARAM, "GNI_PostFma without a descriptor: INVALID_PARAM");
    gni_post_descriptor_t fput = descriptor(GNI_POST_FMA_PUT, a.at(0), a.buf_h, b.at(0), b.buf_h, 64);
    check(GNI_PostFma(nullptr, &fput) == GNI_RC_INVALID_PARAM, "GNI_PostFma without an endpoint: INVALID_PARAM");
    check(GNI_PostRdma(ab, &fput) == GNI_RC_INVALID_PARAM, "GNI_PostRdma of an FMA type: INVALID_PARAM");
    gni_mem_handle_t h{};
    check(GNI_MemRegister(a.nic, a.at(0), 0, nullptr, 0, 0, &h) == GNI_RC_INVALID_PARAM,
          "GNI_MemRegister of 0 bytes: INVALID_PARAM");
    check(GNI_EpBind(nullptr, 0, 0) == GNI_RC_INVALID_PARAM, "GNI_EpBind without an endpoint: INVALID_PARAM");
    check(GNI_SmsgGetNextWTag(ba, nullptr, nullptr) == GNI_RC_INVALID_PARAM,
          "GNI_SmsgGetNextWTag without outputs: INVALID_PARAM");
    gni_ep_handle_t bare = connect(a, cb, false);
    check(send(bare, "x", 1) == GNI_RC_INVALID_STATE, "GNI_SmsgSendWTag before GNI_SmsgInit: INVALID_STATE");
    gni_post_descriptor_t amo = descriptor(GNI_POST_AMO, a.at(0), a.buf_h, b.at(4), b.buf_h, 8);
    amo.amo_cmd = GNI_FMA_ATOMIC_FADD;
    check(GNI_PostFma(ab, &amo) == GNI_RC_ALIGNMENT_ERROR, "an atomic at an address not 8-byte aligned: ALIGNMENT_ERROR");
    gni_post_descriptor_t uget = descriptor(GNI_POST_RDMA_GET, a.at(0), a.buf_h, b.at(2), b.buf_h, 64);
    check(GNI_PostRdma(ab, &uget) == GNI_RC_ALIGNMENT_ERROR, "a BTE get not 4-byte aligned: ALIGNMENT_ERROR");
    check(GNI_CqWaitEvent(a.cq, 20, &e) == GNI_RC_TIMEOUT, "GNI_CqWaitEvent on an empty CQ: TIMEOUT");

    // Registration on both sides of every transfer.
    std::vector<std::uint64_t> loose(64, 0x1111);
    gni_post_descriptor_t d = descriptor(GNI_POST_FMA_PUT, reinterpret_cast<std::uint64_t>(loose.data()), a.buf_h,
                                         b.at(0), b.buf_h, 64);
    b.buf[0] = 0;
    check(GNI_PostFma(ab, &d) == GNI_RC_INVALID_PARAM && b.buf[0] == 0,
          "FMA put from an unregistered local buffer: INVALID_PARAM, nothing moved");
    gni_post_descriptor_t r = descriptor(GNI_POST_RDMA_PUT, a.at(0), gni_mem_handle_t{}, b.at(0), b.buf_h, 64);
    check(GNI_PostRdma(ab, &r) == GNI_RC_INVALID_PARAM, "BTE put with no local handle: INVALID_PARAM");
    a.buf[0] = 0x2222;
    d = descriptor(GNI_POST_FMA_PUT, a.at(0), a.buf_h, reinterpret_cast<std::uint64_t>(loose.data()), b.buf_h, 64);
    gni_return_t rc = post_and_wait(a, ab, d, false);
    check(rc == GNI_RC_TRANSACTION_ERROR && loose[0] == 0x1111,
          "FMA put to an unregistered remote buffer: TRANSACTION_ERROR, nothing moved", rc_name(rc));
    d = descriptor(GNI_POST_FMA_GET, a.at(0), a.buf_h, b.at(0), gni_mem_handle_t{}, 64);
    rc = post_and_wait(a, ab, d, false);
    check(rc == GNI_RC_TRANSACTION_ERROR && a.buf[0] == 0x2222, "FMA get with no remote handle: TRANSACTION_ERROR",
          rc_name(rc));
    d = descriptor(GNI_POST_FMA_PUT, a.at(0), a.buf_h, b.at(65536 - 32), b.buf_h, 64);
    rc = post_and_wait(a, ab, d, false);
    check(rc == GNI_RC_TRANSACTION_ERROR, "FMA put past the end of the remote registration: TRANSACTION_ERROR",
          rc_name(rc));
    r = descriptor(GNI_POST_RDMA_PUT, a.at(0), a.buf_h, reinterpret_cast<std::uint64_t>(loose.data()), b.buf_h, 64);
    rc = post_and_wait(a, ab, r, true);
    check(rc == GNI_RC_TRANSACTION_ERROR && loose[0] == 0x1111, "BTE put to an unregistered remote buffer: "
          "TRANSACTION_ERROR", rc_name(rc));
    {
        std::vector<std::uint64_t> gone(64, 0x3333);
        gni_mem_handle_t stale{};
        must(GNI_MemRegister(b.nic, reinterpret_cast<std::uint64_t>(gone.data()), 512, nullptr, 0, 0, &stale),
             "GNI_MemRegister");
        must(GNI_MemDeregister(b.nic, &stale), "GNI_MemDeregister");
        d = descriptor(GNI_POST_FMA_PUT, a.at(0), a.buf_h, reinterpret_cast<std::uint64_t>(gone.data()), stale, 64);
        rc = post_and_wait(a, ab, d, false);
        check(rc == GNI_RC_TRANSACTION_ERROR && gone[0] == 0x3333, "FMA put with a deregistered handle: "
              "TRANSACTION_ERROR", rc_name(rc));
        gni_mem_handle_t ro{};
        must(GNI_MemRegister(b.nic, reinterpret_cast<std::uint64_t>(gone.data()), 512, nullptr, GNI_MEM_READ_ONLY, 0,
                             &ro), "GNI_MemRegister (read-only)");
        d = descriptor(GNI_POST_FMA_PUT, a.at(0), a.buf_h, reinterpret_cast<std::uint64_t>(gone.data()), ro, 64);
        rc = post_and_wait(a, ab, d, false);
        check(rc == GNI_RC_TRANSACTION_ERROR && gone[0] == 0x3333, "FMA put into read-only memory: TRANSACTION_ERROR",
              rc_name(rc));
        GNI_MemDeregister(b.nic, &ro);
    }

    // The MDD limit: registrations past it fail until one is released.
    {
        const char *env = std::getenv("SOFTNIC_GNI_MDD_LIMIT");
        const int limit = env ? std::atoi(env) : 1024;
        Nic c;
        c.inst = 102;
        must(GNI_CdmCreate(102, job.ptag, job.cookie, 0, &c.cdm), "GNI_CdmCreate");
        must(GNI_CdmAttach(c.cdm, 0, &c.addr, &c.nic), "GNI_CdmAttach");
        std::vector<gni_mem_handle_t> handles;
        gni_return_t last = GNI_RC_SUCCESS;
        for (int i = 0; i <= limit; ++i) {
            gni_mem_handle_t one{};
            last = GNI_MemRegister(c.nic, c.at(8 * (i % 1024)), 8, nullptr, 0, 0, &one);
            if (last != GNI_RC_SUCCESS) break;
            handles.push_back(one);
        }
        check(static_cast<int>(handles.size()) == limit && last == GNI_RC_ERROR_RESOURCE,
              "registration past SOFTNIC_GNI_MDD_LIMIT: ERROR_RESOURCE",
              std::to_string(handles.size()) + " registered, then " + rc_name(last));
        gni_mem_handle_t again{};
        check(GNI_MemDeregister(c.nic, &handles.back()) == GNI_RC_SUCCESS &&
                  GNI_MemRegister(c.nic, c.at(0), 8, nullptr, 0, 0, &again) == GNI_RC_SUCCESS,
              "a deregistration frees one MDD");
        GNI_CdmDestroy(c.cdm);
    }

    // SMSG: a mailbox of `credits` slots per peer, each message refused
    // above msg_maxsize.
    {
        int sent = 0;
        while (sent < credits + 2 && send(ab, "credit " + std::to_string(sent), 200 + sent) == GNI_RC_SUCCESS) ++sent;
        const gni_return_t full = send(ab, "one too many", 300);
        check(sent == credits && full == GNI_RC_NOT_DONE, "a send past mbox_maxcredit unreleased messages: NOT_DONE",
              std::to_string(sent) + " sent, then " + rc_name(full));
        void *header = nullptr;
        std::uint8_t tag = 9;
        check(GNI_SmsgGetNextWTag(ba, &header, &tag) == GNI_RC_NO_MATCH, "GNI_SmsgGetNextWTag of another tag: NO_MATCH");
        tag = GNI_SMSG_ANY_TAG;
        const gni_return_t g1 = GNI_SmsgGetNextWTag(ba, &header, &tag);
        const gni_return_t still = send(ab, "after get", 301);
        check(g1 == GNI_RC_SUCCESS && std::strcmp(static_cast<char *>(header), "credit 0") == 0 &&
                  still == GNI_RC_NOT_DONE,
              "a message read but not released keeps its credit");
        check(GNI_SmsgRelease(ba) == GNI_RC_SUCCESS && send(ab, "after release", 302) == GNI_RC_SUCCESS,
              "GNI_SmsgRelease returns one credit: the send succeeds");
        bool order = true;
        for (int i = 1; i < credits; ++i) order = order && expect(ba) == "credit " + std::to_string(i);
        order = order && expect(ba) == "after release";
        check(order, "messages stay in order across the full mailbox");
        std::vector<char> big(max_message + 1, 'x');
        big.back() = 0;
        const gni_return_t too_big = GNI_SmsgSendWTag(ab, big.data(), static_cast<std::uint32_t>(big.size()), nullptr,
                                                      0, 400, 0);
        const gni_return_t split = GNI_SmsgSendWTag(ab, big.data(), 64, big.data(), max_message - 63, 401, 0);
        check(too_big == GNI_RC_INVALID_PARAM && split == GNI_RC_INVALID_PARAM,
              "a message above msg_maxsize (header plus data): INVALID_PARAM", rc_name(too_big) + ", " + rc_name(split));
        std::uint8_t t = GNI_SMSG_ANY_TAG;
        check(GNI_SmsgGetNextWTag(ba, &header, &t) == GNI_RC_NOT_DONE, "a refused message is not delivered");
        check(GNI_SmsgRelease(ba) == GNI_RC_INVALID_STATE, "GNI_SmsgRelease with nothing read: INVALID_STATE");
        while (GNI_CqGetEvent(a.cq, &e) != GNI_RC_NOT_DONE) {
        }
        while (GNI_CqGetEvent(b.rx, &e) != GNI_RC_NOT_DONE) {
        }
    }

    // FMA completes at post; the BTE after the post has returned.
    {
        b.buf[100] = 0;
        a.buf[0] = 0x4444;
        d = descriptor(GNI_POST_FMA_PUT, a.at(0), a.buf_h, b.at(800), b.buf_h, 8);
        const gni_return_t p = GNI_PostFma(ab, &d);
        const std::uint64_t there = b.buf[100];
        const gni_return_t now = GNI_CqGetEvent(a.cq, &e);
        check(p == GNI_RC_SUCCESS && there == 0x4444 && now == GNI_RC_SUCCESS &&
                  GNI_GetCompleted(a.cq, e, &done) == GNI_RC_SUCCESS && done == &d && done->post_id == d.post_id,
              "FMA: the bytes and the completion are there when GNI_PostFma returns");
        b.buf[101] = 0;
        a.buf[1] = 0x5555;
        r = descriptor(GNI_POST_RDMA_PUT, a.at(8), a.buf_h, b.at(808), b.buf_h, 8);
        const gni_return_t pr = GNI_PostRdma(ab, &r);
        const std::uint64_t early = __atomic_load_n(&b.buf[101], __ATOMIC_ACQUIRE);
        const gni_return_t none = GNI_CqGetEvent(a.cq, &e);
        const gni_return_t later = GNI_CqWaitEvent(a.cq, 5000, &e);
        check(pr == GNI_RC_SUCCESS && none == GNI_RC_NOT_DONE && early == 0 && later == GNI_RC_SUCCESS &&
                  b.buf[101] == 0x5555 && GNI_GetCompleted(a.cq, e, &done) == GNI_RC_SUCCESS && done == &r,
              "BTE: the completion arrives after GNI_PostRdma returned",
              rc_name(none) + " at first, then " + rc_name(later));
        gni_post_descriptor_t silent = descriptor(GNI_POST_FMA_PUT, a.at(0), a.buf_h, b.at(800), b.buf_h, 8);
        silent.cq_mode = GNI_CQMODE_REMOTE_EVENT;
        must(GNI_PostFma(ab, &silent), "GNI_PostFma (remote event)");
        check(GNI_CqGetEvent(a.cq, &e) == GNI_RC_NOT_DONE && GNI_CqGetEvent(b.rx, &e) == GNI_RC_SUCCESS &&
                  GNI_CQ_REMOTE(e) && GNI_CQ_GET_INST_ID(e) == a.inst,
              "a remote event lands on the target registration's CQ with the poster's instance id");
    }

    // CQ overrun: more events than entry_count.
    {
        Nic c;
        open_nic(c, 103, 4);
        gni_ep_handle_t cb2 = connect(c, cb, false);
        for (int i = 0; i < 6; ++i) {
            d = descriptor(GNI_POST_FMA_PUT, c.at(0), c.buf_h, b.at(0), b.buf_h, 8);
            must(GNI_PostFma(cb2, &d), "GNI_PostFma");
        }
        const gni_return_t first = GNI_CqGetEvent(c.cq, &e);
        check(first == GNI_RC_ERROR_RESOURCE && GNI_CQ_OVERRUN(e),
              "six events into a CQ of four entries: ERROR_RESOURCE with GNI_CQ_OVERRUN", rc_name(first));
        int rest = 0;
        while (GNI_CqGetEvent(c.cq, &e) == GNI_RC_SUCCESS) ++rest;
        check(rest == 3 && !GNI_CQ_OVERRUN(e), "the CQ keeps its four events, overrun reported once",
              std::to_string(rest + 1) + " events");
        GNI_EpDestroy(cb2);
        GNI_CdmDestroy(c.cdm);
    }
    datagram_limits(a, b);
    GNI_EpDestroy(bare);
    GNI_EpDestroy(ab);
    GNI_EpDestroy(ba);
    GNI_CdmDestroy(a.cdm);
    GNI_CdmDestroy(b.cdm);
}

// `rules attach`: one domain attached, its NIC address printed.
int attach_only() {
    gni_cdm_handle_t cdm = nullptr;
    gni_nic_handle_t nic = nullptr;
    std::uint32_t addr = 0;
    must(GNI_CdmCreate(7, job.ptag, job.cookie, 0, &cdm), "GNI_CdmCreate");
    const gni_return_t rc = GNI_CdmAttach(cdm, 0, &addr, &nic);
    std::printf("GNI_CdmAttach: %s, NIC address %u\n", rc_name(rc).c_str(), rc == GNI_RC_SUCCESS ? addr : 0u);
    GNI_CdmDestroy(cdm);
    return rc == GNI_RC_SUCCESS ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    // The job's credentials come from ALPS (here softnic-run); without them
    // there is no NIC to run on.  With SOFTNIC_HOSTS a process on no host
    // has no address.
    const char *ptag = std::getenv("PMI_GNI_PTAG");
    const char *cookie = std::getenv("PMI_GNI_COOKIE");
    if (!ptag || !cookie || !std::getenv("PMI_GNI_DEV_ID") ||
        (!std::getenv("PMI_GNI_LOC_ADDR") && !std::getenv("SOFTNIC_HOSTS"))) {
        std::printf("FAIL: PMI_GNI_PTAG, PMI_GNI_COOKIE, PMI_GNI_LOC_ADDR or PMI_GNI_DEV_ID not set "
                    "(run under softnic-run)\n");
        return 1;
    }
    job.ptag = static_cast<std::uint8_t>(std::strtoul(ptag, nullptr, 0));
    job.cookie = static_cast<std::uint32_t>(std::strtoul(cookie, nullptr, 0));
    if (argc == 2 && std::strcmp(argv[1], "attach") == 0) return attach_only();
    // A BTE transfer waits this long, so the rule that its completion
    // comes after the post cannot pass by luck.
    setenv("SOFTNIC_GNI_BTE_DELAY_US", "100000", 1);
    if (argc == 3 && (std::strcmp(argv[1], "A") == 0 || std::strcmp(argv[1], "B") == 0)) {
        const bool a = std::strcmp(argv[1], "A") == 0;
        Channel c(argv[2], a ? "a" : "b", a ? "b" : "a");
        if (!a) return run_b(c);
        run_a(c, true);
        std::printf("%d rule(s) broken\n", failures);
        return failures ? 1 : 0;
    }
    if (argc != 1) {
        std::printf("usage: rules [attach | A DIR | B DIR]\n");
        return 2;
    }

    int ab[2], ba[2];
    if (pipe(ab) || pipe(ba)) return 1;
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        Channel c(ab[0], ba[1]);
        _exit(run_b(c));
    }
    Channel c(ba[0], ab[1]);
    run_a(c, false);
    int status = 0;
    waitpid(child, &status, 0);
    role = "";
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process B's rules hold");
    run_limits();
    std::printf("%d rule(s) broken\n", failures);
    return failures ? 1 : 0;
}
