// tests/softnic/gni/gni.cpp - the uGNI functions (gni_pub.h): the
// process's own objects (domains, NICs, endpoints, CQ handles), argument
// checks, FMA carried out by the caller and RDMA handed to the BTE thread
// (bte.cpp); a transfer to a peer of another host goes over the wire
// (wire.cpp); datagrams are datagram.cpp's.  Semantics follow Cray's
// "Using the GNI and DMAPP APIs" (S-2446); README.md lists where this NIC
// differs.
#include "bte.hpp"
#include "datagram.hpp"
#include "fabric.hpp"
#include "gni_pub.h"
#include "transfer.hpp"
#include "wire.hpp"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

using namespace softnic_gni;

struct gni_cdm_struct {
    std::uint32_t inst_id, ptag, cookie, modes;
    gni_nic_struct *nic = nullptr;
};

struct gni_nic_struct {
    gni_cdm_struct *cdm;
    std::uint32_t slot;  // index in the fabric's cdm[]
    std::uint32_t address;
};

struct gni_cq_struct {
    gni_nic_struct *nic;
    std::int32_t slot;
    std::uint32_t generation;
};

struct gni_ep_struct {
    gni_nic_struct *nic;
    gni_cq_struct *src_cq;
    bool bound = false;
    std::uint32_t remote_addr = 0, remote_id = 0;
    std::uint32_t local_event = 0, remote_event = 0;
    bool smsg = false;
    bool holding = false;  // GNI_SmsgGetNextWTag returned a message not yet released
    gni_smsg_attr_t local{}, remote{};
    DatagramRef datagram;  // GNI_EpPostDataWId's, until tested
};

namespace {

// Local post events carry a token naming their descriptor, so that
// GNI_GetCompleted can give the descriptor back (as the NIC's driver keeps
// the posted descriptors of a CQ).
class Descriptors {
public:
    // 0: the table is full.
    std::uint16_t add(gni_post_descriptor_t *d) {
        std::lock_guard<std::mutex> g(mutex_);
        for (std::size_t i = 0; i < slots_.size(); ++i)
            if (!slots_[i]) {
                slots_[i] = d;
                return static_cast<std::uint16_t>(i + 1);
            }
        if (slots_.size() == 0xffff) return 0;
        slots_.push_back(d);
        return static_cast<std::uint16_t>(slots_.size());
    }
    gni_post_descriptor_t *take(std::uint16_t token) {
        std::lock_guard<std::mutex> g(mutex_);
        if (token == 0 || token > slots_.size()) return nullptr;
        gni_post_descriptor_t *d = slots_[token - 1];
        slots_[token - 1] = nullptr;
        return d;
    }

private:
    std::mutex mutex_;
    std::vector<gni_post_descriptor_t *> slots_;
};

// Never destroyed: the BTE thread may still post while the process exits.
Descriptors &descriptors() {
    static Descriptors &d = *new Descriptors;
    return d;
}

bool wants_local_event(const gni_post_descriptor_t &d) {
    return d.cq_mode & (GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_GLOBAL_EVENT);
}

// The checks both post functions make before anything moves: the endpoint,
// the poster's registration (GNI requires one for every transfer's local
// buffer), alignment, and the CQ for the local event.
gni_return_t post_check(gni_ep_handle_t ep, const gni_post_descriptor_t *d, bool rdma, gni_cq_struct *&cq) {
    if (!ep || !d || !ep->bound) return GNI_RC_INVALID_PARAM;
    const bool ok_type = rdma ? d->type == GNI_POST_RDMA_PUT || d->type == GNI_POST_RDMA_GET
                              : d->type == GNI_POST_FMA_PUT || d->type == GNI_POST_FMA_GET || d->type == GNI_POST_AMO;
    if (!ok_type) return GNI_RC_INVALID_PARAM;
    const bool amo = d->type == GNI_POST_AMO;
    if (amo && !amo_known(d->amo_cmd)) return GNI_RC_INVALID_PARAM;
    if (!amo && d->length == 0) return GNI_RC_INVALID_PARAM;
    if (amo && (d->remote_addr % 8 || d->local_addr % 8)) return GNI_RC_ALIGNMENT_ERROR;
    // The BTE reads in 4-byte units: a GET's addresses and length must be
    // 4-byte aligned.
    if (d->type == GNI_POST_RDMA_GET && (d->local_addr % 4 || d->remote_addr % 4 || d->length % 4))
        return GNI_RC_ALIGNMENT_ERROR;
    cq = d->src_cq_hndl ? d->src_cq_hndl : ep->src_cq;
    if (wants_local_event(*d) && !cq) return GNI_RC_INVALID_PARAM;
    const bool fetches = !amo || amo_fetches(d->amo_cmd);
    if (fetches) {
        Locked l;
        if (!local_registered(d->local_mem_hndl, ep->nic->slot, d->local_addr, amo ? 8 : d->length))
            return GNI_RC_INVALID_PARAM;
    }
    return GNI_RC_SUCCESS;
}

} // namespace

