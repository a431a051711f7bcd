/* avatar's sandbox stub: enter the walls, then exec (docs/design.md §10).

   avatar starts every walled process as `avatar-stub SPECFD PROGRAM ARGS...`: this program reads
   the walls from the inherited descriptor SPECFD, raises them, and execs PROGRAM. Nothing of
   Python runs between fork and exec (CPython documents `preexec_fn` in a threaded process as
   unsafe), and a small C program starts in well under a millisecond.

   The spec is a sequence of NUL-terminated fields; a record is one opcode field followed by its
   arguments (numbers in decimal):

     d SIG          parent-death signal of the first process (and check avatar is alive)
     p PID          avatar's pid (the parent to check)
     m              private mount namespace (and a user namespace unless root)
     P MODE         PID namespace: "command" (the program is its first process) or "init"
                    (a small init is, and the program its child: signals forwarded, children
                    reaped, exits as the program did)
     N MODE         network namespace: "off" (no interface up) or "loopback" (its own lo up)
     f FILE DIR     the blank stand-ins (an empty file and an empty directory, mode 0)
     F FILE DIR     the empty stand-ins (the same, readable: config an agent may read as none)
     b PATH         bind PATH onto itself (pinned: a mount point cannot be renamed or removed)
     r PATH         bind PATH onto itself read-only
     h PATH         cover PATH with a blank stand-in (read-only)
     e PATH         cover PATH with an empty, readable stand-in (read-only)
     c DIR          cover a directory of sockets; the opened sockets under it stay reachable
     o PATH         an opened socket: never covered
     k PATH         sockets under PATH are not covered (the project, the added directories)
     s              cover every pathname socket /proc/net/unix lists (but the kept ones)
     L FS NET SCOPE a Landlock ruleset handling these rights
     l RIGHTS PATH  allow RIGHTS beneath PATH
     t              refuse TIOCSTI and TIOCLINUX (seccomp)

   `avatar-stub --probe` prints what the kernel allows here:
   `landlock=ABI namespaces=N network=N seccomp=N` (ABI 0: no Landlock).
   Every failure ends the process with status 126 and one line on stderr: never run unwalled. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ITEMS 65536

/* Landlock (linux/landlock.h may be older than the kernel): same numbers on every arch. */
#define SYS_LL_CREATE 444
#define SYS_LL_ADD 445
#define SYS_LL_RESTRICT 446
#define LL_RULE_PATH_BENEATH 1
#define LL_FILE_RIGHTS ((1ULL << 0) | (1ULL << 1) | (1ULL << 2) | (1ULL << 14))

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

#define TIOCSTI_REQ 0x5412
#define TIOCLINUX_REQ 0x541C

/* The ioctl system call on this machine's arch and its compat arch (0: none). */
#if defined(__x86_64__)
#define ARCH_NATIVE AUDIT_ARCH_X86_64
#define NR_NATIVE 16
#define NR_X32 (0x40000000 | 514) /* x32's ioctl: same arch, its own number */
#define ARCH_COMPAT AUDIT_ARCH_I386
#define NR_COMPAT 54
#elif defined(__aarch64__)
#define ARCH_NATIVE AUDIT_ARCH_AARCH64
#define NR_NATIVE 29
#define NR_X32 NR_NATIVE
#define ARCH_COMPAT AUDIT_ARCH_ARM
#define NR_COMPAT 54
#elif defined(__i386__)
#define ARCH_NATIVE AUDIT_ARCH_I386
#define NR_NATIVE 54
#define NR_X32 NR_NATIVE
#define ARCH_COMPAT AUDIT_ARCH_I386
#define NR_COMPAT 54
#endif

struct rule {
    uint64_t rights;
    const char *path;
};

