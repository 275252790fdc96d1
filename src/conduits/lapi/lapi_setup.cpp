// src/conduits/lapi/lapi_setup.cpp - the lapi conduit's set-up and
// tear-down: POE's variables, LAPI_Init and its mode, the header handlers'
// indices, the buffers and counters, finalize and the counters' line.
#include "conduits/lapi/lapi.hpp"
#include "conduits/lapi/lapi_transport.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"
#include "conduits/knobs.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <tuple>

namespace sluice::conduit::lapi {

namespace detail {
namespace {

const char *op_init = "lapi conduit init";

// A whole decimal number, as POE writes its variables.
bool decimal(const char *text, unsigned long long &out) {
    if (text == nullptr || *text < '0' || *text > '9') return false;
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(text, &end, 10);
    if (errno || *end) return false;
    out = n;
    return true;
}

// "" when MP_PARTITION, LAPI's job key, is set to a number, else why not.
std::string partition_problem() {
    const char *p = std::getenv("MP_PARTITION");
    unsigned long long n = 0;
    if (p == nullptr || *p == '\0')
        return "MP_PARTITION is not set (POE sets it for a job's tasks: run under poe, or under "
               "tests/softnic/lapi/softnic-run)";
    if (!decimal(p, n) || n == 0) return std::string("MP_PARTITION='") + p + "' is not a job key (a positive number)";
    return "";
}

// POE's variables for LAPI_Init, as POE sets them for a job's tasks.
// MP_CHILD (the task id) and MP_PROCS (the tasks) come from the
// bootstrap's rank and size when absent and must equal them when present;
// MP_PARTITION, the job's key, must be set.  When Sluice plays POE
// (MP_CHILD absent: the job was not started by POE), LAPI gets a key of
// its own for this Sluice job, derived from MP_PARTITION and the job's id,
// so that the successive jobs run under one MP_PARTITION (a test program's
// jobs under one softnic-run) are never taken for one another.  restore()
// puts the environment back after LAPI_Init, which alone reads it.
class PoeEnvironment {
public:
    ~PoeEnvironment() { restore(); }

    Status prepare(const TransportSetup &s, std::string &note) {
        if (std::string why = partition_problem(); !why.empty())
            return base::report(Status::transport, op_init, "run the job under POE, or give every rank the same MP_PARTITION",
                                "lapi: %s", why.c_str());
        const char *partition = std::getenv("MP_PARTITION");
        const bool poe = std::getenv("MP_CHILD") != nullptr;
        if (Status st = variable("MP_CHILD", s.rank, "this is rank " + std::to_string(s.rank), set_child_);
            st != Status::ok)
            return st;
        if (Status st = variable("MP_PROCS", s.size, "the Sluice job has " + std::to_string(s.size) + " ranks", set_procs_);
            st != Status::ok)
            return st;
        note = std::string("task ") + std::to_string(s.rank) + " of " + std::to_string(s.size);
        if (poe || s.job_id.empty()) {
            note += std::string(", job key MP_PARTITION=") + partition + (poe ? " (POE's)" : "");
            return Status::ok;
        }
        // FNV-1a over the key and Sluice's job id: the same on every rank.
        std::uint64_t h = 0xcbf29ce484222325ull;
        const std::string text = std::string(partition) + '/' + s.job_id;
        for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
        h &= std::numeric_limits<std::int64_t>::max();
        if (h == 0) h = 1;
        saved_partition_ = partition;
        replaced_ = true;
        const std::string key = std::to_string(h);
        ::setenv("MP_PARTITION", key.c_str(), 1);
        note += ", job key " + key + " (of MP_PARTITION=" + saved_partition_ + " and Sluice job " + s.job_id + ")";
        return Status::ok;
    }

