// tests/conduit/conduit_world.cpp - the conformance suite's world: forked
// ranks and a socketpair bootstrap, or (MPI-launched) this process as one
// rank over the mpi bootstrap; init and segment attach done the way core
// does them (src/core/runtime.cpp), with no core.
#include "conduit_world.hpp"
#include "conduits/registry.hpp"
#include "tests/harness.hpp"
#include "conduits/firehose/monitor.hpp"
#include "conduits/firehose/registrar.hpp"
#include "conduits/knobs.hpp"
#include "spawners/bootstrap.hpp"
#include "sluice_config.h"
#ifdef SLUICE_CONDUIT_TEMPLATE_TESTS
#include "conduits/template/template.hpp"
#endif

#include "base/knobs.hpp"
#include "base/status.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>
#include <thread>

#define SLUICE_CONDUIT_IN_LIBRARY(name)
#define SLUICE_CONDUIT_IN_TESTS(name) \
    namespace sluice::conduit::registered { const TransportInfo &conduit_##name(); }
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_IN_LIBRARY
#undef SLUICE_CONDUIT_IN_TESTS

namespace conduit_test {
namespace {

using namespace sluice;

constexpr std::size_t segment_bytes = 4u << 20;

// Two ranks over one socketpair (or one rank alone).  Start-up only.
class PairBootstrap final : public spawner::Bootstrap {
public:
    PairBootstrap(std::uint32_t rank, std::uint32_t size, int fd) : rank_(rank), size_(size), fd_(fd) {}
    const char *name() const override { return "conduit-test"; }
    std::uint32_t rank() const override { return rank_; }
    std::uint32_t size() const override { return size_; }
    bool allgather(const void *in, std::size_t len, std::vector<std::string> &out) override {
        out.assign(size_, std::string());
        out[rank_].assign(static_cast<const char *>(in), len);
        if (size_ == 1) return true;
        const auto n = static_cast<std::uint32_t>(len);
        if (!write_all(&n, 4) || !write_all(in, len)) return false;
        std::uint32_t m = 0;
        if (!read_all(&m, 4)) return false;
        out[1 - rank_].resize(m);
        return read_all(out[1 - rank_].data(), m);
    }
    [[noreturn]] void abort(int code) override { ::_exit(code); }

private:
    bool write_all(const void *p, std::size_t n) {
        for (const char *c = static_cast<const char *>(p); n;) {
            ssize_t w = ::write(fd_, c, n);
            if (w <= 0) return false;
            c += w, n -= static_cast<std::size_t>(w);
        }
        return true;
    }
    bool read_all(void *p, std::size_t n) {
        for (char *c = static_cast<char *>(p); n;) {
            ssize_t r = ::read(fd_, c, n);
            if (r <= 0) return false;
            c += r, n -= static_cast<std::size_t>(r);
        }
        return true;
    }
    std::uint32_t rank_, size_;
    int fd_;
};

void record(World &w, const conduit::AmHeader &h, const std::uint32_t *args, const void *payload) {
    Delivered d;
    d.header = h;
    d.args.assign(args, args + h.nargs);
    if (h.category != conduit::AmCategory::short_ && h.payload_length)
        d.payload.assign(static_cast<const char *>(payload), h.payload_length);
    d.nested = w.in_deliver > 0;
    ++w.in_deliver;
    w.delivered.push_back(d);
    if (w.on_deliver) w.on_deliver(w, w.delivered.back());
    --w.in_deliver;
}

void deliver(void *context, const conduit::AmHeader &h, const std::uint32_t *args, void *payload) {
    record(*static_cast<World *>(context), h, args, payload);
}

void deliver_short(void *context, Rank source, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                   const std::uint32_t *args, unsigned nargs) {
    conduit::AmHeader h;
    h.handler = handler;
    h.flags = flags;
    h.credit = credit;
    h.source = source;
    h.nargs = static_cast<std::uint8_t>(nargs);
    record(*static_cast<World *>(context), h, args, nullptr);
}

// Init and segment attach for one rank over `boot`; "" or what failed.
std::string world_open(const Conduit &c, World &w, std::unique_ptr<Transport> &t,
                       std::unique_ptr<rma::firehose::Registrar> &firehose, spawner::Bootstrap &boot,
                       const std::string &job) {
    const Rank rank = boot.rank(), size = boot.size();
    w.rank = rank;
    w.size = size;
    w.peer = size == 2 ? 1 - rank : rank;
    w.bootstrap = &boot;
    // As the core does: firehose's memory hooks go in before the conduit
    // starts threads of its own (they rewrite libc's code).
    if (base::knob_bool(base::Knob::FIREHOSE_MEMHOOKS)) (void)rma::firehose::monitor::install();
    t = c.create();
    w.t = t.get();
    conduit::TransportSetup s;
    s.rank = rank;
    s.size = size;
    s.host_of = size == 1 ? std::vector<std::uint32_t>{0}
                          : (c.network ? std::vector<std::uint32_t>{0, 1} : std::vector<std::uint32_t>{0, 0});
    if (size == 1) s.peers = {0};
    else s.peers = c.network ? std::vector<Rank>{w.peer} : std::vector<Rank>{0, 1};
    s.bootstrap = &boot;
    s.deliver = deliver;
    s.deliver_short = deliver_short;
    s.deliver_context = &w;
    s.job_id = job;
    if (t->init(s) != Status::ok) return "init failed: " + std::string(base::last_error());
    if (t->capabilities().needs_registration) {
        if (rma::firehose::Registrar::create(*t, rma::firehose::config_from_knobs(), firehose) != Status::ok)
            return "firehose failed: " + std::string(base::last_error());
        t->local_registrar_set(firehose.get());
        w.firehose = firehose.get();
    }
    std::string key;
    if (t->segment_create(segment_bytes, &w.segment, key) != Status::ok) return "segment create failed";
    w.segment_size = segment_bytes;
    if (t->segment_register(w.segment, segment_bytes, w.rkey) != Status::ok) return "segment register failed";
    std::string rec(16, '\0');
    const std::uint64_t b = reinterpret_cast<std::uint64_t>(w.segment), n = segment_bytes;
    std::memcpy(rec.data(), &b, 8);
    std::memcpy(rec.data() + 8, &n, 8);
    const auto len = static_cast<std::uint32_t>(key.size());
    rec.append(reinterpret_cast<const char *>(&len), 4);
    rec += key;
    rec += w.rkey;
    std::vector<std::string> all;
    if (!boot.allgather(rec.data(), rec.size(), all)) return "segment exchange failed";
    std::vector<conduit::SegmentRecord> records(size);
    for (Rank r = 0; r < size; ++r) {
        std::uint32_t kl = 0;
        std::memcpy(&records[r].base, all[r].data(), 8);
        std::memcpy(&records[r].size, all[r].data() + 8, 8);
        std::memcpy(&kl, all[r].data() + 16, 4);
        records[r].key = all[r].substr(20, kl);
        records[r].rkeys.emplace_back(t->name(), all[r].substr(20 + kl));
    }
    w.peer_segment = records[w.peer].base;
    if (t->segment_connect(records) != Status::ok) return "segment connect failed: " + std::string(base::last_error());
    if (!boot.barrier()) return "barrier failed";
    t->setup_done();
    return "";
}

// A rank whose world did not open says why before it ends.
void unopened(const spawner::Bootstrap &boot, const Conduit &c, const std::string &error) {
    std::fprintf(stderr, "rank %u of %s: %s\n", boot.rank(), c.name.c_str(), error.c_str());
    std::fflush(nullptr);
}

// One rank's world, the same in both modes: open it over `boot`, run
// `body`, leave together, fini.  "" or why the world did not open (then
// `body` did not run); the body's failures are GoogleTest's.
std::string world_run(const Conduit &c, spawner::Bootstrap &boot, const std::string &job,
                      const std::function<void(World &)> &body, std::string &skipped) {
    World w;
    std::unique_ptr<Transport> t;
    std::unique_ptr<rma::firehose::Registrar> firehose;  // goes before the transport
    // The waits a rank of a job makes: on a crowded host a spinning wait
    // yields once it has spun SLUICE_WAIT_SPIN (the transport's send
    // retries, the world's waits below).
    base::idle_spin_policy_set();
    if (std::string error = world_open(c, w, t, firehose, boot, job); !error.empty()) return error;
    body(w);
    // Both ranks leave together: a peer may still be polling for us.
    w.barrier();
    t->quiesce();
    w.barrier();
    t->fini();
    skipped = w.skipped;
    return "";
}

// Forks one child per rank; each opens its world and runs `body`.  Exit
// codes: 0 passed, 1 a test expectation failed, 3 the world did not open,
// 77 skipped (the reason on the pipe).
std::string fork_ranks(const Conduit &c, Rank size, const std::function<void(World &)> &body) {
    static int jobs = 0;
    const std::string job = "ct" + std::to_string(::getpid()) + "x" + std::to_string(jobs++);
    int sv[2] = {-1, -1};
    if (size == 2 && ::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return "socketpair failed";
    int why[2] = {-1, -1};  // a skipping rank's reason
    if (::pipe(why) != 0) return "pipe failed";
    std::vector<pid_t> pids;
    for (Rank r = 0; r < size; ++r) {
        std::fflush(nullptr);
        pid_t pid = ::fork();
        if (pid == 0) {
            ::alarm(static_cast<unsigned>(60 * sluice_test::time_scale()));
            if (size == 2) ::close(sv[1 - r]);
            ::close(why[0]);
            PairBootstrap boot(r, size, size == 2 ? sv[r] : -1);
            std::string skipped;
            if (std::string error = world_run(c, boot, job, body, skipped); !error.empty()) {
                unopened(boot, c, error);
                ::_exit(3);
            }
            std::fflush(nullptr);
            if (::testing::Test::HasFailure()) ::_exit(1);
            if (!skipped.empty()) {
                if (r == 0) (void)!::write(why[1], skipped.data(), skipped.size());
                ::_exit(77);
            }
            ::_exit(0);
        }
        pids.push_back(pid);
    }
    if (size == 2) ::close(sv[0]), ::close(sv[1]);
    ::close(why[1]);
    std::string result, reason;
    Rank skipped = 0;
    for (char buf[256]; const ssize_t n = ::read(why[0], buf, sizeof buf);) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        reason.append(buf, static_cast<std::size_t>(n));
    }
    ::close(why[0]);
    for (Rank r = 0; r < size; ++r) {
        int status = 0;
        ::waitpid(pids[r], &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77 && ++skipped) continue;
        result += "rank " + std::to_string(r) +
                  (WIFEXITED(status) ? " exited with " + std::to_string(WEXITSTATUS(status))
                                     : " was killed by signal " + std::to_string(WTERMSIG(status))) + "; ";
    }
    if (result.empty() && skipped == size) return skipped_mark + reason;
    if (result.empty() && skipped) return "some ranks skipped the test, others did not";
    return result;
}

// The MPI-launched mode (conduit_world.hpp): this process is one rank.
// The bootstrap starts once, before the registry is first read (loading
// libsluice-mpi registers the mpi conduit there), and MPI is finalized
// at exit.
struct Launched {
    std::unique_ptr<spawner::Bootstrap> boot;
    std::string error;  // why it did not start
    std::string job;    // rank 0's process id, for the transports' names
    int jobs = 0;
};

Launched *launched() {
    static Launched *const l = []() -> Launched * {
        if (!mpi_launched()) return nullptr;
        static Launched state;
        // World::barrier of two ranks runs the bootstrap's barrier (MPI) on
        // a thread while this one polls the conduit (MPI too).  Alone, the
        // level Sluice asks for by itself (Open MPI's pt2pt window, the one
        // it has for a single rank here, refuses MPI_THREAD_MULTIPLE).
        if (spawner::mpi_launcher_mark().size != 1) ::setenv("SLUICE_MPI_THREAD", "multiple", 0);
        // Otherwise what a job on the mpi conduit asks for.
        ::setenv("SLUICE_NETWORK", "mpi", 0);
        state.boot = spawner::select_bootstrap(state.error);
        if (!state.boot) return &state;
        state.job = "ct" + std::to_string(::getpid());
        if (!state.boot->broadcast(0, state.job)) state.error = "the bootstrap's broadcast failed";
        std::atexit([] { state.boot->fini(); });
        return &state;
    }();
    return l;
}

} // namespace

bool mpi_launched() {
    const char *spawner = std::getenv("SLUICE_SPAWNER");
    return spawner && std::string(spawner) == "mpi";
}

// 20 s, three times that for a subset (SLUICETEST_SUBSET=slow: the ofi
// providers that move a message in several times the others' time, and
// over whose loopback TCP a flood may wait on retransmission back-off;
// the sanitizer subsets), six for ThreadSanitizer.
std::chrono::steady_clock::time_point World::deadline() {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(20 * sluice_test::time_scale()));
}

bool World::wait_delivered(std::size_t n) {
    auto end = deadline();
    std::size_t seen = delivered.size();
    while (delivered.size() < n) {
        if (t->poll() == 0) base::idle();
        if (delivered.size() != seen) {
            seen = delivered.size();
            end = deadline();
            base::idle_reset();
        } else if (std::chrono::steady_clock::now() > end) {
            return false;
        }
    }
    return true;
}

bool World::wait_counter(const std::atomic<std::uint64_t> &c) {
    auto end = deadline();
    std::uint64_t seen = c.load(std::memory_order_acquire);
    while (seen != 0) {
        if (t->poll() == 0) base::idle();
        const std::uint64_t now = c.load(std::memory_order_acquire);
        if (now != seen) {
            seen = now;
            end = deadline();
            base::idle_reset();
        } else if (std::chrono::steady_clock::now() > end) {
            return false;
        }
    }
    return true;
}

// A bootstrap barrier that keeps the transport polled: the peer may need
// our acknowledgements (udp) to finish what it sends before it arrives.
bool World::barrier() {
    if (size == 1) return true;
    std::atomic<bool> done{false};
    bool ok = true;
    std::thread th([&] { ok = bootstrap->barrier(); done = true; });
    while (!done) t->poll();
    th.join();
    return ok;
}

std::string conduit_mode(const Conduit &c, std::string &why) {
    if (Launched *l = launched()) {
        // A failed start fails each test (run_world) instead of skipping it.
        if (!l->boot || l->boot->size() == 2) return "pair";
        if (l->boot->size() == 1) return "alone";
        why = "the MPI-launched mode runs at 1 or 2 ranks";
        return "";
    }
    static std::map<std::string, std::pair<std::string, std::string>> known;
    auto it = known.find(c.name);
    if (it == known.end()) {
        const auto nothing = [](World &) {};
        std::string mode, reason;
        if (c.alone) {
            if (std::string alone = fork_ranks(c, 1, nothing); alone.empty()) mode = "alone";
            else reason = "one rank alone does not start here (" + alone + ")";
        } else if (std::string pair = fork_ranks(c, 2, nothing); pair.empty()) {
            mode = "pair";
        } else if (std::string loop = fork_ranks(c, 1, nothing); loop.empty()) {
            mode = "loopback";
            std::printf("[ conduit  ] %s: two ranks do not start here (%s); testing it in loopback\n", c.name.c_str(),
                        pair.c_str());
        } else {
            reason = "neither two ranks (" + pair + ") nor loopback (" + loop + ") start here";
        }
        it = known.emplace(c.name, std::make_pair(mode, reason)).first;
    }
    why = it->second.second;
    return it->second.first;
}

std::string run_world(const Conduit &c, const std::function<void(World &)> &body) {
    std::string why;
    if (Launched *l = launched()) {
        if (!l->boot || !l->error.empty()) return "the mpi bootstrap did not start: " + l->error;
        if (!c.create) return "libsluice-mpi has no mpi conduit";
        if (conduit_mode(c, why).empty()) return why;
        std::string skipped;
        const std::string error = world_run(c, *l->boot, l->job + "x" + std::to_string(l->jobs++), body, skipped);
        if (error.empty()) return skipped.empty() ? "" : skipped_mark + skipped;
        // The peer waits for us in a collective: end the job, as a forked
        // rank whose world did not open exits with 3.
        unopened(*l->boot, c, error);
        l->boot->abort(3);
    }
    if (c.alone) return fork_ranks(c, 1, body);
    const std::string mode = conduit_mode(c, why);
    if (mode.empty()) return why;
    return fork_ranks(c, mode == "pair" ? 2 : 1, body);
}

// Under a slow subset every wait of these tests is time_scale() times as
// long (World::deadline, the ranks' alarm); the conduits' peer timeouts,
// after which a rank takes a peer that answered nothing for dead, stretch
// likewise: under ThreadSanitizer on two busy cores a rank can answer
// nothing for longer than the default 30 s and be taken for dead.  Set
// before the first knob is read (knobs load once per process; the ranks
// fork from this one), unless the environment sets one.
static void stretch_peer_timeouts() {
    const double scale = sluice_test::time_scale();
    if (scale == 1.0) return;
    sluice::conduit::knobs_register();
    for (const auto &k : sluice::base::knob_table()) {
        const std::string_view name = k.name;
        if (k.internal || !name.ends_with("_PEER_TIMEOUT")) continue;
        const std::string seconds = std::to_string(std::strtod(k.default_value, nullptr) * scale);
        ::setenv(k.name, seconds.c_str(), 0);
    }
}

std::vector<Conduit> conduits_under_test() {
    stretch_peer_timeouts();
    std::vector<Conduit> out;
    if (Launched *l = launched()) {
        // The mpi conduit only: as the pair of the job's two ranks, or
        // alone under `mpirun -n 1`.  Listed even when it did not load, so
        // that every test fails saying why.
        const bool alone = l->boot && l->boot->size() == 1;
        Conduit mpi{alone ? "mpi_alone" : "mpi", true, nullptr, alone};
        for (const auto &info : sluice::conduit::transport_registry())
            if (std::string(info.name) == "mpi") mpi.create = info.create;
        out.push_back(mpi);
        return out;
    }
    // The conduits built for the tests only (the template) are linked in by
    // this reference to their registration (tests/unit/unit_registry.cpp).
#define SLUICE_CONDUIT_IN_LIBRARY(name)
#define SLUICE_CONDUIT_IN_TESTS(id) (void)sluice::conduit::registered::conduit_##id();
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_IN_LIBRARY
#undef SLUICE_CONDUIT_IN_TESTS
    for (const auto &info : sluice::conduit::transport_registry()) {
        if (info.network && sluice_test::network_skipped(info.name)) continue;
        out.push_back(Conduit{info.name, info.network, info.create});
        if (info.network) out.push_back(Conduit{std::string(info.name) + "_alone", true, info.create, true});
    }
#ifdef SLUICE_CONDUIT_TEMPLATE_TESTS
    // The template with a "NIC" that reaches only registered memory: every
    // suite through firehose's registrar (template.hpp).
    auto registered = sluice::conduit::template_::make_template_transport_registered;
    out.push_back(Conduit{"template_registered", true, registered});
    out.push_back(Conduit{"template_registered_alone", true, registered, true});
#endif
    return out;
}

} // namespace conduit_test
