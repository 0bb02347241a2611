/* Struct sizes for bindings: a binding that lays out cfdp.h's structs by
 * hand checks them against these before it calls anything. */
#include <string.h>

#include "cfdp.h"
#include "cfdp_sim.h"

TERN_API size_t cfdp_struct_size(const char *name)
{
    static const struct {
        const char *name;
        size_t size;
    } t[] = {
        {"cfdp_peer_cfg", sizeof(cfdp_peer_cfg)},
        {"cfdp_entity_cfg", sizeof(cfdp_entity_cfg)},
        {"cfdp_fs", sizeof(cfdp_fs)},
        {"cfdp_txn_id", sizeof(cfdp_txn_id)},
        {"cfdp_txn_info", sizeof(cfdp_txn_info)},
        {"cfdp_ind", sizeof(cfdp_ind)},
        {"cfdp_put_req", sizeof(cfdp_put_req)},
        {"cfdp_entity_stats", sizeof(cfdp_entity_stats)},
        {"cfdp_link_cfg", sizeof(cfdp_link_cfg)},
        {"cfdp_outage", sizeof(cfdp_outage)},
        {"cfdp_sim_stats", sizeof(cfdp_sim_stats)},
        {"cfdp_tlvs", sizeof(cfdp_tlvs)},
    };
    for (size_t i = 0; name && i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].name, name))
            return t[i].size;
    return 0;
}
