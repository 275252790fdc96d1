// src/core/runtime.cpp - init, finalize, hosts, routing, segments, progress.
#include "core/runtime.hpp"
#include "core/topology.hpp"

#include "atomic/atomic.hpp"
#include "coll/coll.hpp"
#include "rma/vis.hpp"

#include "base/flag.hpp"
#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "conduits/firehose/monitor.hpp"
#include "sluice_config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <poll.h>
#include <sys/eventfd.h>
#include <ctime>
#include <sched.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluice::core {

// Never destroyed: an exit may run while other threads still poll.
Runtime *const runtime_instance = new Runtime;

namespace {

void fatal_hook(int code) {
    Runtime &rt = runtime();
    if (rt.running()) rt.exit(code);
}

std::string random_job_id() {
    unsigned char r[6];
    if (::getrandom(r, sizeof r, 0) != sizeof r) return std::to_string(::getpid());
    char hex[13];
    for (int i = 0; i < 6; ++i) std::snprintf(hex + 2 * i, 3, "%02x", r[i]);
    return hex;
}

// Bootstrap backends write "what; fix: how": report the two parts as such.
Status bootstrap_failed(const char *op, const std::string &error) {
    const std::string marker = "; fix: ";
    const std::size_t at = error.find(marker);
    if (at == std::string::npos)
        return base::report(Status::bootstrap, op, "launch with sluicerun, or pick a spawner with SLUICE_SPAWNER", "%s",
                            error.c_str());
    const std::string what = error.substr(0, at), fix = error.substr(at + marker.size());
    return base::report(Status::bootstrap, op, fix.c_str(), "%s", what.c_str());
}

} // namespace

