// tests/softnic/lapi/wire.hpp - packets between hosts, over TCP.
//
// With SOFTNIC_HOSTS, every process with a live LAPI context listens on its
// host's address at SOFTNIC_LAPI_WIRE_PORT, sharing the port with the
// host's other such processes (common/wire.hpp), so any of them serves a
// request from another host on its own host's fabric: pushing a packet
// into a task's ring (the verdict: pushed, ring full, task gone), finding
// a task of a job, or telling whether a task met earlier still lives.
// Each thread keeps its own connection per other host and has one request
// on it at a time, holding no lock meanwhile.
#pragma once

#include "fabric.hpp"

#include <cstdint>

namespace softnic_lapi {

// Pushes one packet to task `to` of another host; gone also when no
// process of that host answers.
Push wire_push(const TaskRef &to, const void *packet, std::uint32_t bytes);
// Task `task` of job `partition` in incarnation `incarnation` or later, on
// any other host; false when none has it (yet).
bool wire_find(std::uint64_t partition, std::uint32_t task, std::uint32_t incarnation, TaskRef &out);
// What became of a task of another host; died also when its host does not
// answer.
Liveness wire_liveness(const TaskRef &t);

// A context started, stopped: the process serves other hosts while it has
// one (nothing without SOFTNIC_HOSTS).
void serving_start();
void serving_stop();

} // namespace softnic_lapi
