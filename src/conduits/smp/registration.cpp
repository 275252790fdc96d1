// src/conduits/smp/registration.cpp - the smp conduit in the registry: what
// it is, whether it can run here, and its limits for sluice-info.
#include "conduits/registry.hpp"
#include "conduits/smp/smp.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace sluice::conduit::smp {
namespace {

// The rings and segments are POSIX shared memory: create and remove an
// object of our own (a full or missing /dev/shm shows here).
std::string probe() {
    const std::string name = "/sluice-probe-" + std::to_string(::getpid());
    const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) return std::string("shm_open failed: ") + std::strerror(errno) + " (is /dev/shm mounted and writable?)";
    ::close(fd);
    ::shm_unlink(name.c_str());
    return "";
}

// "16K (16384 bytes)", or "1000 bytes" when not a whole number of K or M.
std::string size_text(std::size_t bytes) {
    const std::string plain = std::to_string(bytes) + " bytes";
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "M (" + plain + ")";
    if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "K (" + plain + ")";
    return plain;
}

// The figures are its knobs as set now (a value outside their range is
// refused); each ring grows to hold two of the largest Medium messages.
std::string limits() {
    const std::size_t ring = base::knob_size(knob(Knob::SMP_RING_SIZE));
    const std::size_t medium = base::knob_size(knob(Knob::SMP_MAX_MEDIUM));
    const std::size_t pool = base::knob_size(knob(Knob::SMP_PAYLOAD_POOL));
    return "  smp max Medium payload   " + size_text(medium) + ", SLUICE_SMP_MAX_MEDIUM (512 bytes to 1M)\n" +
           "  smp max Long payload     1M per message (Put and Get have no limit)\n" +
           "  smp AM ring size         " + size_text(ring) + " per queue, SLUICE_SMP_RING_SIZE (grown to hold\n" +
           "                           two of the largest Medium messages when smaller)\n" +
           "  smp payload pool         " + (pool ? size_text(pool) + " per rank" : std::string("none")) +
           ", SLUICE_SMP_PAYLOAD_POOL (Medium payloads over 4K)\n";
}

} // namespace
} // namespace sluice::conduit::smp

SLUICE_CONDUIT_REGISTER(smp, {
    .name = "smp",
    .description = "shared memory between ranks of one host (AM rings, mapped segments)",
    .priority = 100,
    .network = false,
    .wakes = true,
    .capabilities = "AM rings in shared memory; Put/Get as memcpy into peers' mapped segments",
    .probe = sluice::conduit::smp::probe,
    .create = sluice::conduit::smp::make_smp_transport,
    .limits = sluice::conduit::smp::limits,
})
