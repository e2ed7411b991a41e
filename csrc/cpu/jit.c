/*
 * cpu/jit.c - an operator you write, made into a shared object by the system's C compiler and
 * loaded: gs_cpu_user_load.
 *
 * Level: backend (CPU); POSIX (posix_spawn, dlopen), nothing of Python.  Runs without the GIL.
 *
 * The source: a prelude (the C99 headers the user may need), the operator's T (gs_user_spec's
 * type_decl), its combine as `static inline T gs_combine(T x, T y)` under a #line directive (the
 * compiler's log then counts the user's lines from 1, in a file named after the operator), and
 * cpu/jit_kernels.h's kernels.  The key: SHA-256 of that source, the compiler's command and its
 * `--version`, the flags, the kernels' ABI, the machine and spec->key_extra (gpuscan's
 * version).  The caches, in order: the process's list of loaded operators (a lock, then a
 * pointer compare of 64 hex digits per entry), then the disk (host/jitcache.h: verified before
 * dlopen), then a compile: the source
 * into a private temporary folder, the object straight into a temporary file of the cache folder
 * (or of the private folder, when the cache folder is refused), published by a rename.
 *
 * Flags: -O3 (it keeps cpu/jit_kernels.h's lanes in registers and vectorises their fix-up),
 * -fPIC -shared and -ffp-contract=off (no fused multiply-add decided by the compiler: the same
 * bits wherever the entry is used).  No -march=native: the cache may be shared by machines of
 * one user with different processors, and its key does not name the processor; the prelude's
 * GS_CLONES builds the kernels for each x86-64 level instead, doing the same operations in each.
 */
#define _GNU_SOURCE

#include "cpu/jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu/jit_kernels.h"
#include "host/jitcache.h"
#include "host/sha256.h"

extern char **environ;

/* The compiler's flags (besides -o and the source); they enter the key. */
static const char *const gs_jit_flags[] = { "-O3", "-fPIC", "-shared", "-std=gnu11",
                                            "-ffp-contract=off", "-w" };
#define GS_JIT_NFLAGS (int)(sizeof(gs_jit_flags) / sizeof(gs_jit_flags[0]))
/* Words of $CC at most ("ccache gcc -m64" is three). */
#define GS_JIT_CC_WORDS 16

/* The C99 headers the user may need, and GS_CLONES: the kernels compiled for x86-64's baseline,
 * for AVX2 (x86-64-v3) and for AVX-512 (v4), the loader picking the processor's best (an ifunc),
 * so that one cache entry serves every processor as cpu/isa.c's dispatch does the built-in ops;
 * the 32-byte vector types and GS_SHUF (GCC's and clang's shuffle builtins) of the lanes' vector
 * pass, and GS_TICKS, the time stamp counter that chooses between its two forms. */
static const char gs_jit_prelude[] =
    "#include <stdint.h>\n#include <stdbool.h>\n#include <stddef.h>\n#include <string.h>\n"
    "#include <math.h>\n#include <float.h>\n#include <limits.h>\n"
    "#if defined(__x86_64__) && defined(__has_attribute)\n"
    "#if __has_attribute(target_clones)\n"
    "#define GS_CLONES __attribute__((target_clones(\"default\", \"arch=x86-64-v3\", "
    "\"arch=x86-64-v4\")))\n"
    "#endif\n#endif\n#ifndef GS_CLONES\n#define GS_CLONES\n#endif\n"
    "#define GS_INLINE static inline __attribute__((always_inline))\n"
    "typedef uint32_t gs_w8 __attribute__((vector_size(32)));\n"
    "typedef uint64_t gs_q4 __attribute__((vector_size(32)));\n"
    "#ifdef __clang__\n#define GS_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)\n"
    "#else\n#define GS_SHUF(a, b, ...) __builtin_shuffle(a, b, (__typeof__(a)){ __VA_ARGS__ })\n"
    "#endif\n"
    "#if defined(__x86_64__) || defined(__i386__)\n#define GS_TICKS() __builtin_ia32_rdtsc()\n"
    "#else\n#define GS_TICKS() 0ull\n#endif\n";

static pthread_mutex_t gs_jit_lock = PTHREAD_MUTEX_INITIALIZER;
static gs_user_prog *gs_jit_loaded; /* the process's loaded operators, never freed */

