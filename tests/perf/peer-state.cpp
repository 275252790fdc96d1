// tests/perf/peer-state.cpp - what a rank holds for peers it never talks
// to.  For 10^3 .. 10^6 virtual peers it builds, in this one process, the
// per-peer tables each layer makes at start-up, with the layers' own types
// (the credit engine itself; each conduit's tables of every rank and its
// PeerTables of state made at first touch, as the conduit declares them:
// udp, ofi, ibv, portals, lapi, gni, those built), measures the heap they take (mallinfo2) before and after
// touching 8 peers, and times a first touch.  Prints a table and a CSV:
// bytes per untouched peer by layer, and per conduit with the core's own
// tables (segment bases and sizes, the host of each rank, the AM route),
// against the target of 64 bytes.  tests/perf/README.md.
#include "sluice_config.h"

#include "conduits/common/liveness.hpp"
#include "conduits/common/peer_table.hpp"
#include "conduits/transport.hpp"
#include "conduits/udp/udp_transport.hpp"
#include "credit/credit.hpp"
#ifdef SLUICE_CONDUIT_OFI
#include "conduits/ofi/ofi_transport.hpp"
#endif
#ifdef SLUICE_CONDUIT_IBV
#include "conduits/ibv/ibv_transport.hpp"
#endif
#ifdef SLUICE_CONDUIT_PORTALS
#include "conduits/portals/portals_transport.hpp"
#endif
#ifdef SLUICE_CONDUIT_LAPI
#include "conduits/lapi/lapi_transport.hpp"
#endif
#ifdef SLUICE_CONDUIT_GNI
#include "conduits/gni/gni_transport.hpp"
#endif

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

using sluice::conduit::Rank;
using sluice::conduit::common::PeerLife;
using sluice::conduit::common::PeerTable;

constexpr unsigned touches = 8;
constexpr double target_bytes = 64;

std::size_t heap() { return mallinfo2().uordblks + mallinfo2().hblkhd; }