Status Runtime::init(int *, char ***) {
    const char *op = "init";
    if (state_.load() == State::running && bootstrap_ && std::strcmp(bootstrap_->name(), "mpi") == 0)
        return base::report(Status::state, op,
                            "call sluice_init once per process; under an Open MPI built with Sluice's extension, "
                            "MPI_Init starts Sluice: drop the call or run with --mca mpiext_sluice_start never",
                            "already initialized (over MPI)");
    if (state_.load() != State::none)
        return base::report(Status::state, op, "call sluice_init once per process",
                            state_.load() == State::running ? "already initialized" : "Sluice cannot start again after finalize");
    conduit::knobs_register();
    std::vector<std::string> knob_errors = base::knobs_load();
    // The lock bias (base/flag.hpp), worth it while this thread alone
    // polls: prepared before any thread that takes flags exists, started
    // at the end of init.
    const bool lock_bias_wanted = base::knob_bool(base::Knob::LOCK_BIAS) &&
                                  !base::knob_bool(base::Knob::PROGRESS_THREAD) &&
                                  !base::knob_bool(base::Knob::RCV_THREAD);
    if (lock_bias_wanted) base::lock_bias_prepare();

    std::string error;
    bootstrap_ = spawner::select_bootstrap(error);
    if (!bootstrap_)
        return bootstrap_failed(op, error);
    rank_ = bootstrap_->rank();
    size_ = bootstrap_->size();
    base::log_rank_set(static_cast<int>(rank_));
    base::fatal_signals_install();
    base::fatal_hook_set(fatal_hook);
    base::say("bootstrap %s: rank %u of %u", bootstrap_->name(), rank_, size_);

    if (rank_ == 0) {
        for (const auto &e : knob_errors) std::fprintf(stderr, "sluice[rank 0] error: %s\n", e.c_str());
        for (const auto &w : base::knobs_unknown()) std::fprintf(stderr, "sluice[rank 0] warning: %s\n", w.c_str());
        if (base::knob_bool(base::Knob::VERBOSEENV)) std::fprintf(stderr, "%s", base::knobs_listing().c_str());
    }
    // A value outside its knob's range is refused, not clamped; rank 0
    // says so, once (sluicerun refuses it before any rank starts).
    if (!knob_errors.empty()) {
        if (rank_ != 0) return Status::argument;
        return base::report(Status::argument, op,
                            "fix or unset the value; `sluice-info --knobs` lists every knob and its range",
                            "%zu SLUICE_* value(s) refused", knob_errors.size());
    }

    job_id_ = base::knob_string(base::Knob::JOB_ID);
    if (job_id_.empty()) {
        // Every rank must use the same id: take rank 0's.
        std::string id;
        if (rank_ == 0) id = random_job_id();
        if (!bootstrap_->broadcast(0, id))
            return base::report(Status::bootstrap, op, "check that every rank started", "broadcast of the job id failed");
        job_id_ = id;
    }
    // Which network conduit this rank would use: every rank must agree,
    // which the host-name allgather checks at no extra cost.
    const conduit::ConduitChoice network = conduit::conduit_choose(
        conduit::transport_registry(), true, base::knob_string(base::Knob::NETWORK), "SLUICE_NETWORK");
    std::vector<std::string> choices;
    if (Status s = init_hosts(network.chosen ? network.chosen->name : "!" + network.error, choices); s != Status::ok)
        return s;
    const conduit::ConduitChoice same_host =
        conduit::conduit_choose(conduit::transport_registry(), false, "", "the same-host conduit");
    // Before the transports: smp sets up its doorbells in block mode.
    idle_policy_set(network_needed(network, same_host) ? network.chosen : nullptr);
    if (Status s = init_transports(network, same_host, choices); s != Status::ok) return s;
    if (Status s = init_firehose(); s != Status::ok) return s;

    segments.entries.assign(size_, am::SegmentTable::Entry{});
    std::vector<std::string> credit_notes;
    am.configure(rank_, size_, route_, &segments, credit_notes);
    if (rank_ == 0)
        for (const std::string &n : credit_notes) std::fprintf(stderr, "sluice[rank 0] warning: %s\n", n.c_str());
    rma.configure(&am, &segments, size_, base::knob_bool(base::Knob::NATIVE_RMA));
    rma.system_handlers_register(am);
    rma::firehose::MainPool::handlers_register(am);
    system_handlers_register();
    rma::vis_init(am, rma);
    {
        coll::ClientEnv env;
        env.am = &am;
        env.rma = &rma;
        env.segments = &segments;
        env.rank = rank_;
        env.size = size_;
        env.host_of = host_of_;
        env.host_count = host_count_;
        env.poll = [] { runtime().poll(); };
        if (Status s = coll::init(env); s != Status::ok) return s;
        if (Status s = atomic::init(env); s != Status::ok) return s;
    }

    state_.store(State::running, std::memory_order_release);
    BootstrapCall in_bootstrap;
    if (!bootstrap_->barrier()) return base::report(Status::bootstrap, op, nullptr, "start-up barrier failed");
    if (base::knob_bool(base::Knob::PROGRESS_THREAD)) progress_thread_start();
    // The lock bias (base/flag.hpp), prepared at the start of init.
    if (lock_bias_wanted) {
        const char *why = nullptr;
        if (base::lock_bias_start(&why)) base::say("lock bias: this thread takes Sluice's locks without locked instructions");
        else base::say("lock bias: off (%s)", why);
    }
    base::say("running: %u hosts, %zu ranks on this host", host_count_, local_ranks_.size());
    if (base::knob_bool(base::Knob::VERBOSE)) base::say("placement: %s", topology::describe(topology::here()).c_str());
    return Status::ok;
}

namespace {

// What makes two ranks one host: the same host name, kernel boot and
// /dev/shm (so that they can map each other's shared memory).  Containers
// on different machines may repeat a host name, and ones on one machine
// may not share /dev/shm: the name alone would put them on one host.
std::string host_identity(const char *name) {
    std::string id = name;
    char boot[64] = {};
    if (std::FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
        if (!std::fgets(boot, sizeof boot, f)) boot[0] = 0;
        std::fclose(f);
    }
    boot[std::strcspn(boot, "\n")] = 0;
    struct stat st{};
    if (::stat("/dev/shm", &st) != 0) st = {};
    return id + ' ' + boot + ' ' + std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino);
}

} // namespace

