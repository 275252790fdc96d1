// tests/softnic/gni/transfer.cpp - a transfer's target side (transfer.hpp).
#include "transfer.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

namespace softnic_gni {
namespace {

// A registration handle: qword1 = generation << 32 | index, qword2 = the
// owner's pid << 32 | its domain (GNI_MemRegister in gni.cpp).
Reg *reg_of(const gni_mem_handle_t &h, std::int32_t pid, std::uint32_t cdm) {
    const std::uint32_t index = static_cast<std::uint32_t>(h.qword1);
    const std::uint32_t generation = static_cast<std::uint32_t>(h.qword1 >> 32);
    if (index >= max_reg) return nullptr;
    Reg &r = fabric().reg[index];
    if (!r.used || r.generation != generation || r.pid != pid || r.cdm != cdm) return nullptr;
    if (h.qword2 != (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pid)) << 32 | cdm)) return nullptr;
    return &r;
}

bool covers(const Reg &r, std::uint64_t addr, std::uint64_t length) {
    return addr >= r.addr && length <= r.length && addr - r.addr <= r.length - length;
}

// Moves `length` bytes between this process and `pid`.
bool move(std::int32_t pid, bool write, std::uint64_t local, std::uint64_t remote, std::uint64_t length) {
    if (length == 0) return true;
    if (pid == ::getpid()) {
        if (write) std::memmove(reinterpret_cast<void *>(remote), reinterpret_cast<void *>(local), length);
        else std::memmove(reinterpret_cast<void *>(local), reinterpret_cast<void *>(remote), length);
        return true;
    }
    iovec l{reinterpret_cast<void *>(local), length};
    iovec r{reinterpret_cast<void *>(remote), length};
    const ssize_t n = write ? ::process_vm_writev(pid, &l, 1, &r, 1, 0) : ::process_vm_readv(pid, &l, 1, &r, 1, 0);
    return n == static_cast<ssize_t>(length);
}

} // namespace

std::uint64_t make_event(std::uint64_t type, std::uint8_t status, std::uint32_t data, std::uint16_t token,
                         bool remote) {
    return (type & 0xf) << 56 | std::uint64_t{status} << 48 | std::uint64_t{token} << 32 | data |
           (remote ? 1ull << 60 : 0);
}

bool peer_find(const Target &t, Peer &out) {
    Fabric &f = fabric();
    for (std::uint32_t i = 0; i < max_cdm; ++i) {
        Cdm &c = f.cdm[i];
        if (!c.used || c.address != t.address || c.inst_id != t.inst_id || c.ptag != t.ptag || c.cookie != t.cookie)
            continue;
        if (!alive(c.pid)) {
            collect_dead();
            return false;
        }
        out = Peer{c.pid, i};
        return true;
    }
    return false;
}

bool local_registered(const gni_mem_handle_t &h, std::uint32_t cdm, std::uint64_t addr, std::uint64_t length) {
    const Reg *r = reg_of(h, ::getpid(), cdm);
    return r && covers(*r, addr, length);
}

bool amo_known(gni_fma_cmd_type_t cmd) { return cmd >= GNI_FMA_ATOMIC_ADD && cmd <= GNI_FMA_ATOMIC_FIMAX; }

bool amo_fetches(gni_fma_cmd_type_t cmd) {
    switch (cmd) {
    case GNI_FMA_ATOMIC_ADD: case GNI_FMA_ATOMIC_AND: case GNI_FMA_ATOMIC_OR: case GNI_FMA_ATOMIC_XOR:
    case GNI_FMA_ATOMIC_AX: case GNI_FMA_ATOMIC_IMIN: case GNI_FMA_ATOMIC_IMAX: return false;
    default: return true;
    }
}

std::uint64_t amo_apply(gni_fma_cmd_type_t cmd, std::uint64_t old, std::uint64_t first, std::uint64_t second) {
    const auto sold = static_cast<std::int64_t>(old), sfirst = static_cast<std::int64_t>(first);
    switch (cmd) {
    case GNI_FMA_ATOMIC_ADD: case GNI_FMA_ATOMIC_FADD: return old + first;
    case GNI_FMA_ATOMIC_CSWAP: return old == first ? second : old;
    case GNI_FMA_ATOMIC_AND: case GNI_FMA_ATOMIC_FAND: return old & first;
    case GNI_FMA_ATOMIC_OR: case GNI_FMA_ATOMIC_FOR: return old | first;
    case GNI_FMA_ATOMIC_XOR: case GNI_FMA_ATOMIC_FXOR: return old ^ first;
    case GNI_FMA_ATOMIC_AX: case GNI_FMA_ATOMIC_FAX: return (old & first) ^ second;
    case GNI_FMA_ATOMIC_IMIN: case GNI_FMA_ATOMIC_FIMIN: return sfirst < sold ? first : old;
    case GNI_FMA_ATOMIC_IMAX: case GNI_FMA_ATOMIC_FIMAX: return sfirst > sold ? first : old;
    }
    return old;
}

void arrive(const Arrival &a) {
    if (a.mailbox >= 0) {
        Mailbox &m = fabric().mailbox[a.mailbox];
        if (m.used && m.pid == a.mailbox_pid && m.addr == a.mailbox_addr && m.sent < a.written) m.sent = a.written;
    }
    if (a.cq >= 0) cq_post(a.cq, a.cq_generation, a.event);
}