namespace softnic_gni {

// Carries out one posted transfer and raises its local event (the FMA
// caller, or the BTE thread for RDMA): on this host's fabric, or over the
// wire without holding the lock.
void post_complete(const Post &p) {
    const int host = host_of(p.target.address);
    std::uint8_t status = status_no_peer;
    if (host >= 0) status = wire_post(static_cast<std::uint32_t>(host), p.target, p.descriptor, p.remote_event);
    Locked l;
    Peer peer{};
    if (host == this_host && peer_find(p.target, peer)) {
        Arrival later;
        status = post_execute(peer, p.descriptor, p.remote_event, later);
        arrive(later);
    }
    if (p.token)
        cq_post(p.cq_slot, p.cq_generation, make_event(GNI_CQ_EVENT_TYPE_POST, status, p.local_event, p.token, false));
}

} // namespace softnic_gni

namespace {

gni_return_t post(gni_ep_handle_t ep, gni_post_descriptor_t *d, bool rdma) {
    gni_cq_struct *cq = nullptr;
    const gni_return_t rc = post_check(ep, d, rdma, cq);
    if (rc != GNI_RC_SUCCESS) return rc;
    Post p{};
    p.descriptor = *d;
    const gni_cdm_struct &cdm = *ep->nic->cdm;
    p.target = Target{ep->remote_addr, ep->remote_id, cdm.ptag, cdm.cookie};
    p.local_event = ep->local_event;
    p.remote_event = ep->remote_event;
    if (wants_local_event(*d)) {
        p.token = descriptors().add(d);
        if (!p.token) return GNI_RC_ERROR_RESOURCE;
        p.cq_slot = cq->slot;
        p.cq_generation = cq->generation;
    }
    if (!rdma) {
        // FMA: the CPU stores through the NIC's window, so the transfer is
        // done (and its event raised) when the post returns.
        post_complete(p);
        return GNI_RC_SUCCESS;
    }
    if (!bte_queue(p)) {
        descriptors().take(p.token);
        return GNI_RC_ERROR_RESOURCE;
    }
    return GNI_RC_SUCCESS;
}

bool smsg_attr_valid(const gni_smsg_attr_t *a) {
    return a && (a->msg_type == GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT || a->msg_type == GNI_SMSG_TYPE_MBOX) &&
           a->mbox_maxcredit > 0 && a->msg_maxsize > 0;
}

} // namespace