Status Runtime::init_hosts(const std::string &my_choice, std::vector<std::string> &choices) {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    const std::string record = std::string(name) + '\n' + host_identity(name) + '\n' + my_choice;
    if (!bootstrap_->allgather(record.data(), record.size(), host_names_))
        return base::report(Status::bootstrap, "init", "check that every rank started", "allgather of host names failed");
    choices.assign(size_, "");
    std::vector<std::string> identity(size_);
    for (Rank r = 0; r < size_; ++r) {
        const std::size_t a = host_names_[r].find('\n'), b = host_names_[r].find('\n', a + 1);
        if (b == std::string::npos) continue;
        identity[r] = host_names_[r].substr(a + 1, b - a - 1);
        choices[r] = host_names_[r].substr(b + 1);
        host_names_[r].resize(a);
    }
    host_of_.assign(size_, 0);
    std::vector<std::string> hosts;
    for (Rank r = 0; r < size_; ++r) {
        auto it = std::find(hosts.begin(), hosts.end(), identity[r]);
        host_of_[r] = static_cast<std::uint32_t>(it - hosts.begin());
        if (it == hosts.end()) hosts.push_back(identity[r]);
    }
    host_count_ = static_cast<std::uint32_t>(hosts.size());
    local_ranks_.clear();
    for (Rank r = 0; r < size_; ++r)
        if (host_of_[r] == host_of_[rank_]) local_ranks_.push_back(r);
    return Status::ok;
}

namespace {

// "a on ranks 0, 2-3; b on rank 1", from every rank's choice ("!why" for none).
std::string choices_text(const std::vector<std::string> &choices) {
    std::vector<std::string> distinct;
    for (const std::string &c : choices)
        if (std::find(distinct.begin(), distinct.end(), c) == distinct.end()) distinct.push_back(c);
    std::string out;
    for (const std::string &c : distinct) {
        std::string ranks;
        unsigned count = 0;
        for (std::size_t r = 0; r < choices.size(); ++r) {
            if (choices[r] != c) continue;
            std::size_t last = r;
            while (last + 1 < choices.size() && choices[last + 1] == c) ++last;
            ranks += (ranks.empty() ? "" : ", ") + std::to_string(r) + (last > r ? "-" + std::to_string(last) : "");
            count += static_cast<unsigned>(last - r + 1);
            r = last;
        }
        out += (out.empty() ? "" : "; ") + (c[0] == '!' ? "none (" + c.substr(1) + ")" : c) +
               (count > 1 ? " on ranks " : " on rank ") + ranks;
    }
    return out;
}

} // namespace

// Whether this job needs its network conduit: more than one host, or
// SLUICE_ROUTE=network, or a build without a same-host conduit (which
// sends everything over the network conduit, the rank's messages to itself
// too).
bool Runtime::network_needed(const conduit::ConduitChoice &network, const conduit::ConduitChoice &same_host) const {
    const bool network_only = !same_host.chosen && network.chosen;
    const bool all_network = base::knob_string(base::Knob::ROUTE) == "network" || network_only;
    return network_only || (size_ > 1 && (host_count_ > 1 || all_network));
}