double now_ns() {
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// One layer's tables for n peers: made by `make` (returns an owner whose
// destruction frees them); `touch(r)` gives peer r state.
struct Layer {
    const char *name;
    const char *note;
    std::function<std::shared_ptr<void>(Rank n)> make;
    std::function<void(void *, Rank r)> touch;
};

struct Figures {
    double untouched = 0;   // bytes per peer, none touched
    double per_touch = 0;   // bytes per touched peer, beyond that
    double touch_ns = 0;    // one first touch
};

Figures measure(const Layer &l, Rank n) {
    Figures f;
    const std::size_t before = heap();
    std::shared_ptr<void> t = l.make(n);
    const std::size_t made = heap();
    double ns = 0;
    for (unsigned i = 0; i < touches; ++i) {
        const Rank r = static_cast<Rank>((static_cast<std::uint64_t>(i) * 7919 + 1) % n);
        const double t0 = now_ns();
        l.touch(t.get(), r);
        ns += now_ns() - t0;
    }
    const std::size_t touched = heap();
    f.untouched = static_cast<double>(made - before) / n;
    f.per_touch = static_cast<double>(touched - made) / touches;
    f.touch_ns = ns / touches;
    return f;
}

// The credit engine, as the AM layer makes it for a job of n ranks.
struct Credit {
    sluice::credit::Engine engine;
    explicit Credit(Rank n) : engine(sluice::credit::Config::defaults(n, 0)) {}
};

// The core's tables of every peer (src/conduits/transport.hpp: segment
// bases and sizes, the registered flag; Setup::host_of; the AM route).
struct Core {
    std::vector<std::uint64_t> base, size;
    std::vector<bool> unregistered;
    std::vector<std::uint32_t> host_of;
    std::vector<void *> route;
    explicit Core(Rank n) : base(n), size(n), unregistered(n), host_of(n), route(n) {}
};

namespace udp = sluice::conduit::udp::detail;
struct Udp {
    std::vector<udp::PeerAddress> addresses;
    PeerTable<udp::Peer> peers;
    sluice::conduit::common::reliable::Config protocol;
    explicit Udp(Rank n) : addresses(n) { peers.reset(n); }
    void touch(Rank r) {
        auto p = std::make_unique<udp::Peer>();
        p->tx = sluice::conduit::common::reliable::Sender(protocol);
        p->rx = sluice::conduit::common::reliable::Receiver(protocol);
        peers.insert(r, std::move(p));
    }
};

#ifdef SLUICE_CONDUIT_OFI
namespace ofi = sluice::conduit::ofi::detail;
struct Ofi {
    std::vector<fi_addr_t> addr;
    std::vector<std::uint64_t> peer_key;
    PeerTable<ofi::Peer> peers;
    PeerTable<PeerLife> life;
    explicit Ofi(Rank n) : addr(n), peer_key(n) {
        peers.reset(n);
        life.reset(n);
    }
    void touch(Rank r) {
        peers.insert(r, std::make_unique<ofi::Peer>());
        life.insert(r, std::make_unique<PeerLife>());
    }
};
#endif

#ifdef SLUICE_CONDUIT_IBV
namespace ibv = sluice::conduit::ibv::detail;
struct Ibv {
    std::vector<ibv::PeerHead> heads;
    std::unique_ptr<std::atomic<bool>[]> connected;
    PeerTable<ibv::Peer> peers;
    PeerTable<PeerLife> life;
    explicit Ibv(Rank n) : heads(n), connected(new std::atomic<bool>[n]()) {
        peers.reset(n);
        life.reset(n);
    }
    void touch(Rank r) {
        peers.insert(r, std::make_unique<ibv::Peer>());
        life.insert(r, std::make_unique<PeerLife>());
    }
};
#endif

#ifdef SLUICE_CONDUIT_PORTALS
namespace portals = sluice::conduit::portals::detail;
struct Portals {
    std::vector<ptl_process_t> id, physical;
    PeerTable<portals::PeerOrder> order;
    PeerTable<PeerLife> life;
    explicit Portals(Rank n) : id(n), physical(n) {
        order.reset(n);
        life.reset(n);
    }
    void touch(Rank r) {
        order.at(r);
        life.insert(r, std::make_unique<PeerLife>());
    }
};
#endif

#ifdef SLUICE_CONDUIT_LAPI
namespace lapi = sluice::conduit::lapi::detail;
struct Lapi {
    std::vector<std::uint8_t> heard_flag, ping_flag;
    PeerTable<sluice::conduit::common::PeerOrder<lapi::Token *>> send_order, receive_order;
    PeerTable<PeerLife> life;
    explicit Lapi(Rank n) : heard_flag(n), ping_flag(n) {
        send_order.reset(n);
        receive_order.reset(n);
        life.reset(n);
    }
    void touch(Rank r) {
        send_order.at(r);
        receive_order.at(r);
        life.insert(r, std::make_unique<PeerLife>());
    }
};
#endif

#ifdef SLUICE_CONDUIT_GNI
// Not counted: the SMSG mailbox (13 KiB with the defaults, in a chunk
// mapped and registered a few at a time) a touched peer takes.
struct Gni {
    PeerTable<sluice::conduit::gni::detail::GniPeer> peers;
    std::vector<gni_mem_handle_t> peer_segment;
    std::vector<sluice::conduit::gni::detail::Channel> channels;
    PeerTable<PeerLife> life;
    explicit Gni(Rank n) : peer_segment(n) {
        peers.reset(n);
        life.reset(n);
    }
    void touch(Rank r) {
        peers.insert(r, std::make_unique<sluice::conduit::gni::detail::GniPeer>());
        channels.emplace_back();
        life.insert(r, std::make_unique<PeerLife>());
    }
};
#endif

#ifdef SLUICE_PEER_STATE_MPI
// The mpi conduit (built into libsluice-mpi, not libsluice): its rank maps
// both ways, as src/conduits/mpi/mpi_transport.hpp declares them, and its
// liveness.  Its posted receives are at most 1024 whatever the job's size.
struct Mpi {
    std::vector<int> mpi_rank;
    std::vector<Rank> sluice_rank;
    PeerTable<PeerLife> life;
    explicit Mpi(Rank n) : mpi_rank(n), sluice_rank(n) { life.reset(n); }
    void touch(Rank r) { life.insert(r, std::make_unique<PeerLife>()); }
};
#endif

template <class T> std::shared_ptr<void> owner(Rank n) { return std::make_shared<T>(n); }

} // namespace

