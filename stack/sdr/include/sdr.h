/* libsdr: Tern's transactional, crash-consistent store.
 *
 * A store is a heap of objects addressed by offset (sdr_off; 0 is "no
 * object"), changed only inside transactions. Two modes:
 *
 *  - SDR_MEMORY: the heap lives in process memory only (fastest, volatile).
 *  - SDR_DURABLE: every committed transaction survives process death and power
 *    loss. Commit policy SDR_COMMIT_SYNC returns from sdr_txn_end() only once
 *    the transaction is on disk; SDR_COMMIT_GROUP returns at once and makes
 *    commits durable within group_ms milliseconds (one flush for many
 *    commits); after a crash the store then holds a prefix of the committed
 *    transactions, never part of one.
 *
 * Bulk payloads (bundle bodies, file data) can be kept out of the heap as
 * blobs: written once to an append-only file and referenced from the heap by
 * a small object, so large data is written to disk exactly once. Under
 * SDR_COMMIT_GROUP a large blob is held in memory until the flush of its
 * commit, and one freed before then is never written at all: its put and
 * free reach the log in one batch, recovered whole or not at all, so no
 * recoverable state can refer to it.
 *
 * Every call returns 0 or a negative error: -errno, or TERN_E* from
 * tern/base.h (tern_strerror() describes both). A store handle is used by one
 * thread at a time; a store may run one helper thread of its own (group
 * commit, checkpoints).
 */
#ifndef TERN_SDR_H
#define TERN_SDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever a public struct or signature of libternsdr changes. */
#define SDR_ABI_VERSION 3

/** The ABI version libternsdr was built with. */
TERN_API int sdr_abi_version(void);

/** Address of an object in the heap; 0 means none. */
typedef uint64_t sdr_off;

typedef struct sdr sdr;
typedef struct sdr_io sdr_io;

enum sdr_mode { SDR_MEMORY = 0, SDR_DURABLE = 1 };
enum sdr_commit { SDR_COMMIT_SYNC = 0, SDR_COMMIT_GROUP = 1 };

/** Profile flags. */
#define SDR_BOUNDS_CHECK 0x1 /**< a write must stay inside one allocated object */
/** Write every blob through the page cache. By default, under group commit
 * a durable store writes its large blobs (64 KiB and up) past it, with
 * O_DIRECT where the file system allows: the kernel then copies nothing, and
 * no page-cache memory is taken for bytes that are only read back after a
 * restart. Each such blob then starts and ends on a 4 KiB boundary. */
#define SDR_BUFFERED 0x2

/** What a store is. name, dir, heap_size and mode identify it on disk;
 * reopening with other values is refused (TERN_EPROFILE). commit, group_ms and
 * flags may change from one open to the next. */
typedef struct sdr_profile {
    const char *name;     /**< file-name prefix, [A-Za-z0-9._-], <= 32 chars */
    const char *dir;      /**< directory of the files (SDR_DURABLE) */
    uint64_t heap_size;   /**< bytes, >= 64 KiB */
    int mode;             /**< SDR_MEMORY or SDR_DURABLE */
    int commit;           /**< SDR_COMMIT_SYNC or SDR_COMMIT_GROUP */
    unsigned group_ms;    /**< group-commit bound, ms (0: 10 ms); queued commits
                               are flushed as soon as the flusher is idle, and
                               flushes that miss the bound are counted */
    unsigned reserve_pct; /**< % of the heap only SDR_OPS allocations may use (0: 20) */
    unsigned flags;       /**< SDR_BOUNDS_CHECK, SDR_BUFFERED */
    const sdr_io *io;     /**< file operations (NULL: the real file system) */
    uint64_t checkpoint_bytes; /**< write a new image after this much log
                                    (0: twice the heap, at least 64 MiB) */
} sdr_profile;

/**
 * Opens (creating if absent) the store described by p. A durable store is
 * recovered to its last durable committed state. If why is not NULL it gets a
 * one-line explanation of a failure, naming the file, the values and what to
 * do (for example both heap sizes when they differ).
 */
TERN_API int sdr_open(const sdr_profile *p, sdr **out, char *why, size_t whylen);

/** Makes every committed transaction durable and closes the store. An open
 * transaction is cancelled first. NULL is accepted. */
TERN_API int sdr_close(sdr *s);

/* ----------------------------------------------------------- transactions */