// Routing per peer: same-host peers go over the same-host conduit, the rest
// over the network conduit; SLUICE_ROUTE=network sends every peer but the
// rank itself over the network conduit.  Each is the conduit of its kind
// that conduit_choose() picks (SLUICE_NETWORK, priorities, probes), and
// every rank must pick the same network conduit (its start-up is
// collective): `choices` holds every rank's.
Status Runtime::init_transports(const conduit::ConduitChoice &network, const conduit::ConduitChoice &same_host,
                                const std::vector<std::string> &choices) {
    const char *op = "init";
    const std::string &route = base::knob_string(base::Knob::ROUTE);
    if (route != "auto" && route != "network")
        return base::report(Status::argument, op, "set SLUICE_ROUTE to auto or network", "SLUICE_ROUTE=%s", route.c_str());
    const bool network_only = !same_host.chosen && network.chosen;
    const bool all_network = route == "network" || network_only;
    const bool need_network = network_needed(network, same_host);
    base::say("same-host conduit: %s", conduit::conduit_choice_text(same_host).c_str());
    base::say("network conduit: %s", conduit::conduit_choice_text(network).c_str());
    if (rank_ == 0 && base::knob_bool(base::Knob::VERBOSEENV))
        std::fprintf(stderr, "sluice[rank 0] same-host conduit: %s\nsluice[rank 0] network conduit: %s\n",
                     conduit::conduit_choice_text(same_host).c_str(), conduit::conduit_choice_text(network).c_str());
    // An unusable SLUICE_NETWORK is an error even where no network is
    // needed; the ranks disagreeing only where it is.  When every rank
    // fails alike, rank 0 says it once, and the others wait for it in a
    // barrier: a rank that left at once would have the launcher stop the
    // job before rank 0 had said why.
    const bool agreed = std::all_of(choices.begin(), choices.end(), [&](const std::string &c) { return c == choices[0]; });
    auto fail_together = [&](Status status) {
        BootstrapCall in_bootstrap;
        (void)bootstrap_->barrier();
        return status;
    };
    if (need_network && !agreed) {
        if (rank_ == 0)
            (void)base::report(Status::transport, op,
                               "give every rank the same SLUICE_NETWORK, and the conduits it lists on every host",
                               "the ranks chose different network conduits: %s", choices_text(choices).c_str());
        return fail_together(Status::transport);
    }
    if (!network.chosen && (need_network || !base::knob_string(base::Knob::NETWORK).empty())) {
        const Status status = network.unknown_name ? Status::argument : Status::transport;
        const char *note = need_network ? "" : " (no network is needed now, but SLUICE_NETWORK is set)";
        if (!agreed) return base::report(status, op, network.fix.c_str(), "%s%s", network.error.c_str(), note);
        if (rank_ == 0) (void)base::report(status, op, network.fix.c_str(), "%s%s", network.error.c_str(), note);
        return fail_together(status);
    }
    // Otherwise the rank itself always goes over the same-host conduit
    // (which also owns the segment).
    if (!same_host.chosen && !network.chosen)
        return base::report(Status::transport, op, same_host.fix.c_str(), "%s", same_host.error.c_str());
    route_.assign(size_, nullptr);
    auto start = [&](const conduit::TransportInfo &info, std::vector<Rank> peers) -> Status {
        auto t = info.create();
        conduit::TransportSetup setup;
        setup.rank = rank_;
        setup.size = size_;
        setup.host_of = host_of_;
        setup.peers = peers;
        setup.bootstrap = bootstrap_.get();
        setup.deliver = am::AmEngine::deliver;
        setup.deliver_short = am::AmEngine::deliver_short;
        setup.deliver_context = &am;
        setup.progress = [](void *engine, conduit::PollMode mode) { return static_cast<am::AmEngine *>(engine)->poll(mode); };
        setup.progress_context = &am;
        setup.job_id = job_id_;
        if (Status s = t->init(setup); s != Status::ok) return s;
        for (Rank r : peers) route_[r] = t.get();
        transports_.push_back(std::move(t));
        return Status::ok;
    };
    std::vector<Rank> local = network_only ? std::vector<Rank>{} : all_network ? std::vector<Rank>{rank_} : local_ranks_,
                      remote;
    for (Rank r = 0; r < size_; ++r)
        if (std::find(local.begin(), local.end(), r) == local.end()) remote.push_back(r);
    if (!network_only) {
        if (Status s = start(*same_host.chosen, local); s != Status::ok) return s;
    }
    if (need_network) {
        // Firehose's memory hooks rewrite libc's code: before the network
        // conduit starts threads of its own (a Portals library's progress
        // thread), since a thread inside munmap while it is rewritten
        // would return into the new bytes.
        if (base::knob_bool(base::Knob::FIREHOSE_MEMHOOKS)) (void)rma::firehose::monitor::install();
        if (Status s = start(*network.chosen, remote); s != Status::ok) return s;
    }
    // One transport reaches every other rank: the only one, or the network
    // conduit when the same-host one carries this rank's own AMs alone.
    conduit::Transport *all = transports_.size() == 1 ? transports_[0].get()
                              : all_network && transports_.size() == 2 ? transports_[1].get()
                                                                       : nullptr;
    native_barrier_ = all && all->capabilities().native_barrier && base::knob_string(base::Knob::BARRIER) != "am"
                          ? all
                          : nullptr;
    if (all)
        base::say("barrier: %s", native_barrier_ ? (std::string(all->name()) + "'s own").c_str()
                                                  : "a dissemination of AMs");
    if (network_only) base::say("routing: all %zu ranks over %s", remote.size(), transports_[0]->name());
    else
        base::say("routing: %zu peers over %s, %zu over %s", local.size(), transports_[0]->name(), remote.size(),
                  transports_.size() > 1 ? transports_[1]->name() : "nothing");
    return Status::ok;
}

