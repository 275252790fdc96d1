// tests/softnic/gni/wire.cpp - transfers between hosts, over TCP
// (wire.hpp).
//
// A request is a fixed header (whom it is for, and the post's or SMSG
// message's fields the target's side needs) and then the bytes of a put or
// of the message (its header, then its data), or a datagram message
// (datagram.hpp); an answer is the verdict and then the bytes of a get, a
// fetching atomic's old word, or the datagram message's answer.  Both ends
// are this build on one machine, so the headers go in the machine's byte
// order.
#include "wire.hpp"

#include "../common/wire.hpp"
#include "datagram.hpp"

#include <cstring>
#include <vector>

namespace softnic_gni {
namespace {

constexpr std::uint32_t wire_magic = 0x69776e67;  // "gnwi"
constexpr std::uint64_t max_wire = 1ull << 30;     // bytes of one transfer
constexpr int attempts = 3;                        // a broken connection, as a lost packet: sent again

enum Kind : std::uint32_t { kind_post = 1, kind_smsg = 2, kind_datagram = 3 };

struct Request {
    std::uint32_t magic;
    std::uint32_t kind;
    Target target;
    std::uint32_t remote_event;
    std::uint32_t payload;  // bytes after the header
    // A post's.
    std::uint32_t type;  // gni_post_type_t
    std::uint32_t amo_cmd;
    std::uint32_t cq_mode;
    std::uint32_t pad0;
    std::uint64_t remote_addr, length;
    gni_mem_handle_t remote_mem_hndl;
    std::uint64_t first_operand, second_operand;
    // An SMSG message's: the receiver's mailbox, as its gni_smsg_attr_t
    // describes it, and the message.
    std::uint64_t msg_buffer;
    gni_mem_handle_t mem_hndl;
    std::uint32_t msg_type, buff_size, mbox_offset, mbox_maxcredit, msg_maxsize;
    std::uint32_t header_length, data_length;
    std::uint8_t tag;
    std::uint8_t pad1[3];
};

struct Answer {
    std::uint32_t magic;
    std::uint32_t verdict;  // a post's event status, an SMSG send's gni_return_t
    std::uint32_t payload;  // bytes after the answer
    std::uint32_t pad;
};

using softnic_common::receive_all;
using softnic_common::send_all;

sockaddr_in wire_address(std::uint32_t host) { return softnic_common::socket_address(host_address(host), wire_port()); }

bool is_put(std::uint32_t type) { return type == GNI_POST_RDMA_PUT || type == GNI_POST_FMA_PUT; }
bool is_get(std::uint32_t type) { return type == GNI_POST_RDMA_GET || type == GNI_POST_FMA_GET; }

// The bytes an answer carries after a successful post.
std::uint64_t answer_bytes(std::uint32_t type, std::uint64_t length, gni_fma_cmd_type_t cmd) {
    if (is_get(type)) return length;
    return type == GNI_POST_AMO && amo_fetches(cmd) ? 8 : 0;
}

// ---- serving other hosts ----

// Carries out a post's target side; `bytes` holds a put's, and receives a
// get's or the old word.
void serve_post(const Request &r, std::vector<std::uint8_t> &bytes, Answer &a, Arrival &later) {
    const auto cmd = static_cast<gni_fma_cmd_type_t>(r.amo_cmd);
    gni_post_descriptor_t d{};
    d.type = static_cast<gni_post_type_t>(r.type);
    d.cq_mode = static_cast<std::uint16_t>(r.cq_mode);
    d.remote_addr = r.remote_addr;
    d.remote_mem_hndl = r.remote_mem_hndl;
    d.length = r.length;
    d.amo_cmd = cmd;
    d.first_operand = r.first_operand;
    d.second_operand = r.second_operand;
    const std::uint64_t back = answer_bytes(r.type, r.length, cmd);
    if (bytes.size() < back) bytes.resize(back);
    d.local_addr = reinterpret_cast<std::uint64_t>(bytes.data());
    {
        Locked l;
        Peer peer{};
        a.verdict = peer_find(r.target, peer) ? post_execute(peer, d, r.remote_event, later)
                                              : std::uint8_t{status_no_peer};
    }
    a.payload = a.verdict == status_ok ? static_cast<std::uint32_t>(back) : 0;
}

void serve_smsg(const Request &r, std::vector<std::uint8_t> &bytes, Answer &a, Arrival &later) {
    gni_smsg_attr_t attr{};
    attr.msg_type = static_cast<gni_smsg_type_t>(r.msg_type);
    attr.msg_buffer = reinterpret_cast<void *>(r.msg_buffer);
    attr.buff_size = r.buff_size;
    attr.mem_hndl = r.mem_hndl;
    attr.mbox_offset = r.mbox_offset;
    attr.mbox_maxcredit = static_cast<std::uint16_t>(r.mbox_maxcredit);
    attr.msg_maxsize = r.msg_maxsize;
    Locked l;
    Peer peer{};
    a.verdict = peer_find(r.target, peer) ? smsg_deliver(peer, attr, bytes.data(), r.header_length,
                                                         bytes.data() + r.header_length, r.data_length, r.tag,
                                                         r.remote_event, later)
                                          : GNI_RC_TRANSACTION_ERROR;
}

bool valid(const Request &r) {
    if (r.magic != wire_magic || r.payload > max_wire) return false;
    if (r.kind == kind_datagram) return r.payload == sizeof(DatagramWire);
    if (r.kind == kind_smsg) return std::uint64_t{r.header_length} + r.data_length == r.payload;
    if (r.kind != kind_post) return false;
    if (r.type == GNI_POST_AMO) return amo_known(static_cast<gni_fma_cmd_type_t>(r.amo_cmd)) && r.payload == 0;
    if (r.length == 0 || r.length > max_wire) return false;
    return is_put(r.type) ? r.payload == r.length : is_get(r.type) && r.payload == 0;
}

// Serves the request that has started to arrive on `fd`; false ends the
// connection.
bool serve_one(int fd) {
    thread_local std::vector<std::uint8_t> bytes;
    Request r;
    if (!receive_all(fd, &r, sizeof r) || !valid(r)) return false;
    if (bytes.size() < r.payload) bytes.resize(r.payload);
    if (!receive_all(fd, bytes.data(), r.payload)) return false;
    Answer a{wire_magic, 0, 0, 0};
    if (r.kind == kind_datagram) {
        DatagramWire in, out;
        DatagramStaged later;
        std::memcpy(&in, bytes.data(), sizeof in);
        datagram_serve(in, out, later);
        a.payload = sizeof out;
        const bool answered = send_all(fd, &a, sizeof a, &out, sizeof out);
        datagram_commit(later, answered);
        return answered;
    }
    Arrival later;
    if (r.kind == kind_post) serve_post(r, bytes, a, later);
    else serve_smsg(r, bytes, a, later);
    const bool answered = send_all(fd, &a, sizeof a, bytes.data(), a.payload);
    Locked l;
    arrive(later);
    return answered;
}

// Never destroyed: detached threads use it until the process ends.
softnic_common::Server &server = *new softnic_common::Server("softnic-gni", "SOFTNIC_GNI_WIRE_PORT", serve_one);

// ---- posting to other hosts ----

// Sends `r` and its payload `body` to `host` and receives the answer, its
// bytes into `into` (at most `room`).  False when no process of the host
// answers.
bool exchange(std::uint32_t host, const Request &r, const void *body, Answer &a, void *into, std::uint64_t room) {
    thread_local softnic_common::Links links;
    for (int attempt = 0; attempt < attempts; ++attempt) {
        const int fd = links.get(host, wire_address(host));
        if (fd < 0) return false;
        if (send_all(fd, &r, sizeof r, body, r.payload) && receive_all(fd, &a, sizeof a) && a.magic == wire_magic &&
            a.payload <= room && receive_all(fd, into, a.payload))
            return true;
        links.drop(host);
    }
    return false;
}

Request request_for(Kind kind, const Target &target, std::uint32_t remote_event) {
    Request r{};
    r.magic = wire_magic;
    r.kind = kind;
    r.target = target;
    r.remote_event = remote_event;
    return r;
}

} // namespace

std::uint8_t wire_post(std::uint32_t host, const Target &target, const gni_post_descriptor_t &d,
                       std::uint32_t remote_event) {
    if (d.type != GNI_POST_AMO && d.length > max_wire) return status_move_failed;
    Request r = request_for(kind_post, target, remote_event);
    r.type = d.type;
    r.amo_cmd = d.amo_cmd;
    r.cq_mode = d.cq_mode;
    r.remote_addr = d.remote_addr;
    r.length = d.type == GNI_POST_AMO ? 8 : d.length;
    r.remote_mem_hndl = d.remote_mem_hndl;
    r.first_operand = d.first_operand;
    r.second_operand = d.second_operand;
    r.payload = is_put(d.type) ? static_cast<std::uint32_t>(d.length) : 0;
    Answer a{};
    const auto local = reinterpret_cast<void *>(d.local_addr);
    if (!exchange(host, r, local, a, local, answer_bytes(d.type, r.length, d.amo_cmd))) return status_no_peer;
    return static_cast<std::uint8_t>(a.verdict);
}

gni_return_t wire_smsg(std::uint32_t host, const Target &target, const gni_smsg_attr_t &remote, const void *header,
                       std::uint32_t header_length, const void *data, std::uint32_t data_length, std::uint8_t tag,
                       std::uint32_t remote_event) {
    // The target checks the size against the mailbox; this bounds what
    // goes on the wire.
    if (std::uint64_t{header_length} + data_length > remote.msg_maxsize) return GNI_RC_INVALID_PARAM;
    Request r = request_for(kind_smsg, target, remote_event);
    r.msg_buffer = reinterpret_cast<std::uint64_t>(remote.msg_buffer);
    r.mem_hndl = remote.mem_hndl;
    r.msg_type = remote.msg_type;
    r.buff_size = remote.buff_size;
    r.mbox_offset = remote.mbox_offset;
    r.mbox_maxcredit = remote.mbox_maxcredit;
    r.msg_maxsize = remote.msg_maxsize;
    r.header_length = header_length;
    r.data_length = data_length;
    r.tag = tag;
    r.payload = header_length + data_length;
    thread_local std::vector<std::uint8_t> message;
    message.resize(r.payload);
    if (header_length) std::memcpy(message.data(), header, header_length);
    if (data_length) std::memcpy(message.data() + header_length, data, data_length);
    Answer a{};
    if (!exchange(host, r, message.data(), a, nullptr, 0)) return GNI_RC_TRANSACTION_ERROR;
    return static_cast<gni_return_t>(a.verdict);
}

bool wire_datagram(std::uint32_t host, const DatagramWire &message, DatagramWire &answer) {
    Request r = request_for(kind_datagram, Target{}, 0);
    r.payload = sizeof message;
    Answer a{};
    return exchange(host, r, &message, a, &answer, sizeof answer) && a.payload == sizeof answer;
}

void serving_start() {
    if (several_hosts()) server.start(wire_address(static_cast<std::uint32_t>(host_index())));
}

void serving_stop() {
    if (several_hosts()) server.stop();
}

} // namespace softnic_gni
