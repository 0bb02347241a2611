/* What the TCPCL v3 and v4 sessions share (private to libternbp): byte
 * buffers, the queue of events, the bundle buffers handed out in events
 * (freed on the session's next call), and the first error's text. */
#ifndef TERN_TCPCL_INT_H
#define TERN_TCPCL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "bp_tcpcl.h"

typedef struct tcl_buf {
    uint8_t *p;
    size_t off, len, cap; /* live bytes are p[off..len) */
} tcl_buf;

/* Caller's bytes sent in place (zero copy) once the output reaches `at`
 * (a count of tx bytes queued before them). */
typedef struct tcl_ref {
    uint64_t at;
    const uint8_t *p;
    size_t len;
    uint64_t tid;   /* the transfer they belong to */
    uint8_t *owned; /* a copy this core frees, once detached from the caller */
} tcl_ref;

/* An answer to a received transfer (an acknowledgement or a refusal),
 * encoded, waiting for the final answers to the transfers before it: RFC
 * 7242 and RFC 9174 acknowledge transfers in the order they came, and ION's
 * tcpclo takes every acknowledgement for its oldest unacknowledged bundle. */
#define TCL_ANS_MSG_MAX 18
/* Answers held before progress acknowledgements of one transfer merge into
 * the latest (they are cumulative): a peer sending tiny segments while a
 * commit is pending cannot make the queue grow without bound. */
#define TCL_ANS_HOLD_MAX 4096

/* One of our outgoing segments: its bytes in the tx stream are [at, end)
 * (counts of tx bytes: the header, and the data when copied; data sent in
 * place is the ref at end). Kept until sent, so that the unsent segments of
 * a transfer the peer refused can be taken out. */
typedef struct tcl_seg {
    uint64_t tid, at, end;
} tcl_seg;

enum { TCL_ANS_OWED, TCL_ANS_PROGRESS, TCL_ANS_FINAL };

typedef struct tcl_ans {
    uint64_t tid;
    uint8_t kind, len; /* TCL_ANS_*; bytes of msg */
    uint8_t msg[TCL_ANS_MSG_MAX];
} tcl_ans;

typedef struct tcl_core {
    tcl_buf rx, tx, in; /* bytes read, bytes to write, the transfer coming in */
    /* the length of the message partly in rx, once its header told (0: not
     * known): rx is grown to it at once, not by doubling through every size
     * below (each a copy, and the freed ones stay resident) */
    size_t rx_msg;
    tcl_ans *ans;       /* answers held, in transfer order: ans[ans_head..ans_n) */
    size_t ans_head, ans_n, ans_cap;
    tcl_ref *refs; /* in output order, refs[ref_head..ref_n) pending */
    size_t ref_head, ref_n, ref_cap;
    size_t ref_done;    /* bytes of refs[ref_head] already sent */
    uint64_t ref_bytes; /* bytes of all pending refs, ref_done included */
    uint64_t tx_out;    /* tx bytes sent so far */
    tcl_seg *segs;      /* segments not yet sent, in output order */
    size_t seg_head, seg_n, seg_cap;
    tcpcl4_ev *ev;
    size_t ev_head, ev_n, ev_cap;
    uint8_t **owned;
    size_t owned_n, owned_cap;
    char err[160];
} tcl_core;

/* Buffers emptied above this capacity are given back rather than kept for
 * the next message: a peer's one 4 MiB segment must not pin 4 MiB (or the 8
 * MiB its doubling reached) for the rest of the session. */
#define TCL_BUF_KEEP (1u << 20)

/* Frees b's memory if it holds nothing and more than keep bytes of room. */
void tcl__buf_trim(tcl_buf *b, size_t keep);
/* Bytes held for input not yet complete: the unparsed rest of the receive
 * buffer and the transfer being reassembled. */