Status Runtime::finalize() {
    const char *op = "finalize";
    if (!running()) return base::report(Status::state, op, "call sluice_init first (and finalize once)", "not running");
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "finalize after the handler returns", "called from a handler");
    rma.withdraw_mapped();
    (void)rma.nbi_sync();
    if (Status s = barrier(); s != Status::ok) return s;
    atomic::fini();
    coll::fini();
    // What this rank sent must arrive before it stops polling: a peer may
    // still wait for the retransmission of a lost datagram.
    for (auto &t : transports_) t->quiesce();
    // Nobody sends to us after the barrier; a bootstrap barrier makes sure
    // nobody still reads our segment before it goes away.  Until every rank
    // is there, a peer may still be waiting in quiesce() for the ack of
    // something we have (our ack was lost): a thread goes on polling to
    // answer it.  It makes no bootstrap call, unless it finds a peer dead:
    // the exit that follows may then abort the job (MPI_Abort under mpi).
    {
        ProgressWhileBlocked polling(*this);
        BootstrapCall in_bootstrap;
        (void)bootstrap_->barrier();
    }
    progress_thread_stop();
    am.credit_stats_write();
    firehose_stats_print();
    if (base::idle_action == base::IdleAction::block)
        base::say("wait: slept %llu times, woken by work %llu times",
                  static_cast<unsigned long long>(sleeps_.load()), static_cast<unsigned long long>(sleeps_woken_.load()));
    state_.store(State::finalized);
    segments.attached = false;
    for (auto it = transports_.rbegin(); it != transports_.rend(); ++it) (*it)->fini();
    rma::firehose::MainPool::route_set({});
    bootstrap_->fini();
    void exit_handlers_release();
    exit_handlers_release();
    base::say("finalized");
    return Status::ok;
}

Status Runtime::init_firehose() {
    segment_large_ = base::knob_string(base::Knob::SEGMENT) == "large";  // else fast
    if (segment_large_ && !base::knob_bool(base::Knob::USE_FIREHOSE))
        return base::report(Status::argument, "init", "unset SLUICE_USE_FIREHOSE, or use SLUICE_SEGMENT=fast",
                            "SLUICE_SEGMENT=large needs firehose to register peers' segments, and SLUICE_USE_FIREHOSE=0");
    for (auto &t : transports_) {
        if (!t->capabilities().needs_registration) continue;
        std::unique_ptr<rma::firehose::Registrar> r;
        if (Status s = rma::firehose::Registrar::create(*t, rma::firehose::config_from_knobs(), r); s != Status::ok)
            return s;
        t->local_registrar_set(r.get());
        registrars_.push_back(std::move(r));
    }
    return Status::ok;
}

void Runtime::firehose_stats_print() const {
    if (!base::knob_bool(base::Knob::FIREHOSE_STATS) && !base::knob_bool(base::Knob::FIREHOSE_VERBOSE)) return;
    for (const auto &r : registrars_) std::fprintf(stderr, "sluice[rank %u] %s\n", rank_, r->stats_line().c_str());
    for (const auto &p : main_pools_) std::fprintf(stderr, "sluice[rank %u] %s\n", rank_, p->stats_line().c_str());
}