struct spec {
    int deathsig;
    pid_t parent;
    int mounts;
    const char *pid_mode; /* NULL, "command" or "init" */
    const char *net_mode; /* NULL, "off" or "loopback" */
    const char *blank_file, *blank_dir, *empty_file, *empty_dir;
    /* The binds, in the order avatar gives them (parents first): 'b' pinned (writable), 'r'
       read-only, 'h' covered by the blank stand-in of its kind, 'e' by the empty one. */
    char bind_kind[MAX_ITEMS];
    const char *bind_path[MAX_ITEMS];
    int n_binds;
    const char *socket_dirs[MAX_ITEMS / 64], *opened[MAX_ITEMS / 64], *kept[MAX_ITEMS / 64];
    int n_socket_dirs, n_opened, n_kept;
    int scan_sockets;
    int landlock;
    uint64_t handled_fs, handled_net, scoped;
    struct rule rules[MAX_ITEMS];
    int n_rules;
    int seccomp;
};

static struct spec S;

static void die(const char *what, const char *path) {
    int saved = errno;
    dprintf(2, "avatar: the sandbox could not be applied (%s%s%s: %s)\n", what, path ? " " : "",
            path ? path : "", strerror(saved));
    _exit(126);
}

/* -- the spec ------------------------------------------------------------------------------ */

static char *read_all(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) die("reading the spec", NULL);
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size + 2);
    if (!buf) die("reading the spec", NULL);
    while (got < size) {
        ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("reading the spec", NULL);
        got += (size_t)n;
    }
    buf[size] = buf[size + 1] = '\0';
    close(fd);
    return buf;
}

static const char *next(char **cursor, char *end) {
    if (*cursor >= end) {
        errno = EINVAL;
        die("a truncated spec", NULL);
    }
    const char *field = *cursor;
    *cursor += strlen(field) + 1;
    return field;
}

static void push(const char **list, int *n, int cap, const char *item) {
    if (*n >= cap) {
        errno = E2BIG;
        die("too many paths", item);
    }
    list[(*n)++] = item;
}

static void parse(char *buf, size_t size) {
    char *cursor = buf, *end = buf + size;
    while (cursor < end) {
        const char *op = next(&cursor, end);
        switch (op[0]) {
        case 'd': S.deathsig = atoi(next(&cursor, end)); break;
        case 'p': S.parent = (pid_t)atol(next(&cursor, end)); break;
        case 'm': S.mounts = 1; break;
        case 'P': S.pid_mode = next(&cursor, end); break;
        case 'N': S.net_mode = next(&cursor, end); break;
        case 'f':
            S.blank_file = next(&cursor, end);
            S.blank_dir = next(&cursor, end);
            break;
        case 'F':
            S.empty_file = next(&cursor, end);
            S.empty_dir = next(&cursor, end);
            break;
        case 'b':
        case 'r':
        case 'h':
        case 'e':
            S.bind_kind[S.n_binds] = op[0];
            push(S.bind_path, &S.n_binds, MAX_ITEMS, next(&cursor, end));
            break;
        case 'c': push(S.socket_dirs, &S.n_socket_dirs, MAX_ITEMS / 64, next(&cursor, end)); break;
        case 'o': push(S.opened, &S.n_opened, MAX_ITEMS / 64, next(&cursor, end)); break;
        case 'k': push(S.kept, &S.n_kept, MAX_ITEMS / 64, next(&cursor, end)); break;
        case 's': S.scan_sockets = 1; break;
        case 'L':
            S.landlock = 1;
            S.handled_fs = strtoull(next(&cursor, end), NULL, 10);
            S.handled_net = strtoull(next(&cursor, end), NULL, 10);
            S.scoped = strtoull(next(&cursor, end), NULL, 10);
            break;
        case 'l':
            if (S.n_rules >= MAX_ITEMS) {
                errno = E2BIG;
                die("too many rules", NULL);
            }
            S.rules[S.n_rules].rights = strtoull(next(&cursor, end), NULL, 10);
            S.rules[S.n_rules++].path = next(&cursor, end);
            break;
        case 't': S.seccomp = 1; break;
        default: errno = EINVAL; die("an unknown spec record", op);
        }
    }
}

/* -- mounts -------------------------------------------------------------------------------- */

static void write_file(const char *path, const char *data) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data)) die("writing", path);
    close(fd);
}

