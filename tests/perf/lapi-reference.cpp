// tests/perf/lapi-reference.cpp - the bare LAPI reference (lapi-reference.hpp).
#include "tests/perf/lapi-reference.hpp"

#include "tests/perf/bench_common.hpp"

#include <limits>

#if SLUICE_BENCH_HAVE_LAPI
#include "conduits/common/run_time_library.hpp"

#include <lapi.h>

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#endif

namespace sluice::perf {

namespace {
constexpr double nan_ns = std::numeric_limits<double>::quiet_NaN();
}

#if !SLUICE_BENCH_HAVE_LAPI

struct LapiReference::State {};
LapiReference::LapiReference() = default;
LapiReference::~LapiReference() = default;
bool LapiReference::open(const std::string &, bool, std::size_t) {
    error_ = "built without the lapi conduit (configure --with-lapi=DIR finds lapi.h)";
    return false;
}
LapiCard LapiReference::card() const { return {}; }
bool LapiReference::connect(const LapiCard &) { return false; }
void LapiReference::close() {}
std::string LapiReference::describe() const { return "no LAPI"; }
double LapiReference::ping(std::uint32_t, std::uint32_t) { return nan_ns; }
bool LapiReference::pong(std::uint32_t) { return false; }
double LapiReference::rma(LapiRma, std::size_t, std::uint32_t, std::uint32_t) { return nan_ns; }
bool LapiReference::serve() { return false; }
bool LapiReference::finish() { return false; }
char *LapiReference::region() const { return nullptr; }

#else

namespace {

// The entry points the reference calls, bound by name from the library.
struct Lapi {
    decltype(&::LAPI_Init) Init;
    decltype(&::LAPI_Term) Term;
    decltype(&::LAPI_Msg_string) Msg_string;
    decltype(&::LAPI_Qenv) Qenv;
    decltype(&::LAPI_Senv) Senv;
    decltype(&::LAPI_Addr_set) Addr_set;
    decltype(&::LAPI_Amsend) Amsend;
    decltype(&::LAPI_Put) Put;
    decltype(&::LAPI_Get) Get;
    decltype(&::LAPI_Getcntr) Getcntr;
    decltype(&::LAPI_Setcntr) Setcntr;
};

// The library stays open for the life of the process: the conduit may
// hold the same one, and LAPI runs threads of its own.
bool lapi_load(const std::string &library, Lapi &l, std::string &why) {
    const std::string path = library.empty() ? "liblapi.so.1" : library;
    void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char *e = ::dlerror();
        why = "cannot open the LAPI library: " + (e != nullptr ? std::string(e) : path) +
              " (run under tests/softnic/lapi/softnic-run for the software LAPI)";
        return false;
    }
    using conduit::common::dl_bind;
    const bool ok = dl_bind(lib, "LAPI_Init", l.Init, why) & dl_bind(lib, "LAPI_Term", l.Term, why) &
                    dl_bind(lib, "LAPI_Msg_string", l.Msg_string, why) & dl_bind(lib, "LAPI_Qenv", l.Qenv, why) &
                    dl_bind(lib, "LAPI_Senv", l.Senv, why) & dl_bind(lib, "LAPI_Addr_set", l.Addr_set, why) &
                    dl_bind(lib, "LAPI_Amsend", l.Amsend, why) & dl_bind(lib, "LAPI_Put", l.Put, why) &
                    dl_bind(lib, "LAPI_Get", l.Get, why) & dl_bind(lib, "LAPI_Getcntr", l.Getcntr, why) &
                    dl_bind(lib, "LAPI_Setcntr", l.Setcntr, why);
    if (!ok) why = path + " is not a LAPI library: " + why;
    return ok;
}

// The header handler of pings, pongs and finish(): they carry nothing but
// the target counter they move.
void *reference_header(lapi_handle_t *, void *, uint *, ulong *, compl_hndlr_t **comp_h, void **user_info) {
    *comp_h = nullptr;
    *user_info = nullptr;
    return nullptr;
}

// The handles LAPI_Init gives are small numbers; a process's live one (it
// has one at most) is among the first few thousand.
constexpr lapi_handle_t handles_searched = 4096;

template <class T> T *address_of(std::uint64_t a) { return reinterpret_cast<T *>(static_cast<std::uintptr_t>(a)); }

} // namespace