extern "C" {

gni_return_t GNI_CdmCreate(uint32_t inst_id, uint8_t ptag, uint32_t cookie, uint32_t modes,
                           gni_cdm_handle_t *cdm_hndl) {
    if (!cdm_hndl) return GNI_RC_INVALID_PARAM;
    // The driver admits only the credentials ALPS gave the job.
    Job j{};
    if (!job(j) || j.ptag != ptag || j.cookie != cookie) return GNI_RC_PERMISSION_ERROR;
    auto *c = new (std::nothrow) gni_cdm_struct{inst_id, ptag, cookie, modes, nullptr};
    if (!c) return GNI_RC_ERROR_NOMEM;
    *cdm_hndl = c;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_CdmAttach(gni_cdm_handle_t cdm, uint32_t device_id, uint32_t *local_addr,
                           gni_nic_handle_t *nic_hndl) {
    Job j{};
    if (!cdm || !local_addr || !nic_hndl || !job(j) || device_id != j.dev_id) return GNI_RC_INVALID_PARAM;
    if (cdm->nic) return GNI_RC_INVALID_STATE;
    // With SOFTNIC_HOSTS, a process on no host of the list has no NIC
    // (host_index said why on stderr).
    if (several_hosts() && host_index() < 0) return GNI_RC_NO_MATCH;
    std::uint32_t address = 0;
    if (!local_address(address)) return GNI_RC_INVALID_PARAM;  // PMI_GNI_LOC_ADDR unset
    auto *n = new (std::nothrow) gni_nic_struct{cdm, 0, address};
    if (!n) return GNI_RC_ERROR_NOMEM;
    {
        Locked l;
        Fabric &f = fabric();
        Peer twin{};
        if (peer_find(Target{address, cdm->inst_id, cdm->ptag, cdm->cookie}, twin)) {
            delete n;
            return GNI_RC_INVALID_PARAM;  // the instance id is taken in this job
        }
        int slot = -1;
        for (int pass = 0; pass < 2 && slot < 0; ++pass) {
            if (pass) collect_dead();
            for (std::uint32_t i = 0; i < max_cdm && slot < 0; ++i)
                if (!f.cdm[i].used) slot = static_cast<int>(i);
        }
        if (slot < 0) {
            delete n;
            return GNI_RC_ERROR_RESOURCE;
        }
        f.cdm[slot] = Cdm{1, ::getpid(), address, cdm->inst_id, cdm->ptag, cdm->cookie, 0, 0, 0, 0};
        n->slot = static_cast<std::uint32_t>(slot);
    }
    serving_start();
    cdm->nic = n;
    *local_addr = n->address;
    *nic_hndl = n;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_CdmDestroy(gni_cdm_handle_t cdm) {
    if (!cdm) return GNI_RC_INVALID_PARAM;
    if (cdm->nic) {
        // Its datagrams are cancelled (a post waiting on another host
        // withdrawn from there) and freed.
        datagram_detach(cdm->nic->slot);
        // The last domain stops serving other hosts: a request being
        // served gets its answer first.
        serving_stop();
        Locked l;
        Fabric &f = fabric();
        const std::uint32_t slot = cdm->nic->slot;
        for (auto &r : f.reg)
            if (r.used && r.pid == ::getpid() && r.cdm == slot) r.used = 0;
        f.cdm[slot].used = 0;
        delete cdm->nic;
    }
    delete cdm;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_CqCreate(gni_nic_handle_t nic, uint32_t entry_count, uint32_t /*delay_count*/,
                          gni_cq_mode_t mode, void (*handler)(gni_cq_entry_t *, void *), void * /*context*/,
                          gni_cq_handle_t *cq_hndl) {
    // Event handlers (and so blocking CQs' interrupts) are not modelled.
    if (!nic || !cq_hndl || handler || entry_count == 0 || entry_count > max_cq_entries ||
        (mode != GNI_CQ_NOBLOCK && mode != GNI_CQ_BLOCKING))
        return GNI_RC_INVALID_PARAM;
    auto *c = new (std::nothrow) gni_cq_struct{nic, -1, 0};
    if (!c) return GNI_RC_ERROR_NOMEM;
    Locked l;
    Fabric &f = fabric();
    for (int pass = 0; pass < 2 && c->slot < 0; ++pass) {
        if (pass) collect_dead();
        for (std::uint32_t i = 0; i < max_cq && c->slot < 0; ++i)
            if (!f.cq[i].used) c->slot = static_cast<std::int32_t>(i);
    }
    if (c->slot < 0) {
        delete c;
        return GNI_RC_ERROR_RESOURCE;
    }
    Cq &q = f.cq[c->slot];
    c->generation = next_generation();
    q.used = 1;
    q.pid = ::getpid();
    q.generation = c->generation;
    q.cap = entry_count;
    q.head = q.tail = 0;
    q.overrun = 0;
    *cq_hndl = c;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_CqDestroy(gni_cq_handle_t cq) {
    if (!cq) return GNI_RC_INVALID_PARAM;
    {
        Locked l;
        Cq &q = fabric().cq[cq->slot];
        if (q.used && q.generation == cq->generation) q.used = 0;
    }
    delete cq;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_CqGetEvent(gni_cq_handle_t cq, gni_cq_entry_t *event_data) {
    if (!cq || !event_data) return GNI_RC_INVALID_PARAM;
    Cq &q = fabric().cq[cq->slot];
    // An empty queue of this handle is seen without the lock, so that a
    // process polling its CQs does not hold off the peers (and the wire's
    // serving threads) that post into them.
    const bool ours = __atomic_load_n(&q.used, __ATOMIC_ACQUIRE) &&
                      __atomic_load_n(&q.generation, __ATOMIC_ACQUIRE) == cq->generation;
    if (ours && __atomic_load_n(&q.head, __ATOMIC_ACQUIRE) == __atomic_load_n(&q.tail, __ATOMIC_ACQUIRE) &&
        !__atomic_load_n(&q.overrun, __ATOMIC_ACQUIRE))
        return GNI_RC_NOT_DONE;
    Locked l;
    if (!q.used || q.generation != cq->generation) return GNI_RC_INVALID_PARAM;
    const bool overrun = q.overrun;
    if (q.head == q.tail && !overrun) return GNI_RC_NOT_DONE;
    gni_cq_entry_t e = q.head < q.tail ? q.e[q.head++ % q.cap] : 0;
    // An overrun is reported once, on the next event read (or alone when
    // the queue is empty), with ERROR_RESOURCE: events were lost.
    if (overrun) {
        q.overrun = 0;
        *event_data = e | 1ull << 62;
        return GNI_RC_ERROR_RESOURCE;
    }
    *event_data = e;
    return GNI_CQ_STATUS_OK(e) ? GNI_RC_SUCCESS : GNI_RC_TRANSACTION_ERROR;
}

gni_return_t GNI_CqWaitEvent(gni_cq_handle_t cq, uint64_t timeout, gni_cq_entry_t *event_data) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout == UINT64_MAX ? 0 : timeout);
    for (;;) {
        const gni_return_t rc = GNI_CqGetEvent(cq, event_data);
        if (rc != GNI_RC_NOT_DONE) return rc;
        if (timeout != UINT64_MAX && std::chrono::steady_clock::now() >= end) return GNI_RC_TIMEOUT;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

gni_return_t GNI_EpCreate(gni_nic_handle_t nic, gni_cq_handle_t src_cq, gni_ep_handle_t *ep_hndl) {
    if (!nic || !ep_hndl) return GNI_RC_INVALID_PARAM;
    auto *e = new (std::nothrow) gni_ep_struct{};
    if (!e) return GNI_RC_ERROR_NOMEM;
    e->nic = nic;
    e->src_cq = src_cq;
    // A peer sees the sender's instance id in its remote events unless
    // GNI_EpSetEventData says otherwise.
    e->remote_event = nic->cdm->inst_id;
    *ep_hndl = e;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_EpBind(gni_ep_handle_t ep, uint32_t remote_addr, uint32_t remote_id) {
    if (!ep) return GNI_RC_INVALID_PARAM;
    if (ep->bound) return GNI_RC_INVALID_STATE;
    ep->remote_addr = remote_addr;
    ep->remote_id = remote_id;
    ep->bound = true;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_EpUnbind(gni_ep_handle_t ep) {
    if (!ep) return GNI_RC_INVALID_PARAM;
    datagram_drop(ep->datagram);  // a pending one is cancelled
    ep->bound = ep->smsg = ep->holding = false;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_EpDestroy(gni_ep_handle_t ep) {
    if (!ep) return GNI_RC_INVALID_PARAM;
    datagram_drop(ep->datagram);
    delete ep;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_EpSetEventData(gni_ep_handle_t ep, uint32_t local_event, uint32_t remote_event) {
    if (!ep) return GNI_RC_INVALID_PARAM;
    ep->local_event = local_event;
    ep->remote_event = remote_event;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_MemRegister(gni_nic_handle_t nic, uint64_t address, uint64_t length, gni_cq_handle_t dst_cq,
                             uint32_t flags, uint32_t /*vmdh_index*/, gni_mem_handle_t *mem_hndl) {
    if (!nic || !mem_hndl || address == 0 || length == 0 || address + length < address) return GNI_RC_INVALID_PARAM;
    Locked l;
    Fabric &f = fabric();
    // Each registration takes a memory domain descriptor of the NIC, and
    // the NIC has a fixed number of them.
    Cdm &owner = f.cdm[nic->slot];
    if (owner.registrations >= mdd_limit()) return GNI_RC_ERROR_RESOURCE;
    int slot = -1;
    for (int pass = 0; pass < 2 && slot < 0; ++pass) {
        if (pass) collect_dead();
        for (std::uint32_t i = 0; i < max_reg && slot < 0; ++i)
            if (!f.reg[i].used) slot = static_cast<int>(i);
    }
    if (slot < 0) return GNI_RC_ERROR_RESOURCE;
    const std::uint32_t generation = next_generation();
    f.reg[slot] = Reg{1,     ::getpid(), nic->slot, generation, address, length, flags,
                      dst_cq ? dst_cq->slot : -1, dst_cq ? dst_cq->generation : 0, 0};
    ++owner.registrations;
    mem_hndl->qword1 = std::uint64_t{generation} << 32 | static_cast<std::uint32_t>(slot);
    mem_hndl->qword2 = static_cast<std::uint64_t>(static_cast<std::uint32_t>(::getpid())) << 32 | nic->slot;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_MemDeregister(gni_nic_handle_t nic, gni_mem_handle_t *mem_hndl) {
    if (!nic || !mem_hndl) return GNI_RC_INVALID_PARAM;
    Locked l;
    Fabric &f = fabric();
    const std::uint32_t index = static_cast<std::uint32_t>(mem_hndl->qword1);
    if (index >= max_reg) return GNI_RC_INVALID_PARAM;
    Reg &r = f.reg[index];
    if (!r.used || r.generation != static_cast<std::uint32_t>(mem_hndl->qword1 >> 32) || r.pid != ::getpid() ||
        r.cdm != nic->slot)
        return GNI_RC_INVALID_PARAM;
    r.used = 0;
    --f.cdm[nic->slot].registrations;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_SmsgBufferSizeNeeded(gni_smsg_attr_t *attr, unsigned int *size) {
    if (!smsg_attr_valid(attr) || !size) return GNI_RC_INVALID_PARAM;
    *size = mailbox_bytes(attr->msg_maxsize, attr->mbox_maxcredit);
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_SmsgInit(gni_ep_handle_t ep, gni_smsg_attr_t *local, gni_smsg_attr_t *remote) {
    if (!ep || !smsg_attr_valid(local) || !smsg_attr_valid(remote)) return GNI_RC_INVALID_PARAM;
    if (!ep->bound) return GNI_RC_INVALID_STATE;
    {
        // The local mailbox must be this NIC's registered memory, as large
        // as GNI_SmsgBufferSizeNeeded says.
        Locked l;
        if (static_cast<std::uint32_t>(local->mem_hndl.qword2) != ep->nic->slot ||
            mailbox_find(::getpid(), *local) < 0)
            return GNI_RC_INVALID_PARAM;
    }
    ep->local = *local;
    ep->remote = *remote;
    ep->smsg = true;
    ep->holding = false;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_SmsgSendWTag(gni_ep_handle_t ep, void *header, uint32_t header_length, void *data,
                              uint32_t data_length, uint32_t msg_id, uint8_t tag) {
    if (!ep || (header_length && !header) || (data_length && !data)) return GNI_RC_INVALID_PARAM;
    if (!ep->smsg) return GNI_RC_INVALID_STATE;
    const gni_cdm_struct &cdm = *ep->nic->cdm;
    const Target target{ep->remote_addr, ep->remote_id, cdm.ptag, cdm.cookie};
    const int host = host_of(target.address);
    gni_return_t rc = GNI_RC_TRANSACTION_ERROR;
    // The target's host decides, a credit included: a send over the wire
    // waits for its verdict, holding no lock.
    if (host >= 0)
        rc = wire_smsg(static_cast<std::uint32_t>(host), target, ep->remote, header, header_length, data, data_length,
                       tag, ep->remote_event);
    Locked l;
    Peer peer{};
    if (host == this_host) {
        if (!peer_find(target, peer)) return GNI_RC_TRANSACTION_ERROR;
        Arrival later;
        rc = smsg_deliver(peer, ep->remote, header, header_length, data, data_length, tag, ep->remote_event, later);
        arrive(later);
    }
    if (rc == GNI_RC_SUCCESS && ep->src_cq)
        cq_post(ep->src_cq->slot, ep->src_cq->generation, make_event(GNI_CQ_EVENT_TYPE_SMSG, status_ok, msg_id, 0, false));
    return rc;
}

gni_return_t GNI_SmsgGetNextWTag(gni_ep_handle_t ep, void **header, uint8_t *tag) {
    if (!ep || !header || !tag) return GNI_RC_INVALID_PARAM;
    if (!ep->smsg) return GNI_RC_INVALID_STATE;
    Locked l;
    const int index = mailbox_find(::getpid(), ep->local);
    if (index < 0) return GNI_RC_INVALID_STATE;
    const Mailbox &m = fabric().mailbox[index];
    if (m.released == m.sent) return GNI_RC_NOT_DONE;
    // Messages come in order; until released, the same one is returned.
    char *slot = reinterpret_cast<char *>(m.addr + (m.released % m.maxcredit) * m.slot_size);
    SlotHeader s;
    std::memcpy(&s, slot, sizeof s);
    if (*tag != GNI_SMSG_ANY_TAG && *tag != s.tag) return GNI_RC_NO_MATCH;
    *tag = s.tag;
    *header = slot + sizeof s;
    ep->holding = true;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_SmsgRelease(gni_ep_handle_t ep) {
    if (!ep) return GNI_RC_INVALID_PARAM;
    if (!ep->smsg || !ep->holding) return GNI_RC_INVALID_STATE;
    Locked l;
    const int index = mailbox_find(::getpid(), ep->local);
    if (index < 0) return GNI_RC_INVALID_STATE;
    // The slot is free again: one credit back to the sender.
    ++fabric().mailbox[index].released;
    ep->holding = false;
    return GNI_RC_SUCCESS;
}

gni_return_t GNI_PostFma(gni_ep_handle_t ep, gni_post_descriptor_t *d) { return post(ep, d, false); }

gni_return_t GNI_PostRdma(gni_ep_handle_t ep, gni_post_descriptor_t *d) { return post(ep, d, true); }

gni_return_t GNI_GetCompleted(gni_cq_handle_t cq, gni_cq_entry_t event, gni_post_descriptor_t **post_descr) {
    if (!cq || !post_descr || GNI_CQ_GET_TYPE(event) != GNI_CQ_EVENT_TYPE_POST || GNI_CQ_REMOTE(event))
        return GNI_RC_INVALID_PARAM;
    gni_post_descriptor_t *d = descriptors().take(static_cast<std::uint16_t>(event >> 32));
    if (!d) return GNI_RC_DESCRIPTOR_ERROR;
    *post_descr = d;
    return GNI_CQ_STATUS_OK(event) ? GNI_RC_SUCCESS : GNI_RC_TRANSACTION_ERROR;
}

gni_return_t GNI_EpPostDataWId(gni_ep_handle_t ep, void *in_data, uint16_t data_len, void *out_buf, uint16_t out_len,
                               uint64_t datagram_id) {
    if (!ep || datagram_id == GNI_DATAGRAM_ID_ANY || (data_len && !in_data) || (out_len && !out_buf))
        return GNI_RC_INVALID_PARAM;
    if (data_len > GNI_DATAGRAM_MAXSIZE) return GNI_RC_SIZE_ERROR;
    // One datagram per endpoint until it is tested COMPLETED or TERMINATED.
    if (datagram_held(ep->datagram)) return GNI_RC_ERROR_RESOURCE;
    const gni_cdm_struct &cdm = *ep->nic->cdm;
    const Target target{ep->remote_addr, ep->remote_id, cdm.ptag, cdm.cookie};
    return datagram_post(ep->nic->slot, ep->bound ? &target : nullptr, in_data, data_len, datagram_id, out_buf,
                         out_len, ep->datagram);
}

gni_return_t GNI_EpPostDataTestById(gni_ep_handle_t ep, uint64_t datagram_id, gni_post_state_t *post_state,
                                    uint32_t *remote_address, uint32_t *remote_id) {
    if (!ep || !post_state || !remote_address || !remote_id) return GNI_RC_INVALID_PARAM;
    return datagram_test(ep->nic->slot, ep->datagram, datagram_id, *post_state, *remote_address, *remote_id);
}

gni_return_t GNI_EpPostDataWaitById(gni_ep_handle_t ep, uint64_t datagram_id, uint32_t timeout,
                                    gni_post_state_t *post_state, uint32_t *remote_address, uint32_t *remote_id) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
    for (;;) {
        const gni_return_t rc = GNI_EpPostDataTestById(ep, datagram_id, post_state, remote_address, remote_id);
        if (rc != GNI_RC_SUCCESS || *post_state != GNI_POST_PENDING) return rc;
        if (timeout != UINT32_MAX && std::chrono::steady_clock::now() >= end) return GNI_RC_TIMEOUT;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

gni_return_t GNI_EpPostDataCancelById(gni_ep_handle_t ep, uint64_t datagram_id) {
    if (!ep) return GNI_RC_INVALID_PARAM;
    return datagram_cancel(ep->datagram, datagram_id);
}

gni_return_t GNI_PostDataProbeById(gni_nic_handle_t nic, uint64_t *datagram_id) {
    if (!nic || !datagram_id) return GNI_RC_INVALID_PARAM;
    return datagram_probe(nic->slot, *datagram_id) ? GNI_RC_SUCCESS : GNI_RC_NO_MATCH;
}

const char *GNI_GetErrorString(gni_return_t rc) {
    static const char *const names[] = {
        "GNI_RC_SUCCESS",          "GNI_RC_NOT_DONE",        "GNI_RC_INVALID_PARAM",    "GNI_RC_ERROR_RESOURCE",
        "GNI_RC_TIMEOUT",          "GNI_RC_PERMISSION_ERROR", "GNI_RC_DESCRIPTOR_ERROR", "GNI_RC_ALIGNMENT_ERROR",
        "GNI_RC_INVALID_STATE",    "GNI_RC_NO_MATCH",        "GNI_RC_SIZE_ERROR",       "GNI_RC_TRANSACTION_ERROR",
        "GNI_RC_ILLEGAL_OP",       "GNI_RC_ERROR_NOMEM"};
    const auto i = static_cast<unsigned>(rc);
    return i < sizeof names / sizeof names[0] ? names[i] : "GNI_RC_UNKNOWN";
}

} // extern "C"
