/* Raw UDP baseline for bench/ltp: what the kernel path alone carries on
 * this machine. A receiver process drains a socket with recvmmsg; a sender
 * process blasts datagrams of one size with sendmmsg for a fixed time. The
 * receiver reports bytes received per second (goodput, not offered load).
 *
 *   bench_ltp <datagram size> <seconds>
 *
 * Prints one line: "raw_udp size=<n> gbps=<x> recv_pkts=<n> sent_pkts=<n>".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void bufs(int fd)
{
    int sz = 64 << 20;
    /* FORCE variants pass rmem_max when root; plain ones otherwise. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof sz) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
}

struct shared {
    volatile uint64_t bytes, pkts;
    volatile double t0, t1;
    volatile int ready;
};

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_ltp <datagram size> <seconds>\n");
        return 2;
    }
    size_t size = (size_t)atol(argv[1]);
    double secs = atof(argv[2]);
    if (size < 1 || size > 65000 || secs <= 0) {
        fprintf(stderr, "bench_ltp: size 1..65000 bytes, seconds > 0\n");
        return 2;
    }
    struct shared *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int rfd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (sh == MAP_FAILED || rfd < 0 || bind(rfd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(rfd, (struct sockaddr *)&a, &al) < 0) {
        perror("bench_ltp: setup");
        return 1;
    }
    bufs(rfd);
    pid_t rpid = fork();
    if (rpid == 0) {
        static char data[BATCH][65536];
        struct mmsghdr m[BATCH];
        struct iovec iov[BATCH];
        for (int i = 0; i < BATCH; i++) {
            iov[i].iov_base = data[i];
            iov[i].iov_len = sizeof data[i];
            memset(&m[i], 0, sizeof m[i]);
            m[i].msg_hdr.msg_iov = &iov[i];
            m[i].msg_hdr.msg_iovlen = 1;
        }
        struct timeval tv = {0, 200000};
        setsockopt(rfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        sh->ready = 1;
        uint64_t bytes = 0, pkts = 0;
        double first = 0, last = 0;
        for (;;) {
            int n = recvmmsg(rfd, m, BATCH, MSG_WAITFORONE, NULL);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (pkts)
                    break; /* the sender has stopped */
                continue;
            }
            last = now_s();
            if (!first)
                first = last;
            for (int i = 0; i < n; i++)
                bytes += m[i].msg_len;
            pkts += (uint64_t)n;
        }
        sh->bytes = bytes;
        sh->pkts = pkts;
        sh->t0 = first;
        sh->t1 = last;
        _exit(0);
    }
    close(rfd);
    while (!sh->ready)
        usleep(1000);
    int sfd = socket(AF_INET, SOCK_DGRAM, 0);
    bufs(sfd);
    if (connect(sfd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("bench_ltp: connect");
        return 1;
    }
    static char payload[65536];
    memset(payload, 0x5a, sizeof payload);
    struct mmsghdr m[BATCH];
    struct iovec iov[BATCH];
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = payload;
        iov[i].iov_len = size;
        memset(&m[i], 0, sizeof m[i]);
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
    }
    uint64_t sent = 0;
    double t0 = now_s();
    while (now_s() - t0 < secs) {
        int n = sendmmsg(sfd, m, BATCH, 0);
        if (n > 0)
            sent += (uint64_t)n;
        else if (errno == ENOBUFS || errno == EAGAIN)
            usleep(50);
    }
    close(sfd);
    int st;
    waitpid(rpid, &st, 0);
    double dt = sh->t1 - sh->t0;
    printf("raw_udp size=%zu gbps=%.3f recv_pkts=%llu sent_pkts=%llu\n", size,
           dt > 0 ? sh->bytes * 8.0 / dt / 1e9 : 0.0, (unsigned long long)sh->pkts,
           (unsigned long long)sent);
    return 0;
}