// SLUICE_SEGMENT=large: a transport that reaches peers through keys
// (remote_keys) leaves my segment unregistered (it publishes no key); its
// main pool registers regions of it as peers ask.  A transport gets a main
// pool too when a peer left its own unregistered: it pins regions of
// theirs for me.  Before the barrier that ends the attach, so the pool is
// there when the first move request comes.
void Runtime::main_pools_create(void *base, std::size_t size, const std::vector<conduit::SegmentRecord> &records) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> segments;
    for (const auto &r : records) segments.emplace_back(r.base, r.size);
    std::vector<rma::firehose::MainPool *> by_source(size_, nullptr);
    for (auto &t : transports_) {
        if (!t->capabilities().remote_keys) continue;
        bool needed = segment_large_;
        for (Rank r = 0; r < size_ && !needed; ++r) needed = t->peer_unregistered(r);
        if (!needed) continue;
        auto pool = std::make_unique<rma::firehose::MainPool>(*t, am, rma::firehose::main_pool_config_from_knobs(),
                                                              segment_large_ ? base : nullptr,
                                                              segment_large_ ? size : 0, t->setup_peers());
        pool->segments_set(segments);
        t->remote_registrar_set(pool.get());
        for (Rank r = 0; r < size_; ++r)
            if (route_[r] == t.get()) by_source[r] = pool.get();
        main_pools_.push_back(std::move(pool));
    }
    if (!main_pools_.empty()) rma::firehose::MainPool::route_set(std::move(by_source));
}

Status Runtime::segment_attach(std::size_t size) {
    const char *op = "segment_attach";
    if (segments.attached)
        return base::report(Status::state, op, "attach once per job", "the segment is already attached");
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "attach outside handlers", "called from a handler");
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    if (size > (SIZE_MAX >> 2))
        return base::report(Status::argument, op, "ask for a reasonable size", "segment of %zu bytes", size);
    size = (size + page - 1) / page * page;
    // My segment is created by the conduit that maps it for same-host peers.
    conduit::Transport *owner = transports_.front().get();
    void *base = nullptr;
    std::string key;
    if (Status s = owner->segment_create(size, &base, key); s != Status::ok) return s;
    // Until every rank has mapped it, the segment has a name in /dev/shm.
    // A rank that exits before attaching reaches the others here, where they
    // poll and leave by the exit protocol (which unlinks the name), rather
    // than in the bootstrap's collective below, where an MPI launcher kills
    // them and nobody unlinks it.
    if (Status s = barrier(); s != Status::ok) return s;
    std::optional<ProgressWhileBlocked> polling(std::in_place, *this);
    BootstrapCall in_bootstrap;
    // The record: base, size, the creating conduit's key, then each
    // transport's packed remote key for the segment (memory domains), by
    // name, since ranks on different hosts may run different transports.
    std::string record(16, '\0');
    const std::uint64_t b = reinterpret_cast<std::uint64_t>(base), n = size;
    std::memcpy(record.data(), &b, 8);
    std::memcpy(record.data() + 8, &n, 8);
    const auto append = [&record](const std::string &field) {
        const auto len = static_cast<std::uint32_t>(field.size());
        record.append(reinterpret_cast<const char *>(&len), 4);
        record += field;
    };
    append(key);
    for (auto &t : transports_) {
        std::string rkey;
        const bool on_demand = segment_large_ && t->capabilities().remote_keys;
        if (!on_demand)
            if (Status s = t->segment_register(base, size, rkey); s != Status::ok) return s;
        append(t->name());
        append(rkey);
    }
    std::vector<std::string> all;
    if (!bootstrap_->allgather(record.data(), record.size(), all))
        return base::report(Status::bootstrap, op, "check that every rank called it", "segment exchange failed");
    std::vector<conduit::SegmentRecord> records(size_);
    for (Rank r = 0; r < size_; ++r) {
        const std::string &in = all[r];
        std::size_t at = 16;
        bool ok = in.size() >= 16;
        const auto field = [&](std::string &out) {
            std::uint32_t len = 0;
            if (!ok || in.size() - at < 4) return ok = false;
            std::memcpy(&len, in.data() + at, 4);
            if (in.size() - at - 4 < len) return ok = false;
            out.assign(in, at + 4, len);
            at += 4 + std::size_t{len};
            return true;
        };
        if (ok) {
            std::memcpy(&records[r].base, in.data(), 8);
            std::memcpy(&records[r].size, in.data() + 8, 8);
        }
        field(records[r].key);
        while (ok && at < in.size()) {
            std::pair<std::string, std::string> k;
            if (field(k.first) && field(k.second)) records[r].rkeys.push_back(std::move(k));
        }
        if (!ok)
            return base::report(Status::bootstrap, op, "run the same Sluice build on every rank",
                                "the segment record of rank %u is malformed", r);
    }
    for (auto &t : transports_)
        if (Status s = t->segment_connect(records); s != Status::ok) return s;
    main_pools_create(base, size, records);
    if (!bootstrap_->barrier()) return base::report(Status::bootstrap, op, nullptr, "barrier after mapping failed");
    polling.reset();  // before the segment table changes under its handlers
    for (auto &t : transports_) t->setup_done();
    for (Rank r = 0; r < size_; ++r) {
        auto &e = segments.entries[r];
        e.base = records[r].base;
        e.size = records[r].size;
        e.view = static_cast<char *>(route_[r]->peer_segment_view(r));
    }
    segments.attached = true;
    rma.publish_mapped();
    base::say("segment of %zu bytes attached at %p", size, base);
    return Status::ok;
}

