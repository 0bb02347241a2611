/* What the TCPCL v3 and v4 sessions share (private to libternbp): byte
 * buffers, the queue of events, the bundle buffers handed out in events
 * (freed on the session's next call), and the first error's text. */
#ifndef TERN_TCPCL_INT_H
#define TERN_TCPCL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "bp_tcpcl.h"

typedef struct tcl_buf {
    uint8_t *p;
    size_t off, len, cap; /* live bytes are p[off..len) */
} tcl_buf;

typedef struct tcl_core {
    tcl_buf rx, tx, in; /* bytes read, bytes to write, the transfer coming in */
    tcpcl4_ev *ev;
    size_t ev_head, ev_n, ev_cap;
    uint8_t **owned;
    size_t owned_n, owned_cap;
    char err[160];
} tcl_core;

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
/* Frees everything c holds. */
void tcl__core_free(tcl_core *c);
/* Keeps the first error's text. */
void tcl__set_err(tcl_core *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* What is waiting to be written, and that n bytes of it were. */
const uint8_t *tcl__output(tcl_core *c, size_t *len);
void tcl__sent(tcl_core *c, size_t n);

#endif
