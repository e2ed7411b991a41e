/*
 * cpu/chain.h - the driver of a chunked scan: rows cut into chunks, each chunk scanned from the
 * carry the chunks before it chain, on one thread or on all (gs_chain_run).  The built-in
 * scan (cpu/scan.c) and the scan of an operator you write (cpu/user.c) both run on it; they
 * say what a chunk, a carry and a total are, the driver decides who does what, and when.
 *
 * Level: backend (CPU), below cpu/scan.c and cpu/user.c, above cpu/claim.h and host/pool.h.
 *
 * The caller's carries are opaque bytes (at most GS_CHAIN_CARRY_MAX).  Its callbacks:
 *   start(ctx, cin)             the carry-in of a row's first chunk;
 *   step(ctx, c, cin)           scan chunk c from the carry-in *cin, and leave in cin the carry-in
 *                               of the chunk after it (as if that chunk were in the same row);
 *   total(ctx, c, tot, head)    chunk c's total, the state its scan ends with after its last head
 *                               (bit for bit what step's scan of it reaches), and whether it holds
 *                               a segment head;
 *   chain(ctx, cin, tot, head)  cin = the carry-in after a chunk of total tot: tot when it holds
 *                               a head, else cin combined with tot (what step leaves).
 * Every chunk's carry-in is the one chain C(c + 1) = chain(C(c), T(c)) whoever computes it, so
 * results are the same bits on any number of threads.
 *
 *   not parallel                 the rows one after the other, chunk after chunk, on the calling
 *                                thread;
 *   rows of one chunk, or many   tasks of rows_per_task whole rows;
 *   few rows of many chunks      one thread (the front) scans from the first chunk on, in one
 *                                pass, exactly as one thread alone; the others (the back) compute
 *                                chunk totals from the last one down; where they meet, the front
 *                                chains the carry-ins of the rest from those totals (computing
 *                                itself any not written yet, so it never waits), then every
 *                                thread scans the rest from their carry-ins.  A worker that does
 *                                not run (a busy host) leaves the front one pass over everything,
 *                                no slower than one thread.
 * Ctrl-C (host/pool.h's gs_cpu_stopping) is asked before each chunk a thread takes on in a row
 * of several, and between tasks on the calling thread: a stopped scan's output means nothing.
 */
#ifndef GS_CPU_CHAIN_H
#define GS_CPU_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/claim.h"
#include "gpuscan/backend.h"

/* Bytes of a carry at most: an operator's T and a byte saying whether there is one (cpu/user.c),
 * rounded up to whole 16-byte units (the built-in scan's carry is a pair of values, 16 bytes). */
#define GS_CHAIN_CARRY_MAX (GS_USER_MAX_SIZE + 16)

typedef struct gs_chain {
    /* The caller's: */
    void *ctx;
    size_t carry_size; /* a multiple of 16, at most GS_CHAIN_CARRY_MAX */
    int64_t rows, chunks_per_row, rows_per_task;
    void (*start)(void *ctx, void *cin);
    void (*step)(void *ctx, int64_t c, void *cin);
    void (*total)(void *ctx, int64_t c, void *tot, unsigned char *head);
    void (*chain)(void *ctx, void *cin, const void *tot, int head);
    /* The driver's (front and back): */
    int64_t nchunks;
    unsigned char *carry;     /* per chunk from `meet` on: its carry-in */
    unsigned char *tot;       /* per chunk: its total (the back's) */
    unsigned char *head;      /* per chunk: whether it holds a head (the back's) */
    atomic_uchar *done;       /* per chunk: its total and head are written */
    gs_cpu_ends ends;         /* the chunks claimed from the front and from the back */
    atomic_int_fast64_t next; /* the next chunk from `meet` on to scan */
    atomic_int ready;         /* `meet` and the carry-ins from it on are written */
    int64_t meet;             /* the first chunk the front did not scan */
} gs_chain;

/* Run the scan ch describes (its caller's fields set), on the pool's threads when `parallel`:
 * 0, or -ENOMEM when the per-chunk carries cannot be allocated (nothing then written). */
int gs_chain_run(gs_chain *ch, int parallel);

#endif /* GS_CPU_CHAIN_H */
