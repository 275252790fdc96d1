// tests/softnic/lapi/rules.cpp - the software LAPI's rules, checked through
// the LAPI API as a conduit sees it.  First a job of two tasks (forked
// before either touches LAPI): active messages with and without data and
// completion handler, uhdr at MAX_UHDR_SZ and one byte over, the three
// counters, puts and gets of 8 B and 4 MiB, LAPI_Fence and LAPI_Gfence,
// LAPI_Address_init and LAPI_Addr_set indices, interrupt against polling
// mode, a header handler that communicates or blocks, a completion
// handler that runs after all of its data and off the dispatcher's
// thread, then task 1 dies and task 0 sees error codes, not a hang.  Then
// a job of three tasks with SOFTNIC_LAPI_COMPLETION_DELAY_US set: the
// address table, fences in rounds, completion handlers delayed.  Last, in
// one process, bad arguments and a job environment without MP_CHILD,
// MP_PROCS or MP_PARTITION.  Built by rules.sh against lapi.h and
// liblapi.so.1, run under softnic-run (which sets MP_PARTITION; this
// program sets MP_CHILD and MP_PROCS per task, as POE would).  `rules
// polling` runs every task in polling mode unless a rule says otherwise.
// Prints "ok: ..." per rule, exits non-zero if one is broken.
//
// hosts.sh runs the two-task job between two hosts: `rules A DIR` on one,
// `rules B DIR` on the other (each with [polling]), meeting through files
// in DIR; and `rules init` prints what LAPI_Init answers for a job of one
// task (exit 0 on success).
#include <lapi.h>

#include "../common/peer_channel.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int failures = 0;
std::string role;
lapi_handle_t hndl = -1;
bool polling = false;

void check(bool ok, const std::string &rule, const std::string &detail = "") {
    std::printf("%s: %s%s%s%s\n", ok ? "ok" : "FAIL", role.c_str(), rule.c_str(), detail.empty() ? "" : ": ",
                detail.c_str());
    if (!ok) ++failures;
}

std::string message(int rc) {
    char b[LAPI_MAX_ERR_STRING];
    LAPI_Msg_string(rc, b);
    return b;
}
// The code's name, as LAPI_Msg_string starts its message.
std::string name(int rc) {
    const std::string m = message(rc);
    return m.substr(0, m.find(':'));
}

[[noreturn]] void die(const std::string &what, int rc) {
    std::printf("FAIL: %s%s: %s\n", role.c_str(), what.c_str(), message(rc).c_str());
    std::fflush(stdout);
    _exit(1);
}
void must(int rc, const std::string &what) {
    if (rc != LAPI_SUCCESS) die(what, rc);
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void fill(unsigned char *p, std::size_t n, unsigned seed) {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(i * 131 + seed + (i >> 12));
}
bool matches(const unsigned char *p, std::size_t n, unsigned seed) {
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != static_cast<unsigned char>(i * 131 + seed + (i >> 12))) return false;
    return true;
}

int counter(lapi_cntr_t &c) {
    int v = -1;
    must(LAPI_Getcntr(hndl, &c, &v), "LAPI_Getcntr");
    return v;
}
void wait_counter(lapi_cntr_t &c, int n, const char *what) { must(LAPI_Waitcntr(hndl, &c, n, nullptr), what); }

// What two tasks tell each other out of band (common/peer_channel.hpp).
// hear() keeps calling LAPI_Probe while it waits, so a task in polling mode
// still serves its peer; hear_quiet() makes no LAPI call.  Both wait 30 s
// at most.
class Channel : softnic_common::PeerChannel {
public:
    using PeerChannel::PeerChannel;
    void tell(int v) {
        if (!PeerChannel::tell(&v, sizeof v)) broken();
    }
    int hear() { return receive(true); }
    int hear_quiet() { return receive(false); }

    int probe_error = LAPI_SUCCESS;  // what a LAPI_Probe in hear() returned, if not success

private:
    int receive(bool probe) {
        const std::int64_t end = now_ms() + 30000;
        while (now_ms() < end) {
            int v = 0;
            const softnic_common::Hearing h = try_hear(&v, sizeof v, probe ? 1 : 10);
            if (h == softnic_common::Hearing::heard) return v;
            if (h == softnic_common::Hearing::broken) broken();
            if (probe) {
                const int rc = LAPI_Probe(hndl);
                if (rc != LAPI_SUCCESS) probe_error = rc;
            }
        }
        broken();
    }
    [[noreturn]] static void broken() {
        std::printf("FAIL: %sthe exchange with the other task broke\n", role.c_str());
        std::fflush(stdout);
        _exit(1);
    }
};
Channel *peer = nullptr;

// stderr into a file while it lives, for the lines the library prints.
class StderrCapture {
public:
    StderrCapture() {
        char name[] = "/tmp/softnic-lapi-rules-XXXXXX";
        fd_ = mkstemp(name);
        path_ = name;
        std::fflush(stderr);
        saved_ = dup(2);
        dup2(fd_, 2);
    }
    ~StderrCapture() {
        dup2(saved_, 2);
        close(saved_);
        close(fd_);
        unlink(path_.c_str());
    }
    std::string text() const {
        std::string t;
        if (FILE *f = std::fopen(path_.c_str(), "r")) {
            char b[512];
            while (std::fgets(b, sizeof b, f)) t += b;
            std::fclose(f);
        }
        return t;
    }

private:
    int fd_ = -1, saved_ = -1;
    std::string path_;
};
std::atomic<StderrCapture *> capture{nullptr};

// ---- the target's side: handlers and what they saw ----

