// tests/softnic/lapi/lapi.cpp - the LAPI functions (lapi.h): the process's
// handle, argument checks, and the rule that a header handler does not
// communicate.  Semantics follow IBM's LAPI reference pages; README.md
// lists where this library differs.
#include "context.hpp"
#include "fabric.hpp"
#include "lapi.h"
#include "transfer.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>

using namespace softnic_lapi;

namespace {

// The process's one live context (LAPI_Init to LAPI_Term).  Never
// destroyed: at exit its threads end with the process.
struct Registry {
    std::mutex mutex;
    std::shared_ptr<Context> live;
    bool starting = false;
    lapi_handle_t next = 1;
};
Registry &registry() {
    static Registry &r = *new Registry;
    return r;
}

std::shared_ptr<Context> find(lapi_handle_t h) {
    Registry &r = registry();
    std::lock_guard<std::mutex> g(r.mutex);
    return r.live && r.live->handle == h ? r.live : nullptr;
}

enum class Call { local, communicates };

// Runs `f` on handle `h`'s context: LAPI_ERR_HNDL_INVALID for no live
// handle; a communication call from a header handler is refused, reported
// as a rule broken.  No exception crosses the C API.
template <class F> int with_context(lapi_handle_t h, const char *name, Call kind, F f) {
    const std::shared_ptr<Context> c = find(h);
    if (!c) return LAPI_ERR_HNDL_INVALID;
    try {
        if (kind == Call::communicates && in_header_handler()) {
            c->report(LAPI_ERR_HDR_HNDLR_COMM, -1,
                      std::string(name) + " was called from a header handler: header handlers run in the "
                                          "dispatcher and must not communicate or wait");
            return LAPI_ERR_HDR_HNDLR_COMM;
        }
        return f(*c);
    } catch (const std::bad_alloc &) {
        return LAPI_ERR_MEMORY_EXHAUSTED;
    } catch (...) {
        return LAPI_ERR_UNKNOWN;
    }
}

int check_target(const Context &c, uint tgt) { return tgt < c.job.tasks ? LAPI_SUCCESS : LAPI_ERR_TGT; }

// What LAPI_Put and LAPI_Get check before anything moves: the arguments,
// the pending asynchronous error, the target still there.
int check_transfer(Context &c, uint tgt, ulong len, const void *tgt_addr, const void *org_addr) {
    if (const int e = check_target(c, tgt)) return e;
    if (len > LAPI_MAX_MSG_SZ) return LAPI_ERR_DATA_LEN;
    if (len && !tgt_addr) return LAPI_ERR_TGT_ADDR_NULL;
    if (len && !org_addr) return LAPI_ERR_ORG_ADDR_NULL;
    if (const int e = c.take_error()) return e;
    return c.reachable(tgt);
}

struct Message {
    int code;
    const char *name;
    const char *text;
};
const Message messages[] = {
    {LAPI_SUCCESS, "LAPI_SUCCESS", "the call completed"},
    {LAPI_ERR_UNKNOWN, "LAPI_ERR_UNKNOWN", "an internal error"},
    {LAPI_ERR_HNDL_INVALID, "LAPI_ERR_HNDL_INVALID", "the handle is not one LAPI_Init gave, or it was terminated"},
    {LAPI_ERR_TGT, "LAPI_ERR_TGT", "the target task is not in 0 <= tgt < NUM_TASKS"},
    {LAPI_ERR_TGT_PURGED, "LAPI_ERR_TGT_PURGED",
     "a task this needs has ended or died: what was for it is dropped, what it owed never comes"},
    {LAPI_ERR_UHDR_LEN, "LAPI_ERR_UHDR_LEN", "uhdr_len is above MAX_UHDR_SZ"},
    {LAPI_ERR_UHDR_NULL, "LAPI_ERR_UHDR_NULL", "uhdr is NULL but uhdr_len is not 0"},
    {LAPI_ERR_UDATA_NULL, "LAPI_ERR_UDATA_NULL", "udata is NULL but udata_len is not 0"},
    {LAPI_ERR_DATA_LEN, "LAPI_ERR_DATA_LEN", "the data length is above LAPI_MAX_MSG_SZ"},
    {LAPI_ERR_HDR_HNDL_NULL, "LAPI_ERR_HDR_HNDL_NULL",
     "no header handler: hdr_hdl is NULL, or an index LAPI_Addr_set did not set at the target"},
    {LAPI_ERR_ORG_ADDR_NULL, "LAPI_ERR_ORG_ADDR_NULL", "org_addr is NULL but the length is not 0"},
    {LAPI_ERR_TGT_ADDR_NULL, "LAPI_ERR_TGT_ADDR_NULL", "tgt_addr is NULL but the length is not 0"},
    {LAPI_ERR_CNTR_NULL, "LAPI_ERR_CNTR_NULL", "the counter pointer is NULL"},
    {LAPI_ERR_RET_PTR_NULL, "LAPI_ERR_RET_PTR_NULL", "an output pointer is NULL"},
    {LAPI_ERR_QUERY_TYPE, "LAPI_ERR_QUERY_TYPE", "not a query this call takes"},
    {LAPI_ERR_SET_VAL, "LAPI_ERR_SET_VAL", "not a value this query takes (INTERRUPT_SET and ERROR_CHK: 0 or 1)"},
    {LAPI_ERR_ADDR_HNDL_RANGE, "LAPI_ERR_ADDR_HNDL_RANGE", "addr_hndl is not in 1 <= addr_hndl < LOC_ADDRTBL_SZ"},
    {LAPI_ERR_ADDR_TBL_NULL, "LAPI_ERR_ADDR_TBL_NULL", "the address table is NULL"},
    {LAPI_ERR_CODE_UNKNOWN, "LAPI_ERR_CODE_UNKNOWN", "not a return code of this library"},
    {LAPI_ERR_INFO_NULL, "LAPI_ERR_INFO_NULL", "lapi_info is NULL"},
    {LAPI_ERR_INFO_NONZERO_INFO, "LAPI_ERR_INFO_NONZERO_INFO",
     "a field of lapi_info this library does not take is not zero (zero the structure first)"},
    {LAPI_ERR_ALL_HNDL_IN_USE, "LAPI_ERR_ALL_HNDL_IN_USE", "this process already has a live LAPI handle"},
    {LAPI_ERR_MEMORY_EXHAUSTED, "LAPI_ERR_MEMORY_EXHAUSTED", "out of memory"},
    {LAPI_ERR_TIMEOUT, "LAPI_ERR_TIMEOUT",
     "not every task of the job (MP_PROCS of MP_PARTITION) joined within SOFTNIC_LAPI_INIT_TIMEOUT_S"},
    {LAPI_ERR_ENV_MP_CHILD, "LAPI_ERR_ENV_MP_CHILD",
     "MP_CHILD (this task's id, which POE sets) is missing, not a number, or not below MP_PROCS"},
    {LAPI_ERR_ENV_MP_PROCS, "LAPI_ERR_ENV_MP_PROCS", "MP_PROCS (the job's number of tasks) is missing or not a number"},
    {LAPI_ERR_ENV_MP_PARTITION, "LAPI_ERR_ENV_MP_PARTITION",
     "MP_PARTITION (the job's key; softnic-run sets one) is missing or not a number"},
    {LAPI_ERR_TASK_IN_USE, "LAPI_ERR_TASK_IN_USE", "a live process is already this task (MP_CHILD) of the job"},
    {LAPI_ERR_NO_FABRIC, "LAPI_ERR_NO_FABRIC",
     "no fabric for this task: no address of SOFTNIC_HOSTS is this host's, or the host's task table is full"},
    {LAPI_ERR_HDR_HNDLR_COMM, "LAPI_ERR_HDR_HNDLR_COMM",
     "a header handler called a LAPI communication function: header handlers must not communicate or wait"},
    {LAPI_ERR_HDR_HNDLR_SLOW, "LAPI_ERR_HDR_HNDLR_SLOW",
     "a header handler ran past SOFTNIC_LAPI_HH_LIMIT_MS: header handlers must not block"},
};

} // namespace

