/*
 * cpu/chain.c - gs_chain_run: the driver of a chunked scan (cpu/chain.h says what it does).
 *
 * Level: backend (CPU); no loop over values: the caller's callbacks scan and total the chunks.
 */
#define _POSIX_C_SOURCE 200809L

#include "cpu/chain.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A carry on the stack, aligned for any of the callers' values. */
typedef struct gs_chain_buf {
    _Alignas(16) unsigned char b[GS_CHAIN_CARRY_MAX];
} gs_chain_buf;

static unsigned char *slot(unsigned char *base, const gs_chain *ch, int64_t c)
{
    return base + (size_t)c * ch->carry_size;
}

/* Rows [first, last) whole on this thread, chunk after chunk. */
static void chain_rows(const gs_chain *ch, int64_t first, int64_t last)
{
    gs_chain_buf cin;
    for (int64_t row = first; row < last; row++) {
        ch->start(ch->ctx, cin.b);
        for (int64_t c = row * ch->chunks_per_row; c < (row + 1) * ch->chunks_per_row; c++) {
            if (ch->chunks_per_row > 1 && gs_cpu_stopping())
                return;
            ch->step(ch->ctx, c, cin.b);
        }
    }
}

static void rows_task(void *ctx, int64_t task)
{
    const gs_chain *ch = ctx;
    int64_t first = task * ch->rows_per_task;
    chain_rows(ch, first,
               first + ch->rows_per_task < ch->rows ? first + ch->rows_per_task : ch->rows);
}

/* ==== The parallel scan: the front and the back =========================================== */

/* Every thread asks for a stop before each chunk it scans or totals; a stopped front leaves
 * nothing for the others to scan (meet at the end). */
static void front(gs_chain *ch)
{
    gs_chain_buf cin, tot;
    unsigned char head;
    int64_t c;

    while ((c = gs_cpu_claim(&ch->ends, 1)) >= 0) {
        if (gs_cpu_stopping())
            goto stopped;
        if (c % ch->chunks_per_row == 0)
            ch->start(ch->ctx, cin.b);
        ch->step(ch->ctx, c, cin.b);
    }
    ch->meet = gs_cpu_ends_front(&ch->ends);
    for (c = ch->meet; c < ch->nchunks; c++) {
        if (c % ch->chunks_per_row == 0)
            ch->start(ch->ctx, cin.b);
        memcpy(slot(ch->carry, ch, c), cin.b, ch->carry_size);
        if (c % ch->chunks_per_row == ch->chunks_per_row - 1)
            continue; /* a row's last chunk passes no carry on */
        if (atomic_load_explicit(&ch->done[c], memory_order_acquire)) {
            memcpy(tot.b, slot(ch->tot, ch, c), ch->carry_size);
            head = ch->head[c];
        } else {
            if (gs_cpu_stopping())
                goto stopped;
            ch->total(ch->ctx, c, tot.b, &head);
        }
        ch->chain(ch->ctx, cin.b, tot.b, head);
    }
    atomic_store_explicit(&ch->ready, 1, memory_order_release);
    return;
stopped:
    ch->meet = ch->nchunks;
    atomic_store_explicit(&ch->ready, 1, memory_order_release);
}

static void back(gs_chain *ch)
{
    int64_t c;
    while ((c = gs_cpu_claim(&ch->ends, 0)) >= 0 && !gs_cpu_stopping()) {
        if (c % ch->chunks_per_row != ch->chunks_per_row - 1)
            ch->total(ch->ctx, c, slot(ch->tot, ch, c), &ch->head[c]);
        atomic_store_explicit(&ch->done[c], 1, memory_order_release);
    }
}

/* Task 0 is the front, the others the back; then all scan the chunks from `meet` on. */
static void chain_task(void *ctx, int64_t task)
{
    gs_chain *ch = ctx;
    gs_chain_buf cin;
    int64_t c;

    if (task == 0)
        front(ch);
    else
        back(ch);
    if (!gs_cpu_wait(&ch->ready))
        return;
    while ((c = ch->meet + atomic_fetch_add_explicit(&ch->next, 1, memory_order_relaxed)) <
               ch->nchunks &&
           !gs_cpu_stopping()) {
        memcpy(cin.b, slot(ch->carry, ch, c), ch->carry_size);
        ch->step(ch->ctx, c, cin.b);
    }
}

static int chain_parallel(gs_chain *ch)
{
    int rc = 0;
    ch->nchunks = ch->rows * ch->chunks_per_row;
    if (ch->nchunks > 0xffffffff) { /* beyond the claims' 32-bit halves */
        chain_rows(ch, 0, ch->rows);
        return 0;
    }
    ch->carry = malloc((size_t)ch->nchunks * ch->carry_size);
    ch->tot = malloc((size_t)ch->nchunks * ch->carry_size);
    ch->head = malloc((size_t)ch->nchunks);
    ch->done = malloc((size_t)ch->nchunks * sizeof(atomic_uchar));
    if (ch->carry == NULL || ch->tot == NULL || ch->head == NULL || ch->done == NULL) {
        rc = -ENOMEM;
        goto finally;
    }
    for (int64_t c = 0; c < ch->nchunks; c++)
        atomic_init(&ch->done[c], 0);
    gs_cpu_ends_init(&ch->ends, ch->nchunks);
    atomic_init(&ch->next, 0);
    atomic_init(&ch->ready, 0);
    rc = gs_cpu_parallel_for(gs_cpu_threads(), chain_task, ch);
finally:
    free(ch->carry);
    free(ch->tot);
    free(ch->head);
    free((void *)ch->done);
    return rc;
}

int gs_chain_run(gs_chain *ch, int parallel)
{
    const int64_t ntasks = (ch->rows + ch->rows_per_task - 1) / ch->rows_per_task;
    if (!parallel) {
        for (int64_t t = 0; t < ntasks && (t == 0 || !gs_cpu_stopping()); t++)
            rows_task(ch, t);
        return 0;
    }
    if (ch->chunks_per_row == 1 || ch->rows >= 4 * gs_cpu_threads())
        return gs_cpu_parallel_for(ntasks, rows_task, ch);
    return chain_parallel(ch);
}