constexpr std::size_t big = 4u << 20;           // puts and gets
constexpr std::size_t am_bytes = (1u << 20) + 77;  // many packets, not a whole number of them
std::vector<unsigned char> received(big), window(big), source(big), landed(big);
lapi_cntr_t target_counter;  // the active messages' and puts' tgt_cntr at the target

std::atomic<int> header_runs{0}, completion_runs{0}, flag{0};
std::vector<unsigned char> seen_uhdr;
uint seen_uhdr_len = 0;
ulong seen_msg_len = 0;
pthread_t header_thread{}, completion_thread{}, main_thread{};
std::int64_t header_at = 0;
// The completion handler's findings.
std::atomic<bool> completion_bytes_ok{false};
std::atomic<int> completion_saw_counter{-1};
std::atomic<std::int64_t> completion_delay_ms{-1};
std::atomic<bool> completion_gate{false};  // it tells the origin it runs, and waits for its word
std::size_t expect_bytes = 0;
unsigned expect_seed = 0;
// Rules broken in handlers.
std::atomic<int> inner_rc{-1};
std::atomic<bool> reported_while_running{false};
std::atomic<int> error_handler_code{0}, error_handler_calls{0};

void on_error(lapi_handle_t *, int *code, lapi_err_t *, int *, int *) {
    error_handler_code = *code;
    ++error_handler_calls;
}

void *hh_plain(lapi_handle_t *, void *uhdr, uint *uhdr_len, ulong *msg_len, compl_hndlr_t **comp_h, void **) {
    seen_uhdr.assign(static_cast<unsigned char *>(uhdr), static_cast<unsigned char *>(uhdr) + *uhdr_len);
    seen_uhdr_len = *uhdr_len;
    seen_msg_len = *msg_len;
    header_thread = pthread_self();
    *comp_h = nullptr;
    ++header_runs;
    return *msg_len ? received.data() : nullptr;
}

void ch_check(lapi_handle_t *h, void *) {
    completion_thread = pthread_self();
    if (completion_gate) {
        peer->tell(1);  // running
        peer->hear_quiet();
    }
    completion_bytes_ok = seen_msg_len == expect_bytes && matches(received.data(), expect_bytes, expect_seed);
    int v = -1;
    LAPI_Getcntr(*h, &target_counter, &v);
    completion_saw_counter = v;
    completion_delay_ms = now_ms() - header_at;
    ++completion_runs;
}

void *hh_complete(lapi_handle_t *h, void *uhdr, uint *uhdr_len, ulong *msg_len, compl_hndlr_t **comp_h,
                  void **user_info) {
    void *buffer = hh_plain(h, uhdr, uhdr_len, msg_len, comp_h, user_info);
    header_at = now_ms();
    *comp_h = ch_check;
    return buffer;
}

void *hh_calls_amsend(lapi_handle_t *h, void *, uint *, ulong *, compl_hndlr_t **comp_h, void **) {
    inner_rc = LAPI_Amsend(*h, 0, reinterpret_cast<void *>(hh_plain), nullptr, 0, nullptr, 0, nullptr, nullptr,
                           nullptr);
    *comp_h = nullptr;
    ++header_runs;
    return nullptr;
}

long hh_limit_ms = 1000;
void *hh_blocks(lapi_handle_t *, void *, uint *, ulong *, compl_hndlr_t **comp_h, void **) {
    std::this_thread::sleep_for(std::chrono::milliseconds(hh_limit_ms + 1500));
    const StderrCapture *c = capture;
    reported_while_running = c && c->text().find("SOFTNIC_LAPI_HH_LIMIT_MS") != std::string::npos;
    *comp_h = nullptr;
    ++header_runs;
    return nullptr;
}

void *hh_flag(lapi_handle_t *, void *, uint *, ulong *, compl_hndlr_t **comp_h, void **) {
    flag = 1;
    *comp_h = nullptr;
    return nullptr;
}

enum Index { index_plain = 1, index_complete, index_calls_amsend, index_blocks, index_flag };
void *handler(Index i) { return reinterpret_cast<void *>(static_cast<std::uintptr_t>(i)); }

// Waits for the target counter, and tells what the waits returned besides
// success (the rule a handler broke shows there as the pending error).
std::string wait_target(int n, int &pending) {
    std::string other;
    for (int tries = 0; tries < 4; ++tries) {
        const int rc = LAPI_Waitcntr(hndl, &target_counter, n, nullptr);
        if (rc == LAPI_SUCCESS) return other;
        pending = rc;
        other += name(rc) + " ";
    }
    die("LAPI_Waitcntr on the target counter", pending);
}

// ---- the two-task job ----

struct Tables {
    void *counter[2];
    void *window[2];
    void *plain[2];  // hh_plain's address in each task
};