/* The flags a read-only remount must keep: a mount made in a user namespace cannot drop them. */
static unsigned long locked_flags(const char *path) {
    struct statvfs st;
    if (statvfs(path, &st) != 0) return 0;
    unsigned long flags = 0;
    if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
    if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
    if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
    if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
    if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
    return flags;
}

/* Bind `source` onto `target`; read-only unless `writable`. A target gone since avatar looked
   is nothing to cover (0); any other failure ends the process. */
static int bind_onto(const char *source, const char *target, int writable) {
    if (mount(source, target, NULL, MS_BIND, NULL) != 0) {
        if (errno == ENOENT) return 0;
        die("bind mount of", target);
    }
    if (writable) {
        /* A bind made inside a read-only one starts read-only: writable again where the file
           system allows (where it does not, it stays read-only: the safe side). */
        mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | locked_flags(target), NULL);
        return 1;
    }
    unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags(target);
    if (mount(NULL, target, NULL, flags, NULL) != 0) die("read-only remount of", target);
    return 1;
}

/* Cover `target` with the stand-in of its kind: the blank one (mode 0), or with `empty` the
   empty, readable one. The stand-ins were made read-only first, and a bind keeps its source's
   read-only flag: one mount call per cover. */
static int cover_with(const char *target, int tolerant, int empty) {
    struct stat st;
    if (stat(target, &st) != 0) {
        if (errno == ENOENT || tolerant) return 0;
        die("looking at", target);
    }
    const char *source = S_ISDIR(st.st_mode) ? (empty ? S.empty_dir : S.blank_dir)
                                             : (empty ? S.empty_file : S.blank_file);
    if (!source) {
        errno = EINVAL;
        die("no stand-in for", target);
    }
    if (mount(source, target, NULL, MS_BIND, NULL) != 0) {
        if (errno == ENOENT || tolerant) return 0;
        die("covering", target);
    }
    return 1;
}

static int cover(const char *target, int tolerant) { return cover_with(target, tolerant, 0); }

static int beneath(const char *path, const char *root) {
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return 1;
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int kept_socket(const char *path) {
    for (int i = 0; i < S.n_kept; i++)
        if (beneath(path, S.kept[i])) return 1;
    for (int i = 0; i < S.n_opened; i++)
        if (strcmp(path, S.opened[i]) == 0) return 1;
    return 0;
}

/* The pathname sockets bound in this network namespace (read before leaving it). */
static char *bound_sockets(size_t *count) {
    *count = 0;
    int fd = open("/proc/net/unix", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        if (!buf) die("reading /proc/net/unix", NULL);
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    /* Lines are `Num RefCount Protocol Flags Type St Inode Path`; keep the paths, NUL-ended. */
    char *out = buf, *line = strchr(buf, '\n');
    size_t kept = 0;
    while (line && *++line) {
        char *eol = strchr(line, '\n');
        if (eol) *eol = '\0';
        char *field = line;
        for (int i = 0; i < 7 && field; i++) {
            field = strchr(field, ' ');
            while (field && *field == ' ') field++;
        }
        if (field && field[0] == '/') {
            size_t n = strlen(field) + 1;
            memmove(out + kept, field, n);
            kept += n;
            (*count)++;
        }
        if (!eol) break;
        line = eol;
    }
    return out;
}

static void cover_sockets(const char *paths, size_t count) {
    struct stat st;
    for (size_t i = 0; i < count; i++, paths += strlen(paths) + 1) {
        if (kept_socket(paths)) continue;
        if (lstat(paths, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        cover(paths, 1);
    }
}

static void make_parents(char *path) {
    for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) die("mkdir", path);
        *slash = '/';
    }
}

/* Cover a directory of sockets; an opened socket under it is bound back in at its place, in a
   small read-only tmpfs laid over the directory. */
static void cover_socket_dir(const char *dir, const int *fds) {
    int holes = 0;
    for (int i = 0; i < S.n_opened; i++) holes += fds[i] >= 0 && beneath(S.opened[i], dir);
    if (!holes) {
        cover(dir, 0);
        return;
    }
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=64k") != 0)
        die("a tmpfs over", dir);
    char source[64];
    for (int i = 0; i < S.n_opened; i++) {
        if (fds[i] < 0 || !beneath(S.opened[i], dir)) continue;
        char *target = strdup(S.opened[i]);
        if (!target) die("memory", NULL);
        make_parents(target);
        int fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0) die("a stand-in for", target);
        close(fd);
        snprintf(source, sizeof source, "/proc/self/fd/%d", fds[i]);
        if (mount(source, target, NULL, MS_BIND, NULL) != 0) die("bind mount of", target);
        free(target);
    }
    unsigned long ro = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
    if (mount(NULL, dir, NULL, ro, NULL) != 0) die("read-only remount of", dir);
}

static void loopback_up(void) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) die("the loopback interface", NULL);
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) die("bringing up the loopback interface", NULL);
    close(fd);
}