/** Begins a transaction. TERN_EINTXN if one is already open (no nesting). */
TERN_API int sdr_txn_begin(sdr *s);

/** Commits the open transaction (durable per the commit policy). If the store
 * failed during the transaction, the transaction is cancelled and the failure
 * returned. TERN_ENOTXN if no transaction is open. */
TERN_API int sdr_txn_end(sdr *s);

/** Cancels the open transaction: every change since begin, allocations and
 * frees included, is undone, byte for byte. TERN_ENOTXN if none is open. */
TERN_API int sdr_txn_cancel(sdr *s);

/** 1 if a transaction is open. */
TERN_API int sdr_in_txn(const sdr *s);

/** Waits until every committed transaction is durable (group policy). */
TERN_API int sdr_flush(sdr *s);

/** Sequence number of the last committed transaction (transactions that
 * changed nothing do not count). */
TERN_API uint64_t sdr_commit_seq(const sdr *s);

/** Sequence number of the last transaction known durable: equal to
 * sdr_commit_seq() except under SDR_COMMIT_GROUP, where it trails it by up to
 * one flush. Whatever acknowledges data to a peer waits for this to reach the
 * commit that took the data. Safe to call from any thread. */
TERN_API uint64_t sdr_durable_seq(const sdr *s);

/** Under SDR_COMMIT_GROUP: a non-blocking eventfd that becomes readable
 * whenever sdr_durable_seq() advances (read it to re-arm), for an event loop
 * to wait on. -1 in every other mode (commits are durable on return). The
 * store owns it. */
TERN_API int sdr_durable_fd(const sdr *s);

/* ---------------------------------------------------------------- objects */

/** Allocation classes. */
enum sdr_class {
    SDR_OPS = 0,  /**< operational state: may use the reserve */
    SDR_BULK = 1, /**< data (bundles, segments): refused with TERN_EFULL once
                       only the reserve is left */
};

/** Allocates size bytes (contents undefined) in a transaction. Every call that
 * changes the store returns TERN_ENOTXN outside a transaction. */
TERN_API int sdr_alloc(sdr *s, size_t size, int cls, sdr_off *out);

/** Frees an object allocated by sdr_alloc; -EINVAL if off is not one. */
TERN_API int sdr_free(sdr *s, sdr_off off);

/** Usable size of the object at off (>= the size asked for). */
TERN_API int sdr_size(const sdr *s, sdr_off off, size_t *size);

/** Copies n bytes at off into the heap, in a transaction. */
TERN_API int sdr_write(sdr *s, sdr_off off, const void *src, size_t n);

/** Zeroes n bytes at off, in a transaction. */
TERN_API int sdr_zero(sdr *s, sdr_off off, size_t n);

/** Copies n bytes at off out of the heap (inside or outside a transaction). */
TERN_API int sdr_read(const sdr *s, sdr_off off, void *dst, size_t n);

/** A read-only pointer to n bytes at off, valid until the next write, free or
 * close; NULL if the range is outside the heap. For zero-copy readers. */
TERN_API const void *sdr_peek(const sdr *s, sdr_off off, size_t n);

/* ------------------------------------------------------------------ lists */

/** Creates an empty doubly linked list carrying user_data (an sdr_off or 0). */
TERN_API int sdr_list_create(sdr *s, sdr_off user_data, sdr_off *list);

/** Destroys a list and its elements (not the objects they refer to). */
TERN_API int sdr_list_destroy(sdr *s, sdr_off list);

/** Inserts data at the head or tail; *elt (may be NULL) gets the new element. */
TERN_API int sdr_list_insert_first(sdr *s, sdr_off list, sdr_off data, sdr_off *elt);
TERN_API int sdr_list_insert_last(sdr *s, sdr_off list, sdr_off data, sdr_off *elt);

/** Inserts data before or after element at; *elt (may be NULL) gets the new one. */
TERN_API int sdr_list_insert_before(sdr *s, sdr_off at, sdr_off data, sdr_off *elt);
TERN_API int sdr_list_insert_after(sdr *s, sdr_off at, sdr_off data, sdr_off *elt);

/** Removes element elt from its list; *data (may be NULL) gets what it held. */
TERN_API int sdr_list_delete(sdr *s, sdr_off elt, sdr_off *data);

