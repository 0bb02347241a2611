/* tern: start, stop, inspect and configure Tern nodes.
 *
 *   tern start <host.rc | node.ionrc | node dir> [--foreground] [--log-level L]
 *   tern stop [<node dir | host.rc>] [--timeout S]
 *   tern status [<node dir>] [--once]
 * (stop and status without a directory: $TERN_NODE_DIR, else the current one)
 *   tern admin <ionadmin|ltpadmin|bpadmin|ipnadmin> <node dir> [file]
 */
#include <errno.h>
#include <glob.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tern/base.h"
#include "tern_bp.h"

static void usage(FILE *f)
{
    fprintf(
        f, "usage: tern <command> ...\n"
           "  start <host.rc | node.ionrc | node dir> [--foreground] [--log-level L]\n"
           "        start a node (ternd) for the directory (its host.rc, else ION's\n"
           "        node.ionrc, node.ltprc, node.bprc, ...); returns once it runs\n"
           "  stop [<node dir | host.rc>] [--timeout S]\n"
           "        stop it cleanly (SIGTERM) and wait until it is gone\n"
           "  status [<node dir>] [--once]\n"
           "        endpoints, ducts, queues, LTP spans and sessions, rates\n"
           "        (refreshing every second on a terminal)\n"
           "  stop and status without a directory use $TERN_NODE_DIR, else the\n"
           "  current directory, as the bp tools do\n"
           "  admin <ionadmin|ltpadmin|bpadmin|ipnadmin> <node dir> [file]\n"
           "        runtime configuration in ION's syntax; interactive without a file\n");
}

/* The node directory named by an argument: a directory, or a file's (a
 * host.rc or an admin file such as node.ionrc). */
static void node_dir_of(const char *arg, char *dir, size_t cap, const char **rc)
{
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(dir, cap, "%s", arg);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, cap, ".");
        if (rc)
            *rc = arg;
    } else {
        snprintf(dir, cap, "%s", arg);
        if (rc)
            *rc = NULL;
    }
}

static int lock_held(const char *dir)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ternd.lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

/* The pid of the ternd serving dir, 0 if none (its lock is free), -1 if its
 * pid file cannot be read. A ternd writes the file as soon as it holds the
 * lock, so a moment's wait covers a start under way. */
static pid_t running_pid(const char *dir)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ternd.pid", dir);
    for (int i = 0; i < 100; i++) {
        if (!lock_held(dir))
            return 0;
        FILE *f = fopen(path, "r");
        long pid = -1;
        if (f) {
            if (fscanf(f, "%ld", &pid) != 1)
                pid = -1;
            fclose(f);
        }
        if (pid > 0)
            return (pid_t)pid;
        usleep(20000);
    }
    return -1;
}

/* The directory status and stop act on when none is named. */
static const char *default_dir(void)
{
    const char *e = getenv("TERN_NODE_DIR");
    return e && *e ? e : ".";
}