static void enter_namespaces(void) {
    size_t n_sockets = 0;
    char *sockets = S.scan_sockets ? bound_sockets(&n_sockets) : NULL;
    int flags = CLONE_NEWNS;
    if (S.pid_mode) flags |= CLONE_NEWPID;
    if (S.net_mode) flags |= CLONE_NEWNET;
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (uid != 0) flags |= CLONE_NEWUSER;
    if (unshare(flags) != 0) die("unshare", NULL);
    if (flags & CLONE_NEWUSER) {
        char map[64];
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "%u %u 1", uid, uid);
        write_file("/proc/self/uid_map", map);
        snprintf(map, sizeof map, "%u %u 1", gid, gid);
        write_file("/proc/self/gid_map", map);
    }
    /* Mounts made here must not propagate back to avatar's namespace. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("mount --make-rprivate /", NULL);
    /* The opened sockets, found before anything is covered (and in this namespace: a bind's
       source must be). */
    int *fds = calloc((size_t)S.n_opened + 1, sizeof(int));
    if (!fds) die("memory", NULL);
    for (int i = 0; i < S.n_opened; i++) fds[i] = open(S.opened[i], O_PATH | O_CLOEXEC);
    if (S.blank_file) {
        bind_onto(S.blank_file, S.blank_file, 0);
        bind_onto(S.blank_dir, S.blank_dir, 0);
    }
    if (S.empty_file) {
        bind_onto(S.empty_file, S.empty_file, 0);
        bind_onto(S.empty_dir, S.empty_dir, 0);
    }
    for (int i = 0; i < S.n_binds; i++) {
        const char *path = S.bind_path[i];
        if (S.bind_kind[i] == 'h' || S.bind_kind[i] == 'e') cover_with(path, 0, S.bind_kind[i] == 'e');
        else bind_onto(path, path, S.bind_kind[i] == 'b');
    }
    if (sockets) cover_sockets(sockets, n_sockets);
    for (int i = 0; i < S.n_socket_dirs; i++) cover_socket_dir(S.socket_dirs[i], fds);
    for (int i = 0; i < S.n_opened; i++)
        if (fds[i] >= 0) close(fds[i]);
    free(fds);
    free(sockets);
    if (S.net_mode && strcmp(S.net_mode, "loopback") == 0) loopback_up();
}

/* -- Landlock and seccomp ---------------------------------------------------------------- */

static void no_new_privs(void) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs", NULL);
}