Status Runtime::segment_info(Rank r, void **base, std::size_t *size) const {
    const char *op = "segment_info";
    if (r >= size_) return base::report(Status::rank, op, "use a rank below sluice_size()", "rank %u of %u", r, size_);
    if (!base || !size) return base::report(Status::argument, op, "pass both output pointers", "null output pointer");
    if (!segments.attached)
        return base::report(Status::state, op, "call sluice_segment_attach first", "no segment is attached");
    *base = reinterpret_cast<void *>(segments.entries[r].base);
    *size = segments.entries[r].size;
    return Status::ok;
}

// More spinning ranks than cores: a waiting rank must give its core to the
// rank it waits for, or every wait costs a scheduler time slice; and, by
// default (SLUICE_WAIT=auto), it sleeps once its polls find nothing for a
// while (base::idle), when every conduit it uses can wake it (`network`:
// the network conduit it will use, or null).  One that can only nap
// (ibv, mpi, portals, gni, lapi) would pay a nap for each step of every
// transfer, and a crowded scheduler may hold a napping thread far longer
// than the nap: a yielding spinner hands its core over at each empty poll
// and never waits to be woken.  A host that is not crowded by ranks may
// still be by other processes: under SLUICE_POLL_YIELD=auto a spinning wait
// yields once its polls have found nothing for SLUICE_WAIT_SPIN (20 µs by
// default, far past a message's latency).
void Runtime::idle_policy_set(const conduit::TransportInfo *network) {
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    const bool crowded = static_cast<long>(local_ranks_.size()) > std::max(1L, cores);
    base::idle_yields = base::knob_switch(base::Knob::POLL_YIELD, crowded);
    base::idle_spin_policy_set();
    const std::string wait = base::knob_string(base::Knob::WAIT);  // spin, block or auto (the knob's range)
    const bool naps = network && !network->wakes;
    const bool block = wait == "block" || (wait != "spin" && crowded && !naps);
    wait_nap_ns_ = static_cast<std::uint64_t>(base::knob_double(base::Knob::WAIT_NAP) * 1000);
    base::idle_action = block ? base::IdleAction::block
                              : base::idle_yields ? base::IdleAction::yield : base::IdleAction::spin;
    base::idle_block_hook_set(block ? &Runtime::sleep_hook : nullptr, this);
    const std::string yields = base::idle_yields ? ", yielding while it spins"
                               : base::idle_check_polls != UINT32_MAX ? ", yielding after a spin of SLUICE_WAIT_SPIN"
                                                                        : "";
    base::say("wait: %s (SLUICE_WAIT=%s; %zu ranks on this host, %ld cores%s)%s", block ? "block" : "spin",
              wait.c_str(), local_ranks_.size(), cores,
              wait == "auto" && crowded && naps ? (std::string("; ") + network->name + " has no wake-up descriptor").c_str() : "",
              yields.c_str());
}

// Block mode: every transport arms its wake-up and says whether work is
// already there; if none has any, the thread sleeps in ppoll on their
// descriptors, for the shortest sleep any of them allows (10 ms at most: a
// check now and then costs little and bounds what a missed wake-up could
// cost).  Then each transport asked disarms, and the caller polls.
void Runtime::sleep_hook(void *context) { static_cast<Runtime *>(context)->sleep_for_work(); }