/* How a message names a directory chosen by default_dir. */
static const char *default_note(const char *target)
{
    if (target)
        return "";
    const char *e = getenv("TERN_NODE_DIR");
    return e && *e ? " ($TERN_NODE_DIR)"
                   : " (the current directory: no node directory named and "
                     "$TERN_NODE_DIR not set)";
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static char self_dir[PATH_MAX];
static char status_dir[PATH_MAX]; /* the node 'tern status' shows */

/* ternd next to this program, else on PATH. */
static const char *ternd_path(void)
{
    static char p[PATH_MAX + 8];
    snprintf(p, sizeof p, "%s/ternd", self_dir);
    if (access(p, X_OK) == 0)
        return p;
    return "ternd";
}

/* A program next to this one, else on PATH. */
static const char *sibling_path(const char *name, char *p, size_t cap)
{
    snprintf(p, cap, "%s/%s", self_dir, name);
    return access(p, X_OK) == 0 ? p : name;
}

/* The pid in <dir>/<file> if it names a live process whose name starts
 * with comm, else 0. */
static pid_t pid_from(const char *dir, const char *file, const char *comm_want)
{
    char path[PATH_MAX + 32], comm[64] = "";
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    if (pid <= 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(comm, sizeof comm, f))
        comm[0] = '\0';
    fclose(f);
    return strncmp(comm, comm_want, strlen(comm_want)) == 0 ? (pid_t)pid : 0;
}

/* The pid of the cfdpd serving dir (its pid file names a live cfdpd), else 0. */
static pid_t cfdpd_pid(const char *dir)
{
    return pid_from(dir, "cfdpd.pid", "cfdpd");
}

/* Starts cfdpd, the node's CFDP entity, on the file holding its cfdpadmin
 * commands (as ternd reported it), as a daemon logging to <dir>/cfdpd.log;
 * waits for its "ok". 0, or 1 with the reason printed. */
static int start_cfdpd(const char *dir, const char *rc)
{
    char exe[PATH_MAX + 32], logpath[PATH_MAX + 16];
    snprintf(logpath, sizeof logpath, "%s/cfdpd.log", dir);
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        perror("tern: pipe");
        return 1;
    }
    char fdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", p[1]);
    char *args[] = {(char *)sibling_path("cfdpd", exe, sizeof exe),
                    (char *)dir,
                    "--rc",
                    (char *)rc,
                    "--ready-fd",
                    fdarg,
                    NULL};
    pid_t child = fork();
    if (child < 0) {
        perror("tern: fork");
        return 1;
    }
    if (child == 0) {
        setsid();
        if (fork() > 0)
            _exit(0);
        int null = open("/dev/null", O_RDWR);
        int log = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (null >= 0)
            dup2(null, 0);
        if (log >= 0) {
            dup2(log, 1);
            dup2(log, 2);
        }
        fcntl(p[1], F_SETFD, 0);
        close(p[0]);
        execvp(args[0], args);
        const char *msg = "error: cannot run cfdpd\n";
        ssize_t w = write(p[1], msg, strlen(msg));
        (void)w;
        _exit(127);
    }
    close(p[1]);
    waitpid(child, NULL, 0);
    char buf[2048];
    size_t n = 0;
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    while (n < sizeof buf - 1 && poll(&pf, 1, 60000) > 0) {
        ssize_t r = read(p[0], buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(p[0]);
    buf[n] = '\0';
    if (n && buf[n - 1] == '\n')
        buf[n - 1] = '\0';
    if (strcmp(buf, "ok") != 0) {
        fprintf(stderr, "tern: cfdpd of %s did not start: %s\ntern: see %s\n", dir,
                n ? (strncmp(buf, "error: ", 7) ? buf : buf + 7) : "cfdpd exited",
                logpath);
        return 1;
    }
    printf("tern: cfdpd started for %s (pid %ld, configuration %s, log %s)\n", dir,
           (long)cfdpd_pid(dir), rc, logpath);
    return 0;
}

/* The pid of AMS daemon prog ("amsd", "ramsgate") number i of dir (its pid
 * file names a live one), else 0. */
static pid_t ams_daemon_pid(const char *dir, const char *prog, int i)
{
    char file[48];
    snprintf(file, sizeof file, "%s.%d.pid", prog, i);
    return pid_from(dir, file, prog);
}

static pid_t amsd_pid(const char *dir, int i)
{
    return ams_daemon_pid(dir, "amsd", i);
}

/* Starts AMS daemon prog number i of dir with the host.rc's arguments
 * (tab-joined), in the node's directory (a relative MIB is found there, and
 * ramsgate's petition log is kept there), logging to <dir>/<prog>.<i>.log;
 * waits up to wait_s until it says it serves (a line holding ready or
 * ready2). 0, or 1 with the reason printed. */
static int start_ams_daemon(const char *dir, const char *prog, int i, char *line,
                            const char *ready, const char *ready2, int wait_s)
{
    char exe[PATH_MAX + 32], logpath[PATH_MAX + 32], pidpath[PATH_MAX + 32];
    snprintf(logpath, sizeof logpath, "%s/%s.%d.log", dir, prog, i);
    snprintf(pidpath, sizeof pidpath, "%s/%s.%d.pid", dir, prog, i);
    char *args[8] = {(char *)sibling_path(prog, exe, sizeof exe)};
    int n = 1;
    for (char *t = line; t && n < 7; n++) {
        args[n] = t;
        t = strchr(t, '\t');
        if (t)
            *t++ = '\0';
    }
    args[n] = NULL;
    int log = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log < 0) {
        fprintf(stderr, "tern: %s: %s\n", logpath, strerror(errno));
        return 1;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("tern: fork");
        close(log);
        return 1;
    }
    if (child == 0) {
        setsid();
        int null = open("/dev/null", O_RDWR);
        if (null >= 0)
            dup2(null, 0);
        dup2(log, 1);
        dup2(log, 2);
        setenv("TERN_NODE_DIR", dir, 1); /* ramsgate's node */
        if (chdir(dir) == 0)
            execvp(args[0], args);
        fprintf(stderr, "%s: cannot run %s: %s\n", prog, args[0], strerror(errno));
        _exit(127);
    }
    close(log);
    FILE *pf = fopen(pidpath, "w");
    if (pf) {
        fprintf(pf, "%ld\n", (long)child);
        fclose(pf);
    }
    for (int t = 0; t < wait_s * 20; t++) {
        char buf[4096] = "";
        FILE *f = fopen(logpath, "r");
        size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[got] = '\0';
        if (strstr(buf, ready) || (ready2 && strstr(buf, ready2))) {
            printf("tern: %s %d started for %s (pid %ld, log %s)\n", prog, i, dir,
                   (long)child, logpath);
            return 0;
        }
        int st;
        if (waitpid(child, &st, WNOHANG) == child) {
            char *nl = strchr(buf, '\n');
            if (nl)
                *nl = '\0';
            fprintf(stderr, "tern: %s %d of %s did not start: %s\ntern: see %s\n", prog,
                    i, dir, buf[0] ? buf : "it exited", logpath);
            unlink(pidpath);
            return 1;
        }
        usleep(50000);
    }
    fprintf(stderr, "tern: %s %d of %s said nothing within %d s; see %s\n", prog, i, dir,
            wait_s, logpath);
    return 1;
}

static int cmd_start(int argc, char **argv)
{
    const char *target = NULL, *level = NULL;
    int fg = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--foreground"))
            fg = 1;
        else if (!strcmp(argv[i], "--log-level") && i + 1 < argc)
            level = argv[++i];
        else if (argv[i][0] != '-' && !target)
            target = argv[i];
        else {
            usage(stderr);
            return 2;
        }
    }
    if (!target) {
        usage(stderr);
        return 2;
    }
    char dir[PATH_MAX], logpath[PATH_MAX + 16];
    node_dir_of(target, dir, sizeof dir, NULL);
    pid_t pid = running_pid(dir);
    if (pid > 0) {
        fprintf(stderr, "tern: node %s is already running (ternd pid %ld)\n", dir,
                (long)pid);
        return 1;
    }
    snprintf(logpath, sizeof logpath, "%s/ternd.log", dir);
    off_t log_before = file_size(logpath);
    char *args[8];
    int k = 0;
    args[k++] = (char *)ternd_path();
    if (level) {
        args[k++] = "--log-level";
        args[k++] = (char *)level;
    }
    if (fg) {
        args[k++] = "--stderr";
        args[k++] = (char *)target;
        args[k] = NULL;
        execvp(args[0], args);
        fprintf(stderr, "tern: cannot run %s: %s\n", args[0], strerror(errno));
        return 1;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        perror("tern: pipe");
        return 1;
    }
    char fdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", p[1]);
    args[k++] = "--ready-fd";
    args[k++] = fdarg;
    args[k++] = (char *)target;
    args[k] = NULL;
    pid_t child = fork();
    if (child < 0) {
        perror("tern: fork");
        return 1;
    }
    if (child == 0) {
        /* a daemon: own session, no terminal; the log file says everything */
        setsid();
        if (fork() > 0)
            _exit(0);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        fcntl(p[1], F_SETFD, 0); /* the ready pipe survives exec */
        close(p[0]);
        execvp(args[0], args);
        const char *msg = "error: cannot run ternd\n";
        ssize_t w = write(p[1], msg, strlen(msg));
        (void)w;
        _exit(127);
    }
    close(p[1]);
    waitpid(child, NULL, 0);
    char buf[8192];
    size_t n = 0;
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    while (n < sizeof buf - 1 && poll(&pf, 1, 60000) > 0) {
        ssize_t r = read(p[0], buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(p[0]);
    buf[n] = '\0';
    /* "ok" or "error: <why>" first, then "warning: <file:line: ...>" lines */
    char *rest = strchr(buf, '\n');
    if (rest)
        *rest++ = '\0';
    int ok = strcmp(buf, "ok") == 0;
    if (!ok) {
        fprintf(stderr, "tern: node %s did not start: %s\n", dir,
                n ? (strncmp(buf, "error: ", 7) ? buf : buf + 7) : "ternd exited");
        /* only a log this start wrote to has more to say */
        off_t log_after = file_size(logpath);
        if (log_after >= 0 && log_after != log_before)
            fprintf(stderr, "tern: see %s\n", logpath);
        return 1;
    }
    printf("tern: node %s started (ternd pid %ld)\n", dir, (long)running_pid(dir));
    const char *cfdp_rc = NULL;
    char *amsd[8], *rams[8];
    int n_amsd = 0, n_rams = 0;
    for (char *l = rest; l && *l;) {
        char *next = strchr(l, '\n');
        if (next)
            *next++ = '\0';
        if (strncmp(l, "cfdp: ", 6) == 0)
            cfdp_rc = l + 6;
        else if (strncmp(l, "amsd: ", 6) == 0 && n_amsd < 8)
            amsd[n_amsd++] = l + 6;
        else if (strncmp(l, "ramsgate: ", 10) == 0 && n_rams < 8)
            rams[n_rams++] = l + 10;
        else if (strncmp(l, "warning: ", 9) == 0)
            fprintf(stderr, "tern: warning: %s\n", l + 9);
        else if (strncmp(l, "more: ", 6) == 0)
            fprintf(stderr, "tern: %s more warning(s) in %s\n", l + 6, logpath);
        l = next;
    }
    /* the configuration has amsd lines: its AMS daemons, before CFDP */
    int failed = 0;
    for (int i = 0; i < n_amsd; i++)
        if (!amsd_pid(dir, i))
            failed |=
                start_ams_daemon(dir, "amsd", i, amsd[i], "amsd: configuration server of",
                                 "amsd: registrar of", 5);
    /* the RAMS gateways, once their message spaces run (registering waits
     * out the registrar's census) */
    for (int i = 0; i < n_rams && !failed; i++)
        if (!ams_daemon_pid(dir, "ramsgate", i))
            failed |= start_ams_daemon(dir, "ramsgate", i, rams[i],
                                       "ramsgate: gateway of", NULL, 30);
    /* the configuration has a cfdpadmin part: the node's CFDP entity too */
    if (cfdp_rc && !cfdpd_pid(dir))
        failed |= start_cfdpd(dir, cfdp_rc);
    return failed;
}

static int cmd_stop(int argc, char **argv)
{
    const char *target = NULL;
    double timeout = 30;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
            timeout = atof(argv[++i]);
        else if (!target)
            target = argv[i];
        else {
            usage(stderr);
            return 2;
        }
    }
    char dir[PATH_MAX], canon[PATH_MAX];
    node_dir_of(target ? target : default_dir(), dir, sizeof dir, NULL);
    if (!target && realpath(dir, canon)) /* name the directory taken, not "." */
        snprintf(dir, sizeof dir, "%s", canon);
    for (int i = 0; i < 8; i++) { /* the RAMS gateways: they cancel their declarations */
        pid_t rpid = ams_daemon_pid(dir, "ramsgate", i);
        if (rpid > 0 && kill(rpid, SIGTERM) == 0) {
            for (int k = 0; k < 500 && ams_daemon_pid(dir, "ramsgate", i) == rpid; k++)
                usleep(20000);
            printf("tern: ramsgate %d of %s stopped\n", i, dir);
        }
    }
    for (int i = 0; i < 8; i++) { /* the AMS daemons: they keep nothing */
        pid_t apid = amsd_pid(dir, i);
        if (apid > 0 && kill(apid, SIGTERM) == 0) {
            for (int k = 0; k < 250 && amsd_pid(dir, i) == apid; k++)
                usleep(20000);
            printf("tern: amsd %d of %s stopped\n", i, dir);
        }
    }
    pid_t cpid = cfdpd_pid(dir);
    if (cpid > 0 && kill(cpid, SIGTERM) == 0) {
        /* its state is committed as it goes: a short wait, then ternd */
        for (int i = 0; i < 500 && cfdpd_pid(dir) == cpid; i++)
            usleep(20000);
        if (cfdpd_pid(dir) == cpid)
            fprintf(stderr, "tern: cfdpd %ld of %s still runs after 10 s\n", (long)cpid,
                    dir);
        else
            printf("tern: cfdpd of %s stopped\n", dir);
    }
    pid_t pid = running_pid(dir);
    if (!pid) {
        fprintf(stderr, "tern: no ternd serves %s%s\n", dir, default_note(target));
        return 1;
    }
    if (pid < 0 || kill(pid, SIGTERM) < 0) {
        fprintf(stderr, "tern: cannot signal ternd of %s: %s\n", dir,
                pid < 0 ? "no pid file" : strerror(errno));
        return 1;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (!running_pid(dir)) {
            printf("tern: node %s stopped\n", dir);
            return 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >
            timeout) {
            fprintf(stderr, "tern: ternd %ld of %s still runs after %.0f s\n", (long)pid,
                    dir, timeout);
            return 1;
        }
        usleep(20000);
    }
}

static int attach(const char *target, BpNode **out)
{
    char dir[PATH_MAX];
    node_dir_of(target ? target : default_dir(), dir, sizeof dir, NULL);
    int rc = bp_node_attach(dir, out);
    if (rc)
        fprintf(stderr, "tern: %s%s\n", bp_errmsg()[0] ? bp_errmsg() : bp_strerror(rc),
                default_note(target));
    return rc;
}

/* The CFDP transactions, when a cfdpd serves the node: cfdpstatus says
 * them (tern links no application library). */
static void cfdp_status(BpNode *n)
{
    (void)n;
    char dir[PATH_MAX], exe[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s", status_dir);
    if (!cfdpd_pid(dir))
        return;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        setenv("TERN_NODE_DIR", dir, 1);
        char *args[] = {(char *)sibling_path("cfdpstatus", exe, sizeof exe), NULL};
        execvp(args[0], args);
        _exit(127);
    }
    if (c > 0)
        waitpid(c, NULL, 0);
}

/* The RAMS gateways of the node: each writes ramsgate.<venture>.status in
 * the node directory every second (its peers and counters). */
static void rams_status(void)
{
    glob_t g;
    char pat[PATH_MAX + 32];
    snprintf(pat, sizeof pat, "%s/ramsgate.*.status", status_dir);
    if (glob(pat, 0, NULL, &g))
        return;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "r");
        if (!f)
            continue;
        char line[1024];
        int first = 1;
        while (fgets(line, sizeof line, f)) {
            long pid = 0;
            const char *p = strstr(line, ", pid ");
            if (first && p)
                pid = strtol(p + 6, NULL, 10);
            printf("%s%s", first ? "rams: " : "  ", line);
            if (first && pid > 0 && kill((pid_t)pid, 0) != 0)
                printf("  (that ramsgate no longer runs: this is its last status)\n");
            first = 0;
        }
        fclose(f);
    }
    globfree(&g);
}