    void restore() {
        if (set_child_) ::unsetenv("MP_CHILD");
        if (set_procs_) ::unsetenv("MP_PROCS");
        if (replaced_) ::setenv("MP_PARTITION", saved_partition_.c_str(), 1);
        set_child_ = set_procs_ = replaced_ = false;
    }

private:
    // `name` must say `want` (what the bootstrap says: `what`), or is set to it.
    static Status variable(const char *name, unsigned want, const std::string &what, bool &set) {
        const char *v = std::getenv(name);
        if (v == nullptr) {
            ::setenv(name, std::to_string(want).c_str(), 1);
            set = true;
            return Status::ok;
        }
        unsigned long long n = 0;
        if (decimal(v, n) && n == want) return Status::ok;
        return base::report(Status::state, op_init,
                            "unset MP_CHILD and MP_PROCS (the conduit sets them from its ranks), or start the job so "
                            "that POE's task ids and count are Sluice's ranks and size",
                            "lapi: %s=%s, but %s", name, v, what.c_str());
    }

    bool set_child_ = false, set_procs_ = false, replaced_ = false;
    std::string saved_partition_;
};

// What helps when LAPI_Init refuses.
const char *init_fix(int rc) {
    switch (rc) {
    case LAPI_ERR_TIMEOUT:
        return "start every rank of the job: LAPI_Init waits for all MP_PROCS tasks (on the software LAPI, "
               "SOFTNIC_LAPI_INIT_TIMEOUT_S bounds the wait)";
    case LAPI_ERR_ALL_HNDL_IN_USE:
        return "this process already holds a LAPI handle (another library, or a Sluice transport not finalized)";
#ifdef LAPI_ERR_TASK_IN_USE
    case LAPI_ERR_TASK_IN_USE:
        return "another live process is this task of the LAPI job: give each job its own MP_PARTITION";
#endif
#ifdef LAPI_ERR_NO_FABRIC
    case LAPI_ERR_NO_FABRIC:
        return "run the rank on a host of the software LAPI's SOFTNIC_HOSTS";
#endif
    default:
        return "check POE's MP_CHILD, MP_PROCS and MP_PARTITION (LAPI's message names what it refuses)";
    }
}

} // namespace

LapiTransport::LapiTransport() : RdmaConduit("lapi", Capabilities{}) {}

LapiTransport::~LapiTransport() { close_all(); }

// One line naming the rank (base::report's prefix), the operation, the
// call, the peer and LAPI's own words for the code.
Status LapiTransport::failed(const char *op, const char *call, int rc, Rank peer, const char *fix) const {
    if (rc == LAPI_ERR_TGT_PURGED && peer != setup().rank)
        return base::report(Status::transport, op, fix ? fix : "check that rank's output: it ended or died first",
                            "lapi: %s with rank %u: rank %u has ended or died (%s)", call, peer, peer,
                            error_text(rc).c_str());
    return base::report(Status::transport, op, fix ? fix : "see LAPI's message; a rule a handler broke is a Sluice bug",
                        "lapi: %s%s: %s", call, peer != setup().rank ? (" with rank " + std::to_string(peer)).c_str() : "",
                        error_text(rc).c_str());
}

Status LapiTransport::init_impl() {
    std::string why;
    if (!api(&why))
        return base::report(Status::transport, op_init, "set SLUICE_LAPI_LIBRARY, or use another SLUICE_NETWORK", "%s",
                            why.c_str());
    polling_ = base::knob_string(knob(Knob::LAPI_MODE)) == "POLLING";
    max_medium_ = base::knob_size(knob(Knob::LAPI_MAX_MEDIUM));
    msg_max_ = common::packed_align(common::packed_head_room + max_medium_);
    peer_timeout_s_ = std::max(0.1, base::knob_double(knob(Knob::LAPI_PEER_TIMEOUT)));
    // Every rank's Medium buffers hold what its peers send.
    const Record mine{setup().rank, static_cast<std::uint32_t>(max_medium_)};
    std::vector<std::string> all;
    if (Status s = common::allgather_records(setup(), "lapi", "a LAPI record", &mine, sizeof mine, all); s != Status::ok)
        return s;
    for (Rank r = 0; r < setup().size; ++r) {
        Record theirs;
        std::memcpy(&theirs, all[r].data(), sizeof theirs);
        if (theirs.max_medium != mine.max_medium)
            return base::report(Status::state, op_init, "set SLUICE_LAPI_MAX_MEDIUM alike on every rank",
                                "lapi: rank %u's largest Medium is %u bytes, this rank's %u", r, theirs.max_medium,
                                mine.max_medium);
    }
    if (Status s = job_open(); s != Status::ok) return s;
    const std::size_t packed = base::knob_size(knob(Knob::LAPI_PACKED_MAX));
    if (packed > uhdr_max_)
        return base::report(Status::argument, op_init, "lower SLUICE_LAPI_PACKED_MAX (0: LAPI's MAX_UHDR_SZ)",
                            "lapi: SLUICE_LAPI_PACKED_MAX=%zu is above LAPI's largest user header (MAX_UHDR_SZ %zu)",
                            packed, uhdr_max_);
    packed_max_ = packed ? packed : uhdr_max_;
    if (Status s = handlers_set(); s != Status::ok) return s;
    if (Status s = buffers_create(); s != Status::ok) return s;
    if (base::knob_bool(base::Knob::RCV_THREAD)) receive_thread_want();

    Capabilities &c = capabilities_mutable();
    c.max_medium = max_medium_;
    c.max_long = std::numeric_limits<std::size_t>::max();
    c.max_packed_long = max_medium_;  // above: the payload by LAPI_Put, then the header (two-part Long)
    c.native_rma = true;
    c.rma_piece = static_cast<std::size_t>(std::min<std::uint64_t>(max_data_, std::uint64_t{1} << 30));
    c.remote_completion = false;      // the wrapper puts, then sends the header
    c.needs_registration = false;     // LAPI reads and writes any address
    c.remote_keys = false;
    c.remote_offsets = false;
    c.provider_keys = true;
    // Arrivals are copied out in the header handler whether or not the
    // rank polls: the credits bound what a peer may have waiting here.
    c.needs_credits = true;
    liveness_setup(setup().size, peer_timeout_s_, "SLUICE_LAPI_PEER_TIMEOUT");
    open_.store(true, std::memory_order_release);
    base::say("lapi: %s, %s mode; user header up to %zu bytes (AMs up to %zu bytes packed there), packets of %d "
              "bytes; Mediums up to %zu bytes; %zu send buffers, %zu Puts and Gets in flight",
              env_note_.c_str(), polling_ ? "polling" : "interrupt", uhdr_max_, packed_max_, packet_bytes_,
              max_medium_, sends_.size(), posts_.size());
    return Status::ok;
}

// POE's variables, LAPI_Init (its threads started with asynchronous
// signals blocked, so that no exit runs on them) and what LAPI says of
// itself; then the mode.
Status LapiTransport::job_open() {
    LapiTransport *none = nullptr;
    if (!live_.compare_exchange_strong(none, this))
        return base::report(Status::state, op_init, "finalize the other lapi transport first",
                            "lapi: this process already has a live lapi transport (LAPI allows one handle)");
    PoeEnvironment env;
    if (Status s = env.prepare(setup(), env_note_); s != Status::ok) {
        live_.store(nullptr);
        return s;
    }
    lapi_info_t info;
    std::memset(&info, 0, sizeof info);
    info.err_hndlr = &LapiTransport::error_handler;
    sigset_t blocked, old;
    ::sigfillset(&blocked);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT}) ::sigdelset(&blocked, sig);
    ::pthread_sigmask(SIG_BLOCK, &blocked, &old);
    const int rc = calls().Init(&handle_, &info);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    env.restore();
    if (rc != LAPI_SUCCESS) {
        live_.store(nullptr);
        return failed(op_init, "LAPI_Init", rc, setup().rank, init_fix(rc));
    }
    lapi_live_ = true;
    int task = -1, tasks = -1, uhdr = 0, data = 0, packet = 0;
    const Api &a = calls();
    for (auto [query, out, name] : {std::tuple{TASK_ID, &task, "TASK_ID"}, std::tuple{NUM_TASKS, &tasks, "NUM_TASKS"},
                                    std::tuple{MAX_UHDR_SZ, &uhdr, "MAX_UHDR_SZ"},
                                    std::tuple{MAX_DATA_SZ, &data, "MAX_DATA_SZ"},
                                    std::tuple{MAX_PKT_SZ, &packet, "MAX_PKT_SZ"}})
        if (const int q = a.Qenv(handle_, query, out); q != LAPI_SUCCESS)
            return failed(op_init, (std::string("LAPI_Qenv(") + name + ")").c_str(), q, setup().rank);
    if (task != static_cast<int>(setup().rank) || tasks != static_cast<int>(setup().size))
        return base::report(Status::state, op_init, "check POE's MP_CHILD and MP_PROCS",
                            "lapi: LAPI says this is task %d of %d, Sluice rank %u of %u", task, tasks, setup().rank,
                            setup().size);
    uhdr_max_ = std::min<std::size_t>(static_cast<std::size_t>(std::max(uhdr, 0)), uhdr_room);
    if (uhdr_max_ < common::packed_head_room)
        return base::report(Status::transport, op_init, "this LAPI cannot carry Sluice's AMs",
                            "lapi: LAPI's MAX_UHDR_SZ is %d bytes, below the %zu an AM's head and arguments take", uhdr,
                            common::packed_head_room);
    max_data_ = static_cast<std::uint64_t>(std::max(data, 1));
    packet_bytes_ = packet;
    if (const int s = a.Senv(handle_, INTERRUPT_SET, polling_ ? 0 : 1); s != LAPI_SUCCESS)
        return failed(op_init, polling_ ? "LAPI_Senv(INTERRUPT_SET, 0)" : "LAPI_Senv(INTERRUPT_SET, 1)", s,
                      setup().rank, "check SLUICE_LAPI_MODE");
    return Status::ok;
}

