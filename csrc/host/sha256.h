/*
 * host/sha256.h - SHA-256 (FIPS 180-4), for the keys and the checksums of the compiled-operator
 * cache (host/jitcache.c).
 * Level: host (below both backends); plain C, nothing of Python.
 */
#ifndef GS_SHA256_H
#define GS_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct gs_sha256 {
    uint32_t h[8];
    uint64_t bytes;       /* hashed so far */
    unsigned char buf[64]; /* a block not yet full */
} gs_sha256;

void gs_sha256_init(gs_sha256 *s);
void gs_sha256_update(gs_sha256 *s, const void *data, size_t len);
/* The digest as 64 lowercase hex digits and a NUL (hex: 65 bytes). */
void gs_sha256_hex(gs_sha256 *s, char *hex);

#endif /* GS_SHA256_H */