Tables setup(std::uint32_t me) {
    int v = -1;
    must(LAPI_Qenv(hndl, TASK_ID, &v), "LAPI_Qenv TASK_ID");
    int tasks = -1;
    must(LAPI_Qenv(hndl, NUM_TASKS, &tasks), "LAPI_Qenv NUM_TASKS");
    check(v == static_cast<int>(me) && tasks == 2, "TASK_ID and NUM_TASKS are MP_CHILD's and MP_PROCS'",
          std::to_string(v) + " of " + std::to_string(tasks));
    int mode = -1;
    must(LAPI_Qenv(hndl, INTERRUPT_SET, &mode), "LAPI_Qenv INTERRUPT_SET");
    check(mode == 1, "interrupt mode is the default (INTERRUPT_SET 1)", std::to_string(mode));
    if (polling) must(LAPI_Senv(hndl, INTERRUPT_SET, 0), "LAPI_Senv INTERRUPT_SET 0");
    must(LAPI_Addr_set(hndl, reinterpret_cast<void *>(hh_plain), index_plain), "LAPI_Addr_set");
    must(LAPI_Addr_set(hndl, reinterpret_cast<void *>(hh_complete), index_complete), "LAPI_Addr_set");
    must(LAPI_Addr_set(hndl, reinterpret_cast<void *>(hh_calls_amsend), index_calls_amsend), "LAPI_Addr_set");
    must(LAPI_Addr_set(hndl, reinterpret_cast<void *>(hh_blocks), index_blocks), "LAPI_Addr_set");
    must(LAPI_Addr_set(hndl, reinterpret_cast<void *>(hh_flag), index_flag), "LAPI_Addr_set");
    void *got = nullptr;
    int size = 0;
    must(LAPI_Qenv(hndl, LOC_ADDRTBL_SZ, &size), "LAPI_Qenv LOC_ADDRTBL_SZ");
    const int r0 = LAPI_Addr_set(hndl, reinterpret_cast<void *>(hh_plain), 0);
    const int rn = LAPI_Addr_set(hndl, reinterpret_cast<void *>(hh_plain), size);
    check(LAPI_Addr_get(hndl, &got, index_complete) == LAPI_SUCCESS && got == reinterpret_cast<void *>(hh_complete) &&
              r0 == LAPI_ERR_ADDR_HNDL_RANGE && rn == LAPI_ERR_ADDR_HNDL_RANGE,
          "LAPI_Addr_get gives what LAPI_Addr_set set; indices 0 and LOC_ADDRTBL_SZ are refused",
          name(r0) + ", " + name(rn));
    Tables t{};
    must(LAPI_Address_init(hndl, &target_counter, t.counter), "LAPI_Address_init");
    must(LAPI_Address_init(hndl, window.data(), t.window), "LAPI_Address_init");
    must(LAPI_Address_init(hndl, reinterpret_cast<void *>(hh_plain), t.plain), "LAPI_Address_init");
    void *mine[2] = {};
    must(LAPI_Address_init(hndl, reinterpret_cast<void *>(0x5100u + me), mine), "LAPI_Address_init");
    check(mine[0] == reinterpret_cast<void *>(0x5100) && mine[1] == reinterpret_cast<void *>(0x5101),
          "LAPI_Address_init: entry i is what task i gave");
    must(LAPI_Gfence(hndl), "LAPI_Gfence");
    return t;
}

// Task 0, the origin of every transfer; task 1 the target.
void origin_active_messages(const Tables &t) {
    lapi_cntr_t org{}, cmpl{};
    // No data, no completion handler, the header handler named by index.
    char hello[] = "hello, task 1";
    must(LAPI_Amsend(hndl, 1, handler(index_plain), hello, sizeof hello, nullptr, 0,
                     static_cast<lapi_cntr_t *>(t.counter[1]), &org, &cmpl),
         "LAPI_Amsend");
    wait_counter(cmpl, 1, "LAPI_Waitcntr cmpl_cntr");
    check(counter(org) == 1, "an active message without data: org_cntr and cmpl_cntr each reach 1");
    LAPI_Setcntr(hndl, &org, 0);
    peer->hear();

    // 1 MiB and a bit, in many packets, the handler by its address at the
    // target; the buffer is reused once org_cntr says so.
    fill(source.data(), am_bytes, 3);
    std::uint64_t tag = 0x7a6;
    must(LAPI_Amsend(hndl, 1, t.plain[1], &tag, sizeof tag, source.data(), am_bytes,
                     static_cast<lapi_cntr_t *>(t.counter[1]), &org, &cmpl),
         "LAPI_Amsend (1 MiB)");
    wait_counter(org, 1, "LAPI_Waitcntr org_cntr");
    std::memset(source.data(), 0xee, am_bytes);
    wait_counter(cmpl, 1, "LAPI_Waitcntr cmpl_cntr");
    peer->hear();

    // With a completion handler that waits for our word: cmpl_cntr must not
    // move before it returns.
    fill(source.data(), am_bytes, 5);
    must(LAPI_Amsend(hndl, 1, handler(index_complete), &tag, sizeof tag, source.data(), am_bytes,
                     static_cast<lapi_cntr_t *>(t.counter[1]), &org, &cmpl),
         "LAPI_Amsend (completion handler)");
    wait_counter(org, 1, "LAPI_Waitcntr org_cntr");
    peer->hear();  // the completion handler runs
    for (int i = 0; i < 200; ++i) LAPI_Probe(hndl), std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int early = counter(cmpl);
    peer->tell(1);
    wait_counter(cmpl, 1, "LAPI_Waitcntr cmpl_cntr");
    check(early == 0, "cmpl_cntr stays 0 while the target's completion handler has not returned",
          std::to_string(early));
    peer->hear();

    // uhdr at MAX_UHDR_SZ, then one byte over.
    int max = 0;
    must(LAPI_Qenv(hndl, MAX_UHDR_SZ, &max), "LAPI_Qenv MAX_UHDR_SZ");
    std::vector<unsigned char> uhdr(static_cast<std::size_t>(max) + 1);
    fill(uhdr.data(), uhdr.size(), 9);
    const int at_max = LAPI_Amsend(hndl, 1, handler(index_plain), uhdr.data(), static_cast<uint>(max), nullptr, 0,
                                   static_cast<lapi_cntr_t *>(t.counter[1]), nullptr, &cmpl);
    if (at_max == LAPI_SUCCESS) wait_counter(cmpl, 1, "LAPI_Waitcntr cmpl_cntr");
    const int over = LAPI_Amsend(hndl, 1, handler(index_plain), uhdr.data(), static_cast<uint>(max) + 1, nullptr, 0,
                                 nullptr, nullptr, nullptr);
    check(at_max == LAPI_SUCCESS && over == LAPI_ERR_UHDR_LEN && name(over) == "LAPI_ERR_UHDR_LEN",
          "uhdr_len = MAX_UHDR_SZ (" + std::to_string(max) + ") is sent; one byte more is LAPI_ERR_UHDR_LEN",
          message(over));
    peer->hear();
}

