/* tests/softnic/lapi/lapi.h - the software LAPI's API (README.md).
 *
 * The project's own header, written from the names and semantics of IBM's
 * public documentation of LAPI (the AIX technical reference pages
 * "LAPI_Amsend Subroutine", "LAPI_Put", "LAPI_Get", "LAPI_Init", ...); it
 * is not IBM's lapi.h.  Function names, argument lists and what they do
 * follow the documentation; every numeric value, structure layout and
 * anything the documentation leaves open are this header's.  A program
 * compiled against IBM's header does not run on this library, nor the
 * reverse.  Only the calls below exist: no LAPI_Xfer, DGSP, vector or
 * read-modify-write calls. */
#ifndef SOFTNIC_LAPI_H
#define SOFTNIC_LAPI_H

#ifdef __cplusplus
extern "C" {
#endif

typedef unsigned int uint;
typedef unsigned long ulong;

/* A LAPI context, as LAPI_Init gives it. */
typedef int lapi_handle_t;

/* A counter that LAPI updates atomically; the program reads and sets it
 * only through LAPI_Getcntr, LAPI_Setcntr and LAPI_Waitcntr. */
typedef struct {
    volatile int cntr;
    int reserved[3];
} lapi_cntr_t;

/* Active messages (LAPI_Amsend).  The header handler runs at the target,
 * inside LAPI's dispatcher: it returns where the message's data goes (NULL
 * when it has none) and may name a completion handler, which runs later,
 * on the completion thread, once all of the data is there. */
typedef void(compl_hndlr_t)(lapi_handle_t *hndl, void *user_info);
typedef void *(hdr_hndlr_t)(lapi_handle_t *hndl, void *uhdr, uint *uhdr_len, ulong *msg_len,
                            compl_hndlr_t **comp_h, void **user_info);

/* Asynchronous errors (a rule a header handler broke, an unknown handler
 * index at the target): LAPI calls it with the error code, the kind (this
 * library: always LAPI_ERR_TYPE_RULE), this task and the source task (-1
 * when none). */
typedef int lapi_err_t;
#define LAPI_ERR_TYPE_RULE 1
typedef void(LAPI_err_hndlr)(lapi_handle_t *hndl, int *error_code, lapi_err_t *err_type, int *task_ID, int *src);

/* LAPI_Init's argument; zero it first.  This library uses err_hndlr; the
 * other fields must be zero (num_compl_hndlr_thr may be 1, the one
 * completion thread it has), else LAPI_ERR_INFO_NONZERO_INFO. */
typedef struct {
    int protocol;             /* out: 0, the software fabric */
    int lib_vers;
    int num_compl_hndlr_thr;  /* 0 or 1 */
    uint instance_no;
    LAPI_err_hndlr *err_hndlr;
    void *adapter_name;
    ulong reserved[6];
} lapi_info_t;

/* LAPI_Qenv and LAPI_Senv. */
typedef enum {
    TASK_ID = 1,     /* this task's id (POE's MP_CHILD) */
    NUM_TASKS,       /* tasks in the job (MP_PROCS) */
    MAX_UHDR_SZ,     /* largest uhdr_len of LAPI_Amsend */
    MAX_DATA_SZ,     /* largest data length of one transfer */
    ERROR_CHK,       /* settable; stored only: arguments are always checked */
    INTERRUPT_SET,   /* settable: 1 interrupt mode (default), 0 polling */
    MAX_PKT_SZ,      /* bytes of one packet on the fabric */
    LOC_ADDRTBL_SZ   /* LAPI_Addr_set's indices are 1 <= i < this */
} lapi_query_t;

#define LAPI_MAX_UHDR_SZ 800
#define LAPI_MAX_MSG_SZ 0x40000000ul
#define LAPI_MAX_ERR_STRING 160
#define LAPI_ADDR_TBL_SZ 256

/* Return codes.  The names are the documentation's where it has one; the
 * ones marked "ours" are this library's, for what it checks and LAPI
 * reported otherwise or not at all. */
#define LAPI_SUCCESS 0
#define LAPI_ERR_UNKNOWN 401
#define LAPI_ERR_HNDL_INVALID 402       /* not a live handle of LAPI_Init */
#define LAPI_ERR_TGT 403                /* tgt not in 0 <= tgt < NUM_TASKS */
#define LAPI_ERR_TGT_PURGED 404         /* the target task is gone (ended or died) */
#define LAPI_ERR_UHDR_LEN 405           /* uhdr_len above MAX_UHDR_SZ */
#define LAPI_ERR_UHDR_NULL 406          /* uhdr NULL with uhdr_len > 0 */
#define LAPI_ERR_UDATA_NULL 407         /* udata NULL with udata_len > 0 */
#define LAPI_ERR_DATA_LEN 408           /* a length above LAPI_MAX_MSG_SZ */
#define LAPI_ERR_HDR_HNDL_NULL 409      /* no header handler (NULL, or an index nobody set) */
#define LAPI_ERR_ORG_ADDR_NULL 410      /* org_addr NULL with len > 0 */
#define LAPI_ERR_TGT_ADDR_NULL 411      /* tgt_addr NULL with len > 0 */
#define LAPI_ERR_CNTR_NULL 412          /* the counter pointer is NULL */
#define LAPI_ERR_RET_PTR_NULL 413       /* an output pointer is NULL */
#define LAPI_ERR_QUERY_TYPE 414         /* a query LAPI_Qenv or LAPI_Senv does not take */
#define LAPI_ERR_SET_VAL 415            /* a value LAPI_Senv does not take */
#define LAPI_ERR_ADDR_HNDL_RANGE 416    /* not 1 <= addr_hndl < LOC_ADDRTBL_SZ */
#define LAPI_ERR_ADDR_TBL_NULL 417      /* LAPI_Address_init's table is NULL */
#define LAPI_ERR_CODE_UNKNOWN 418       /* LAPI_Msg_string: not a code of this library */
#define LAPI_ERR_INFO_NULL 419          /* LAPI_Init's lapi_info is NULL */
#define LAPI_ERR_INFO_NONZERO_INFO 420  /* a field this library does not take is set */
#define LAPI_ERR_ALL_HNDL_IN_USE 421    /* this process already has a live handle */
#define LAPI_ERR_MEMORY_EXHAUSTED 422
#define LAPI_ERR_TIMEOUT 423            /* LAPI_Init: not every task joined in time */
#define LAPI_ERR_ENV_MP_CHILD 430       /* ours: MP_CHILD missing, malformed or >= MP_PROCS */
#define LAPI_ERR_ENV_MP_PROCS 431       /* ours: MP_PROCS missing or malformed */
#define LAPI_ERR_ENV_MP_PARTITION 432   /* ours: MP_PARTITION missing or malformed */
#define LAPI_ERR_TASK_IN_USE 433        /* ours: a live task has this id in the job */
#define LAPI_ERR_NO_FABRIC 434          /* ours: not on a host of SOFTNIC_HOSTS, or the fabric is full */
#define LAPI_ERR_HDR_HNDLR_COMM 435     /* ours: a header handler called a communication function */
#define LAPI_ERR_HDR_HNDLR_SLOW 436     /* ours: a header handler ran past SOFTNIC_LAPI_HH_LIMIT_MS */

int LAPI_Init(lapi_handle_t *hndl, lapi_info_t *lapi_info);
int LAPI_Term(lapi_handle_t hndl);
int LAPI_Msg_string(int error_code, void *buf);

int LAPI_Qenv(lapi_handle_t hndl, lapi_query_t query, int *ret_val);
int LAPI_Senv(lapi_handle_t hndl, lapi_query_t query, int set_val);

int LAPI_Addr_set(lapi_handle_t hndl, void *addr, int addr_hndl);
int LAPI_Addr_get(lapi_handle_t hndl, void **addr, int addr_hndl);
int LAPI_Address_init(lapi_handle_t hndl, void *my_addr, void *add_tab[]);

int LAPI_Amsend(lapi_handle_t hndl, uint tgt, void *hdr_hdl, void *uhdr, uint uhdr_len, void *udata,
                ulong udata_len, lapi_cntr_t *tgt_cntr, lapi_cntr_t *org_cntr, lapi_cntr_t *cmpl_cntr);
int LAPI_Put(lapi_handle_t hndl, uint tgt, ulong len, void *tgt_addr, void *org_addr, lapi_cntr_t *tgt_cntr,
             lapi_cntr_t *org_cntr, lapi_cntr_t *cmpl_cntr);
int LAPI_Get(lapi_handle_t hndl, uint tgt, ulong len, void *tgt_addr, void *org_addr, lapi_cntr_t *tgt_cntr,
             lapi_cntr_t *org_cntr);

int LAPI_Setcntr(lapi_handle_t hndl, lapi_cntr_t *cntr, int val);
int LAPI_Getcntr(lapi_handle_t hndl, lapi_cntr_t *cntr, int *val);
int LAPI_Waitcntr(lapi_handle_t hndl, lapi_cntr_t *cntr, int val, int *cur_cntr_val);

int LAPI_Fence(lapi_handle_t hndl);
int LAPI_Gfence(lapi_handle_t hndl);
int LAPI_Probe(lapi_handle_t hndl);

#ifdef __cplusplus
}
#endif

#endif