static int cmd_status(int argc, char **argv)
{
    const char *target = NULL;
    int once = !isatty(1);
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--once"))
            once = 1;
        else if (!target)
            target = argv[i];
        else {
            usage(stderr);
            return 2;
        }
    }
    BpNode *n;
    if (attach(target, &n))
        return 1;
    node_dir_of(target ? target : default_dir(), status_dir, sizeof status_dir, NULL);
    static char text[1 << 16];
    int rc;
    for (;;) {
        rc = bp_node_status(n, text, sizeof text);
        if (rc < 0) {
            fprintf(stderr, "tern: status: %s\n", bp_strerror(rc));
            break;
        }
        if (!once)
            fputs("\033[H\033[2J", stdout); /* a live view: redraw in place */
        fputs(text, stdout);
        cfdp_status(n);
        rams_status();
        if (once)
            break;
        fflush(stdout);
        sleep(1);
    }
    bp_node_detach(n);
    return rc < 0 ? 1 : 0;
}

/* One admin line; prints ternd's answer. */
static int admin_line(BpNode *n, const char *module, const char *line)
{
    static char out[1 << 16];
    int rc = bp_node_admin(n, module, line, out, sizeof out);
    if (out[0])
        printf("%s%s", out, out[strlen(out) - 1] == '\n' ? "" : "\n");
    else if (rc < 0)
        printf("%s\n", bp_strerror(rc));
    return rc;
}

