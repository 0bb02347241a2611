/* Tern common definitions: export macro, error codes, ABI version.
 *
 * Every Tern call returns an int: 0 on success, a negative errno value for a
 * system error (-ENOMEM, -EINVAL, ...), or a library error in the reserved
 * range [TERN_E_FIRST, TERN_E_LAST]. tern_strerror() describes all of them.
 */
#ifndef TERN_BASE_H
#define TERN_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a symbol as part of a library's public ABI (the build hides the rest). */
#define TERN_API __attribute__((visibility("default")))

/** Bumped whenever a public struct or signature of libterncommon changes. */
#define TERN_COMMON_ABI_VERSION 1

/* Library errors: a reserved negative range well away from errno values. */
#define TERN_E_FIRST    (-30999)
#define TERN_EMALFORMED (-30999) /**< input violates its format */
#define TERN_ETRUNCATED (-30998) /**< input ends before the item does */
#define TERN_EOVERFLOW  (-30997) /**< a value does not fit its type */
#define TERN_EDEPTH     (-30996) /**< nesting deeper than the decoder allows */
#define TERN_ETYPE      (-30995) /**< item is not of the type asked for */
#define TERN_ESYNTAX    (-30994) /**< configuration text is malformed */
#define TERN_ESTATE     (-30993) /**< call not valid in the object's state */
#define TERN_ENOTFOUND  (-30992) /**< no such item */
#define TERN_EEXIST     (-30991) /**< item already exists */
#define TERN_ECORRUPT   (-30990) /**< stored data failed its checksum */
#define TERN_EPROFILE   (-30989) /**< store opened with a different profile */
#define TERN_EFULL      (-30988) /**< budget or capacity exhausted */
#define TERN_EABI       (-30987) /**< caller built against another ABI version */
#define TERN_ENOSPACE   (-30986) /**< output buffer too small */
#define TERN_EEND       (-30985) /**< no more items (end of a sequence) */
#define TERN_EINTXN     (-30984) /**< a transaction is already open (no nesting) */
#define TERN_ENOTXN     (-30983) /**< the call needs an open transaction */
#define TERN_ETOOBIG                                                                     \
    (-30982)                   /**< bundle above its next hop's limit, not fragmentable  \
                                */
#define TERN_ENOROUTE (-30981) /**< no route delivers the bundle before it expires */
#define TERN_E_LAST   (-30981)

/** Describes any Tern return code (0, -errno or TERN_E*). Never NULL. */
TERN_API const char *tern_strerror(int rc);

/** The ABI version libterncommon was built with (TERN_COMMON_ABI_VERSION). */
TERN_API int tern_common_abi_version(void);

#ifdef __cplusplus
}
#endif
#endif
