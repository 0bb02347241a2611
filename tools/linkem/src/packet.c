/* Packet mode: two network namespaces joined through TUN devices.
 *
 * Each namespace is made as `ip netns add` makes it: an empty file
 * /run/netns/NAME on which the namespace (/proc/thread-self/ns/net after
 * unshare(CLONE_NEWNET)) is bind-mounted, /run/netns being a shared mount so
 * that `ip netns exec` sees it from its own mount namespace. While this
 * thread is inside the new namespace it opens /dev/net/tun (the device "lk0"
 * belongs to the namespace it was created in), gives it its address, MTU and
 * "up", brings lo up, and then returns to the original namespace: the TUN
 * descriptors keep working from there. Every IP packet the kernel of A sends
 * out of lk0 is read from A's descriptor, goes through the a2b channel and is
 * written to B's descriptor, which makes B's kernel receive it on its lk0.
 *
 * A bit error flips bits and the packet is delivered: the receiving kernel's
 * header and transport checksums decide, as on a real link (a packet mangled
 * past recognition is refused by the TUN write, which counts as delivered and
 * dropped by the receiver).
 *
 * Teardown closes the TUN descriptors (the devices go with them) and
 * unmounts and removes both files; the namespaces vanish once nothing is
 * left running inside them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relay.h"

#define NETNS_DIR  "/run/netns"
#define TUN_NAME   "lk0"
#define RX_BUF     65536
#define READS_WAKE 64

struct pdir {
    struct lk_packet *p;
    int d;
};

typedef struct lk_packet {
    lk_relay base;
    tern_loop *loop;
    tern_log *lg;
    const lk_config *cfg;
    char path[2][PATH_MAX];
    int made[2];    /* our file exists in NETNS_DIR */
    int mounted[2]; /* the namespace is mounted on it */
    int tun[2];
    tern_io io[2];
    int io_init[2];
    lk_channel *ch[2];
    struct pdir pd[2];
    uint8_t *buf;
    uint64_t refused, send_errors;
} lk_packet;

/* CapEff bits from /proc/self/status: no libcap needed. */
static int have_caps(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return 0;
    char line[256];
    unsigned long long eff = 0;
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "CapEff: %llx", &eff) == 1) {
            found = 1;
            break;
        }
    fclose(f);
    const unsigned long long need =
        (1ull << 12) | (1ull << 21); /* NET_ADMIN, SYS_ADMIN */
    return found && (eff & need) == need;
}

/* Unmounts and removes /run/netns/NAME. 0, or -errno of the unlink. */
static int delete_ns(const char *path)
{
    if (umount2(path, MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
        return -errno;
    if (unlink(path) != 0 && errno != ENOENT)
        return -errno;
    return 0;
}

/* /run/netns exists and is a shared mount (what iproute2 does, so that
 * namespaces mounted later are seen from other mount namespaces). */
static int prepare_dir(char *err, size_t errlen)
{
    if (mkdir(NETNS_DIR, 0755) != 0 && errno != EEXIST) {
        int rc = -errno;
        lk_seterr(err, errlen, "cannot create %s: %s", NETNS_DIR, strerror(errno));
        return rc;
    }
    for (int tries = 0; tries < 2; tries++) {
        if (mount("", NETNS_DIR, "none", MS_SHARED | MS_REC, NULL) == 0)
            return 0;
        if (errno != EINVAL || tries) {
            int rc = -errno;
            lk_seterr(err, errlen, "cannot make %s a shared mount: %s", NETNS_DIR,
                      strerror(errno));
            return rc;
        }
        /* Not a mount point yet: bind it onto itself, then share it. */
        if (mount(NETNS_DIR, NETNS_DIR, "none", MS_BIND | MS_REC, NULL) != 0) {
            int rc = -errno;
            lk_seterr(err, errlen, "cannot bind-mount %s onto itself: %s", NETNS_DIR,
                      strerror(errno));
            return rc;
        }
    }
    return 0;
}

static int parse_cidr(const char *s, struct in_addr *addr, struct in_addr *mask)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    unsigned len = 24;
    char *slash = strchr(buf, '/');
    if (slash) {
        *slash = 0;
        len = (unsigned)strtoul(slash + 1, NULL, 10);
    }
    if (inet_pton(AF_INET, buf, addr) != 1 || len < 1 || len > 32)
        return -EINVAL;
    mask->s_addr = htonl(len == 32 ? 0xffffffffu : ~(0xffffffffu >> len));
    return 0;
}

static int ifreq_call(int s, unsigned long req, struct ifreq *ifr, const char *what,
                      char *err, size_t errlen)
{
    if (ioctl(s, req, ifr) == 0)
        return 0;
    int rc = -errno;
    lk_seterr(err, errlen, "%s %s: %s", what, ifr->ifr_name, strerror(errno));
    return rc;
}

static int set_up(int s, const char *name, char *err, size_t errlen)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    int rc = ifreq_call(s, SIOCGIFFLAGS, &ifr, "get flags of", err, errlen);
    if (rc)
        return rc;
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    return ifreq_call(s, SIOCSIFFLAGS, &ifr, "bring up", err, errlen);
}