struct LapiReference::State {
    Lapi l{};
    std::string library;
    lapi_handle_t handle = 0;
    bool open = false;      // a handle, ours or the conduit's
    bool own = false;       // ours: LAPI_Term at close
    bool handler = false;   // handler_index set
    bool polling = false;
    int task = 0, tasks = 0;
    PageBuffer region;
    lapi_cntr_t ping{};     // the peer's pings (or pongs) here
    lapi_cntr_t finish{};   // the peer's finish() here
    lapi_cntr_t done{};     // this side's transfers
    bool connected = false;
    LapiCard peer;

    ~State() { close(); }

    void close() {
        if (handler) l.Addr_set(handle, nullptr, handler_index);
        handler = false;
        if (own) l.Term(handle);
        own = open = connected = false;
    }

    bool failed(std::string &error, const char *call, int rc) {
        char text[LAPI_MAX_ERR_STRING + 1] = {};
        if (l.Msg_string(rc, text) != LAPI_SUCCESS || text[0] == '\0')
            std::snprintf(text, sizeof text, "LAPI return code %d", rc);
        error = std::string(call) + ": " + text;
        return false;
    }

    // An 8 B active message moving the peer's counter at `counter`.
    bool signal(std::uint64_t counter, std::string &error) {
        std::uint64_t word = 0;
        const int rc = l.Amsend(handle, peer.task, reinterpret_cast<void *>(std::intptr_t{handler_index}), &word,
                                sizeof word, nullptr, 0, address_of<lapi_cntr_t>(counter), nullptr, nullptr);
        return rc == LAPI_SUCCESS || failed(error, "LAPI_Amsend", rc);
    }

    // Until `counter` reached `value`, then takes that much off it.  It
    // polls LAPI_Getcntr, which runs the dispatcher, as the conduit's poll
    // does: LAPI_Waitcntr on the software LAPI sleeps on the task's
    // doorbell between dispatches, tens of microseconds per wake here.
    // Nothing else moves the counter meanwhile (the peer's next signal
    // answers this side's next one), so the subtraction is a store.
    bool wait(lapi_cntr_t &counter, int value, std::string &error) {
        int now = 0;
        do {
            if (const int rc = l.Getcntr(handle, &counter, &now); rc != LAPI_SUCCESS)
                return failed(error, "LAPI_Getcntr", rc);
        } while (now < value);
        const int rc = l.Setcntr(handle, &counter, now - value);
        return rc == LAPI_SUCCESS || failed(error, "LAPI_Setcntr", rc);
    }
};

LapiReference::LapiReference() = default;
LapiReference::~LapiReference() = default;

bool LapiReference::open(const std::string &library, bool polling, std::size_t region_bytes) {
    state_ = std::make_unique<State>();
    State &s = *state_;
    Lapi &l = s.l;
    if (!lapi_load(library, l, error_)) {
        state_.reset();  // nothing to close
        return false;
    }
    s.library = library.empty() ? "liblapi.so.1" : library;
    // The process's live handle, if it has one (LAPI_Qenv answers for it
    // alone); else one of its own.
    for (lapi_handle_t h = 0; h < handles_searched && !s.open; ++h) {
        if (l.Qenv(h, TASK_ID, &s.task) == LAPI_SUCCESS) {
            s.handle = h;
            s.open = true;
        }
    }
    int rc = LAPI_SUCCESS;
    if (!s.open) {
        lapi_info_t info{};
        if ((rc = l.Init(&s.handle, &info)) != LAPI_SUCCESS) return s.failed(error_, "LAPI_Init", rc);
        s.open = s.own = true;
    }
    if ((rc = l.Qenv(s.handle, TASK_ID, &s.task)) != LAPI_SUCCESS) return s.failed(error_, "LAPI_Qenv(TASK_ID)", rc);
    if ((rc = l.Qenv(s.handle, NUM_TASKS, &s.tasks)) != LAPI_SUCCESS)
        return s.failed(error_, "LAPI_Qenv(NUM_TASKS)", rc);
    s.polling = polling;
    if ((rc = l.Senv(s.handle, INTERRUPT_SET, polling ? 0 : 1)) != LAPI_SUCCESS)
        return s.failed(error_, polling ? "LAPI_Senv(INTERRUPT_SET, 0)" : "LAPI_Senv(INTERRUPT_SET, 1)", rc);
    if ((rc = l.Addr_set(s.handle, reinterpret_cast<void *>(&reference_header), handler_index)) != LAPI_SUCCESS)
        return s.failed(error_, "LAPI_Addr_set", rc);
    s.handler = true;
    if (!s.region.assign(region_bytes, 0)) {
        error_ = std::string("no memory for the region: ") + std::strerror(errno);
        return false;
    }
    return true;
}

