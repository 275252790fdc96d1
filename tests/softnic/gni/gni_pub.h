/* tests/softnic/gni/gni_pub.h - the subset of Cray's user-level Generic
 * Network Interface (uGNI) that the software GNI NIC implements.
 *
 * The project's own header, written from the function names and semantics
 * Cray documents in "Using the GNI and DMAPP APIs" (S-2446); it is not
 * Cray's gni_pub.h, and its numeric values and structure layouts are this
 * project's: a program is compiled against this header to run on the
 * software NIC (README.md).  Names, argument order and return codes follow
 * the documentation, so code written against it also reads as uGNI code. */
#ifndef SLUICE_SOFTNIC_GNI_PUB_H
#define SLUICE_SOFTNIC_GNI_PUB_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gni_return {
    GNI_RC_SUCCESS = 0,
    GNI_RC_NOT_DONE,          /* nothing yet: no event, no message, no credit */
    GNI_RC_INVALID_PARAM,
    GNI_RC_ERROR_RESOURCE,    /* a table or limit is full; a CQ overran */
    GNI_RC_TIMEOUT,
    GNI_RC_PERMISSION_ERROR,  /* ptag or cookie not the job's */
    GNI_RC_DESCRIPTOR_ERROR,
    GNI_RC_ALIGNMENT_ERROR,
    GNI_RC_INVALID_STATE,
    GNI_RC_NO_MATCH,
    GNI_RC_SIZE_ERROR,
    GNI_RC_TRANSACTION_ERROR, /* the network reported an error for the transfer */
    GNI_RC_ILLEGAL_OP,
    GNI_RC_ERROR_NOMEM
} gni_return_t;

/* Opaque handles. */
typedef struct gni_cdm_struct *gni_cdm_handle_t;
typedef struct gni_nic_struct *gni_nic_handle_t;
typedef struct gni_ep_struct *gni_ep_handle_t;
typedef struct gni_cq_struct *gni_cq_handle_t;

/* A memory registration: two words a process passes by value to its peers. */
typedef struct gni_mem_handle {
    uint64_t qword1;
    uint64_t qword2;
} gni_mem_handle_t;

/* Communication domain modes (GNI_CdmCreate); accepted, not modelled. */
#define GNI_CDM_MODE_FORK_NOCOPY 0x00000001u
#define GNI_CDM_MODE_FORK_FULLCOPY 0x00000002u
#define GNI_CDM_MODE_ERR_NO_KILL 0x00000004u
#define GNI_CDM_MODE_FAST_DATAGRAM_POLL 0x00000008u

/* Completion queues. */
typedef uint64_t gni_cq_entry_t;
typedef enum gni_cq_mode { GNI_CQ_NOBLOCK = 0, GNI_CQ_BLOCKING = 1 } gni_cq_mode_t;

#define GNI_CQ_EVENT_TYPE_POST 0x0ull
#define GNI_CQ_EVENT_TYPE_SMSG 0x1ull
#define GNI_CQ_EVENT_TYPE_DMAPP 0x2ull
#define GNI_CQ_EVENT_TYPE_MSGQ 0x3ull

/* An event's 64 bits, in this NIC's layout: 0-31 data (the instance id or
 * event data of the peer for a remote event, the message id of an SMSG
 * send, the endpoint's local event data otherwise), 32-47 the poster's
 * descriptor token (local post events, for GNI_GetCompleted), 48-55 the
 * status (0: ok), 56-59 the type, 60 remote, 62 overrun. */
#define GNI_CQ_GET_DATA(e) ((uint64_t)(e) & 0xffffffffull)
#define GNI_CQ_GET_INST_ID(e) ((uint32_t)((e) & 0xffffffffull))
#define GNI_CQ_GET_REM_INST_ID(e) GNI_CQ_GET_INST_ID(e)
#define GNI_CQ_GET_MSG_ID(e) ((uint32_t)((e) & 0xffffffffull))
#define GNI_CQ_GET_TYPE(e) (((uint64_t)(e) >> 56) & 0xfull)
#define GNI_CQ_GET_STATUS(e) (((uint64_t)(e) >> 48) & 0xffull)
#define GNI_CQ_STATUS_OK(e) (GNI_CQ_GET_STATUS(e) == 0)
#define GNI_CQ_REMOTE(e) (((uint64_t)(e) >> 60) & 1ull)
#define GNI_CQ_OVERRUN(e) (((uint64_t)(e) >> 62) & 1ull)

