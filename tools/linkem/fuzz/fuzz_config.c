/* libFuzzer target: linkem's config-file parser must accept or reject any
 * bytes cleanly, in every mode; a rejection names fuzz.conf:<line>, and what
 * it accepts must be a consistent configuration. */
#include <stdlib.h>
#include <string.h>

#include "linkem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[LK_ERR_MAX];
    for (int mode = 0; mode < 3; mode++) {
        lk_config cfg;
        lk_config_init(&cfg, mode);
        err[0] = 0;
        int rc = lk_config_parse_text(&cfg, "fuzz.conf", (const char *)data, size, err,
                                      sizeof err);
        if (rc == -12 /* ENOMEM */) {
            lk_config_free(&cfg);
            return 0;
        }
        if (rc != 0 && rc != TERN_ESYNTAX)
            abort();
        if (rc != 0 && strncmp(err, "fuzz.conf:", 10) != 0)
            abort();
        if (rc == 0) {
            for (int d = 0; d < 2; d++) {
                const lk_impair *m = &cfg.dir[d];
                if (!(m->loss >= 0 && m->loss <= 1) || !(m->ber >= 0 && m->ber <= 1) ||
                    !(m->dup >= 0 && m->dup <= 1) ||
                    !(m->reorder >= 0 && m->reorder <= 1) || !(m->delay_ms >= 0) ||
                    !(m->jitter_ms >= 0))
                    abort();
                for (size_t i = 0; i < m->outage.n_down; i++)
                    if (m->outage.down[i].end_ns <= m->outage.down[i].start_ns)
                        abort();
                if (m->outage.down_ns && !m->outage.up_ns)
                    abort();
                /* The schedule functions terminate and agree with each other. */
                uint64_t t = lk_schedule_next_change(&m->outage, 0);
                if (t != UINT64_MAX && lk_schedule_is_down(&m->outage, t) ==
                                           lk_schedule_is_down(&m->outage, 0))
                    abort();
                if (lk_schedule_is_down(&m->outage, lk_schedule_next_up(&m->outage, 0)))
                    abort();
            }
            if (lk_config_check(&cfg, err, sizeof err) != 0 && !err[0])
                abort();
        }
        lk_config_free(&cfg);
    }
    return 0;
}