static int cmd_admin(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        usage(stderr);
        return 2;
    }
    const char *module = argv[0];
    BpNode *n;
    if (attach(argv[1], &n))
        return 1;
    FILE *in = stdin;
    if (argc == 3 && !(in = fopen(argv[2], "r"))) {
        fprintf(stderr, "tern: %s: %s\n", argv[2], strerror(errno));
        bp_node_detach(n);
        return 1;
    }
    int interactive = argc == 2 && isatty(0), failed = 0;
    char line[4096];
    for (;;) {
        if (interactive) {
            printf(": ");
            fflush(stdout);
        }
        if (!fgets(line, sizeof line, in))
            break;
        line[strcspn(line, "\n")] = '\0';
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            continue;
        if (!strcmp(p, "q") || !strcmp(p, "quit"))
            break;
        if (admin_line(n, module, p) < 0)
            failed = 1;
    }
    if (in != stdin)
        fclose(in);
    bp_node_detach(n);
    return failed && !interactive ? 1 : 0;
}

int main(int argc, char **argv)
{
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
        exe[l] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(self_dir, sizeof self_dir, "%s", exe);
    }
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "start"))
        return cmd_start(argc - 2, argv + 2);
    if (!strcmp(cmd, "stop"))
        return cmd_stop(argc - 2, argv + 2);
    if (!strcmp(cmd, "status"))
        return cmd_status(argc - 2, argv + 2);
    if (!strcmp(cmd, "admin"))
        return cmd_admin(argc - 2, argv + 2);
    fprintf(stderr, "tern: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
