/* Private: the node's parts and the glue between node.c and the rest. */
#ifndef TERN_NODE_INT_H
#define TERN_NODE_INT_H

#include <limits.h>

#include "bp_admin.h"
#include "bp_cgr.h"
#include "bp_hostrc.h"
#include "bp_ltp.h"
#include "ltp_udp.h"
#include "sdr.h"
#include "tern_node.h"

struct node_cserver;
struct bp_udp_cla;

/* What reading the configuration had to say besides errors: logged once the
 * log is open (a start that fails writes no log), and the warnings handed to
 * 'tern start'. */
typedef struct node_note {
    int level; /* TERN_LOG_WARN or TERN_LOG_INFO */
    char *text;
} node_note;

typedef struct node_notes {
    node_note *v;
    size_t n;
} node_notes;

/* Appends one note (-ENOMEM if it cannot; the note is then lost). */
__attribute__((format(printf, 3, 4))) TERN_API int node__note(node_notes *w, int level,
                                                              const char *fmt, ...);
TERN_API void node__notes_free(node_notes *w);

struct tern_node {
    char dir[PATH_MAX];
    char store_dir[PATH_MAX + 8];
    uint64_t number;
    int lock_fd;
    int locked; /* we hold the lock (and so own the pid and ports files) */
    /* what this start created, so a failed one takes it away again */
    int made_lock, made_log, made_store;
    int running;      /* opened whole */
    node_notes notes; /* from the ionconfig and the checks before the start */
    tern_loop *loop;
    tern_log *lg;
    sdr *store;
    ltp_udp *lsu;
    ltp_engine *eng;
    bp_agent *agent;
    bp_cgr *cgr;
    bp_ltp_cla *ltpcla;
    struct bp_udp_cla *udpcla;
    struct bp_udp_cla *udpmcla; /* the broadcast CL, udpm (same adapter) */
    struct bp_tcp_cla *tcpcla;
    struct node_cserver *srv;
    bp_hostrc cfg; /* the configuration as read, kept for runtime admin */
    /* the previous status call's counters, for rates */
    uint64_t rate_ns, rate_bytes_in, rate_bytes_out, rate_fwd, rate_dlv;
    /* contact-driven span state (contacts.c): per ltp span, -1 unknown */
    int *span_up;
    size_t nspan_up;
    tern_timer contact_tm;
    int contact_tm_init;
};

/* Sets every LTP span up or down (and its light time) from the contact plan
 * now, and arms a timer for the next contact boundary. */
void node__contacts_apply(struct tern_node *n);
void node__contacts_stop(struct tern_node *n);

/* The store's size unless an ionconfig says otherwise, and the most it may say. */
#define NODE_DEFAULT_HEAP (64ull << 20)
#define NODE_MAX_HEAP     (8ull << 30)
#define NODE_MIN_HEAP     (1ull << 20)

/* ION's ionconfig text (path names it in messages): maps heapWords and
 * configFlags onto p, notes what it accepts without using (node_dir for the
 * pathName note). TERN_ESYNTAX with "path:line: ..." in err for a malformed
 * line, and for a misspelt parameter Tern uses (its setting would be lost). */
TERN_API int node__ionconfig_parse(const char *path, const char *text, size_t len,
                                   const char *node_dir, sdr_profile *p,
                                   node_notes *notes, char *err, size_t errlen);

/* How a node's configuration was found (config.c). */
typedef struct node_config {
    char base[PATH_MAX]; /* the files' directory: relative names (ionconfig) start here */
    char used[PATH_MAX + 1024]; /* the files read, for the log */
    char note[PATH_MAX + 512];  /* something to log ("" if nothing) */
} node_config;

/* Reads the configuration of the node in dir into h (free it with
 * bp_hostrc_free in every case). rcfile, when the user named a file: an
 * ionstart host.rc, or one of ION's admin files "<stem>.ionrc",
 * "<stem>.ltprc", ... (the whole set of that stem is read). Without one:
 * dir/host.rc, else the set of node.ionrc, else of the only *.ionrc in dir.
 * Messages name file:line (TERN_ESYNTAX) or what was missing. */
TERN_API int node__config_read(const char *dir, const char *rcfile, uint64_t now_ms,
                               bp_hostrc *h, node_config *nc, char *err, size_t errlen);

/* A whole file, NUL-terminated (*len without the NUL). */
TERN_API int node__read_file(const char *path, char **text, size_t *len);

/* ltp_host.send: segments to the UDP link service. */
int node__ltp_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len);

/* Convergence layers other than LTP (created before the configuration is
 * applied), their inducts (after), and their teardown. */
int node__clas(struct tern_node *n, const bp_admin *cfg, char *err, size_t errlen);
int node__inducts(struct tern_node *n, const bp_admin *cfg, char *err, size_t errlen);
void node__clas_free(struct tern_node *n);

/* Runtime administration (tern admin): one command line of module. */
int node__admin(struct tern_node *n, const char *module, const char *line, char *out,
                size_t cap);

/* The client server. */
int node__server_start(struct tern_node *n, char *err, size_t errlen);
void node__server_stop(struct tern_node *n);
void node__deliverable(struct tern_node *n, const bp_eid *ep);
/* A bundle of src was deleted after its send was answered (bp_agent_host.dropped). */
void node__dropped(struct tern_node *n, const bp_eid *src, uint64_t ctime_ms,
                   uint64_t seq, int code, const char *why);

#endif