static void landlock(void) {
    long abi = syscall(SYS_LL_CREATE, NULL, 0, 1);
    struct ll_ruleset_attr attr = {S.handled_fs, S.handled_net, S.scoped};
    size_t size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
    int fd = (int)syscall(SYS_LL_CREATE, &attr, size, 0);
    if (fd < 0) die("landlock_create_ruleset", NULL);
    for (int i = 0; i < S.n_rules; i++) {
        int target = open(S.rules[i].path, O_PATH | O_CLOEXEC);
        if (target < 0) continue; /* nothing there: nothing to allow */
        struct stat st;
        uint64_t rights = S.rules[i].rights & S.handled_fs;
        if (fstat(target, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= LL_FILE_RIGHTS;
        struct ll_path_beneath_attr rule = {rights, target};
        if (rights && syscall(SYS_LL_ADD, fd, LL_RULE_PATH_BENEATH, &rule, 0) != 0)
            die("landlock_add_rule", S.rules[i].path);
        close(target);
    }
    no_new_privs();
    if (syscall(SYS_LL_RESTRICT, fd, 0) != 0) die("landlock_restrict_self", NULL);
    close(fd);
}

#ifdef ARCH_NATIVE
static int seccomp_filter(void) {
    const unsigned arg1 = offsetof(struct seccomp_data, args[1]); /* the low half: the kernel
                                                                      reads the request as int */
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH_NATIVE, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH_COMPAT, 5, 0), /* to the compat LD of nr */
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* native: ioctl, or x32's ioctl */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_NATIVE, 5, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_X32, 4, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* compat: its ioctl */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_COMPAT, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* the request */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg1),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI_REQ, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX_REQ, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof code / sizeof code[0]), code};
    no_new_privs();
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}
#else
static int seccomp_filter(void) {
    errno = ENOSYS;
    return -1;
}
#endif

/* -- processes ------------------------------------------------------------------------------ */

/* Close every descriptor but `keep_a` and `keep_b` (-1: none). */
static void close_all_but(int keep_a, int keep_b) {
    int keep[2] = {keep_a < keep_b ? keep_a : keep_b, keep_a < keep_b ? keep_b : keep_a};
    unsigned from = 0;
    for (int i = 0; i < 2; i++) {
        if (keep[i] < 0) continue;
        if ((unsigned)keep[i] > from) syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0);
        from = (unsigned)keep[i] + 1;
    }
    if (syscall(SYS_close_range, from, ~0U, 0) != 0) {
        long max = sysconf(_SC_OPEN_MAX);
        for (int fd = (int)from; fd < (max > 0 ? max : 1024); fd++) close(fd);
    }
}

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
#define N_FORWARDED (int)(sizeof forwarded / sizeof forwarded[0])
static volatile pid_t forward_to;

static void forward(int sig) {
    if (forward_to != 0) kill(forward_to, sig);
}

static void on_forwarded(void (*handler)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < N_FORWARDED; i++) sigaction(forwarded[i], &sa, NULL);
}

static void block_forwarded(int how) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < N_FORWARDED; i++) sigaddset(&set, forwarded[i]);
    sigprocmask(how, &set, NULL);
}

static void exit_as(int status) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        kill(getpid(), sig);
        _exit(128 + sig);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
}

/* The keeper: the process avatar started, outside the PID namespace. It holds nothing open
   (avatar reads the program's output until every holder closes it), waits for the namespace's
   first process and exits as it (or, under an init, the program) did. With an init it passes
   SIGTERM, SIGINT, SIGHUP and SIGQUIT on to it (avatar signals the keeper's group). */
static void keep(pid_t first, int status_fd, int life_fd) {
    if (S.pid_mode && strcmp(S.pid_mode, "init") == 0) {
        forward_to = first;
        on_forwarded(forward);
    }
    block_forwarded(SIG_UNBLOCK);
    close_all_but(status_fd, life_fd);
    int status = 0;
    while (waitpid(first, &status, 0) < 0) {
        if (errno != EINTR) _exit(126);
    }
    int reported;
    if (status_fd >= 0 && read(status_fd, &reported, sizeof reported) == sizeof reported)
        status = reported;
    exit_as(status);
}

/* PID 1 of an agent's namespace: the agent is its child, in a process group of its own; the
   signals the keeper passes on go to that group; every orphan is reaped; when the agent exits,
   its status goes to the keeper (PID 1 cannot die of a signal it sends itself) and so does
   init (the kernel then ends what is left in the namespace). */
