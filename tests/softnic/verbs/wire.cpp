// tests/softnic/verbs/wire.cpp - work between hosts, over TCP (wire.hpp).
//
// A request is a fixed header (the work request's fields the target needs,
// and who sent it) and then the payload of a send or write (an atomic's:
// its compare_add and swap operands); an answer is the verdict and then the
// bytes of an RDMA_READ (an atomic's: the old value).  Both ends are this
// build on one machine, so the headers go in the machine's byte order.
#include "wire.hpp"

#include "../common/wire.hpp"

#include <cstring>

namespace softnic {
namespace {

constexpr std::uint32_t wire_magic = 0x736e6977;  // "wins"

struct Request {
    std::uint32_t magic;
    std::uint32_t opcode;  // ibv_wr_opcode
    std::uint32_t ud;
    std::uint32_t dest_qpn;
    std::uint32_t qkey;
    std::uint32_t imm;
    std::uint32_t rkey;
    std::uint32_t length;   // of the operation
    std::uint32_t payload;  // bytes after the header: a send's or write's
    std::uint32_t src_qpn;
    std::uint16_t dlid, src_lid;
    std::uint8_t global;
    std::uint8_t pad[7];
    std::uint64_t remote_addr;
    std::uint8_t dgid[16];
    std::uint8_t src_gid[16];
};

struct Answer {
    std::uint32_t magic;
    Verdict::Kind kind;
    ibv_wc_status status;
    std::uint32_t length;  // bytes after the answer: an RDMA_READ's
};

using softnic_common::receive_all;
using softnic_common::send_all;

sockaddr_in wire_address(std::uint32_t host) { return softnic_common::socket_address(host_address(host), wire_port()); }

// ---- serving other hosts ----

bool decode(const Request &r, Work &k) {
    const bool read = r.opcode == IBV_WR_RDMA_READ;
    const bool atomic = atomic_opcode(static_cast<ibv_wr_opcode>(r.opcode));
    const bool known = read || atomic || r.opcode == IBV_WR_SEND || r.opcode == IBV_WR_SEND_WITH_IMM ||
                       r.opcode == IBV_WR_RDMA_WRITE || r.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    // An atomic's payload is its two operands.
    const std::uint32_t payload = read ? 0 : atomic ? 2 * atomic_bytes : r.length;
    if (r.magic != wire_magic || !known || r.length > max_msg || r.payload != payload) return false;
    k.opcode = static_cast<ibv_wr_opcode>(r.opcode);
    k.remote_qpn = r.dest_qpn;
    k.remote_qkey = r.qkey;
    k.imm = r.imm;
    k.rkey = r.rkey;
    k.length = r.length;
    k.remote_addr = r.remote_addr;
    k.dlid = r.dlid;
    k.global = r.global != 0;
    std::memcpy(k.dgid, r.dgid, sizeof k.dgid);
    k.payload.resize(r.payload);
    return true;
}

// Serves the request that has started to arrive on `fd`; false ends the
// connection.
bool serve_one(int fd) {
    Work k{};
    Request r;
    if (!receive_all(fd, &r, sizeof r) || !decode(r, k) || !receive_all(fd, k.payload.data(), k.payload.size()))
        return false;
    Source source{r.src_qpn, r.src_lid, {}};
    std::memcpy(source.gid.raw, r.src_gid, sizeof source.gid.raw);
    Arrival arrival;
    std::vector<std::uint8_t> read;
    lock();
    const Verdict v = serve(k, r.ud != 0, source, read, arrival);
    unlock();
    const bool bytes = v.kind == Verdict::Kind::done && v.status == IBV_WC_SUCCESS;
    const Answer a{wire_magic, v.kind, v.status, bytes ? static_cast<std::uint32_t>(read.size()) : 0};
    const bool answered = send_all(fd, &a, sizeof a, read.data(), a.length);
    // The receive completion after the answer: a target that ends once it
    // has its completion does not end before its poster has the answer.
    std::vector<Notice> notices;
    lock();
    arrive(arrival, notices);
    unlock();
    notify(notices);
    return answered;
}

// Never destroyed: detached threads use it until the process ends.
softnic_common::Server &server = *new softnic_common::Server("softnic", "SOFTNIC_WIRE_PORT", serve_one);

// ---- posting to other hosts ----

// One connection per host, used by the thread that has work on the wire
// (verbs.cpp: one at a time).
softnic_common::Links &links = *new softnic_common::Links;

Request request_of(const Work &k, bool ud, const Source &source) {
    Request r{};
    r.magic = wire_magic;
    r.opcode = k.opcode;
    r.ud = ud;
    r.dest_qpn = k.remote_qpn;
    r.qkey = k.remote_qkey;
    r.imm = k.imm;
    r.rkey = k.rkey;
    r.length = k.length;
    r.payload = static_cast<std::uint32_t>(k.payload.size());
    r.src_qpn = source.qpn;
    r.dlid = k.dlid;
    r.src_lid = source.lid;
    r.global = k.global;
    r.remote_addr = k.remote_addr;
    std::memcpy(r.dgid, k.dgid, sizeof r.dgid);
    std::memcpy(r.src_gid, source.gid.raw, sizeof r.src_gid);
    return r;
}

} // namespace

Verdict wire_exchange(const Work &k, bool ud, const Source &source, std::vector<std::uint8_t> &read) {
    const auto host = static_cast<std::uint32_t>(k.host);
    const int fd = links.get(host, wire_address(host));
    if (fd < 0) return {Verdict::Kind::absent, IBV_WC_SUCCESS};
    const Request r = request_of(k, ud, source);
    Answer a{};
    if (send_all(fd, &r, sizeof r, k.payload.data(), k.payload.size()) && receive_all(fd, &a, sizeof a) &&
        a.magic == wire_magic && a.kind <= Verdict::Kind::absent && a.length <= max_msg) {
        read.resize(a.length);
        if (receive_all(fd, read.data(), a.length)) return {a.kind, a.status};
    }
    // As a lost packet: retried, on a new connection, until the transport
    // timeout.
    links.drop(host);
    return {Verdict::Kind::absent, IBV_WC_SUCCESS};
}

void serving_start() {
    if (several_hosts()) server.start(wire_address(static_cast<std::uint32_t>(host_index())));
}

void serving_stop() {
    if (several_hosts()) server.stop();
}

} // namespace softnic
