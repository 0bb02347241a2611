/* tern_node_status: what 'tern status' and bpstats show. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bp_tcp.h"
#include "bp_udp.h"
#include "node_cserver.h"
#include "bp_imc.h"
#include "node_int.h"
#include "tern/clock.h"

typedef struct out {
    char *p;
    size_t cap, len;
} out;

__attribute__((format(printf, 2, 3))) static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *at = o->len < o->cap ? o->p + o->len : NULL;
    int n = vsnprintf(at, at ? o->cap - o->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

TERN_API int tern_node_status(tern_node *n, char *buf, size_t cap)
{
    out o = {buf, cap, 0};
    if (cap)
        buf[0] = '\0';
    char t[40];
    tern_dtn_format_iso(tern_clock_dtn_ms(tern_loop_clock(n->loop)), t, sizeof t);
    put(&o, "node %" PRIu64 " (%s) at %s\n", n->number, n->dir, t);
    sdr_usage u;
    if (n->store && sdr_get_usage(n->store, &u) == 0) {
        put(&o,
            "store: %" PRIu64 " of %" PRIu64 " KiB in use, %" PRIu64 " objects, %" PRIu64
            " KiB in blobs, %" PRIu64 " commits",
            u.in_use >> 10, u.heap_size >> 10, u.objects, u.blob_bytes >> 10, u.commits);
        /* Durable stores under group commit: what they did not have to write. */
        if (sdr_mode(n->store) == SDR_DURABLE)
            put(&o, ", %" PRIu64 " MiB of blobs freed before they were written",
                u.blob_unwritten >> 20);
        put(&o, "\n");
    }
    /* A full store stops senders without a word on their side but this. */
    node_cserver_stats cs = {0};
    if (n->srv)
        node_cserver_stats_get(n->srv, &cs);
    if (cs.held_now || (n->agent && !bp_agent_has_room(n->agent, 0)))
        put(&o,
            "store full: %" PRIu64 " application(s) wait to send (taken as bundles leave "
            "the store: forwarded, delivered or expired)\n",
            cs.held_now);
    if (n->agent) {
        bp_agent_stats st;
        bp_agent_stats_get(n->agent, &st);
        put(&o,
            "bundles: %" PRIu64 " stored (%" PRIu64 " bytes), %" PRIu64
            " queued, %" PRIu64 " in flight, %" PRIu64 " without route\n",
            st.stored, st.stored_bytes, st.queued, st.in_flight, st.limbo);
        put(&o,
            "bp: created %" PRIu64 " received %" PRIu64 " forwarded %" PRIu64
            " delivered %" PRIu64 " taken %" PRIu64 " expired %" PRIu64
            " deleted %" PRIu64 " duplicates %" PRIu64 " malformed %" PRIu64
            " reforwarded %" PRIu64 "\n",
            st.created, st.received, st.forwarded, st.delivered, st.taken, st.expired,
            st.deleted, st.duplicates, st.malformed, st.reforwarded);
        put(&o,
            "status reports: %s (sent %" PRIu64 ", received %" PRIu64
            ", asked for but not sent %" PRIu64 "%s)\n",
            bp_agent_status_reports(n->agent) ? "on" : "off", st.reports_sent,
            st.reports_received, st.reports_suppressed,
            bp_agent_status_reports(n->agent)
                ? ""
                : "; 'm statusreports on' in bpadmin sends them");
        if (st.file_refs || st.file_refs_lost)
            put(&o,
                "file references: %" PRIu64 " bundle(s) whose payload is read from its "
                "file, %" PRIu64 " deleted because the file changed or went\n",
                st.file_refs, st.file_refs_lost);
        if (st.drops_told)
            put(&o,
                "accepted, then deleted: %" PRIu64
                " bundle(s) of this node's applications "
                "(drops told %" PRIu64 " to their applications, %" PRIu64
                " with no application attached to tell)\n",
                st.drops_told, cs.drops_told, cs.drops_unheard);
        put(&o, "endpoints:\n");
        for (size_t i = 0; i < bp_agent_endpoint_count(n->agent); i++) {
            bp_eid e;
            int rule;
            bool open;
            size_t q;
            char text[BP_EID_TEXT_MAX];
            bp_agent_endpoint_at(n->agent, i, &e, &rule, &open, &q);
            bp_eid_print(&e, text, sizeof text);
            put(&o, "  %-24s %c %-6s %zu queued\n", text, rule, open ? "open" : "-", q);
        }
        put(&o, "outducts:\n");
        for (size_t i = 0; i < bp_agent_outduct_count(n->agent); i++) {
            bp_outduct *od = bp_agent_outduct_at(n->agent, i);
            const char *proto, *name;
            bool up;
            size_t maxp;
            bp_outduct_info(od, &proto, &name, &up, &maxp);
            put(&o, "  %s/%-20s %-4s %zu queued", proto, name, up ? "up" : "down",
                bp_outduct_queued(od));
            if (maxp)
                put(&o, ", max payload %zu", maxp);
            put(&o, "\n");
        }
        uint64_t groups[64], mem[64];
        size_t ng = bp_agent_imc_groups(n->agent, groups, 64);
        bp_imc_stats is;
        bp_agent_imc_stats_get(n->agent, &is);
        if (ng || is.petitions_sent || is.petitions_taken)
            put(&o,
                "imc: petitions sent %" PRIu64 " taken %" PRIu64
                ", briefings sent %" PRIu64 " taken %" PRIu64 ", refused %" PRIu64
                ", group bundles sent %" PRIu64 ", copies %" PRIu64 ", delivered %" PRIu64
                ", no endpoint %" PRIu64 ", no members %" PRIu64
                ", not sent back %" PRIu64 ", seen before %" PRIu64
                ", unreachable %" PRIu64 "\n",
                is.petitions_sent, is.petitions_taken, is.briefings_sent,
                is.briefings_taken, is.refused, is.sent, is.copies, is.delivered,
                is.no_endpoint, is.no_members, is.not_back, is.seen_before,
                is.unreachable);
        for (size_t i = 0; i < ng && i < 64; i++) {
            size_t nm = bp_agent_imc_members(n->agent, groups[i], mem, 64);
            put(&o, "imc group %" PRIu64 ": members", groups[i]);
            for (size_t k = 0; k < nm && k < 64; k++)
                put(&o, " %" PRIu64, mem[k]);
            put(&o, nm > 64 ? " ...\n" : "\n");
        }
    }
    if (n->eng) {
        ltp_stats ls;
        ltp_engine_stats(n->eng, &ls);
        put(&o,
            "ltp: engine %" PRIu64 ", sessions %" PRIu64 " export / %" PRIu64
            " import, %" PRIu64 " blocks waiting; segments in %" PRIu64 " out %" PRIu64
            ", retransmitted %" PRIu64 ", exports done %" PRIu64 " cancelled %" PRIu64
            ", imports done %" PRIu64 " cancelled %" PRIu64 " refused %" PRIu64
            ", timeouts cp %" PRIu64 " rs %" PRIu64,
            ltp_engine_id(n->eng), ls.export_sessions, ls.import_sessions,
            ls.queued_blocks, ls.seg_in, ls.seg_out, ls.data_retx, ls.exports_done,
            ls.exports_cancelled, ls.imports_done, ls.imports_cancelled,
            ls.imports_refused, ls.cp_timeouts, ls.rs_timeouts);
        /* BP sends bundles red only and drops green data it receives */
        if (n->ltpcla)
            put(&o, ", green segments ignored %" PRIu64,
                bp_ltp_cla_green_ignored(n->ltpcla));
        put(&o, ", malformed %" PRIu64 ", from unknown engines %" PRIu64 "\n",
            ls.malformed, ls.unknown_span);
        /* what a hostile or overloaded peer costs: the caps at work */
        put(&o,
            "  ltp limits: import bytes held %" PRIu64 ", oversized segments %" PRIu64
            ", bad reports %" PRIu64 ", imports over their share %" PRIu64
            ", segments not kept %" PRIu64 ", blocks waiting for room %" PRIu64
            " import / %" PRIu64 " export, peer said no room %" PRIu64 "\n",
            ls.import_bytes, ls.oversized, ls.bad_reports, ls.imports_over_share,
            ls.segs_not_kept, ls.imports_waiting, ls.exports_waiting, ls.peer_no_room);
        const char *lm = n->lsu ? ltp_udp_last_refused(n->lsu, 0) : "";
        const char *lu = n->lsu ? ltp_udp_last_refused(n->lsu, 1) : "";
        if (lm[0])
            put(&o, "  last malformed segment: %s\n", lm);
        if (lu[0])
            put(&o, "  last from an unknown engine: %s\n", lu);
    }
    /* contacts now in the plan (Contact Graph Routing will act on them) */
    const bp_contact *ct;
    size_t nct = bp_plan_contacts(n->cfg.plan, &ct), live = 0;
    uint64_t nowms = tern_clock_dtn_ms(tern_loop_clock(n->loop));
    for (size_t i = 0; i < nct; i++)
        if (ct[i].from_ms <= nowms && nowms < ct[i].until_ms &&
            ct[i].from_node == n->number)
            live++;
    put(&o, "contacts: %zu in the plan, %zu from this node now:", nct, live);
    for (size_t i = 0, shown = 0; i < nct && shown < 8; i++)
        if (ct[i].from_ms <= nowms && nowms < ct[i].until_ms &&
            ct[i].from_node == n->number) {
            put(&o, " ->%" PRIu64 " %" PRIu64 " B/s", ct[i].to_node, ct[i].rate);
            shown++;
        }
    put(&o, "\n");
    if (n->cgr) {
        char cg[2048];
        bp_cgr_status(n->cgr, nowms, cg, sizeof cg);
        put(&o, "%s", cg);
        if (cg[0] && cg[strlen(cg) - 1] != '\n')
            put(&o, "\n");
    }
    /* rates since the previous status call */
    uint64_t bin = 0, bout = 0, fwd = 0, dlv = 0, tns = tern_loop_now(n->loop);
    if (n->lsu) {
        ltp_udp_stats us;
        ltp_udp_stats_get(n->lsu, &us);
        bin = us.bytes_in;
        bout = us.bytes_out;
    }
    if (n->agent) {
        bp_agent_stats st;
        bp_agent_stats_get(n->agent, &st);
        fwd = st.forwarded;
        dlv = st.delivered;
    }
    if (n->rate_ns && tns > n->rate_ns) {
        double dt = (double)(tns - n->rate_ns) / 1e9;
        put(&o,
            "rates over the last %.1f s: in %.1f Mbit/s, out %.1f Mbit/s, %.0f bundles/s "
            "forwarded, %.0f bundles/s delivered\n",
            dt, (double)(bin - n->rate_bytes_in) * 8 / dt / 1e6,
            (double)(bout - n->rate_bytes_out) * 8 / dt / 1e6,
            (double)(fwd - n->rate_fwd) / dt, (double)(dlv - n->rate_dlv) / dt);
    }
    n->rate_ns = tns;
    n->rate_bytes_in = bin;
    n->rate_bytes_out = bout;
    n->rate_fwd = fwd;
    n->rate_dlv = dlv;
    if (n->lsu) {
        ltp_udp_stats us;
        ltp_udp_stats_get(n->lsu, &us);
        put(&o,
            "ltp/udp: port %u, datagrams in %" PRIu64 " out %" PRIu64
            ", bytes in %" PRIu64 " out %" PRIu64 ", queued %" PRIu64 "\n",
            ltp_udp_port(n->lsu), us.dgrams_in, us.dgrams_out, us.bytes_in, us.bytes_out,
            us.queued_now);
    }
    if (n->udpcla) {
        bp_udp_stats us;
        bp_udp_cla_stats(n->udpcla, &us);
        if (us.dgrams_in || us.dgrams_out)
            put(&o,
                "bp/udp: datagrams in %" PRIu64 " out %" PRIu64 ", refused %" PRIu64
                ", too big %" PRIu64 "\n",
                us.dgrams_in, us.dgrams_out, us.refused_in, us.too_big);
    }
    if (n->udpmcla) {
        bp_udp_stats us;
        bp_udp_cla_stats(n->udpmcla, &us);
        if (us.dgrams_in || us.dgrams_out)
            put(&o,
                "bp/udpm: datagrams in %" PRIu64 " out %" PRIu64 ", bundles in %" PRIu64
                ", not for us %" PRIu64 ", own %" PRIu64 ", refused %" PRIu64
                ", too big %" PRIu64 ", kernel drops %" PRIu64 "\n",
                us.dgrams_in, us.dgrams_out, us.bundles_in, us.not_for_us, us.own_in,
                us.refused_in, us.too_big, us.kernel_drops);
    }
    if (n->tcpcla) {
        bp_tcp_stats ts;
        bp_tcp_cla_stats(n->tcpcla, &ts);
        if (ts.accepted || ts.connects || ts.connect_failures)
            put(&o,
                "bp/tcp: connections accepted %" PRIu64 " attempted %" PRIu64
                " failed %" PRIu64 " dropped %" PRIu64 ", bundles in %" PRIu64
                " out %" PRIu64 ", bytes in %" PRIu64 " out %" PRIu64 ", refused %" PRIu64
                ", failed %" PRIu64 ", protocol errors %" PRIu64
                ", paused for a full store %" PRIu64 ", connections refused %" PRIu64
                ", idle closed %" PRIu64 ", waited for rxbuffer %" PRIu64 "\n",
                ts.accepted, ts.connects, ts.connect_failures, ts.drops, ts.bundles_in,
                ts.bundles_out, ts.bytes_in, ts.bytes_out, ts.refused_in, ts.failed_out,
                ts.protocol_errors, ts.pauses, ts.refused_conns, ts.idle_closes,
                ts.starved);
    }
    return (int)o.len;
}
