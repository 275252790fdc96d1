// tests/conduit/conduit_world.hpp - what the conformance suite needs to drive
// one conduit's Transport with no core: the conduits to test, a two-process
// (or loopback) world with a socketpair bootstrap or, started by mpirun, over
// the mpi bootstrap, and a record of what the deliver callback saw.
#pragma once

#include "conduits/transport.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sluice::rma::firehose {
class Registrar;
}

namespace conduit_test {

using sluice::conduit::Rank;
using sluice::conduit::Transport;
using sluice::base::Status;

// A conduit under test.  The one place that reads the registry: adapt this
// function when the registry's shape changes.
struct Conduit {
    std::string name;
    bool network = false;  // reaches other hosts: runs with two "hosts"
    std::unique_ptr<Transport> (*create)() = nullptr;
    // A network conduit as the only conduit of a one-rank job, carrying the
    // rank's messages to itself (a build without a same-host conduit).
    bool alone = false;
};
std::vector<Conduit> conduits_under_test();

// One message as deliver() handed it over (payload copied; for a Long,
// the bytes at its address when it was delivered).
struct Delivered {
    sluice::conduit::AmHeader header;
    std::vector<std::uint32_t> args;
    std::string payload;
    bool nested = false;  // delivered while another delivery ran
};

// The world of one rank: its transport, after init and segment attach.
struct World {
    Rank rank = 0, size = 1;
    Rank peer = 0;                     // the other rank, or myself in loopback
    Transport *t = nullptr;
    void *segment = nullptr;           // mine
    std::uint64_t peer_segment = 0;    // the peer's base, in its space
    std::size_t segment_size = 0;
    std::string rkey;                  // my segment's packed key
    std::vector<Delivered> delivered;  // every delivery, in order
    int in_deliver = 0;
    // Called for each delivery after it is recorded (tests that answer).
    std::function<void(World &, const Delivered &)> on_deliver;
    sluice::spawner::Bootstrap *bootstrap = nullptr;
    // On a conduit with needs_registration: firehose, installed as the
    // transport's local registrar (from the knobs), as core does.
    sluice::rma::firehose::Registrar *firehose = nullptr;

    // Polls until `n` messages were delivered, or 20 s (times
    // sluice_test::time_scale(): longer for a slow subset) passed with
    // none delivered: a lost message stalls and fails, a flood through
    // small queues on a loaded machine only takes longer.
    bool wait_delivered(std::size_t n);
    // Polls until the counter is 0, or that time passed with the counter
    // unchanged.
    bool wait_counter(const std::atomic<std::uint64_t> &c);
    static std::chrono::steady_clock::time_point deadline();
    bool barrier();  // bootstrap barrier, for phases of a test
    // A test that does not apply to this conduit (every rank must say so
    // alike, then return from the body): the test is reported skipped,
    // with `why`, not passed.
    void skip(const std::string &why) { skipped = why; }
    std::string skipped;
};

// What run_world returns, ahead of the reason, for a test every rank skipped.
inline constexpr const char *skipped_mark = "\x01skipped: ";

// The MPI-launched mode: SLUICE_SPAWNER=mpi, the process started by
// mpirun as one of 2 ranks (or alone, at 1).  The process is one rank and
// does not fork: libsluice-mpi is loaded, the mpi bootstrap started once,
// and the mpi conduit (or mpi_alone) is the only conduit under test.
// Otherwise (the fork mode) every rank is a forked child.
bool mpi_launched();

// How the conduit runs here: "pair" (two processes), "loopback" (one), or
// "" with `why` set when it cannot run at all.
std::string conduit_mode(const Conduit &c, std::string &why);

// Runs `body` on every rank of the conduit's world (forking for a pair);
// returns "" when every rank passed, skipped_mark and the reason when
// every rank skipped (World::skip), else what failed.  Test expectations
// inside `body` are GoogleTest's; a failing child exits non-zero.  In the
// MPI-launched mode it runs `body` in this process, as this rank, and a
// world that does not open ends the job (the peer waits in a collective).
std::string run_world(const Conduit &c, const std::function<void(World &)> &body);

} // namespace conduit_test