void target_active_messages() {
    int pending = 0;
    wait_target(1, pending);
    check(header_runs == 1 && seen_msg_len == 0 && seen_uhdr.size() == 14 &&
              std::memcmp(seen_uhdr.data(), "hello, task 1", 14) == 0,
          "an active message without data: the header handler gets its uhdr and msg_len 0; tgt_cntr reaches 1");
    peer->tell(1);

    wait_target(1, pending);
    check(header_runs == 2 && seen_msg_len == am_bytes && matches(received.data(), am_bytes, 3),
          "1 MiB and 77 B of active message data land whole once tgt_cntr moves, the buffer reused after org_cntr");
    // What the completion handler expects is in place before the origin
    // hears it may send.
    expect_bytes = am_bytes;
    expect_seed = 5;
    completion_runs = 0;
    completion_gate = true;
    peer->tell(1);

    wait_target(1, pending);
    completion_gate = false;
    check(completion_runs == 1 && completion_bytes_ok,
          "the completion handler runs once all of its multi-packet data is in place");
    check(completion_saw_counter == 0, "tgt_cntr moves only after the completion handler ran",
          "it saw " + std::to_string(completion_saw_counter.load()));
    check(!pthread_equal(completion_thread, header_thread) && !pthread_equal(completion_thread, main_thread),
          "the completion handler runs on its own thread, not the dispatcher's nor the program's");
    peer->tell(1);

    int max = 0;
    LAPI_Qenv(hndl, MAX_UHDR_SZ, &max);
    wait_target(1, pending);
    check(seen_uhdr_len == static_cast<uint>(max) && matches(seen_uhdr.data(), seen_uhdr.size(), 9),
          "a uhdr of MAX_UHDR_SZ bytes reaches the header handler whole");
    peer->tell(1);
}

void origin_put_get(const Tables &t) {
    for (const std::size_t n : {std::size_t{8}, big}) {
        const std::string size = n == 8 ? "8 B" : "4 MiB";
        lapi_cntr_t org{}, cmpl{};
        fill(source.data(), n, 11);
        must(LAPI_Put(hndl, 1, n, t.window[1], source.data(), static_cast<lapi_cntr_t *>(t.counter[1]), &org, &cmpl),
             "LAPI_Put");
        wait_counter(cmpl, 1, "LAPI_Waitcntr cmpl_cntr");
        check(counter(org) == 1, "LAPI_Put of " + size + ": org_cntr and cmpl_cntr reach 1");
        peer->hear();
        lapi_cntr_t got{};
        std::memset(landed.data(), 0, n);
        must(LAPI_Get(hndl, 1, n, t.window[1], landed.data(), static_cast<lapi_cntr_t *>(t.counter[1]), &got),
             "LAPI_Get");
        wait_counter(got, 1, "LAPI_Waitcntr org_cntr");
        check(matches(landed.data(), n, 13), "LAPI_Get of " + size + ": the target's bytes are here when org_cntr moves");
        peer->hear();
    }
}

void target_put_get() {
    int pending = 0;
    for (const std::size_t n : {std::size_t{8}, big}) {
        wait_target(1, pending);
        check(matches(window.data(), n, 11), "a put's bytes are in place when tgt_cntr moves");
        fill(window.data(), n, 13);
        peer->tell(1);
        wait_target(1, pending);
        check(true, "a get's tgt_cntr moves at its target");
        peer->tell(1);
    }
}

// Fences, with the target in interrupt mode making no LAPI call: only what
// the fence waited for can be there.
void origin_fences(const Tables &t) {
    peer->hear();
    for (int i = 0; i < 16; ++i) {
        fill(source.data() + i * 65536, 65536, 20 + i);
        must(LAPI_Put(hndl, 1, 65536, static_cast<unsigned char *>(t.window[1]) + i * 65536, source.data() + i * 65536,
                      nullptr, nullptr, nullptr),
             "LAPI_Put");
    }
    must(LAPI_Fence(hndl), "LAPI_Fence");
    peer->tell(1);
    peer->hear();

    fill(source.data(), 65536, 40);
    must(LAPI_Put(hndl, 1, 65536, t.window[1], source.data(), nullptr, nullptr, nullptr), "LAPI_Put");
    must(LAPI_Gfence(hndl), "LAPI_Gfence");
    check(matches(window.data(), 65536, 41), "after LAPI_Gfence the other task's put to this one is in place");
}

void target_fences(const Tables &t) {
    must(LAPI_Senv(hndl, INTERRUPT_SET, 1), "LAPI_Senv INTERRUPT_SET 1");
    peer->tell(1);
    peer->hear_quiet();
    bool all = true;
    for (int i = 0; i < 16; ++i) all = all && matches(window.data() + i * 65536, 65536, 20 + i);
    check(all, "after the origin's LAPI_Fence its 16 puts are in place here (no LAPI call made meanwhile)");
    if (polling) must(LAPI_Senv(hndl, INTERRUPT_SET, 0), "LAPI_Senv INTERRUPT_SET 0");
    peer->tell(1);

    fill(source.data(), 65536, 41);
    must(LAPI_Put(hndl, 0, 65536, t.window[0], source.data(), nullptr, nullptr, nullptr), "LAPI_Put");
    must(LAPI_Gfence(hndl), "LAPI_Gfence");
    check(matches(window.data(), 65536, 40), "after LAPI_Gfence the other task's put to this one is in place");
}