/* In the namespace this thread is in: the TUN device, its address, up. */
static int make_tun(const char *cidr, unsigned mtu, int *out, char *err, size_t errlen)
{
    struct in_addr addr, mask;
    if (parse_cidr(cidr, &addr, &mask)) {
        lk_seterr(err, errlen, "'%s' is not an IPv4 address/prefix", cidr);
        return TERN_ESYNTAX;
    }
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int rc = -errno;
        lk_seterr(err, errlen, "cannot open /dev/net/tun: %s%s", strerror(errno),
                  errno == ENOENT ? " (no TUN support: modprobe tun)" : "");
        return rc;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", TUN_NAME);
    int s = -1, rc = ifreq_call(fd, TUNSETIFF, &ifr, "create TUN device", err, errlen);
    if (rc)
        goto fail;
    /* No IPv6 on the link: its router solicitations and MLD reports would
     * only add packets to the counters. Best effort. */
    int pf =
        open("/proc/sys/net/ipv6/conf/" TUN_NAME "/disable_ipv6", O_WRONLY | O_CLOEXEC);
    if (pf >= 0) {
        if (write(pf, "1", 1) != 1) { /* ignored: IPv6 may be off already */
        }
        close(pf);
    }
    s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        rc = -errno;
        lk_seterr(err, errlen, "socket: %s", strerror(errno));
        goto fail;
    }
    rc = set_up(s, "lo", err, errlen);
    if (rc)
        goto fail;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", TUN_NAME);
    struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
    sin->sin_family = AF_INET;
    sin->sin_addr = addr;
    rc = ifreq_call(s, SIOCSIFADDR, &ifr, "set the address of", err, errlen);
    if (rc)
        goto fail;
    sin->sin_addr = mask;
    rc = ifreq_call(s, SIOCSIFNETMASK, &ifr, "set the netmask of", err, errlen);
    if (rc)
        goto fail;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", TUN_NAME);
    ifr.ifr_mtu = (int)mtu;
    rc = ifreq_call(s, SIOCSIFMTU, &ifr, "set the MTU of", err, errlen);
    if (rc)
        goto fail;
    rc = set_up(s, TUN_NAME, err, errlen);
    if (rc)
        goto fail;
    close(s);
    *out = fd;
    return 0;
fail:
    if (s >= 0)
        close(s);
    close(fd);
    return rc;
}

/* Creates namespace d and its TUN device; this thread ends up back in the
 * namespace orig names, whatever happens. */