/* Memory registration flags (GNI_MemRegister). */
#define GNI_MEM_READWRITE 0x00000000u
#define GNI_MEM_READ_ONLY 0x00000001u
#define GNI_MEM_USE_GART 0x00000002u
#define GNI_MEM_RELAXED_PI_ORDERING 0x00000010u
#define GNI_MEM_STRICT_PI_ORDERING 0x00000020u

/* Post descriptors (GNI_PostFma, GNI_PostRdma). */
typedef enum gni_post_type {
    GNI_POST_RDMA_PUT = 1,
    GNI_POST_RDMA_GET,
    GNI_POST_FMA_PUT,
    GNI_POST_FMA_PUT_W_SYNCFLAG,
    GNI_POST_FMA_GET,
    GNI_POST_AMO,
    GNI_POST_CQWRITE
} gni_post_type_t;

/* Which completions a post raises. */
#define GNI_CQMODE_SILENT 0x0000u
#define GNI_CQMODE_LOCAL_EVENT 0x0001u
#define GNI_CQMODE_GLOBAL_EVENT 0x0002u
#define GNI_CQMODE_REMOTE_EVENT 0x0004u
#define GNI_CQMODE_DUAL_EVENTS (GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT)

/* Delivery modes: routing hints, accepted, not modelled. */
#define GNI_DLVMODE_PERFORMANCE 0x0000u
#define GNI_DLVMODE_NO_ADAPT 0x0001u
#define GNI_DLVMODE_NO_HASH 0x0002u
#define GNI_DLVMODE_NO_RADAPT 0x0004u
#define GNI_DLVMODE_IN_ORDER (GNI_DLVMODE_NO_ADAPT | GNI_DLVMODE_NO_HASH)

/* BTE modes: accepted, not modelled (every transfer is in order). */
#define GNI_RDMAMODE_PHYS_ADDR 0x0001u
#define GNI_RDMAMODE_FENCE 0x0002u

/* Atomic memory operations, on 64-bit words.  first_operand is the addend,
 * the mask of AND / OR / XOR, the compare value of CSWAP, the AND mask of
 * AX (the word becomes (word & first) ^ second); second_operand is CSWAP's
 * new value and AX's XOR value.  IMIN and IMAX compare as signed 64-bit
 * integers (Aries).  The F forms fetch the old word into local_addr. */
typedef enum gni_fma_cmd_type {
    GNI_FMA_ATOMIC_ADD = 1,   /* no fetch */
    GNI_FMA_ATOMIC_FADD,      /* fetch-and-add */
    GNI_FMA_ATOMIC_CSWAP,     /* fetching compare-and-swap */
    GNI_FMA_ATOMIC_AND,
    GNI_FMA_ATOMIC_FAND,
    GNI_FMA_ATOMIC_OR,
    GNI_FMA_ATOMIC_FOR,
    GNI_FMA_ATOMIC_XOR,
    GNI_FMA_ATOMIC_FXOR,
    GNI_FMA_ATOMIC_AX,        /* and-xor */
    GNI_FMA_ATOMIC_FAX,
    GNI_FMA_ATOMIC_IMIN,
    GNI_FMA_ATOMIC_FIMIN,
    GNI_FMA_ATOMIC_IMAX,
    GNI_FMA_ATOMIC_FIMAX
} gni_fma_cmd_type_t;

