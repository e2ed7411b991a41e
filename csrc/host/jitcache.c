/*
 * host/jitcache.c - the per-user disk cache of compiled operators (host/jitcache.h says what it
 * guarantees).
 * Level: host; POSIX, nothing of Python.  Used without the GIL, by any number of threads and
 * processes at once: every write goes to a private temporary file, every publication is one
 * rename(2), and every read verifies what it read.
 */
#define _POSIX_C_SOURCE 200809L

#include "host/jitcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/sha256.h"

/* The trailer: a line with the key, the artifact's length and its SHA-256, of a fixed length so
 * that a reader finds it at the end of the file without searching. */
#define GS_TRAILER_FMT "\ngpuscan-cache-v1 %.64s %016llx %.64s\n"
#define GS_TRAILER_LEN (1 + 16 + 1 + 64 + 1 + 16 + 1 + 64 + 1)

/* Make dir (one level) with mode 0700 unless it exists. */
static int make_dir(const char *dir)
{
    return mkdir(dir, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

int gs_cache_dir(char *path, size_t cap, const char **why)
{
    const char *env = getenv("GPUSCAN_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    struct stat st;
    int n;

    if (env != NULL && env[0] != '\0') {
        n = snprintf(path, cap, "%s", env);
    } else if (xdg != NULL && xdg[0] == '/') {
        n = snprintf(path, cap, "%s/gpuscan", xdg);
    } else if (home != NULL && home[0] == '/') {
        n = snprintf(path, cap, "%s/.cache", home);
        if (n > 0 && (size_t)n < cap)
            make_dir(path); /* ~/.cache, as the XDG spec makes it: 0700 */
        n = snprintf(path, cap, "%s/.cache/gpuscan", home);
    } else {
        *why = "neither GPUSCAN_CACHE_DIR, XDG_CACHE_HOME nor HOME names a folder";
        return -1;
    }
    if (n <= 0 || (size_t)n >= cap - 80) {
        *why = "the cache folder's path is too long";
        return -1;
    }
    if (make_dir(path) < 0 || stat(path, &st) < 0) {
        *why = "the cache folder cannot be made";
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        *why = "the cache folder's path is not a folder";
        return -1;
    }
    if (st.st_uid != geteuid()) {
        *why = "the cache folder belongs to another user";
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        *why = "others can write into the cache folder (its mode should be 0700)";
        return -1;
    }
    return 0;
}

/* Read exactly len bytes at offset off of fd into buf: 0, or -1. */
static int read_at(int fd, void *buf, size_t len, off_t off)
{
    char *p = buf;
    while (len > 0) {
        ssize_t got = pread(fd, p, len, off);
        if (got <= 0)
            return -1;
        p += got, off += got, len -= (size_t)got;
    }
    return 0;
}

/* The SHA-256 (hex) of the first len bytes of fd: 0, or -1. */
static int hash_fd(int fd, int64_t len, char *hex)
{
    unsigned char buf[1 << 16];
    gs_sha256 s;
    gs_sha256_init(&s);
    for (int64_t off = 0; off < len;) {
        size_t take = len - off < (int64_t)sizeof(buf) ? (size_t)(len - off) : sizeof(buf);
        if (read_at(fd, buf, take, (off_t)off) < 0)
            return -1;
        gs_sha256_update(&s, buf, take);
        off += (int64_t)take;
    }
    gs_sha256_hex(&s, hex);
    return 0;
}

int gs_cache_open(const char *dir, const char *key, const char *ext, int64_t *len)
{
    char path[GS_CACHE_PATH], trailer[GS_TRAILER_LEN + 1], want[GS_TRAILER_LEN + 1], hex[65];
    struct stat st;
    unsigned long long size;
    int fd;

    if (snprintf(path, sizeof(path), "%s/%s%s", dir, key, ext) >= (int)sizeof(path))
        return -1;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        st.st_size <= GS_TRAILER_LEN)
        goto bad;
    size = (unsigned long long)st.st_size - GS_TRAILER_LEN;
    if (read_at(fd, trailer, GS_TRAILER_LEN, (off_t)size) < 0 || hash_fd(fd, (int64_t)size, hex) < 0)
        goto bad;
    trailer[GS_TRAILER_LEN] = '\0';
    snprintf(want, sizeof(want), GS_TRAILER_FMT, key, size, hex);
    if (strcmp(trailer, want) != 0)
        goto bad;
    *len = (int64_t)size;
    return fd;
bad:
    close(fd);
    unlink(path); /* rebuilt by the caller; a concurrent good entry is renamed over it anyway */
    return -1;
}

int gs_cache_temp(const char *dir, const char *key, char *tmp)
{
    int fd;
    if (snprintf(tmp, GS_CACHE_PATH, "%s/%.16s.XXXXXX", dir, key) >= GS_CACHE_PATH)
        return -ENAMETOOLONG;
    fd = mkstemp(tmp);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

int gs_cache_publish(const char *tmp, const char *dir, const char *key, const char *ext)
{
    char path[GS_CACHE_PATH], trailer[GS_TRAILER_LEN + 1], hex[65];
    struct stat st;
    int fd, rc = 0, dfd;

    if (snprintf(path, sizeof(path), "%s/%s%s", dir, key, ext) >= (int)sizeof(path)) {
        unlink(tmp);
        return -ENAMETOOLONG;
    }
    fd = open(tmp, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        unlink(tmp);
        return rc;
    }
    if (fstat(fd, &st) < 0 || hash_fd(fd, st.st_size, hex) < 0) {
        rc = -EIO;
        goto done;
    }
    snprintf(trailer, sizeof(trailer), GS_TRAILER_FMT, key, (unsigned long long)st.st_size, hex);
    if (pwrite(fd, trailer, GS_TRAILER_LEN, st.st_size) != GS_TRAILER_LEN || fsync(fd) < 0 ||
        fchmod(fd, 0600) < 0) {
        rc = -EIO;
        goto done;
    }
    if (rename(tmp, path) < 0) {
        rc = -errno;
        goto done;
    }
    dfd = open(dir, O_RDONLY | O_CLOEXEC);
    if (dfd >= 0) { /* the rename itself on disk: best effort, the entry is verified anyway */
        fsync(dfd);
        close(dfd);
    }
done:
    close(fd);
    if (rc < 0)
        unlink(tmp);
    return rc;
}
