// tests/softnic/lapi/wire.cpp - packets between hosts, over TCP (wire.hpp).
//
// A request is a fixed header (what is asked, and of which task) and, for
// a push, the packet; an answer is the verdict, and for a find the task's
// place on its host.  Both ends are this build on one machine, so the
// headers go in the machine's byte order.
#include "wire.hpp"

#include "../common/wire.hpp"

namespace softnic_lapi {
namespace {

constexpr std::uint32_t wire_magic = 0x6977706c;  // "lpwi"
constexpr int attempts = 3;                        // a broken connection, as a lost packet: sent again

enum Kind : std::uint32_t { kind_push = 1, kind_find = 2, kind_liveness = 3 };

struct Request {
    std::uint32_t magic;
    std::uint32_t kind;
    std::uint64_t partition;  // find
    std::uint32_t task;       // find
    std::uint32_t incarnation;
    std::uint32_t slot;  // push, liveness: the task as the sender met it
    std::int32_t pid;
    std::uint32_t payload;  // a push's packet bytes, after the header
    std::uint32_t pad;
};

struct Answer {
    std::uint32_t magic;
    std::uint32_t verdict;  // Push, found (1) or not, Liveness
    std::uint32_t slot;
    std::int32_t pid;
    std::uint32_t incarnation;
    std::uint32_t pad;
};

using softnic_common::receive_all;
using softnic_common::send_all;

sockaddr_in wire_address(std::uint32_t host) { return softnic_common::socket_address(host_address(host), wire_port()); }

// Serves the request that has started to arrive on `fd`; false ends the
// connection.
bool serve_one(int fd) {
    Request r;
    if (!receive_all(fd, &r, sizeof r) || r.magic != wire_magic || r.payload > packet_bytes) return false;
    alignas(8) unsigned char packet[packet_bytes];
    if (!receive_all(fd, packet, r.payload)) return false;
    Answer a{wire_magic, 0, 0, 0, 0, 0};
    const bool known = r.slot < max_tasks;
    switch (r.kind) {
    case kind_push:
        a.verdict = static_cast<std::uint32_t>(
            known && r.payload ? ring_push(r.slot, r.pid, r.incarnation, packet, r.payload) : Push::gone);
        break;
    case kind_find: {
        TaskRef t;
        if (task_find(r.partition, r.task, r.incarnation, t)) a = Answer{wire_magic, 1, t.slot, t.pid, t.incarnation, 0};
        break;
    }
    case kind_liveness:
        a.verdict = static_cast<std::uint32_t>(known ? task_liveness(TaskRef{this_host, r.slot, r.pid, r.incarnation})
                                                     : Liveness::ended);
        break;
    default: return false;
    }
    return send_all(fd, &a, sizeof a, nullptr, 0);
}

// Never destroyed: detached threads use it until the process ends.
softnic_common::Server &server = *new softnic_common::Server("softnic-lapi", "SOFTNIC_LAPI_WIRE_PORT", serve_one);

// Sends `r` (and `body`) to `host` and receives the answer; false when no
// process of the host answers.
bool exchange(std::uint32_t host, const Request &r, const void *body, Answer &a) {
    thread_local softnic_common::Links links;
    for (int attempt = 0; attempt < attempts; ++attempt) {
        const int fd = links.get(host, wire_address(host));
        if (fd < 0) return false;
        if (send_all(fd, &r, sizeof r, body, r.payload) && receive_all(fd, &a, sizeof a) && a.magic == wire_magic)
            return true;
        links.drop(host);
    }
    return false;
}

Request request_for(Kind kind, const TaskRef &t) {
    Request r{};
    r.magic = wire_magic;
    r.kind = kind;
    r.slot = t.slot;
    r.pid = t.pid;
    r.incarnation = t.incarnation;
    return r;
}

} // namespace

Push wire_push(const TaskRef &to, const void *packet, std::uint32_t bytes) {
    if (!several_hosts() || to.host < 0) return Push::gone;
    Request r = request_for(kind_push, to);
    r.payload = bytes;
    Answer a{};
    if (!exchange(static_cast<std::uint32_t>(to.host), r, packet, a)) return Push::gone;
    return a.verdict <= static_cast<std::uint32_t>(Push::gone) ? static_cast<Push>(a.verdict) : Push::gone;
}

bool wire_find(std::uint64_t partition, std::uint32_t task, std::uint32_t incarnation, TaskRef &out) {
    if (!several_hosts()) return false;
    for (std::uint32_t host = 0; host < host_count(); ++host) {
        if (static_cast<int>(host) == host_index()) continue;
        Request r = request_for(kind_find, TaskRef{});
        r.partition = partition;
        r.task = task;
        r.incarnation = incarnation;
        Answer a{};
        if (exchange(host, r, nullptr, a) && a.verdict == 1) {
            out = TaskRef{static_cast<int>(host), a.slot, a.pid, a.incarnation};
            return true;
        }
    }
    return false;
}

Liveness wire_liveness(const TaskRef &t) {
    if (!several_hosts() || t.host < 0) return Liveness::died;
    Answer a{};
    if (!exchange(static_cast<std::uint32_t>(t.host), request_for(kind_liveness, t), nullptr, a)) return Liveness::died;
    return a.verdict <= static_cast<std::uint32_t>(Liveness::died) ? static_cast<Liveness>(a.verdict) : Liveness::died;
}

void serving_start() {
    if (several_hosts()) server.start(wire_address(static_cast<std::uint32_t>(host_index())));
}

void serving_stop() {
    if (several_hosts()) server.stop();
}

} // namespace softnic_lapi
