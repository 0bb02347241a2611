/* Names of CFDP codes, for logs and reports. */
#include "cfdp_pdu.h"

#define NAME(table, i)                                                                   \
    ((i) < sizeof(table) / sizeof(table[0]) && table[i] ? table[i] : NULL)

TERN_API const char *cfdp_kind_name(unsigned kind)
{
    static const char *const t[] = {
        [CFDP_FILE_DATA] = "File Data", [CFDP_EOF] = "EOF",
        [CFDP_FINISHED] = "Finished",   [CFDP_ACK] = "ACK",
        [CFDP_METADATA] = "Metadata",   [CFDP_NAK] = "NAK",
        [CFDP_PROMPT] = "Prompt",       [CFDP_KEEP_ALIVE] = "Keep Alive",
    };
    const char *n = NAME(t, kind);
    return n ? n : "unknown";
}

TERN_API const char *cfdp_condition_name(unsigned c)
{
    static const char *const t[16] = {
        "no error",
        "positive ACK limit reached",
        "keep alive limit reached",
        "invalid transmission mode",
        "filestore rejection",
        "file checksum failure",
        "file size error",
        "NAK limit reached",
        "inactivity detected",
        "invalid file structure",
        "check limit reached",
        "unsupported checksum type",
        "reserved (12)",
        "reserved (13)",
        "suspend request received",
        "cancel request received",
    };
    const char *n = NAME(t, c);
    return n ? n : "unknown";
}

TERN_API const char *cfdp_delivery_name(unsigned d)
{
    return d == CFDP_DATA_COMPLETE     ? "data complete"
           : d == CFDP_DATA_INCOMPLETE ? "data incomplete"
                                       : "unknown";
}

TERN_API const char *cfdp_file_status_name(unsigned s)
{
    static const char *const t[] = {
        "discarded deliberately",
        "discarded by filestore rejection",
        "retained in the filestore",
        "unreported",
    };
    const char *n = NAME(t, s);
    return n ? n : "unknown";
}

TERN_API const char *cfdp_txn_status_name(unsigned s)
{
    static const char *const t[] = {"undefined", "active", "terminated", "unrecognized"};
    const char *n = NAME(t, s);
    return n ? n : "unknown";
}

TERN_API const char *cfdp_fs_action_name(unsigned a)
{
    static const char *const t[] = {
        "create file",      "delete file",  "rename file",
        "append file",      "replace file", "create directory",
        "remove directory", "deny file",    "deny directory",
    };
    const char *n = NAME(t, a);
    return n ? n : "unknown";
}

TERN_API const char *cfdp_fs_status_name(unsigned action, unsigned status)
{
    if (status == CFDP_FS_SUCCESS)
        return action <= CFDP_FS_DENY_DIR ? "successful" : "unknown";
    if (status == CFDP_FS_NOT_PERFORMED)
        return action <= CFDP_FS_DENY_DIR ? "not performed" : "unknown";
    static const char *const t[9][4] = {
        [CFDP_FS_CREATE_FILE] = {[1] = "create not allowed"},
        [CFDP_FS_DELETE_FILE] = {[1] = "file does not exist", [2] = "delete not allowed"},
        [CFDP_FS_RENAME_FILE] = {[1] = "old file name does not exist",
                                 [2] = "new file name already exists",
                                 [3] = "rename not allowed"},
        [CFDP_FS_APPEND_FILE] = {[1] = "file 1 does not exist",
                                 [2] = "file 2 does not exist",
                                 [3] = "append not allowed"},
        [CFDP_FS_REPLACE_FILE] = {[1] = "file 1 does not exist",
                                  [2] = "file 2 does not exist",
                                  [3] = "replace not allowed"},
        [CFDP_FS_CREATE_DIR] = {[1] = "directory cannot be created"},
        [CFDP_FS_REMOVE_DIR] =
            {[1] = "directory does not exist", [2] = "delete not allowed"},
        [CFDP_FS_DENY_FILE] = {[2] = "delete not allowed"},
        [CFDP_FS_DENY_DIR] = {[2] = "delete not allowed"},
    };
    if (action > CFDP_FS_DENY_DIR || status > 3 || !t[action][status])
        return "unknown";
    return t[action][status];
}

TERN_API const char *cfdp_handler_name(unsigned h)
{
    static const char *const t[] = {NULL, "cancel", "suspend", "ignore", "abandon"};
    const char *n = NAME(t, h);
    return n ? n : "reserved";
}

TERN_API const char *cfdp_tlv_type_name(unsigned type)
{
    static const char *const t[] = {
        [CFDP_TLV_FS_REQUEST] = "filestore request",
        [CFDP_TLV_FS_RESPONSE] = "filestore response",
        [CFDP_TLV_MSG_TO_USER] = "message to user",
        [CFDP_TLV_FAULT_HANDLER] = "fault handler override",
        [CFDP_TLV_FLOW_LABEL] = "flow label",
        [CFDP_TLV_ENTITY_ID] = "entity ID",
    };
    const char *n = NAME(t, type);
    return n ? n : "unknown";
}

TERN_API const char *cfdp_checksum_name(unsigned type)
{
    static const char *const t[16] = {
        [CFDP_CKSUM_MODULAR] = "modular", [CFDP_CKSUM_PROX1] = "Proximity-1 CRC-32",
        [CFDP_CKSUM_CRC32C] = "CRC-32C",  [CFDP_CKSUM_CRC32] = "CRC-32",
        [CFDP_CKSUM_NULL] = "null",
    };
    const char *n = NAME(t, type);
    return n ? n : "unknown";
}

TERN_API const char *cfdp_record_name(unsigned r)
{
    static const char *const t[] = {
        "middle of a record",
        "start of a record",
        "end of a record",
        "whole record",
    };
    const char *n = NAME(t, r);
    return n ? n : "unknown";
}
