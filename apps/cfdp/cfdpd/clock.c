/* cfdpd's clock: CLOCK_MONOTONIC plus an offset kept in its store, so that
 * the timer deadlines it saved stay meaningful across a reboot.
 *
 * The engine's deadlines are absolute times of this clock (saved with each
 * transaction). A restart within the same boot keeps the offset: the time
 * cfdpd was down counts, as it should (a timer that expired meanwhile fires
 * at once). After a reboot CLOCK_MONOTONIC starts again near 0, so the
 * saved deadlines would lie as far in the future as the old boot's uptime:
 * a NAK or ACK timer of 10 s would fire after days. A new boot (another
 * /proc/sys/kernel/random/boot_id) therefore gets a new offset that carries
 * the clock on from the last time saved, plus the downtime as the wall
 * clock tells it (none if the wall clock went backwards). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdpd.h"

int cfdpd_boot_id(char *out, size_t cap)
{
    /* tests stand in another boot with TERN_TEST_BOOT_ID */
    const char *t = getenv("TERN_TEST_BOOT_ID");
    if (t && *t) {
        snprintf(out, cap, "%s", t);
        return 0;
    }
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return -errno;
    char b[64] = "";
    char *r = fgets(b, sizeof b, f);
    fclose(f);
    if (!r)
        return -EIO;
    b[strcspn(b, "\n")] = '\0';
    snprintf(out, cap, "%s", b);
    return 0;
}

int64_t cfdpd_clock_resume(const cfdpd_clock *saved, const char *boot, uint64_t mono_ms,
                           uint64_t real_ms)
{
    if (!saved)
        return 0;
    if (!strcmp(saved->boot, boot))
        return saved->off_ms;
    uint64_t down = real_ms > saved->real_ms ? real_ms - saved->real_ms : 0;
    if (down > saved->engine_ms + (UINT64_C(1) << 62))
        down = 0; /* a wall clock far off: no guess at all */
    uint64_t resume = saved->engine_ms + down;
    if (resume > (UINT64_C(1) << 62))
        resume = saved->engine_ms;
    return (int64_t)resume - (int64_t)mono_ms;
}