static void run_init(char **argv, int status_fd) {
    setpgid(0, 0);
    pid_t agent = fork();
    if (agent < 0) die("fork", NULL);
    if (agent == 0) {
        setpgid(0, 0);
        for (int i = 0; i < N_FORWARDED; i++) signal(forwarded[i], SIG_DFL);
        block_forwarded(SIG_UNBLOCK);
        execvp(argv[0], argv);
        dprintf(2, "avatar: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    setpgid(agent, agent);
    forward_to = -agent;
    on_forwarded(forward);
    close_all_but(status_fd, -1);
    block_forwarded(SIG_UNBLOCK);
    for (;;) {
        int status;
        pid_t done = waitpid(-1, &status, 0);
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) _exit(126);
        if (done == agent) {
            if (write(status_fd, &status, sizeof status) < 0) {
                /* the keeper is gone: nothing to tell */
            }
            _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        }
    }
}

static int probe(void) {
    int ns = 0, net = 0, filter = 0;
    long abi = syscall(SYS_LL_CREATE, NULL, 0, 1UL /* LANDLOCK_CREATE_RULESET_VERSION */);
    pid_t child = fork();
    if (child == 0) {
        int flags = CLONE_NEWNS | CLONE_NEWPID | (geteuid() ? CLONE_NEWUSER : 0);
        if (unshare(flags) != 0) _exit(1);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) _exit(1);
        if (unshare(CLONE_NEWNET) != 0) _exit(2);
        _exit(0);
    }
    int status;
    if (child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status)) {
        ns = WEXITSTATUS(status) != 1;
        net = WEXITSTATUS(status) == 0;
    }
    child = fork();
    if (child == 0) _exit(seccomp_filter() == 0 ? 0 : 1);
    if (child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status))
        filter = WEXITSTATUS(status) == 0;
    printf("landlock=%ld namespaces=%d network=%d seccomp=%d\n", abi > 0 ? abi : 0, ns, net, filter);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--probe") == 0) return probe();
    if (argc < 3) {
        dprintf(2, "usage: avatar-stub SPECFD PROGRAM [ARGS...] | --probe\n");
        return 126;
    }
    int spec_fd = atoi(argv[1]);
    struct stat st;
    if (fstat(spec_fd, &st) != 0) die("the spec descriptor", argv[1]);
    char *buf = read_all(spec_fd);
    parse(buf, (size_t)st.st_size);
    char **program = argv + 2;

    block_forwarded(SIG_BLOCK); /* until each process has its handlers */
    if (S.deathsig) {
        if (prctl(PR_SET_PDEATHSIG, S.deathsig, 0, 0, 0) != 0) die("pdeathsig", NULL);
        if (S.parent && getppid() != S.parent) _exit(126); /* avatar is already gone */
    }
    if (S.mounts) enter_namespaces();
    int init_mode = S.pid_mode && strcmp(S.pid_mode, "init") == 0;
    int status_pipe[2] = {-1, -1};
    if (S.pid_mode) {
        int life[2];
        if (pipe2(life, O_CLOEXEC) != 0) die("pipe", NULL);
        if (init_mode && pipe2(status_pipe, O_CLOEXEC) != 0) die("pipe", NULL);
        pid_t first = fork();
        if (first < 0) die("fork", NULL);
        if (first > 0) {
            close(life[0]);
            if (status_pipe[1] >= 0) close(status_pipe[1]);
            keep(first, status_pipe[0], life[1]);
        }
        /* The namespace's first process: it dies with the keeper, and checks the keeper was
           still there when it asked (its parent is outside: getppid() cannot tell). */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die("pdeathsig", NULL);
        close(life[1]);
        struct pollfd alive = {life[0], POLLIN, 0};
        if (poll(&alive, 1, 0) != 0) _exit(126);
        close(life[0]);
        if (status_pipe[0] >= 0) close(status_pipe[0]);
        unsigned long proc_flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
        if (mount("proc", "/proc", "proc", proc_flags, NULL) != 0) die("mount of a private /proc", NULL);
    }
    if (S.landlock) landlock();
    if (S.seccomp && seccomp_filter() != 0) die("the seccomp filter", NULL);
    if (init_mode) run_init(program, status_pipe[1]);
    block_forwarded(SIG_UNBLOCK);
    execvp(program[0], program);
    dprintf(2, "avatar: cannot run %s: %s\n", program[0], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