size_t tcl__buffered(const tcl_core *c);
/* Room for more bytes at the end of b (compacting first); -ENOMEM. */
int tcl__buf_reserve(tcl_buf *b, size_t more);
/* Appends n bytes; -ENOMEM. */
int tcl__buf_put(tcl_buf *b, const void *d, size_t n);
/* Queues an event; -ENOMEM. */
int tcl__push_ev(tcl_core *c, const tcpcl4_ev *e);
/* The next event, TERN_EEND if none. */
int tcl__pop_ev(tcl_core *c, tcpcl4_ev *ev);
/* Takes c->in's bytes (moved to the start of its buffer) as a whole bundle
 * handed out in an event: *data and *len get it; -ENOMEM. */
int tcl__take_in(tcl_core *c, uint8_t **data, size_t *len);
/* Frees the bundles handed out by earlier events. */
void tcl__free_owned(tcl_core *c);
/* Room for at least want more bytes at the end of c's receive buffer, for
 * reading the stream in place (the data of events taken so far ends). */
uint8_t *tcl__rxbuf(tcl_core *c, size_t want, size_t *room);
/* Queues the answer msg[0..n) to received transfer tid, a progress
 * acknowledgement or (progress 0) a refusal the session decided itself: it
 * goes out at once unless a final answer to an earlier transfer is still
 * owed, and then right after that one; -ENOMEM. */
int tcl__answer(tcl_core *c, uint64_t tid, int progress, const uint8_t *msg, size_t n);
/* Transfer tid was handed to the caller whole: its final answer is owed,
 * and the answers to later transfers wait for it; -ENOMEM. */
int tcl__answer_owe(tcl_core *c, uint64_t tid);
/* The caller's final answer to transfer tid: it takes the oldest owed place
 * of tid (or, if none is owed, queues as tcl__answer does), then what no
 * longer waits goes out; -ENOMEM. */
int tcl__answer_final(tcl_core *c, uint64_t tid, const uint8_t *msg, size_t n);
/* How many answers are held (owed ones included). */
size_t tcl__answers_held(const tcl_core *c);
/* Frees everything c holds. */
void tcl__core_free(tcl_core *c);
/* Keeps the first error's text. */
void tcl__set_err(tcl_core *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* What is waiting to be written (its first contiguous piece), and that n
 * bytes of it were. */
const uint8_t *tcl__output(tcl_core *c, size_t *len);
void tcl__sent(tcl_core *c, size_t n);
/* All of it as up to max pieces; the number filled. *total gets their bytes. */
int tcl__output_iov(tcl_core *c, struct iovec *iov, int max, size_t *total);
/* Bytes waiting to be written in all. */
size_t tcl__pending(const tcl_core *c);
/* Room for more refs, so that the next that many tcl__put_ref cannot fail. */
int tcl__reserve_refs(tcl_core *c, size_t more);
/* Queues n of the caller's bytes to go out in place after what is queued
 * now, for transfer tid; -ENOMEM. */
int tcl__put_ref(tcl_core *c, const uint8_t *p, size_t n, uint64_t tid);
/* Where the next tx byte queued goes, as a count of tx bytes (tcl_seg). */
uint64_t tcl__tx_end(const tcl_core *c);
/* Room for more segments, so that the next that many tcl__seg_add cannot
 * fail; -ENOMEM. */
int tcl__reserve_segs(tcl_core *c, size_t more);
/* Records that a segment of transfer tid was queued from tx position at up
 * to what is queued now (call after its header, and its data if copied, and
 * before its ref if sent in place); -ENOMEM. */
int tcl__seg_add(tcl_core *c, uint64_t tid, uint64_t at);
/* Takes out every segment of transfer tid that has not begun to go out (its
 * tx bytes and its in-place ref): a segment part sent goes out whole, as the
 * stream needs. Returns the number taken out. */
size_t tcl__cut_tid(tcl_core *c, uint64_t tid);
/* Copies what is still unsent of transfer tid's caller bytes, so the caller
 * may let them go (the peer answered before they all left); -ENOMEM. */
int tcl__detach_refs(tcl_core *c, uint64_t tid);

#endif
