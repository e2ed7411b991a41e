/*
 * host/jitcache.h - the per-user disk cache of compiled operators (gpuscan.Operator): where it
 * is, and its entries, each written atomically and verified before it is used.
 * Level: host (below both backends: the CPU backend keeps shared objects here, the CUDA
 * backend will keep its NVRTC output here too); plain C and POSIX, nothing of Python.
 *
 * The folder: $GPUSCAN_CACHE_DIR, else $XDG_CACHE_HOME/gpuscan, else $HOME/.cache/gpuscan,
 * created with mode 0700 and used only when it is a directory owned by this user that group and
 * others cannot write (else the caller compiles into a private temporary folder instead).
 * An entry is one file, <key><ext>: the artifact's bytes followed by a trailer that names the
 * key, the artifact's length and its SHA-256.  It is written as a temporary file in the same
 * folder, fsync'ed and renamed into place, so that a reader sees either nothing or a whole
 * entry, and processes that build the same entry at once leave one; a file whose trailer is
 * missing, names another key or does not match its bytes (truncated, corrupted, foreign) is
 * never used: the caller rebuilds it.  The keys are the backends' (a SHA-256 in hex of all
 * that changes the artifact: the source, the dtype, the compiler, gpuscan's version, ...).
 */
#ifndef GS_JITCACHE_H
#define GS_JITCACHE_H

#include <stddef.h>
#include <stdint.h>

/* Longest path the cache handles (PATH_MAX's usual value). */
#define GS_CACHE_PATH 4096

/* The cache folder into path (made if missing): 0, or -1 with *why (static text) when there is
 * none this user alone can write. */
int gs_cache_dir(char *path, size_t cap, const char **why);

/* Open the entry <dir>/<key><ext> and verify it: a file descriptor open on it (the caller
 * closes it) with *len the artifact's bytes at its start, or -1 when it is missing or is not a
 * whole, matching entry (which is then removed, to be rebuilt). */
int gs_cache_open(const char *dir, const char *key, const char *ext, int64_t *len);

/* A new empty temporary file in dir for an entry being built (closed; its path in tmp, of
 * GS_CACHE_PATH bytes): 0 or a negative errno. */
int gs_cache_temp(const char *dir, const char *key, char *tmp);

/* Make the artifact written at tmp (a file in dir, from gs_cache_temp) the entry
 * <dir>/<key><ext>: its trailer appended, synced, renamed into place.  0 or a negative errno
 * (tmp is removed either way). */
int gs_cache_publish(const char *tmp, const char *dir, const char *key, const char *ext);

#endif /* GS_JITCACHE_H */