LapiCard LapiReference::card() const {
    LapiCard c;
    if (!state_ || !state_->handler || !state_->region.data()) return c;
    const State &s = *state_;
    c.task = static_cast<std::uint32_t>(s.task);
    c.ping_counter = reinterpret_cast<std::uint64_t>(&s.ping);
    c.finish_counter = reinterpret_cast<std::uint64_t>(&s.finish);
    c.region = reinterpret_cast<std::uint64_t>(s.region.data());
    return c;
}

bool LapiReference::connect(const LapiCard &peer) {
    if (!state_ || !state_->handler || !state_->region.data()) return false;
    if (static_cast<int>(peer.task) >= state_->tasks || peer.ping_counter == 0 || peer.region == 0) {
        error_ = "connect: the peer's card is not one of this job's (task " + std::to_string(peer.task) + ")";
        return false;
    }
    state_->peer = peer;
    state_->connected = true;
    return true;
}

void LapiReference::close() {
    if (state_) state_->close();
}

std::string LapiReference::describe() const {
    if (!state_ || !state_->open) return "not open";
    const State &s = *state_;
    char b[200];
    std::snprintf(b, sizeof b, "LAPI task %d of %d, %s mode, %s handle %d (%s)", s.task, s.tasks,
                  s.polling ? "polling" : "interrupt", s.own ? "its own" : "the process's live", s.handle,
                  s.library.c_str());
    return b;
}

double LapiReference::ping(std::uint32_t n, std::uint32_t lead) {
    if (!state_ || !state_->connected || n <= lead) return nan_ns;
    State &s = *state_;
    double start = now_ns();
    for (std::uint32_t i = 0; i < n; ++i) {
        if (i == lead) start = now_ns();
        if (!s.signal(s.peer.ping_counter, error_) || !s.wait(s.ping, 1, error_)) return nan_ns;
    }
    return (now_ns() - start) / static_cast<double>(n - lead);
}

bool LapiReference::pong(std::uint32_t n) {
    if (!state_ || !state_->connected) return false;
    State &s = *state_;
    for (std::uint32_t i = 0; i < n; ++i)
        if (!s.wait(s.ping, 1, error_) || !s.signal(s.peer.ping_counter, error_)) return false;
    return true;
}

double LapiReference::rma(LapiRma op, std::size_t bytes, std::uint32_t count, std::uint32_t window) {
    if (!state_ || !state_->connected) return nan_ns;
    State &s = *state_;
    if (bytes == 0 || bytes > s.region.size() || window == 0 || window > largest_window) {
        error_ = "rma: a size or window out of range";
        return nan_ns;
    }
    auto *remote = address_of<void>(s.peer.region);
    void *local = s.region.data();
    const double start = now_ns();
    std::uint32_t issued = 0;
    while (issued < count) {
        const std::uint32_t k = std::min(window, count - issued);
        for (std::uint32_t i = 0; i < k; ++i) {
            const int rc = op == LapiRma::put ? s.l.Put(s.handle, s.peer.task, bytes, remote, local, nullptr, nullptr, &s.done)
                                              : s.l.Get(s.handle, s.peer.task, bytes, remote, local, nullptr, &s.done);
            if (rc != LAPI_SUCCESS) {
                // Those already issued complete before the counter is reused.
                std::string ignored;
                if (i) (void)s.wait(s.done, static_cast<int>(i), ignored);
                s.failed(error_, op == LapiRma::put ? "LAPI_Put" : "LAPI_Get", rc);
                return nan_ns;
            }
        }
        if (!s.wait(s.done, static_cast<int>(k), error_)) return nan_ns;
        issued += k;
    }
    return now_ns() - start;
}

bool LapiReference::serve() {
    return state_ && state_->connected && state_->wait(state_->finish, 1, error_);
}

bool LapiReference::finish() {
    return state_ && state_->connected && state_->signal(state_->peer.finish_counter, error_);
}

char *LapiReference::region() const { return state_ ? state_->region.data() : nullptr; }

#endif

} // namespace sluice::perf