int main(int argc, char **argv) {
    // mallinfo2 counts blocks in malloc's per-thread cache as in use: a
    // block freed there and taken again would not show.  Without the cache
    // every allocation and free is counted.
    if (!std::getenv("SLUICE_PEER_STATE_NO_TCACHE")) {
        ::setenv("SLUICE_PEER_STATE_NO_TCACHE", "1", 1);
        ::setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
        ::execv("/proc/self/exe", argv);
        std::perror("peer-state: execv /proc/self/exe");
        return 2;
    }
    Rank largest = 1'000'000;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--max=", 6) == 0) {
            largest = static_cast<Rank>(std::strtoul(argv[i] + 6, nullptr, 10));
        } else {
            std::fprintf(stderr, "usage: %s [--max=PEERS]  (default 1000000, at least 1000)\n", argv[0]);
            return 2;
        }
    }
    if (largest < 1000) {
        std::fprintf(stderr, "%s: --max must be at least 1000\n", argv[0]);
        return 2;
    }
    std::vector<Layer> layers = {
        {"credit", "pages of 16 peers made at first touch",
         owner<Credit>, [](void *t, Rank r) {
             std::uint8_t byte = 0;
             (void)static_cast<Credit *>(t)->engine.request_begin(r, 1, byte);
         }},
        {"core", "segment base and size, host, AM route of every rank", owner<Core>, [](void *, Rank) {}},
        {"udp", "address of every rank; windows and queues at first touch",
         owner<Udp>, [](void *t, Rank r) { static_cast<Udp *>(t)->touch(r); }},
#ifdef SLUICE_CONDUIT_OFI
        {"ofi", "fi_addr, key of every rank; order, liveness at first touch", owner<Ofi>,
         [](void *t, Rank r) { static_cast<Ofi *>(t)->touch(r); }},
#endif
#ifdef SLUICE_CONDUIT_IBV
        {"ibv", "connection head, connected flag of every rank; queue pairs, liveness at first touch", owner<Ibv>,
         [](void *t, Rank r) { static_cast<Ibv *>(t)->touch(r); }},
#endif
#ifdef SLUICE_CONDUIT_PORTALS
        {"portals", "logical and physical id of every rank; order, liveness at first touch", owner<Portals>,
         [](void *t, Rank r) { static_cast<Portals *>(t)->touch(r); }},
#endif
#ifdef SLUICE_CONDUIT_LAPI
        {"lapi", "heard and ping flags of every rank; both orders, liveness at first touch", owner<Lapi>,
         [](void *t, Rank r) { static_cast<Lapi *>(t)->touch(r); }},
#endif
#ifdef SLUICE_PEER_STATE_MPI
        {"mpi", "its MPI rank, and the Sluice rank of each MPI rank; liveness at first touch", owner<Mpi>,
         [](void *t, Rank r) { static_cast<Mpi *>(t)->touch(r); }},
#endif
#ifdef SLUICE_CONDUIT_GNI
        {"gni", "segment handle of every rank; endpoint, channel, liveness at first touch (a mailbox: mapped)", owner<Gni>,
         [](void *t, Rank r) { static_cast<Gni *>(t)->touch(r); }},
#endif
    };
    std::printf("Per-peer state at start-up (bytes per peer never touched; %u peers then touched)\n\n", touches);
    std::printf("%-8s %10s %12s %12s %12s  %s\n", "layer", "peers", "B/untouched", "B/touched", "touch ns", "what");
    std::string csv = "layer,peers,bytes_per_untouched,bytes_per_touched,first_touch_ns\n";
    std::vector<std::vector<Figures>> all(layers.size());
    std::vector<Rank> sizes;
    for (Rank n = 1000; n <= largest; n *= 10) sizes.push_back(n);
    for (std::size_t i = 0; i < layers.size(); ++i)
        for (Rank n : sizes) {
            const Figures f = measure(layers[i], n);
            all[i].push_back(f);
            std::printf("%-8s %10u %12.1f %12.0f %12.0f  %s\n", layers[i].name, n, f.untouched, f.per_touch, f.touch_ns,
                        n == sizes.front() ? layers[i].note : "");
            char line[160];
            std::snprintf(line, sizeof line, "%s,%u,%.2f,%.0f,%.0f\n", layers[i].name, n, f.untouched, f.per_touch, f.touch_ns);
            csv += line;
        }
    // A conduit's rank holds the credit engine, the core's tables and its own.
    std::printf("\nPer conduit at %u peers (credit + core + conduit), target <= %.0f bytes per untouched peer\n\n",
                sizes.back(), target_bytes);
    std::printf("%-8s %12s %8s\n", "conduit", "B/untouched", "target");
    csv += "\nconduit,peers,bytes_per_untouched,target,met\n";
    bool all_met = true;
    for (std::size_t i = 2; i < layers.size(); ++i) {
        const double b = all[0].back().untouched + all[1].back().untouched + all[i].back().untouched;
        const bool met = b <= target_bytes;
        all_met &= met;
        std::printf("%-8s %12.1f %8s\n", layers[i].name, b, met ? "met" : "MISSED");
        char line[160];
        std::snprintf(line, sizeof line, "%s,%u,%.2f,%.0f,%s\n", layers[i].name, sizes.back(), b, target_bytes,
                      met ? "yes" : "no");
        csv += line;
    }
    std::printf("\nCSV\n%s", csv.c_str());
    (void)all_met;
    return 0;
}