typedef struct gni_post_descriptor {
    struct gni_post_descriptor *next_descr; /* for the caller; unused */
    struct gni_post_descriptor *prev_descr;
    uint64_t post_id;          /* the caller's tag, returned untouched */
    uint64_t status;           /* unused */
    uint16_t cq_mode_complete; /* unused */
    gni_post_type_t type;
    uint16_t cq_mode;          /* GNI_CQMODE_* */
    uint16_t dlvr_mode;        /* GNI_DLVMODE_* */
    uint64_t local_addr;
    gni_mem_handle_t local_mem_hndl;
    uint64_t remote_addr;
    gni_mem_handle_t remote_mem_hndl;
    uint64_t length;
    uint16_t rdma_mode;        /* GNI_RDMAMODE_* */
    gni_cq_handle_t src_cq_hndl; /* NULL: the endpoint's */
    uint64_t sync_flag_value;  /* unused */
    uint64_t sync_flag_addr;
    gni_fma_cmd_type_t amo_cmd;
    uint64_t first_operand;
    uint64_t second_operand;
    uint64_t cqwrite_value;    /* unused */
} gni_post_descriptor_t;

/* Short messages (SMSG): a mailbox per peer in the receiver's memory. */
typedef enum gni_smsg_type {
    GNI_SMSG_TYPE_INVALID = 0,
    GNI_SMSG_TYPE_MBOX,
    GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT
} gni_smsg_type_t;

#define GNI_SMSG_ANY_TAG 0xffu

typedef struct gni_smsg_attr {
    gni_smsg_type_t msg_type;
    void *msg_buffer;        /* the registered memory holding the mailboxes */
    uint32_t buff_size;      /* one mailbox's bytes (GNI_SmsgBufferSizeNeeded) */
    gni_mem_handle_t mem_hndl;
    uint32_t mbox_offset;    /* this mailbox's offset in msg_buffer */
    uint16_t mbox_maxcredit; /* messages that may be unreleased at once */
    uint32_t msg_maxsize;    /* header plus data bytes of one message */
} gni_smsg_attr_t;

/* Communication domains and the NIC. */
gni_return_t GNI_CdmCreate(uint32_t inst_id, uint8_t ptag, uint32_t cookie, uint32_t modes,
                           gni_cdm_handle_t *cdm_hndl);
gni_return_t GNI_CdmAttach(gni_cdm_handle_t cdm_hndl, uint32_t device_id, uint32_t *local_addr,
                           gni_nic_handle_t *nic_hndl);
gni_return_t GNI_CdmDestroy(gni_cdm_handle_t cdm_hndl);

/* Completion queues; handler must be NULL (no event handlers here). */
gni_return_t GNI_CqCreate(gni_nic_handle_t nic_hndl, uint32_t entry_count, uint32_t delay_count,
                          gni_cq_mode_t mode, void (*handler)(gni_cq_entry_t *, void *), void *context,
                          gni_cq_handle_t *cq_hndl);
gni_return_t GNI_CqDestroy(gni_cq_handle_t cq_hndl);
gni_return_t GNI_CqGetEvent(gni_cq_handle_t cq_hndl, gni_cq_entry_t *event_data);
/* timeout in milliseconds; UINT64_MAX waits for ever. */
gni_return_t GNI_CqWaitEvent(gni_cq_handle_t cq_hndl, uint64_t timeout, gni_cq_entry_t *event_data);

/* Endpoints. */
gni_return_t GNI_EpCreate(gni_nic_handle_t nic_hndl, gni_cq_handle_t src_cq_hndl, gni_ep_handle_t *ep_hndl);
gni_return_t GNI_EpBind(gni_ep_handle_t ep_hndl, uint32_t remote_addr, uint32_t remote_id);
gni_return_t GNI_EpUnbind(gni_ep_handle_t ep_hndl);
gni_return_t GNI_EpDestroy(gni_ep_handle_t ep_hndl);
gni_return_t GNI_EpSetEventData(gni_ep_handle_t ep_hndl, uint32_t local_event, uint32_t remote_event);

/* Memory registration. */
gni_return_t GNI_MemRegister(gni_nic_handle_t nic_hndl, uint64_t address, uint64_t length,
                             gni_cq_handle_t dst_cq_hndl, uint32_t flags, uint32_t vmdh_index,
                             gni_mem_handle_t *mem_hndl);