// The header handlers at their fixed indices (the same on every task, so
// an AM names its handler by index, not by an address of this process).
Status LapiTransport::handlers_set() {
    const Api &a = calls();
    const std::pair<int, hdr_hndlr_t *> handlers[] = {{handler_am, &LapiTransport::am_header},
                                                       {handler_control, &LapiTransport::control_header}};
    for (const auto &[index, handler] : handlers) {
        void *address = reinterpret_cast<void *>(handler);
        if (const int rc = a.Addr_set(handle_, address, index); rc != LAPI_SUCCESS)
            return failed(op_init, ("LAPI_Addr_set(" + std::to_string(index) + ")").c_str(), rc, setup().rank);
        void *back = nullptr;
        if (const int rc = a.Addr_get(handle_, &back, index); rc != LAPI_SUCCESS)
            return failed(op_init, ("LAPI_Addr_get(" + std::to_string(index) + ")").c_str(), rc, setup().rank);
        if (back != address)
            return base::report(Status::transport, op_init, "this is a LAPI bug",
                                "lapi: LAPI_Addr_get(%d) gives %p, not the header handler %p set there", index, back,
                                address);
    }
    return Status::ok;
}

// Send buffers, Put and Get records with their counters zeroed, the
// first tokens, the Medium buffers' size, the per-peer order.
Status LapiTransport::buffers_create() {
    const auto sends = static_cast<std::size_t>(base::knob_int(knob(Knob::LAPI_SEND_BUFFERS)));
    const auto depth = static_cast<std::size_t>(base::knob_int(knob(Knob::LAPI_RMA_DEPTH)));
    sends_ = std::vector<SendBuffer>(sends);
    send_words_ = std::make_unique<std::uint64_t[]>(sends * (msg_max_ / 8));
    for (std::size_t i = 0; i < sends; ++i) {
        sends_[i].bytes = reinterpret_cast<std::byte *>(send_words_.get() + i * (msg_max_ / 8));
        if (!counter_zero(sends_[i].origin, op_init)) return Status::transport;
    }
    send_free_.fill(sends_.data(), sends_.size());
    sending_.reserve(sends);
    posts_ = std::vector<RmaPost>(depth);
    for (RmaPost &p : posts_)
        if (!counter_zero(p.done, op_init)) return Status::transport;
    post_free_.fill(posts_.data(), posts_.size());
    in_flight_.reserve(depth);
    if (!counter_zero(am_done_, op_init)) return Status::transport;
    am_sent_ = 0;
    medium_pool_.configure(msg_max_);
    send_order_.reset(setup().size);
    receive_order_.reset(setup().size);
    heard_flag_.assign(setup().size, 0);
    ping_flag_.assign(setup().size, 0);
    heard_from_.reserve(std::min<std::size_t>(setup().size, 64));  // grows with the peers heard from
    for (std::size_t i = 0; i < tokens_first; ++i) {
        auto k = std::make_unique<Token>();
        k->room = std::make_unique<std::uint64_t[]>((uhdr_max_ + 7) / 8);
        token_free_.give(k.get());
        tokens_.push_back(std::move(k));
    }
    return Status::ok;
}