std::uint8_t post_execute(const Peer &peer, const gni_post_descriptor_t &d, std::uint32_t remote_event,
                          Arrival &later) {
    const bool amo = d.type == GNI_POST_AMO;
    const bool put = d.type == GNI_POST_RDMA_PUT || d.type == GNI_POST_FMA_PUT;
    const std::uint64_t length = amo ? 8 : d.length;
    const Reg *r = reg_of(d.remote_mem_hndl, peer.pid, peer.cdm);
    if (!r || !covers(*r, d.remote_addr, length)) return status_remote_access;
    if ((put || amo) && (r->flags & GNI_MEM_READ_ONLY)) return status_remote_access;
    if (amo) {
        // Atomic with respect to every other NIC operation (all run under
        // the fabric lock), not to the target's CPU.
        std::uint64_t old = 0;
        if (!move(peer.pid, false, reinterpret_cast<std::uint64_t>(&old), d.remote_addr, 8)) return status_move_failed;
        std::uint64_t now = amo_apply(d.amo_cmd, old, d.first_operand, d.second_operand);
        if (now != old && !move(peer.pid, true, reinterpret_cast<std::uint64_t>(&now), d.remote_addr, 8))
            return status_move_failed;
        if (amo_fetches(d.amo_cmd)) std::memcpy(reinterpret_cast<void *>(d.local_addr), &old, 8);
    } else if (!move(peer.pid, put, d.local_addr, d.remote_addr, length)) {
        return status_move_failed;
    }
    if (d.cq_mode & GNI_CQMODE_REMOTE_EVENT) {
        later.cq = r->dst_cq;
        later.cq_generation = r->dst_cq_generation;
        later.event = make_event(GNI_CQ_EVENT_TYPE_POST, status_ok, remote_event, 0, true);
    }
    return status_ok;
}

std::uint32_t slot_size(std::uint32_t msg_maxsize) { return (sizeof(SlotHeader) + msg_maxsize + 63) / 64 * 64; }

std::uint32_t mailbox_bytes(std::uint32_t msg_maxsize, std::uint32_t maxcredit) {
    // One control line besides the slots, as a real mailbox keeps its
    // credit words next to them.
    return slot_size(msg_maxsize) * maxcredit + 64;
}

int mailbox_find(std::int32_t pid, const gni_smsg_attr_t &attr) {
    Fabric &f = fabric();
    const std::uint32_t index = static_cast<std::uint32_t>(attr.mem_hndl.qword1);
    const std::uint32_t cdm = static_cast<std::uint32_t>(attr.mem_hndl.qword2);
    const Reg *r = reg_of(attr.mem_hndl, pid, cdm);
    const std::uint64_t addr = reinterpret_cast<std::uint64_t>(attr.msg_buffer) + attr.mbox_offset;
    const std::uint32_t bytes = mailbox_bytes(attr.msg_maxsize, attr.mbox_maxcredit);
    if (!r || attr.buff_size < bytes || !covers(*r, addr, bytes)) return -1;
    int free_slot = -1;
    for (std::uint32_t i = 0; i < max_mailbox; ++i) {
        Mailbox &m = f.mailbox[i];
        if (!m.used) {
            if (free_slot < 0) free_slot = static_cast<int>(i);
            continue;
        }
        if (m.pid == pid && m.reg == index && m.reg_generation == r->generation && m.addr == addr) {
            if (m.maxcredit != attr.mbox_maxcredit || m.maxsize != attr.msg_maxsize) return -1;
            return static_cast<int>(i);
        }
    }
    if (free_slot < 0) {
        collect_dead();
        for (std::uint32_t i = 0; i < max_mailbox && free_slot < 0; ++i)
            if (!f.mailbox[i].used) free_slot = static_cast<int>(i);
        if (free_slot < 0) return -1;
    }
    f.mailbox[free_slot] = Mailbox{1, pid, index, r->generation, addr, attr.mbox_maxcredit, attr.msg_maxsize,
                                   slot_size(attr.msg_maxsize), 0, 0, 0, 0};
    return free_slot;
}

gni_return_t smsg_deliver(const Peer &peer, const gni_smsg_attr_t &remote, const void *header,
                          std::uint32_t header_length, const void *data, std::uint32_t data_length, std::uint8_t tag,
                          std::uint32_t remote_event, Arrival &later) {
    if (std::uint64_t{header_length} + data_length > remote.msg_maxsize) return GNI_RC_INVALID_PARAM;
    const int index = mailbox_find(peer.pid, remote);
    if (index < 0) return GNI_RC_INVALID_PARAM;
    Mailbox &m = fabric().mailbox[index];
    if (m.written - m.released >= m.maxcredit) return GNI_RC_NOT_DONE;
    const std::uint64_t slot = m.addr + (m.written % m.maxcredit) * m.slot_size;
    SlotHeader s{header_length, data_length, tag, {}};
    iovec local[3] = {{&s, sizeof s}, {const_cast<void *>(header), header_length},
                      {const_cast<void *>(data), data_length}};
    iovec target{reinterpret_cast<void *>(slot), sizeof s + header_length + data_length};
    if (peer.pid == ::getpid()) {
        char *to = static_cast<char *>(target.iov_base);
        for (const iovec &v : local) {
            if (v.iov_len) std::memcpy(to, v.iov_base, v.iov_len);
            to += v.iov_len;
        }
    } else if (::process_vm_writev(peer.pid, local, 3, &target, 1, 0) != static_cast<ssize_t>(target.iov_len)) {
        return GNI_RC_TRANSACTION_ERROR;
    }
    ++m.written;
    const Reg &r = fabric().reg[m.reg];
    later.mailbox = index;
    later.mailbox_pid = m.pid;
    later.mailbox_addr = m.addr;
    later.written = m.written;
    later.cq = r.dst_cq;
    later.cq_generation = r.dst_cq_generation;
    later.event = make_event(GNI_CQ_EVENT_TYPE_SMSG, status_ok, remote_event, 0, true);
    return GNI_RC_SUCCESS;
}

} // namespace softnic_gni
