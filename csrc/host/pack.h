/*
 * host/pack.h - gathering a range of an array's elements into a contiguous buffer, and
 * scattering them back (host/pack.c): the host side of the transfer pipeline.
 * Level: host; plain C.
 */
#ifndef GS_PACK_H
#define GS_PACK_H

#include "host/view.h"

/* dst[0 .. n) = elements [e0, e0 + n) of the host view v in C order, as dtype `to`. */
void gs_pack(const gs_view *v, int64_t e0, int64_t n, gs_dtype to, void *dst);

/* Elements [e0, e0 + n) of the host view v in C order = src[0 .. n) of dtype `from`. */
void gs_unpack(const void *src, gs_dtype from, const gs_view *v, int64_t e0, int64_t n);

#endif /* GS_PACK_H */