// Interrupt mode runs header handlers for a task that makes no LAPI call;
// polling mode waits for its calls.
void origin_modes() {
    lapi_cntr_t org{}, cmpl{};
    peer->hear();  // the target computes, in interrupt mode
    must(LAPI_Amsend(hndl, 1, handler(index_flag), nullptr, 0, nullptr, 0, nullptr, nullptr, &cmpl), "LAPI_Amsend");
    wait_counter(cmpl, 1, "LAPI_Waitcntr cmpl_cntr");
    peer->hear();  // the target is in polling mode
    must(LAPI_Amsend(hndl, 1, handler(index_flag), nullptr, 0, nullptr, 0, nullptr, &org, &cmpl), "LAPI_Amsend");
    wait_counter(org, 1, "LAPI_Waitcntr org_cntr");
    peer->tell(1);  // it is in the target's ring
    wait_counter(cmpl, 1, "LAPI_Waitcntr cmpl_cntr");
    peer->hear();
}

void target_modes() {
    must(LAPI_Senv(hndl, INTERRUPT_SET, 1), "LAPI_Senv INTERRUPT_SET 1");
    flag = 0;
    peer->tell(1);
    const std::int64_t start = now_ms();
    while (!flag && now_ms() - start < 20000) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    check(flag == 1, "interrupt mode: the header handler runs while the task sleeps without calling LAPI");

    must(LAPI_Senv(hndl, INTERRUPT_SET, 0), "LAPI_Senv INTERRUPT_SET 0");
    int mode = -1;
    LAPI_Qenv(hndl, INTERRUPT_SET, &mode);
    flag = 0;
    peer->tell(1);
    peer->hear_quiet();  // the message is in our ring
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    const int before = flag;
    int probes = 0;
    while (!flag && probes < 20000) {
        must(LAPI_Probe(hndl), "LAPI_Probe");
        ++probes;
        if (!flag) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    check(mode == 0 && before == 0 && flag == 1,
          "polling mode: the header handler waits 1 s for the task's LAPI_Probe, then runs",
          std::to_string(probes) + " probe(s)");
    if (!polling) must(LAPI_Senv(hndl, INTERRUPT_SET, 1), "LAPI_Senv INTERRUPT_SET 1");
    peer->tell(1);
}

// Header handlers that break the rules.
void origin_broken_handlers(const Tables &t) {
    lapi_cntr_t cmpl{};
    peer->hear();
    must(LAPI_Amsend(hndl, 1, handler(index_calls_amsend), nullptr, 0, nullptr, 0,
                     static_cast<lapi_cntr_t *>(t.counter[1]), nullptr, &cmpl),
         "LAPI_Amsend");
    wait_counter(cmpl, 1, "LAPI_Waitcntr cmpl_cntr");
    peer->hear();
    must(LAPI_Amsend(hndl, 1, handler(index_blocks), nullptr, 0, nullptr, 0, static_cast<lapi_cntr_t *>(t.counter[1]),
                     nullptr, &cmpl),
         "LAPI_Amsend");
    wait_counter(cmpl, 1, "LAPI_Waitcntr cmpl_cntr");
    peer->hear();
}

void target_broken_handlers() {
    {
        StderrCapture c;
        capture = &c;
        error_handler_calls = 0;
        peer->tell(1);
        int pending = 0;
        wait_target(1, pending);
        if (!pending) pending = LAPI_Probe(hndl);
        const std::string said = c.text();
        capture = nullptr;
        check(inner_rc == LAPI_ERR_HDR_HNDLR_COMM, "LAPI_Amsend called in a header handler returns LAPI_ERR_HDR_HNDLR_COMM",
              name(inner_rc));
        check(said.find("LAPI_Amsend was called from a header handler") != std::string::npos &&
                  said.find('\n') == said.size() - 1,
              "... and the library says so in one line on stderr", said.substr(0, said.find('\n')));
        check(pending == LAPI_ERR_HDR_HNDLR_COMM && error_handler_code == LAPI_ERR_HDR_HNDLR_COMM,
              "... and the program's next call and its error handler get the code too", name(pending));
    }
    {
        StderrCapture c;
        capture = &c;
        peer->tell(1);
        int pending = 0;
        wait_target(1, pending);
        if (!pending) pending = LAPI_Probe(hndl);
        const std::string said = c.text();
        capture = nullptr;
        check(reported_while_running,
              "a header handler running past SOFTNIC_LAPI_HH_LIMIT_MS is reported while it still runs",
              said.substr(0, said.find('\n')));
        check(pending == LAPI_ERR_HDR_HNDLR_SLOW && error_handler_code == LAPI_ERR_HDR_HNDLR_SLOW,
              "... and the program's next call and its error handler get LAPI_ERR_HDR_HNDLR_SLOW", name(pending));
    }
    peer->tell(1);
}

// Bad arguments (task 0, the job live).
void rules_arguments(const Tables &t) {
    lapi_cntr_t c{};
    int v = 0;
    char b[64];
    void *tab[2];
    lapi_info_t info{};
    lapi_handle_t other = -1;
    struct Case {
        const char *call;
        int rc, want;
    };
    const Case cases[] = {
        {"LAPI_Qenv on a handle LAPI_Init did not give", LAPI_Qenv(hndl + 1000, TASK_ID, &v), LAPI_ERR_HNDL_INVALID},
        {"LAPI_Amsend to task NUM_TASKS",
         LAPI_Amsend(hndl, 2, handler(index_plain), nullptr, 0, nullptr, 0, nullptr, nullptr, nullptr), LAPI_ERR_TGT},
        {"LAPI_Amsend without a header handler", LAPI_Amsend(hndl, 1, nullptr, nullptr, 0, nullptr, 0, nullptr, nullptr, nullptr),
         LAPI_ERR_HDR_HNDL_NULL},
        {"LAPI_Amsend with uhdr NULL and uhdr_len 8",
         LAPI_Amsend(hndl, 1, handler(index_plain), nullptr, 8, nullptr, 0, nullptr, nullptr, nullptr), LAPI_ERR_UHDR_NULL},
        {"LAPI_Amsend with udata NULL and udata_len 8",
         LAPI_Amsend(hndl, 1, handler(index_plain), nullptr, 0, nullptr, 8, nullptr, nullptr, nullptr), LAPI_ERR_UDATA_NULL},
        {"LAPI_Amsend of more than LAPI_MAX_MSG_SZ",
         LAPI_Amsend(hndl, 1, handler(index_plain), nullptr, 0, source.data(), LAPI_MAX_MSG_SZ + 1, nullptr, nullptr, nullptr),
         LAPI_ERR_DATA_LEN},
        {"LAPI_Put with tgt_addr NULL", LAPI_Put(hndl, 1, 8, nullptr, source.data(), nullptr, nullptr, nullptr),
         LAPI_ERR_TGT_ADDR_NULL},
        {"LAPI_Put with org_addr NULL", LAPI_Put(hndl, 1, 8, t.window[1], nullptr, nullptr, nullptr, nullptr),
         LAPI_ERR_ORG_ADDR_NULL},
        {"LAPI_Get from task NUM_TASKS", LAPI_Get(hndl, 7, 8, t.window[1], landed.data(), nullptr, nullptr), LAPI_ERR_TGT},
        {"LAPI_Get into org_addr NULL", LAPI_Get(hndl, 1, 8, t.window[1], nullptr, nullptr, nullptr),
         LAPI_ERR_ORG_ADDR_NULL},
        {"LAPI_Waitcntr on a NULL counter", LAPI_Waitcntr(hndl, nullptr, 1, nullptr), LAPI_ERR_CNTR_NULL},
        {"LAPI_Setcntr on a NULL counter", LAPI_Setcntr(hndl, nullptr, 1), LAPI_ERR_CNTR_NULL},
        {"LAPI_Getcntr into NULL", LAPI_Getcntr(hndl, &c, nullptr), LAPI_ERR_RET_PTR_NULL},
        {"LAPI_Qenv of an unknown query", LAPI_Qenv(hndl, static_cast<lapi_query_t>(99), &v), LAPI_ERR_QUERY_TYPE},
        {"LAPI_Qenv into NULL", LAPI_Qenv(hndl, NUM_TASKS, nullptr), LAPI_ERR_RET_PTR_NULL},
        {"LAPI_Senv of TASK_ID", LAPI_Senv(hndl, TASK_ID, 3), LAPI_ERR_QUERY_TYPE},
        {"LAPI_Senv INTERRUPT_SET 7", LAPI_Senv(hndl, INTERRUPT_SET, 7), LAPI_ERR_SET_VAL},
        {"LAPI_Addr_get index 300", LAPI_Addr_get(hndl, tab, 300), LAPI_ERR_ADDR_HNDL_RANGE},
        {"LAPI_Addr_get into NULL", LAPI_Addr_get(hndl, nullptr, 1), LAPI_ERR_RET_PTR_NULL},
        {"LAPI_Address_init into a NULL table", LAPI_Address_init(hndl, nullptr, nullptr), LAPI_ERR_ADDR_TBL_NULL},
        {"LAPI_Msg_string into NULL", LAPI_Msg_string(LAPI_ERR_TGT, nullptr), LAPI_ERR_RET_PTR_NULL},
        {"LAPI_Init with lapi_info NULL", LAPI_Init(&other, nullptr), LAPI_ERR_INFO_NULL},
        {"LAPI_Init while this process has a live handle", LAPI_Init(&other, &info), LAPI_ERR_ALL_HNDL_IN_USE},
    };
    bool all = true;
    std::string wrong;
    for (const Case &k : cases)
        if (k.rc != k.want || message(k.rc).rfind(name(k.want) + ": ", 0) != 0) {
            all = false;
            wrong += std::string(k.call) + " gave " + name(k.rc) + " (want " + name(k.want) + "); ";
        }
    check(all, std::to_string(sizeof cases / sizeof cases[0]) +
                   " bad arguments each return their documented code, and LAPI_Msg_string names it",
          wrong);
    const int unknown = LAPI_Msg_string(12345, b);
    check(unknown == LAPI_ERR_CODE_UNKNOWN, "LAPI_Msg_string of a code that is none: LAPI_ERR_CODE_UNKNOWN", b);
    info.reserved[2] = 1;
    const int nonzero = LAPI_Init(&other, &info);
    check(nonzero == LAPI_ERR_INFO_NONZERO_INFO, "LAPI_Init with a reserved field set: LAPI_ERR_INFO_NONZERO_INFO",
          name(nonzero));
}

// Task 1 is dead (reaped): calls to it return error codes, waits end.
void rules_dead_peer(const Tables &t) {
    lapi_cntr_t never{};
    const std::int64_t start = now_ms();
    const int am = LAPI_Amsend(hndl, 1, handler(index_plain), nullptr, 0, nullptr, 0, nullptr, nullptr, nullptr);
    const int put = LAPI_Put(hndl, 1, 8, t.window[1], source.data(), nullptr, nullptr, nullptr);
    const int get = LAPI_Get(hndl, 1, 8, t.window[1], landed.data(), nullptr, nullptr);
    check(am == LAPI_ERR_TGT_PURGED && put == LAPI_ERR_TGT_PURGED && get == LAPI_ERR_TGT_PURGED,
          "LAPI_Amsend, LAPI_Put and LAPI_Get to a task that died: LAPI_ERR_TGT_PURGED",
          name(am) + ", " + name(put) + ", " + name(get));
    const int wait = LAPI_Waitcntr(hndl, &never, 1, nullptr);
    const int gfence = LAPI_Gfence(hndl);
    check(wait == LAPI_ERR_TGT_PURGED && gfence == LAPI_ERR_TGT_PURGED && now_ms() - start < 20000,
          "LAPI_Waitcntr and LAPI_Gfence with a task dead end with LAPI_ERR_TGT_PURGED, not a hang",
          name(wait) + ", " + name(gfence) + " in " + std::to_string(now_ms() - start) + " ms");
}

void start_task(std::uint32_t me, std::uint32_t tasks, bool with_error_handler) {
    setenv("MP_CHILD", std::to_string(me).c_str(), 1);
    setenv("MP_PROCS", std::to_string(tasks).c_str(), 1);
    lapi_info_t info{};
    if (with_error_handler) info.err_hndlr = on_error;
    must(LAPI_Init(&hndl, &info), "LAPI_Init");
    main_thread = pthread_self();
}

// Task 0 returns task 1's pid, its own handle live, with the tables it
// learnt; task 1 dies.
int run_pair_task(std::uint32_t me, Channel &c, Tables &t) {
    role = "task " + std::to_string(me) + ": ";
    peer = &c;
    start_task(me, 2, true);
    t = setup(me);
    if (me == 0) {
        origin_active_messages(t);
        origin_put_get(t);
        origin_fences(t);
        origin_modes();
        origin_broken_handlers(t);
        rules_arguments(t);
        return c.hear();  // task 1 is about to die: its pid
    }
    target_active_messages();
    target_put_get();
    target_fences(t);
    target_modes();
    target_broken_handlers();
    c.tell(static_cast<int>(getpid()));
    // Dies without LAPI_Term.
    std::fflush(stdout);
    _exit(failures ? 1 : 0);
}

// ---- the three-task job ----

std::atomic<int> timed_runs{0};
std::atomic<std::int64_t> shortest_delay{1 << 30};
std::atomic<bool> timed_bytes_ok{true};
std::vector<unsigned char> lanes(3 * 65536);
lapi_cntr_t lane_counter;

struct Lane {
    unsigned from;
    std::int64_t header_at;
};
Lane lane_info[3];

void ch_timed(lapi_handle_t *, void *info) {
    Lane *l = static_cast<Lane *>(info);
    const std::int64_t waited = now_ms() - l->header_at;
    if (waited < shortest_delay) shortest_delay = waited;
    if (!matches(lanes.data() + l->from * 65536, 65536, 60 + l->from)) timed_bytes_ok = false;
    ++timed_runs;
}

void *hh_timed(lapi_handle_t *, void *uhdr, uint *, ulong *, compl_hndlr_t **comp_h, void **user_info) {
    unsigned from = 0;
    std::memcpy(&from, uhdr, sizeof from);
    lane_info[from] = Lane{from, now_ms()};
    *comp_h = ch_timed;
    *user_info = &lane_info[from];
    return lanes.data() + from * 65536;
}

int run_trio_task(std::uint32_t me) {
    role = "task " + std::to_string(me) + " of 3: ";
    start_task(me, 3, false);
    if (polling) must(LAPI_Senv(hndl, INTERRUPT_SET, 0), "LAPI_Senv INTERRUPT_SET 0");
    void *values[3] = {}, *counters[3] = {}, *lane_tab[3] = {};
    must(LAPI_Address_init(hndl, reinterpret_cast<void *>(0x7000u + 16 * me), values), "LAPI_Address_init");
    check(values[0] == reinterpret_cast<void *>(0x7000) && values[1] == reinterpret_cast<void *>(0x7010) &&
              values[2] == reinterpret_cast<void *>(0x7020),
          "LAPI_Address_init among three tasks: entry i is what task i gave");
    must(LAPI_Address_init(hndl, &lane_counter, counters), "LAPI_Address_init");
    must(LAPI_Address_init(hndl, window.data(), lane_tab), "LAPI_Address_init");

    // Every task sends to every task, itself too, with a completion handler
    // that SOFTNIC_LAPI_COMPLETION_DELAY_US (300 ms here) delays.
    fill(source.data(), 65536, 60 + me);
    lapi_cntr_t org{};
    for (std::uint32_t t = 0; t < 3; ++t)
        must(LAPI_Amsend(hndl, t, reinterpret_cast<void *>(hh_timed), &me, sizeof me, source.data(), 65536,
                         static_cast<lapi_cntr_t *>(counters[t]), &org, nullptr),
             "LAPI_Amsend");
    wait_counter(org, 3, "LAPI_Waitcntr org_cntr");
    wait_counter(lane_counter, 3, "LAPI_Waitcntr tgt_cntr");
    check(timed_runs == 3 && timed_bytes_ok, "active messages from all three tasks complete with their data");
    check(shortest_delay >= 300, "SOFTNIC_LAPI_COMPLETION_DELAY_US=300000 holds each completion handler back",
          "the shortest wait from header to completion handler was " + std::to_string(shortest_delay.load()) + " ms");

    // Fences in rounds: each task puts to the next, then all fence.
    bool rounds = true;
    for (unsigned round = 1; round <= 3; ++round) {
        const std::uint32_t next = (me + 1) % 3, before = (me + 2) % 3;
        fill(source.data(), 4096, 100 * round + me);
        must(LAPI_Put(hndl, next, 4096, lane_tab[next], source.data(), nullptr, nullptr, nullptr), "LAPI_Put");
        must(LAPI_Gfence(hndl), "LAPI_Gfence");
        rounds = rounds && matches(window.data(), 4096, 100 * round + before);
        must(LAPI_Gfence(hndl), "LAPI_Gfence");
    }
    check(rounds, "three rounds of put then LAPI_Gfence: each round's data is in place after its fence");
    must(LAPI_Term(hndl), "LAPI_Term");
    return failures ? 1 : 0;
}

// ---- one process: the job's environment ----

void rules_environment() {
    role = "";
    const std::string partition = std::getenv("MP_PARTITION");
    struct Case {
        const char *rule;
        const char *child, *procs, *part;
        int want;
        const char *named;
    };
    const Case cases[] = {
        {"no MP_CHILD", nullptr, "2", partition.c_str(), LAPI_ERR_ENV_MP_CHILD, "MP_CHILD"},
        {"MP_CHILD=5 with MP_PROCS=2", "5", "2", partition.c_str(), LAPI_ERR_ENV_MP_CHILD, "MP_CHILD"},
        {"MP_PROCS=many", "0", "many", partition.c_str(), LAPI_ERR_ENV_MP_PROCS, "MP_PROCS"},
        {"no MP_PARTITION", "0", "2", nullptr, LAPI_ERR_ENV_MP_PARTITION, "MP_PARTITION"},
    };
    for (const Case &k : cases) {
        auto set = [](const char *n, const char *v) { v ? setenv(n, v, 1) : unsetenv(n); };
        set("MP_CHILD", k.child);
        set("MP_PROCS", k.procs);
        set("MP_PARTITION", k.part);
        lapi_info_t info{};
        lapi_handle_t h = -1;
        const int rc = LAPI_Init(&h, &info);
        const std::string m = message(rc);
        check(rc == k.want && m.find(k.named) != std::string::npos,
              std::string("LAPI_Init with ") + k.rule + ": an error naming " + k.named, m);
    }
    setenv("MP_PARTITION", partition.c_str(), 1);
}

// A job of one task: what LAPI_Init answers (hosts.sh, on each host).
int init_only() {
    setenv("MP_CHILD", "0", 1);
    setenv("MP_PROCS", "1", 1);
    lapi_info_t info{};
    const int rc = LAPI_Init(&hndl, &info);
    std::printf("LAPI_Init: %s\n", name(rc).c_str());
    if (rc == LAPI_SUCCESS) LAPI_Term(hndl);
    return rc == LAPI_SUCCESS ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    // rules [polling], or one task of the two-task job on each host:
    // rules A|B DIR [polling].
    const bool hosts = argc >= 3 && (std::strcmp(argv[1], "A") == 0 || std::strcmp(argv[1], "B") == 0);
    const int rest = hosts ? 3 : 1;
    polling = argc == rest + 1 && std::strcmp(argv[rest], "polling") == 0;
    const bool init = argc == 2 && std::strcmp(argv[1], "init") == 0;
    if (argc > rest + 1 || (argc == rest + 1 && !polling && !init)) {
        std::printf("usage: rules [A|B DIR] [polling] | rules init\n");
        return 2;
    }
    // The job's key comes from POE (here softnic-run): without it LAPI_Init
    // fails in both tasks, and the program ends there.
    const std::string partition = std::getenv("MP_PARTITION") ? std::getenv("MP_PARTITION") : "";
    setenv("SOFTNIC_LAPI_HH_LIMIT_MS", std::to_string(hh_limit_ms).c_str(), 1);
    setenv("SOFTNIC_LAPI_COMPLETION_DELAY_US", "0", 1);

    if (argc == 2 && std::strcmp(argv[1], "init") == 0) return init_only();
    Tables t{};
    if (hosts) {
        const bool a = argv[1][0] == 'A';
        Channel c(argv[2], a ? "a" : "b", a ? "b" : "a");
        const int dying = run_pair_task(a ? 0 : 1, c, t);
        // Another host's process: gone once its pid is (one pid space).
        for (int i = 0; i < 2000 && kill(dying, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        rules_dead_peer(t);
        must(LAPI_Term(hndl), "LAPI_Term");
        std::printf("%d rule(s) broken\n", failures);
        return failures ? 1 : 0;
    }
    int ab[2], ba[2];
    if (pipe(ab) || pipe(ba)) return 1;
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        Channel c(ab[0], ba[1]);
        _exit(run_pair_task(1, c, t));
    }
    Channel c(ba[0], ab[1]);
    run_pair_task(0, c, t);
    int status = 0;
    waitpid(child, &status, 0);
    role = "task 0: ";
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "task 1's rules hold");
    rules_dead_peer(t);
    const lapi_handle_t old = hndl;
    must(LAPI_Term(hndl), "LAPI_Term");
    int v = 0;
    const int after = LAPI_Qenv(old, TASK_ID, &v);
    check(after == LAPI_ERR_HNDL_INVALID, "a handle after LAPI_Term: LAPI_ERR_HNDL_INVALID", name(after));

    // A job of three, under the same fabric with a key of its own.
    setenv("MP_PARTITION", std::to_string(std::stoull(partition) + 1).c_str(), 1);
    setenv("SOFTNIC_LAPI_COMPLETION_DELAY_US", "300000", 1);
    pid_t trio[2];
    for (std::uint32_t me = 1; me <= 2; ++me) {
        trio[me - 1] = fork();
        if (trio[me - 1] == 0) {
            failures = 0;  // its own, not the parent's so far
            _exit(run_trio_task(me));
        }
    }
    run_trio_task(0);
    for (const pid_t p : trio) {
        waitpid(p, &status, 0);
        role = "";
        check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other tasks of three hold their rules");
    }
    setenv("MP_PARTITION", partition.c_str(), 1);
    rules_environment();
    std::printf("%d rule(s) broken\n", failures);
    return failures ? 1 : 0;
}
