/* The harness runner: registry, fork per test, timeout, fd-leak check, TAP. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tern_test.h"

#define TT_MAX 1024

struct tt_case {
    const char *name;
    tt_fn fn;
};

/* Test registry: filled by constructors before main; test programs only. */
static struct tt_case tt_cases[TT_MAX];
static int tt_ncases;
static char tt_dir[256];
static uint64_t tt_seed_value;
static int tt_seed_set;

void tt_register(const char *name, tt_fn fn)
{
    if (tt_ncases == TT_MAX) {
        fprintf(stderr, "tern_test: more than %d tests in one program\n", TT_MAX);
        abort();
    }
    tt_cases[tt_ncases].name = name;
    tt_cases[tt_ncases].fn = fn;
    tt_ncases++;
}

void tt_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "# FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    _exit(1);
}

uint64_t tt_seed(void)
{
    if (!tt_seed_set) {
        const char *s = getenv("TT_SEED");
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        tt_seed_value = s ? strtoull(s, NULL, 0)
                          : (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ getpid();
        tt_seed_set = 1;
        fprintf(stderr, "# seed %" PRIu64 " (rerun with TT_SEED=%" PRIu64 ")\n",
                tt_seed_value, tt_seed_value);
    }
    return tt_seed_value;
}

const char *tt_tmpdir(void)
{
    if (!tt_dir[0]) {
        snprintf(tt_dir, sizeof tt_dir, "/tmp/tt-XXXXXX");
        if (!mkdtemp(tt_dir))
            tt_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
    }
    return tt_dir;
}

static int tt_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int tt_count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

/* Child side: run the test, then check it left no descriptors behind. */
static void tt_child(const struct tt_case *c)
{
    int before = tt_count_fds();
    c->fn();
    int after = tt_count_fds();
    if (tt_dir[0])
        nftw(tt_dir, tt_rm, 16, FTW_DEPTH | FTW_PHYS);
    if (after > before)
        tt_fail(__FILE__, __LINE__, "test leaked %d file descriptor(s)", after - before);
    fflush(NULL);
    exit(0); /* exit, not _exit: LeakSanitizer checks at exit */
}

static double tt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int tt_run(int idx, const struct tt_case *c, int timeout, int nofork)
{
    double t0 = tt_now();
    if (nofork) {
        tt_child(c);
        return 0;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        printf("not ok %d - %s: fork: %s\n", idx, c->name, strerror(errno));
        return 1;
    }
    if (pid == 0) {
        alarm((unsigned)timeout);
        tt_child(c);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    double ms = (tt_now() - t0) * 1000.0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        printf("ok %d - %s (%.0f ms)\n", idx, c->name, ms);
        return 0;
    }
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
        printf("not ok %d - %s: timed out after %d s\n", idx, c->name, timeout);
    else if (WIFSIGNALED(st))
        printf("not ok %d - %s: killed by signal %d (%s)\n", idx, c->name, WTERMSIG(st),
               strsignal(WTERMSIG(st)));
    else
        printf("not ok %d - %s: exit status %d\n", idx, c->name, WEXITSTATUS(st));
    return 1;
}

int main(int argc, char **argv)
{
    const char *to = getenv("TT_TIMEOUT");
    int timeout = to ? atoi(to) : 120;
    int nofork = getenv("TT_NOFORK") != NULL;
    int pass = 0, fail = 0, n = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "-l") == 0) {
        for (int i = 0; i < tt_ncases; i++)
            printf("%s\n", tt_cases[i].name);
        return 0;
    }
    int selected = 0;
    for (int i = 0; i < tt_ncases; i++) {
        int want = argc == 1;
        for (int a = 1; a < argc; a++)
            if (strcmp(argv[a], tt_cases[i].name) == 0)
                want = 1;
        selected += want;
    }
    if (selected == 0) {
        fprintf(stderr, "no test matches; -l lists them\n");
        return 2;
    }
    printf("1..%d\n", selected);
    for (int i = 0; i < tt_ncases; i++) {
        int want = argc == 1;
        for (int a = 1; a < argc; a++)
            if (strcmp(argv[a], tt_cases[i].name) == 0)
                want = 1;
        if (!want)
            continue;
        if (tt_run(++n, &tt_cases[i], timeout, nofork))
            fail++;
        else
            pass++;
    }
    printf("# tests %d pass %d fail %d\n", n, pass, fail);
    return fail ? 1 : 0;
}
