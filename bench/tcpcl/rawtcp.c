/* Raw TCP baseline for bench/tcpcl: what one TCP connection on 127.0.0.1
 * carries on this machine with no BP and no convergence layer. A receiver
 * process accepts one connection and drains it with recv() into a 4 MiB
 * buffer; a sender process writes messages of one size with send() for a
 * fixed time, with TCP_NODELAY as Tern's sockets have it. The receiver
 * reports bytes received per second (goodput, first byte to last byte).
 *
 *   bench_tcpcl <message size> <seconds>
 *
 * Prints one line: "raw_tcp size=<n> gbps=<x> msgs_per_s=<x> bytes=<n>
 * sent_msgs=<n>" (msgs_per_s: bytes received / size / seconds, what a
 * stream of messages of that size would deliver).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

#define RBUF (4u << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct shared {
    volatile uint64_t bytes;
    volatile double t0, t1;
};

static int receiver(int lfd, struct shared *sh)
{
    int fd;
    do
        fd = accept(lfd, NULL, NULL);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        perror("bench_tcpcl: accept");
        return 1;
    }
    char *buf = malloc(RBUF);
    if (!buf)
        return 1;
    uint64_t bytes = 0;
    double first = 0, last = 0;
    for (;;) {
        ssize_t n = recv(fd, buf, RBUF, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("bench_tcpcl: recv");
            break;
        }
        if (n == 0)
            break; /* the sender closed: done */
        last = now_s();
        if (!first)
            first = last;
        bytes += (uint64_t)n;
    }
    sh->bytes = bytes;
    sh->t0 = first;
    sh->t1 = last;
    free(buf);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_tcpcl <message size> <seconds>\n");
        return 2;
    }
    long lsize = atol(argv[1]);
    double secs = atof(argv[2]);
    if (lsize < 1 || lsize > (64l << 20) || secs <= 0) {
        fprintf(stderr, "bench_tcpcl: message size 1..67108864 bytes, seconds > 0\n");
        return 2;
    }
    size_t size = (size_t)lsize;
    struct shared *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (sh == MAP_FAILED || lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) < 0 || listen(lfd, 1) < 0) {
        perror("bench_tcpcl: setup");
        return 1;
    }
    pid_t rpid = fork();
    if (rpid < 0) {
        perror("bench_tcpcl: fork");
        return 1;
    }
    if (rpid == 0)
        _exit(receiver(lfd, sh));
    close(lfd);
    int sfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    if (sfd < 0 || setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
        connect(sfd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("bench_tcpcl: connect");
        kill(rpid, SIGKILL);
        return 1;
    }
    char *payload = malloc(size);
    if (!payload)
        return 1;
    memset(payload, 0x5a, size);
    uint64_t sent = 0;
    double t0 = now_s();
    int rc = 0;
    while (now_s() - t0 < secs) {
        size_t off = 0;
        while (off < size) {
            ssize_t w = send(sfd, payload + off, size - off, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                perror("bench_tcpcl: send");
                rc = 1;
                goto done;
            }
            off += (size_t)w;
        }
        sent++;
    }
done:
    close(sfd);
    free(payload);
    int st;
    waitpid(rpid, &st, 0);
    double dt = sh->t1 - sh->t0;
    printf("raw_tcp size=%zu gbps=%.3f msgs_per_s=%.0f bytes=%llu sent_msgs=%llu\n", size,
           dt > 0 ? sh->bytes * 8.0 / dt / 1e9 : 0.0,
           dt > 0 ? sh->bytes / (double)size / dt : 0.0, (unsigned long long)sh->bytes,
           (unsigned long long)sent);
    return rc;
}