gni_return_t GNI_MemDeregister(gni_nic_handle_t nic_hndl, gni_mem_handle_t *mem_hndl);

/* Short messages. */
gni_return_t GNI_SmsgBufferSizeNeeded(gni_smsg_attr_t *smsg_attr, unsigned int *size);
gni_return_t GNI_SmsgInit(gni_ep_handle_t ep_hndl, gni_smsg_attr_t *local_smsg_attr,
                          gni_smsg_attr_t *remote_smsg_attr);
gni_return_t GNI_SmsgSendWTag(gni_ep_handle_t ep_hndl, void *header, uint32_t header_length, void *data,
                              uint32_t data_length, uint32_t msg_id, uint8_t tag);
gni_return_t GNI_SmsgGetNextWTag(gni_ep_handle_t ep_hndl, void **header, uint8_t *tag);
gni_return_t GNI_SmsgRelease(gni_ep_handle_t ep_hndl);

/* Posted transfers: FMA (done by the caller) and RDMA (the BTE engine). */
gni_return_t GNI_PostFma(gni_ep_handle_t ep_hndl, gni_post_descriptor_t *post_descr);
gni_return_t GNI_PostRdma(gni_ep_handle_t ep_hndl, gni_post_descriptor_t *post_descr);
gni_return_t GNI_GetCompleted(gni_cq_handle_t cq_hndl, gni_cq_entry_t event_data,
                              gni_post_descriptor_t **post_descr);

/* Datagrams: the connection-less exchange uGNI offers for setting up
 * connections.  A post on an endpoint bound to a peer (directed) matches
 * the peer's directed post back to this domain if there is one (both
 * complete, one exchange), else the peer's oldest wildcard post (one on an
 * endpoint that is not bound); each side's in_data (at most
 * GNI_DATAGRAM_MAXSIZE bytes) lands in the other's out_buf, cut to
 * out_len.  One datagram at a time per endpoint, until a test finds it
 * COMPLETED or TERMINATED; a post waits for its match until it is
 * cancelled.  GNI_PostDataProbeById names a datagram of the NIC that is
 * done and not yet tested (GNI_RC_NO_MATCH: none).  datagram_id is the
 * caller's (not GNI_DATAGRAM_ID_ANY). */
#define GNI_DATAGRAM_MAXSIZE 128
#define GNI_DATAGRAM_ID_ANY UINT64_MAX

typedef enum gni_post_state {
    GNI_POST_PENDING = 0,
    GNI_POST_COMPLETED,
    GNI_POST_ERROR,
    GNI_POST_TIMEOUT,
    GNI_POST_TERMINATED,
    GNI_POST_REMOTE_DATA
} gni_post_state_t;

gni_return_t GNI_EpPostDataWId(gni_ep_handle_t ep_hndl, void *in_data, uint16_t data_len, void *out_buf,
                               uint16_t out_len, uint64_t datagram_id);
gni_return_t GNI_EpPostDataTestById(gni_ep_handle_t ep_hndl, uint64_t datagram_id, gni_post_state_t *post_state,
                                    uint32_t *remote_address, uint32_t *remote_id);
/* timeout in milliseconds; UINT32_MAX waits for ever. */
gni_return_t GNI_EpPostDataWaitById(gni_ep_handle_t ep_hndl, uint64_t datagram_id, uint32_t timeout,
                                    gni_post_state_t *post_state, uint32_t *remote_address, uint32_t *remote_id);
gni_return_t GNI_EpPostDataCancelById(gni_ep_handle_t ep_hndl, uint64_t datagram_id);
gni_return_t GNI_PostDataProbeById(gni_nic_handle_t nic_hndl, uint64_t *datagram_id);

/* The name of a return code ("GNI_RC_NOT_DONE"), never NULL. */
const char *GNI_GetErrorString(gni_return_t rc);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_SOFTNIC_GNI_PUB_H */