static int make_ns(lk_packet *p, int d, int orig, char *err, size_t errlen)
{
    const char *name = p->cfg->netns[d];
    int fd = open(p->path[d], O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
    if (fd < 0) {
        int rc = errno == EEXIST ? TERN_EEXIST : -errno;
        lk_seterr(err, errlen, "cannot create %s: %s", p->path[d], strerror(errno));
        return rc;
    }
    close(fd);
    p->made[d] = 1;
    if (unshare(CLONE_NEWNET) != 0) {
        int rc = -errno;
        lk_seterr(err, errlen, "namespace %s: unshare: %s", name, strerror(errno));
        return rc;
    }
    int rc = 0;
    if (mount("/proc/thread-self/ns/net", p->path[d], "none", MS_BIND, NULL) != 0) {
        rc = -errno;
        lk_seterr(err, errlen, "namespace %s: cannot mount it on %s: %s", name,
                  p->path[d], strerror(errno));
        goto back;
    }
    p->mounted[d] = 1;
    char sub[LK_ERR_MAX];
    rc = make_tun(p->cfg->addr[d] ? p->cfg->addr[d]
                  : d             ? "10.200.0.2/24"
                                  : "10.200.0.1/24",
                  p->cfg->mtu, &p->tun[d], sub, sizeof sub);
    if (rc)
        lk_seterr(err, errlen, "namespace %s: %s", name, sub);
back:
    if (setns(orig, CLONE_NEWNET) != 0) {
        /* Cannot happen with the privileges we checked; carrying on would
         * leave this process in the wrong namespace. */
        int e = errno;
        lk_seterr(err, errlen, "cannot return to the original network namespace: %s",
                  strerror(e));
        return -e;
    }
    return rc;
}

static int deliver(void *arg, void *tag, uint8_t *data, size_t len, unsigned pflags)
{
    struct pdir *pd = arg;
    lk_packet *p = pd->p;
    int fd = p->tun[1 - pd->d];
    (void)tag;
    (void)pflags;
    for (;;) {
        ssize_t n = write(fd, data, len);
        if (n >= 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EINVAL) {
            p->refused++; /* mangled beyond an IP header: the receiver drops it */
            return 0;
        }
        int e = errno;
        if (p->send_errors++ % 1000 == 0)
            TERN_WARN(p->lg, "linkem", "%s: TUN write: %s (%" PRIu64 " so far)",
                      lk_dir_name(pd->d), strerror(e), p->send_errors);
        return -e;
    }
}

static void on_tun(tern_io *w, int fd, unsigned events, void *arg)
{
    struct pdir *pd = arg;
    lk_packet *p = pd->p;
    (void)w;
    (void)events;
    for (int k = 0; k < READS_WAKE; k++) {
        ssize_t n = read(fd, p->buf, RX_BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        lk_channel_send(p->ch[pd->d], p->buf, (size_t)n, NULL, 0);
    }
}

static int packet_start(lk_relay *r, uint64_t epoch_ns)
{
    lk_packet *p = (lk_packet *)r;
    for (int d = 0; d < 2; d++) {
        lk_channel_set_epoch(p->ch[d], epoch_ns);
        int rc = tern_io_start(&p->io[d], TERN_IO_READ);
        if (rc)
            return rc;
    }
    return 0;
}

static int packet_ports(const lk_relay *r, char *buf, size_t size)
{
    (void)r;
    if (size)
        buf[0] = 0;
    return 0;
}

static void packet_counters(const lk_relay *r, int dir, lk_counters *out)
{
    const lk_packet *p = (const lk_packet *)r;
    memset(out, 0, sizeof *out);
    if (p->ch[dir])
        *out = *lk_channel_counters(p->ch[dir]);
}

static void packet_destroy(lk_relay *r)
{
    lk_packet *p = (lk_packet *)r;
    for (int d = 0; d < 2; d++) {
        lk_channel_free(p->ch[d]);
        if (p->io_init[d])
            tern_io_stop(&p->io[d]);
        if (p->tun[d] >= 0)
            close(p->tun[d]);
    }
    for (int d = 0; d < 2; d++) {
        if (!p->made[d])
            continue;
        int rc = delete_ns(p->path[d]);
        if (rc)
            TERN_ERROR(p->lg, "linkem", "cannot delete namespace %s: %s",
                       p->cfg->netns[d], tern_strerror(rc));
        else
            TERN_INFO(p->lg, "linkem", "namespace %s deleted", p->cfg->netns[d]);
    }
    if (p->refused)
        TERN_INFO(p->lg, "linkem",
                  "%" PRIu64 " corrupted packets refused by a TUN device", p->refused);
    free(p->buf);
    free(p);
}

static const struct relay_ops packet_ops = {packet_start, packet_ports, packet_counters,
                                            packet_destroy};

int lk_packet_create(tern_loop *loop, const lk_config *cfg, tern_log *lg, char *err,
                     size_t errlen, lk_relay **out)
{
    if (!have_caps()) {
        lk_seterr(err, errlen,
                  "packet mode needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create "
                  "network namespaces and TUN devices");
        return -EPERM;
    }
    lk_packet *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->base.ops = &packet_ops;
    p->loop = loop;
    p->lg = lg;
    p->cfg = cfg;
    p->tun[0] = p->tun[1] = -1;
    int rc = 0, orig = -1;
    for (int d = 0; d < 2; d++) {
        p->pd[d] = (struct pdir){p, d};
        snprintf(p->path[d], sizeof p->path[d], "%s/%s", NETNS_DIR, cfg->netns[d]);
        struct stat st;
        if (lstat(p->path[d], &st) == 0) {
            if (!cfg->replace) {
                lk_seterr(err, errlen,
                          "network namespace %s exists (%s): delete it (ip netns del %s) "
                          "or pass --replace",
                          cfg->netns[d], p->path[d], cfg->netns[d]);
                rc = TERN_EEXIST;
                goto fail;
            }
            rc = delete_ns(p->path[d]);
            if (rc) {
                lk_seterr(err, errlen, "--replace: cannot delete namespace %s: %s",
                          cfg->netns[d], tern_strerror(rc));
                goto fail;
            }
            TERN_INFO(lg, "linkem", "--replace: deleted the old namespace %s",
                      cfg->netns[d]);
        }
    }
    rc = prepare_dir(err, errlen);
    if (rc)
        goto fail;
    orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (orig < 0) {
        rc = -errno;
        lk_seterr(err, errlen, "cannot open this thread's network namespace: %s",
                  strerror(errno));
        goto fail;
    }
    for (int d = 0; d < 2; d++) {
        rc = make_ns(p, d, orig, err, errlen);
        if (rc)
            goto fail;
    }
    close(orig);
    orig = -1;
    p->buf = malloc(RX_BUF);
    if (!p->buf) {
        rc = -ENOMEM;
        goto fail;
    }
    for (int d = 0; d < 2; d++) {
        rc = lk_channel_new(loop, &cfg->dir[d], cfg->seed, d,
                            cfg->ber_drop ? 0u : LK_CH_BER_DELIVER, deliver, &p->pd[d],
                            &p->ch[d]);
        if (rc)
            goto fail;
        rc = tern_io_init(loop, &p->io[d], p->tun[d], on_tun, &p->pd[d]);
        if (rc)
            goto fail;
        p->io_init[d] = 1;
    }
    TERN_INFO(lg, "linkem", "packet: namespaces %s (%s) and %s (%s) joined by %s",
              cfg->netns[0], cfg->addr[0] ? cfg->addr[0] : "10.200.0.1/24", cfg->netns[1],
              cfg->addr[1] ? cfg->addr[1] : "10.200.0.2/24", TUN_NAME);
    *out = &p->base;
    return 0;
fail:
    if (orig >= 0)
        close(orig);
    if (!err[0])
        lk_seterr(err, errlen, "packet mode: %s", tern_strerror(rc));
    packet_destroy(&p->base);
    return rc;
}