extern "C" {

int LAPI_Init(lapi_handle_t *hndl, lapi_info_t *lapi_info) {
    if (!hndl) return LAPI_ERR_RET_PTR_NULL;
    if (!lapi_info) return LAPI_ERR_INFO_NULL;
    bool reserved = false;
    for (const ulong r : lapi_info->reserved) reserved = reserved || r;
    if (reserved || lapi_info->lib_vers || lapi_info->instance_no > 1 || lapi_info->num_compl_hndlr_thr < 0 ||
        lapi_info->num_compl_hndlr_thr > 1 || lapi_info->adapter_name)
        return LAPI_ERR_INFO_NONZERO_INFO;
    Job job{};
    if (const int rc = job_read(job); rc != LAPI_SUCCESS) return rc;
    if (several_hosts() && host_index() < 0) return LAPI_ERR_NO_FABRIC;  // host_index said why on stderr
    Registry &r = registry();
    lapi_handle_t handle;
    {
        std::lock_guard<std::mutex> g(r.mutex);
        if (r.live || r.starting) return LAPI_ERR_ALL_HNDL_IN_USE;
        r.starting = true;
        handle = r.next++;
    }
    int rc = LAPI_SUCCESS;
    std::shared_ptr<Context> c;
    try {
        c = std::make_shared<Context>(handle, job, knobs_read(), lapi_info->err_hndlr);
        rc = c->start();
    } catch (const std::bad_alloc &) {
        rc = LAPI_ERR_MEMORY_EXHAUSTED;
    } catch (...) {
        rc = LAPI_ERR_UNKNOWN;
    }
    std::lock_guard<std::mutex> g(r.mutex);
    r.starting = false;
    if (rc != LAPI_SUCCESS) return rc;
    r.live = c;
    lapi_info->protocol = 0;
    *hndl = handle;
    return LAPI_SUCCESS;
}

int LAPI_Term(lapi_handle_t hndl) {
    return with_context(hndl, "LAPI_Term", Call::communicates, [hndl](Context &c) {
        {
            Registry &r = registry();
            std::lock_guard<std::mutex> g(r.mutex);
            if (r.live.get() != &c || c.handle != hndl) return LAPI_ERR_HNDL_INVALID;
            r.live.reset();
        }
        c.stop();
        return LAPI_SUCCESS;
    });
}

int LAPI_Msg_string(int error_code, void *buf) {
    if (!buf) return LAPI_ERR_RET_PTR_NULL;
    auto *out = static_cast<char *>(buf);
    for (const Message &m : messages)
        if (m.code == error_code) {
            std::snprintf(out, LAPI_MAX_ERR_STRING, "%s: %s", m.name, m.text);
            return LAPI_SUCCESS;
        }
    std::snprintf(out, LAPI_MAX_ERR_STRING, "%d: not a return code of the software LAPI", error_code);
    return LAPI_ERR_CODE_UNKNOWN;
}

int LAPI_Qenv(lapi_handle_t hndl, lapi_query_t query, int *ret_val) {
    return with_context(hndl, "LAPI_Qenv", Call::local, [&](Context &c) {
        int v;
        switch (static_cast<int>(query)) {
        case TASK_ID: v = static_cast<int>(c.job.task); break;
        case NUM_TASKS: v = static_cast<int>(c.job.tasks); break;
        case MAX_UHDR_SZ: v = LAPI_MAX_UHDR_SZ; break;
        case MAX_DATA_SZ: v = static_cast<int>(LAPI_MAX_MSG_SZ); break;
        case ERROR_CHK: v = c.error_check.load(); break;
        case INTERRUPT_SET: v = c.interrupt.load() ? 1 : 0; break;
        case MAX_PKT_SZ: v = static_cast<int>(packet_bytes); break;
        case LOC_ADDRTBL_SZ: v = LAPI_ADDR_TBL_SZ; break;
        default: return LAPI_ERR_QUERY_TYPE;
        }
        if (!ret_val) return LAPI_ERR_RET_PTR_NULL;
        *ret_val = v;
        return LAPI_SUCCESS;
    });
}

int LAPI_Senv(lapi_handle_t hndl, lapi_query_t query, int set_val) {
    return with_context(hndl, "LAPI_Senv", Call::local, [&](Context &c) {
        if (query != INTERRUPT_SET && query != ERROR_CHK) return LAPI_ERR_QUERY_TYPE;
        if (set_val != 0 && set_val != 1) return LAPI_ERR_SET_VAL;
        if (query == ERROR_CHK) {
            c.error_check = set_val;
            return LAPI_SUCCESS;
        }
        c.set_interrupt(set_val == 1);
        return LAPI_SUCCESS;
    });
}

int LAPI_Addr_set(lapi_handle_t hndl, void *addr, int addr_hndl) {
    return with_context(hndl, "LAPI_Addr_set", Call::local, [&](Context &c) {
        if (addr_hndl < 1 || addr_hndl >= LAPI_ADDR_TBL_SZ) return LAPI_ERR_ADDR_HNDL_RANGE;
        c.address_table[addr_hndl] = addr;
        return LAPI_SUCCESS;
    });
}

int LAPI_Addr_get(lapi_handle_t hndl, void **addr, int addr_hndl) {
    return with_context(hndl, "LAPI_Addr_get", Call::local, [&](Context &c) {
        if (addr_hndl < 1 || addr_hndl >= LAPI_ADDR_TBL_SZ) return LAPI_ERR_ADDR_HNDL_RANGE;
        if (!addr) return LAPI_ERR_RET_PTR_NULL;
        *addr = c.address_table[addr_hndl].load();
        return LAPI_SUCCESS;
    });
}

int LAPI_Address_init(lapi_handle_t hndl, void *my_addr, void *add_tab[]) {
    return with_context(hndl, "LAPI_Address_init", Call::communicates, [&](Context &c) {
        if (!add_tab) return LAPI_ERR_ADDR_TBL_NULL;
        if (const int e = c.take_error()) return e;
        return c.collective(my_addr, add_tab);
    });
}

int LAPI_Amsend(lapi_handle_t hndl, uint tgt, void *hdr_hdl, void *uhdr, uint uhdr_len, void *udata,
                ulong udata_len, lapi_cntr_t *tgt_cntr, lapi_cntr_t *org_cntr, lapi_cntr_t *cmpl_cntr) {
    return with_context(hndl, "LAPI_Amsend", Call::communicates, [&](Context &c) {
        if (const int e = check_target(c, tgt)) return e;
        if (!hdr_hdl) return LAPI_ERR_HDR_HNDL_NULL;
        if (uhdr_len > LAPI_MAX_UHDR_SZ) return LAPI_ERR_UHDR_LEN;
        if (uhdr_len && !uhdr) return LAPI_ERR_UHDR_NULL;
        if (udata_len > LAPI_MAX_MSG_SZ) return LAPI_ERR_DATA_LEN;
        if (udata_len && !udata) return LAPI_ERR_UDATA_NULL;
        if (const int e = c.take_error()) return e;
        if (const int e = c.reachable(tgt)) return e;
        Outgoing o;
        o.head.kind = kind_am;
        o.head.total = udata_len;
        o.head.handler = reinterpret_cast<std::uint64_t>(hdr_hdl);
        o.head.target_cntr = reinterpret_cast<std::uint64_t>(tgt_cntr);
        o.head.completion_cntr = reinterpret_cast<std::uint64_t>(cmpl_cntr);
        o.data = static_cast<const unsigned char *>(udata);
        o.uhdr.assign(static_cast<const unsigned char *>(uhdr), static_cast<const unsigned char *>(uhdr) + uhdr_len);
        o.sent_cntr = org_cntr;
        return c.post(tgt, std::move(o), true);
    });
}

int LAPI_Put(lapi_handle_t hndl, uint tgt, ulong len, void *tgt_addr, void *org_addr, lapi_cntr_t *tgt_cntr,
             lapi_cntr_t *org_cntr, lapi_cntr_t *cmpl_cntr) {
    return with_context(hndl, "LAPI_Put", Call::communicates, [&](Context &c) {
        if (const int e = check_transfer(c, tgt, len, tgt_addr, org_addr)) return e;
        Outgoing o;
        o.head.kind = kind_put;
        o.head.total = len;
        o.head.target_addr = reinterpret_cast<std::uint64_t>(tgt_addr);
        o.head.target_cntr = reinterpret_cast<std::uint64_t>(tgt_cntr);
        o.head.completion_cntr = reinterpret_cast<std::uint64_t>(cmpl_cntr);
        o.data = static_cast<const unsigned char *>(org_addr);
        o.sent_cntr = org_cntr;
        return c.post(tgt, std::move(o), true);
    });
}

int LAPI_Get(lapi_handle_t hndl, uint tgt, ulong len, void *tgt_addr, void *org_addr, lapi_cntr_t *tgt_cntr,
             lapi_cntr_t *org_cntr) {
    return with_context(hndl, "LAPI_Get", Call::communicates, [&](Context &c) {
        if (const int e = check_transfer(c, tgt, len, tgt_addr, org_addr)) return e;
        // A request only; the data comes back in the target's reply.
        Outgoing o;
        o.head.kind = kind_get;
        o.head.total = len;
        o.head.target_addr = reinterpret_cast<std::uint64_t>(tgt_addr);
        o.head.target_cntr = reinterpret_cast<std::uint64_t>(tgt_cntr);
        o.head.origin_addr = reinterpret_cast<std::uint64_t>(org_addr);
        o.head.origin_cntr = reinterpret_cast<std::uint64_t>(org_cntr);
        return c.post(tgt, std::move(o), true);
    });
}

int LAPI_Setcntr(lapi_handle_t hndl, lapi_cntr_t *cntr, int val) {
    return with_context(hndl, "LAPI_Setcntr", Call::local, [&](Context &) {
        if (!cntr) return LAPI_ERR_CNTR_NULL;
        __atomic_store_n(&cntr->cntr, val, __ATOMIC_SEQ_CST);
        return LAPI_SUCCESS;
    });
}

int LAPI_Getcntr(lapi_handle_t hndl, lapi_cntr_t *cntr, int *val) {
    return with_context(hndl, "LAPI_Getcntr", Call::local, [&](Context &c) {
        if (!cntr) return LAPI_ERR_CNTR_NULL;
        if (!val) return LAPI_ERR_RET_PTR_NULL;
        // A polling program makes progress in its calls, this one too; not
        // from a header handler, which runs inside the dispatcher.
        if (!in_header_handler()) c.dispatch();
        *val = counter_get(cntr);
        return LAPI_SUCCESS;
    });
}

int LAPI_Waitcntr(lapi_handle_t hndl, lapi_cntr_t *cntr, int val, int *cur_cntr_val) {
    return with_context(hndl, "LAPI_Waitcntr", Call::communicates, [&](Context &c) {
        if (!cntr) return LAPI_ERR_CNTR_NULL;
        const int rc = c.wait_until([&] { return counter_get(cntr) >= val; });
        if (rc != LAPI_SUCCESS) return rc;
        // Decremented, not zeroed: it may have gone past val.
        const int now = __atomic_sub_fetch(&cntr->cntr, val, __ATOMIC_SEQ_CST);
        if (cur_cntr_val) *cur_cntr_val = now;
        return LAPI_SUCCESS;
    });
}

int LAPI_Fence(lapi_handle_t hndl) {
    return with_context(hndl, "LAPI_Fence", Call::communicates, [&](Context &c) {
        if (const int e = c.take_error()) return e;
        return c.fence();
    });
}

int LAPI_Gfence(lapi_handle_t hndl) {
    return with_context(hndl, "LAPI_Gfence", Call::communicates, [&](Context &c) {
        if (const int e = c.take_error()) return e;
        if (const int e = c.fence()) return e;
        return c.collective(nullptr, nullptr);
    });
}

int LAPI_Probe(lapi_handle_t hndl) {
    return with_context(hndl, "LAPI_Probe", Call::communicates, [&](Context &c) {
        if (const int e = c.take_error()) return e;
        c.dispatch();
        return LAPI_SUCCESS;
    });
}

} // extern "C"
