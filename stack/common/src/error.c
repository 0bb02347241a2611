/* One strerror for every Tern return code. */
#include <string.h>

#include "tern/base.h"

static const char *const tern_errtab[] = {
    [TERN_EMALFORMED - TERN_E_FIRST] = "malformed input",
    [TERN_ETRUNCATED - TERN_E_FIRST] = "input truncated",
    [TERN_EOVERFLOW - TERN_E_FIRST] = "value out of range",
    [TERN_EDEPTH - TERN_E_FIRST] = "nesting too deep",
    [TERN_ETYPE - TERN_E_FIRST] = "item has another type",
    [TERN_ESYNTAX - TERN_E_FIRST] = "syntax error",
    [TERN_ESTATE - TERN_E_FIRST] = "operation not valid in this state",
    [TERN_ENOTFOUND - TERN_E_FIRST] = "not found",
    [TERN_EEXIST - TERN_E_FIRST] = "already exists",
    [TERN_ECORRUPT - TERN_E_FIRST] = "stored data is corrupt",
    [TERN_EPROFILE - TERN_E_FIRST] = "profile mismatch",
    [TERN_EFULL - TERN_E_FIRST] = "capacity exhausted",
    [TERN_EABI - TERN_E_FIRST] = "ABI version mismatch",
    [TERN_ENOSPACE - TERN_E_FIRST] = "output buffer too small",
    [TERN_EEND - TERN_E_FIRST] = "end of sequence",
    [TERN_EINTXN - TERN_E_FIRST] =
        "a transaction is already open; transactions do not nest",
    [TERN_ENOTXN - TERN_E_FIRST] = "no transaction is open; begin one first",
    [TERN_ETOOBIG - TERN_E_FIRST] =
        ("bundle larger than the link to its next hop carries, and it may not be "
         "fragmented (the node's log names the limit)"),
    [TERN_ENOROUTE - TERN_E_FIRST] =
        "no route brings the bundle to its destination before it expires",
};

TERN_API const char *tern_strerror(int rc)
{
    if (rc == 0)
        return "success";
    if (rc >= TERN_E_FIRST && rc <= TERN_E_LAST)
        return tern_errtab[rc - TERN_E_FIRST];
    if (rc < 0 && rc > -4096) {
        /* strerrordesc_np returns a constant string: thread-safe, no buffer. */
        const char *s = strerrordesc_np(-rc);
        if (s)
            return s;
    }
    return "unknown error";
}

TERN_API int tern_common_abi_version(void)
{
    return TERN_COMMON_ABI_VERSION;
}