/* ---- the source and the key --------------------------------------------------------------- */

/* A growing string; `failed` after an allocation failed. */
typedef struct gs_str {
    char *s;
    size_t len, cap;
    int failed;
} gs_str;

static void str_add(gs_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void str_add(gs_str *b, const char *fmt, ...)
{
    va_list ap;
    for (int tries = 0; tries < 2 && !b->failed; tries++) {
        int n;
        va_start(ap, fmt);
        n = vsnprintf(b->s != NULL ? b->s + b->len : NULL, b->s != NULL ? b->cap - b->len : 0, fmt,
                      ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
        } else if (b->s != NULL && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        } else {
            size_t cap = (b->cap + (size_t)n + 1) * 2;
            char *s = realloc(b->s, cap);
            if (s == NULL)
                b->failed = 1;
            else
                b->s = s, b->cap = cap;
        }
    }
}

/* The operator's whole translation unit (malloc'd), or NULL. */
static char *jit_source(const gs_user_spec *sp)
{
    gs_str b = { 0 };
    str_add(&b, "%s#define GS_JIT_ABI_VALUE %d\n#define GS_JIT_CHUNK %lld\n%s\n", gs_jit_prelude,
            GS_JIT_ABI, (long long)gs_jit_chunk(sp->size), sp->type_decl);
    str_add(&b, "static inline T gs_combine(T x, T y)\n{\n%s\n#line 1 \"%s\"\n%s\n",
            sp->expression ? "    return (" : "", sp->name, sp->combine);
    str_add(&b, "#line 1 \"gpuscan-kernels\"\n%s\n}\n%s\n", sp->expression ? ");" : "",
            gs_jit_kernels_text);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* $CC split into words (or "cc"), in the static buffer `words`; returns the word count. */
static int jit_cc(char **argv, char *words, size_t cap)
{
    const char *cc = getenv("CC");
    int n = 0;
    snprintf(words, cap, "%s", cc != NULL && cc[strspn(cc, " \t")] != '\0' ? cc : "cc");
    for (char *save = NULL, *w = strtok_r(words, " \t", &save); w != NULL && n < GS_JIT_CC_WORDS;
         w = strtok_r(NULL, " \t", &save))
        argv[n++] = w;
    return n;
}

/* Run argv (stdout and stderr into the file `log`, NULL: discarded): the exit status, 127 when
 * the program could not be started (*spawn_errno then says why), or -1. */
static int jit_run(char *const *argv, const char *log, int *spawn_errno)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status, rc;

    *spawn_errno = 0;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    posix_spawn_file_actions_addopen(&fa, 1, log != NULL ? log : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        *spawn_errno = rc;
        return 127;
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The compiler's identity: its command and `--version`, once per process and $CC (into the
 * hash s); -1 with *spawn_errno when it cannot be run. */
static int jit_cc_identity(gs_sha256 *s, const char *tmpdir, int *spawn_errno)
{
    static char last_cc[1024], last_version[4096];
    static int known;
    char words[1024], *argv[GS_JIT_CC_WORDS + 2], log[GS_CACHE_PATH];
    const char *cc = getenv("CC");
    int n, rc = 0;

    pthread_mutex_lock(&gs_jit_lock);
    if (!known || strcmp(last_cc, cc != NULL ? cc : "") != 0) {
        n = jit_cc(argv, words, sizeof(words));
        argv[n] = "--version";
        argv[n + 1] = NULL;
        snprintf(log, sizeof(log), "%s/version.txt", tmpdir);
        if (jit_run(argv, log, spawn_errno) != 0) {
            rc = -1;
        } else {
            FILE *f = fopen(log, "r");
            size_t got = f != NULL ? fread(last_version, 1, sizeof(last_version) - 1, f) : 0;
            last_version[got] = '\0';
            if (f != NULL)
                fclose(f);
            snprintf(last_cc, sizeof(last_cc), "%s", cc != NULL ? cc : "");
            known = 1;
        }
        unlink(log);
    }
    if (rc == 0) {
        gs_sha256_update(s, last_cc, strlen(last_cc) + 1);
        gs_sha256_update(s, last_version, strlen(last_version) + 1);
    }
    pthread_mutex_unlock(&gs_jit_lock);
    return rc;
}

/* The key of the source (hex into key): 0, or -1 with *spawn_errno (no compiler). */
static int jit_key(const gs_user_spec *sp, const char *src, const char *tmpdir, char *key,
                   int *spawn_errno)
{
    struct utsname u;
    gs_sha256 s;
    gs_sha256_init(&s);
    gs_sha256_update(&s, src, strlen(src) + 1);
    for (int i = 0; i < GS_JIT_NFLAGS; i++)
        gs_sha256_update(&s, gs_jit_flags[i], strlen(gs_jit_flags[i]) + 1);
    if (uname(&u) == 0)
        gs_sha256_update(&s, u.machine, strlen(u.machine) + 1);
    gs_sha256_update(&s, "cpu", 4);
    gs_sha256_update(&s, sp->key_extra, strlen(sp->key_extra) + 1);
    if (jit_cc_identity(&s, tmpdir, spawn_errno) < 0)
        return -1;
    gs_sha256_hex(&s, key);
    return 0;
}

/* ---- messages ----------------------------------------------------------------------------- */

static void msg_set(gs_user_msg *msg, char kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void msg_set(gs_user_msg *msg, char kind, const char *fmt, ...)
{
    va_list ap;
    char *text;
    va_start(ap, fmt);
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    if (kind == 'w') {
        free(msg->warning);
        msg->warning = text;
    } else {
        msg->error = text;
        msg->error_kind = kind;
    }
}

static void msg_no_compiler(gs_user_msg *msg, int err)
{
    char words[1024], *argv[GS_JIT_CC_WORDS + 1];
    jit_cc(argv, words, sizeof(words));
    msg_set(msg, 'm',
            "gpuscan.Operator needs a C compiler on the CPU backend, and '%s' (the $CC "
            "environment variable, else cc) could not be run: %s.  Install one (Debian or "
            "Ubuntu: apt-get install gcc; Fedora: dnf install gcc; conda: conda install "
            "c-compiler; macOS: xcode-select --install) or set CC to one.",
            argv[0], err != 0 ? strerror(err) : "it failed");
}

/* The compiler's log (at most 64 KiB of it) as the operator's CompileError. */
static void msg_compile_error(gs_user_msg *msg, const gs_user_spec *sp, const char *log, int rc)
{
    static char text[1 << 16];
    FILE *f = fopen(log, "r");
    size_t got = f != NULL ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f != NULL)
        fclose(f);
    text[got] = '\0';
    msg_set(msg, 'c', "the combine of Operator '%s' did not compile (the C compiler exited with %d):\n%s",
            sp->name, rc, text);
}

/* ---- loading ------------------------------------------------------------------------------ */

/* The operator of `key` in the process's list, or NULL (the lock held). */
static gs_user_prog *jit_find(const char *key)
{
    for (gs_user_prog *p = gs_jit_loaded; p != NULL; p = p->next)
        if (strcmp(p->key, key) == 0)
            return p;
    return NULL;
}

/* dlopen the verified entry at path (held open on fd while it loads: the folder is the user's
 * alone, and every file renamed into it is a whole entry), check its table and add it to the
 * process's list: 0 with *prog, or -ENOEXEC (not a usable entry).  Not /proc/self/fd/N: the
 * loader knows objects by the name they were opened with, and fd numbers come back. */
static int jit_open(int fd, const char *path, const char *key, size_t size,
                    const gs_user_prog **prog)
{
    const struct gs_jit_table *k;
    gs_user_prog *p;
    void *h;

    (void)fd;
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return -ENOEXEC;
    k = dlsym(h, "gs_jit_table");
    if (k == NULL || k->abi != GS_JIT_ABI || k->size != size) {
        dlclose(h);
        return -ENOEXEC;
    }
    pthread_mutex_lock(&gs_jit_lock);
    p = jit_find(key);
    if (p == NULL && (p = calloc(1, sizeof(*p))) != NULL) {
        p->k = k;
        p->size = size;
        memcpy(p->key, key, 65);
        p->next = gs_jit_loaded;
        gs_jit_loaded = p;
    }
    pthread_mutex_unlock(&gs_jit_lock);
    *prog = p;
    return p != NULL ? 0 : -ENOMEM;
}

/* The entry of key in dir, loaded: 0, or -ENOEXEC when there is none usable. */
static int jit_from_disk(const char *dir, const char *key, size_t size, const gs_user_prog **prog)
{
    char path[GS_CACHE_PATH];
    int64_t len;
    int fd = gs_cache_open(dir, key, ".so", &len), rc;
    if (fd < 0)
        return -ENOEXEC;
    snprintf(path, sizeof(path), "%s/%s.so", dir, key);
    rc = jit_open(fd, path, key, size, prog);
    close(fd);
    return rc;
}

/* Compile src into the entry of key in dir: 0, -1 with msg->error, or a negative errno. */
static int jit_compile(const gs_user_spec *sp, const char *src, const char *tmpdir,
                       const char *dir, const char *key, gs_user_msg *msg)
{
    char words[1024], *argv[GS_JIT_CC_WORDS + GS_JIT_NFLAGS + 8];
    char srcpath[GS_CACHE_PATH], log[GS_CACHE_PATH], tmp[GS_CACHE_PATH];
    int n = jit_cc(argv, words, sizeof(words)), rc, err;
    FILE *f;

    snprintf(srcpath, sizeof(srcpath), "%s/operator.c", tmpdir);
    snprintf(log, sizeof(log), "%s/log.txt", tmpdir);
    f = fopen(srcpath, "w");
    if (f == NULL || fputs(src, f) < 0 || fclose(f) != 0)
        return -EIO;
    if ((rc = gs_cache_temp(dir, key, tmp)) < 0)
        return rc;
    for (int i = 0; i < GS_JIT_NFLAGS; i++)
        argv[n++] = (char *)gs_jit_flags[i];
    argv[n++] = "-o";
    argv[n++] = tmp;
    argv[n++] = srcpath;
    argv[n++] = "-lm";
    argv[n] = NULL;
    rc = jit_run(argv, log, &err);
    if (rc != 0) {
        unlink(tmp);
        if (rc == 127 && err != 0)
            msg_no_compiler(msg, err);
        else
            msg_compile_error(msg, sp, log, rc);
        return -1;
    }
    return gs_cache_publish(tmp, dir, key, ".so");
}

/* Remove the private temporary folder and what is in it. */
static void jit_clean(const char *tmpdir)
{
    static const char *const names[] = { "operator.c", "log.txt", "version.txt" };
    char path[GS_CACHE_PATH];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    rmdir(tmpdir);
}

int gs_cpu_user_load(const gs_user_spec *sp, const gs_user_prog **prog, gs_user_msg *msg)
{
    char tmpdir[GS_CACHE_PATH / 2], dir[GS_CACHE_PATH / 2] = "", key[65];
    const char *tmp = getenv("TMPDIR"), *why = NULL;
    char *src = jit_source(sp);
    int rc, err = 0;

    if (src == NULL)
        return -ENOMEM;
    snprintf(tmpdir, sizeof(tmpdir), "%s/gpuscan-jit-XXXXXX",
             tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
    if (mkdtemp(tmpdir) == NULL) {
        rc = -errno;
        free(src);
        return rc;
    }
    if (jit_key(sp, src, tmpdir, key, &err) < 0) {
        msg_no_compiler(msg, err);
        rc = -1;
        goto done;
    }
    pthread_mutex_lock(&gs_jit_lock);
    *prog = jit_find(key);
    pthread_mutex_unlock(&gs_jit_lock);
    rc = 0;
    if (*prog != NULL)
        goto done;
    if (gs_cache_dir(dir, sizeof(dir), &why) < 0) {
        msg_set(msg, 'w', "gpuscan: %s (%s); compiling Operator '%s' into a private temporary "
                "folder instead (set GPUSCAN_CACHE_DIR to a folder of your own)", why, dir, sp->name);
        snprintf(dir, sizeof(dir), "%s", tmpdir);
    }
    if (jit_from_disk(dir, key, sp->size, prog) == 0)
        goto done;
    rc = jit_compile(sp, src, tmpdir, dir, key, msg);
    if (rc == 0)
        rc = jit_from_disk(dir, key, sp->size, prog);
    if (rc == 0 && strcmp(dir, tmpdir) == 0) {
        char path[GS_CACHE_PATH];
        snprintf(path, sizeof(path), "%s/%s.so", dir, key);
        unlink(path); /* loaded: the mapping stays */
    }
done:
    jit_clean(tmpdir);
    free(src);
    return rc;
}