/** First/last element of a list, next/previous element, or 0. */
TERN_API sdr_off sdr_list_first(const sdr *s, sdr_off list);
TERN_API sdr_off sdr_list_last(const sdr *s, sdr_off list);
TERN_API sdr_off sdr_list_next(const sdr *s, sdr_off elt);
TERN_API sdr_off sdr_list_prev(const sdr *s, sdr_off elt);

/** What an element holds, and the list it is on. */
TERN_API sdr_off sdr_list_data(const sdr *s, sdr_off elt);
TERN_API sdr_off sdr_list_of(const sdr *s, sdr_off elt);

/** Number of elements. */
TERN_API uint64_t sdr_list_length(const sdr *s, sdr_off list);

/** The list's user data, and changing it (in a transaction). */
TERN_API sdr_off sdr_list_user_data(const sdr *s, sdr_off list);
TERN_API int sdr_list_set_user_data(sdr *s, sdr_off list, sdr_off user_data);

/* ---------------------------------------------------------------- catalog */

/** Longest catalog name. */
#define SDR_NAME_MAX 31

/** Records off under name (a module's root object), replacing an older entry. */
TERN_API int sdr_catalog_put(sdr *s, const char *name, sdr_off off);

/** Finds the object recorded under name; TERN_ENOTFOUND if none. */
TERN_API int sdr_catalog_get(const sdr *s, const char *name, sdr_off *off);

/** Removes name from the catalog; TERN_ENOTFOUND if absent. */
TERN_API int sdr_catalog_del(sdr *s, const char *name);

/* ------------------------------------------------------------------ blobs */

/** Stores n bytes outside the heap; *blob gets a small heap object naming them.
 * In a transaction: the blob exists only if the transaction commits. */
TERN_API int sdr_blob_put(sdr *s, const void *src, size_t n, sdr_off *blob);

/** As sdr_blob_put, the blob's bytes gathered from niov pieces. */
TERN_API int sdr_blob_putv(sdr *s, const struct iovec *iov, int niov, sdr_off *blob);

/** A read-only pointer to a blob's bytes where the store keeps them in its
 * heap (a memory store), valid as sdr_peek's; -ENOTSUP where they live in a
 * file (then use sdr_blob_read). */
TERN_API int sdr_blob_peek(const sdr *s, sdr_off blob, const void **p, size_t *n);

/** Length of a blob. */
TERN_API int sdr_blob_len(const sdr *s, sdr_off blob, uint64_t *len);

/** Reads n bytes at offset pos of a blob; TERN_ECORRUPT if its checksum fails. */
TERN_API int sdr_blob_read(sdr *s, sdr_off blob, uint64_t pos, void *dst, size_t n);

/** Frees a blob, in a transaction (its disk space is reclaimed after commit). */
TERN_API int sdr_blob_free(sdr *s, sdr_off blob);

/* ------------------------------------------------------------ accounting */

typedef struct sdr_usage {
    uint64_t heap_size;      /**< bytes in the heap */
    uint64_t in_use;         /**< bytes in allocated blocks (headers included) */
    uint64_t free;           /**< bytes in free blocks */
    uint64_t largest_free;   /**< largest single free block's usable size */
    uint64_t reserve;        /**< bytes only SDR_OPS allocations may use */
    uint64_t bulk_avail;     /**< bytes SDR_BULK allocations may still take */
    uint64_t objects;        /**< allocated objects */
    uint64_t blob_bytes;     /**< live bytes in blobs */
    uint64_t commits;        /**< transactions committed since open */
    uint64_t durable_seq;    /**< last transaction known durable */
    uint64_t late_flushes;   /**< group flushes that took longer than group_ms
                                  from the first commit queued to durable */
    uint64_t blob_unwritten; /**< bytes of blobs freed before they had to be
                                  written (group commit), since open */
    uint64_t blob_direct;    /**< bytes of blobs written past the page cache
                                  (O_DIRECT), since open */
} sdr_usage;

/** Fills *u. */
TERN_API int sdr_get_usage(const sdr *s, sdr_usage *u);

/** The store's mode: SDR_MEMORY or SDR_DURABLE. */
TERN_API int sdr_mode(const sdr *s);

/** Walks the whole heap and checks that every block, free list, list and the
 * catalog is consistent and that free + used blocks cover the heap exactly.
 * TERN_ECORRUPT with a reason in why if not. */
TERN_API int sdr_check(const sdr *s, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