void LapiTransport::fini_impl() {
    receive_thread_stop();
    stats_report();
    close_all();
}

// Closed to handlers first (they find the conduit down), then LAPI_Term
// outside the lock (it waits for LAPI's threads, which may be waiting for
// it), then the memory LAPI no longer touches.
void LapiTransport::close_all() {
    if (open_.load()) {
        Guard g(*this);
        open_.store(false, std::memory_order_release);
    }
    if (lapi_live_) {
        lapi_live_ = false;
        if (const int rc = calls().Term(handle_); rc != LAPI_SUCCESS)
            (void)failed("finalize (lapi)", "LAPI_Term", rc, setup().rank);
    }
    LapiTransport *me = this;
    live_.compare_exchange_strong(me, nullptr);
    ready_.clear();
    life_.clear();
    send_order_.clear();
    receive_order_.clear();
    arrived_.clear();
    heard_from_.clear();
    token_free_.clear();
    tokens_.clear();
    medium_pool_.clear();
    sending_.clear();
    send_free_.clear();
    sends_.clear();
    send_words_.reset();
    in_flight_.clear();
    post_free_.clear();
    posts_.clear();
    own_segment_.release();
}

bool LapiTransport::stats_wanted() const { return base::knob_bool(knob(Knob::LAPI_STATS)); }