void Runtime::sleep_for_work(int also) {
    // SLUICETEST_WAIT_UNBOUNDED=1 (tests/wait/wait.sh): no 10 ms check, so
    // that a lost wake-up hangs the job.  Naps stay: they are the only end
    // of a wait no wake-up announces (base::IdleNap).
    static const bool unbounded = [] {
        const char *v = std::getenv("SLUICETEST_WAIT_UNBOUNDED");
        return v && std::strcmp(v, "1") == 0;
    }();
    constexpr std::uint64_t forever = ~std::uint64_t{0};
    const std::uint64_t longest_ns = unbounded ? forever : 10'000'000;
    conduit::Transport::WakeSet w;
    w.sleep_ns = base::idle_nap_only ? wait_nap_ns_ : longest_ns;
    w.nap_ns = wait_nap_ns_;
    if (also >= 0) w.add(also);
    std::size_t asked = 0;
    bool quiet = true;
    for (auto &t : transports_) {
        ++asked;
        if (!t->wake_prepare(w)) {
            quiet = false;
            break;
        }
    }
    if (quiet) {
        const timespec timeout{static_cast<time_t>(w.sleep_ns / 1'000'000'000),
                               static_cast<long>(w.sleep_ns % 1'000'000'000)};
        const int ready = ::ppoll(w.fds, w.count, w.sleep_ns == forever ? nullptr : &timeout, nullptr);
        sleeps_.fetch_add(1, std::memory_order_relaxed);
        if (ready > 0) sleeps_woken_.fetch_add(1, std::memory_order_relaxed);
    }
    for (std::size_t i = 0; i < asked; ++i) transports_[i]->wake_finish();
}

Runtime::ProgressWhileBlocked::ProgressWhileBlocked(Runtime &runtime) : rt(runtime) {
    if (rt.progress_thread_.joinable()) return;
    for (auto &t : rt.transports_)
        if (t->capabilities().acknowledges) {
            rt.progress_thread_start();
            started = true;
            return;
        }
}

Runtime::ProgressWhileBlocked::~ProgressWhileBlocked() {
    if (started) rt.progress_thread_stop();
}

void Runtime::progress_thread_start() {
    progress_stop_.store(false);
    if (base::idle_action == base::IdleAction::block && progress_wake_fd_ < 0)
        progress_wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    progress_thread_ = std::thread([this] {
        // Every 50 us while the program does not poll (reach a busy rank
        // soon); while it does, the thread stands back, waking every 1 ms at
        // most, so that it does not take the CPU from ranks that spin (more
        // ranks than CPUs: every wake-up is a rank descheduled).
        constexpr long quick_ns = 50 * 1000, slow_ns = 1000 * 1000;
        long pause_ns = quick_ns;
        std::uint64_t seen = app_polls_.load(std::memory_order_relaxed);
        if (base::idle_action == base::IdleAction::block) {
            // Block mode: it sleeps on the conduits' wake-ups (and on the
            // stop's descriptor) between its polls, not on a timer.
            base::idle_no_sleep = true;
            while (!progress_stop_.load(std::memory_order_relaxed)) {
                if (exit_started_.load(std::memory_order_relaxed)) exit_park();
                if (am.poll() == 0) sleep_for_work(progress_wake_fd_);
            }
            return;
        }
        while (!progress_stop_.load(std::memory_order_relaxed)) {
            const std::uint64_t now = app_polls_.load(std::memory_order_relaxed);
            if (now != seen) {
                seen = now;
                pause_ns = std::min(pause_ns * 2, slow_ns);
            } else {
                if (exit_started_.load(std::memory_order_relaxed)) exit_park();
                am.poll();
                pause_ns = quick_ns;
            }
            const timespec pause{0, pause_ns};
            ::nanosleep(&pause, nullptr);
        }
    });
}

void Runtime::progress_thread_stop() {
    if (!progress_thread_.joinable()) return;
    progress_stop_.store(true);
    if (progress_wake_fd_ >= 0) {
        const std::uint64_t one = 1;
        (void)!::write(progress_wake_fd_, &one, sizeof one);
    }
    progress_thread_.join();
    if (progress_wake_fd_ >= 0) ::close(progress_wake_fd_);
    progress_wake_fd_ = -1;
}

} // namespace sluice::core