// The handlers' counters are read under arrival_lock_ (LAPI still runs).
void LapiTransport::stats_print() {
    const LapiCounters &l = lapi_counters_;
    common::Counters c = counters_;
    ArrivalCounters n;
    {
        base::SpinGuard a(arrival_lock_);
        n = arrival_counters_;
    }
    c.received += n.received;
    c.held += n.held;
    const std::string extra =
        "unpacked Mediums " + std::to_string(l.unpacked_mediums) + ", unpacked Longs " +
        std::to_string(l.unpacked_longs) + ", completion handlers " + std::to_string(n.completion_handlers) +
        ", header handlers in own calls " + std::to_string(n.nested) + ", probes " + std::to_string(l.probes) +
        ", dropped " + std::to_string(n.dropped) + ", asynchronous errors " + std::to_string(l.async_errors.load());
    common::stats_line(setup().rank, "lapi", path(setup().rank), c, receive_wakeups(), extra);
}

std::string LapiTransport::path(Rank peer) const {
    return "LAPI task " + std::to_string(peer) + ", " + (polling_ ? "polling" : "interrupt") + " mode";
}

} // namespace detail

std::unique_ptr<Transport> make_lapi_transport() { return std::make_unique<detail::LapiTransport>(); }

std::string probe() {
    if (std::string why = detail::partition_problem(); !why.empty()) return why;
    std::string why;
    if (!api(&why)) return why;
    return "";
}

std::string limits() {
    std::string why;
    const bool opened = api(&why) != nullptr;
    const std::string &lib = base::knob_string(knob(Knob::LAPI_LIBRARY));
    std::string out = "  lapi library            " + (lib.empty() ? std::string("liblapi.so.1") : lib) +
                      (opened ? ": opens\n" : ": " + why + "\n");
    auto shown = [](const char *name) {
        const char *v = std::getenv(name);
        return std::string(name) + "=" + (v ? v : "(unset)");
    };
    out += "  lapi job                " + shown("MP_PARTITION") + ", " + shown("MP_CHILD") + ", " + shown("MP_PROCS");
    if (std::string problem = detail::partition_problem(); !problem.empty()) out += ": " + problem;
    out += "\n  lapi mode               " + base::knob_string(knob(Knob::LAPI_MODE)) + "\n";
    return out;
}

} // namespace sluice::conduit::lapi
