/*
 * dispatch/tuning.h - the kernels' launch-bound tuning: the blocks per multiprocessor each
 * register type's kernels are compiled for.
 * Level: dispatch. The measurements behind them are in docs/performance-notes.md.
 */
#ifndef GS_TUNING_H
#define GS_TUNING_H

/* Blocks per multiprocessor the register budget must allow, by register type: 4-byte
 * registers leave room for more resident blocks than 8-byte ones. */
#define GS_MIN_BLOCKS_4 5 /* measured best for one tile per block (H200) */
#define GS_MIN_BLOCKS_8 2
#define GS_MIN_BLOCKS_u32 GS_MIN_BLOCKS_4
#define GS_MIN_BLOCKS_i32 GS_MIN_BLOCKS_4
/* float32 runs add and mul with double-word carries: under the 5-block budget its one-tile
 * kernel spills, and 4 blocks measured faster. */
#define GS_MIN_BLOCKS_f32 4
#define GS_MIN_BLOCKS_u64 GS_MIN_BLOCKS_8
#define GS_MIN_BLOCKS_i64 GS_MIN_BLOCKS_8
#define GS_MIN_BLOCKS_f64 GS_MIN_BLOCKS_8

/* The lookahead driver holds three input tiles in shared memory: 4-byte inputs leave room for
 * four blocks per multiprocessor (H100/H200), 8-byte ones for two. */
#define GS_AHEAD_MIN_BLOCKS_4 4
#define GS_AHEAD_MIN_BLOCKS_8 2
#define GS_AHEAD_MIN_BLOCKS_u32 GS_AHEAD_MIN_BLOCKS_4
#define GS_AHEAD_MIN_BLOCKS_i32 GS_AHEAD_MIN_BLOCKS_4
#define GS_AHEAD_MIN_BLOCKS_f32 GS_AHEAD_MIN_BLOCKS_4
#define GS_AHEAD_MIN_BLOCKS_u64 GS_AHEAD_MIN_BLOCKS_8
#define GS_AHEAD_MIN_BLOCKS_i64 GS_AHEAD_MIN_BLOCKS_8
#define GS_AHEAD_MIN_BLOCKS_f64 GS_AHEAD_MIN_BLOCKS_8
/* A 1- or 2-byte input widened to an 8-byte type (uint8 -> uint64: NumPy's add and mul) holds
 * three tiles of 4 or 8 KiB, not 32: at least three blocks, which still fit its registers with
 * no spills (wider inputs would spill). */
#define GS_AHEAD_MIN_BLOCKS_NARROW 3
#define GS_AHEAD_NARROW(in)                                                     \
    ((in) == GS_BOOL || (in) == GS_INT8 || (in) == GS_UINT8 || (in) == GS_INT16 || \
     (in) == GS_UINT16)
#define GS_AHEAD_BLOCKS(rs, in)                                                     \
    (GS_AHEAD_NARROW(in) && GS_AHEAD_MIN_BLOCKS_##rs < GS_AHEAD_MIN_BLOCKS_NARROW \
         ? GS_AHEAD_MIN_BLOCKS_NARROW                                              \
         : GS_AHEAD_MIN_BLOCKS_##rs)

/* The linear recurrence's kernels (dispatch/linrec.cu). One tile per block keeps a tile's a and
 * leaves in registers across the look-back; the lookahead driver keeps them in shared memory,
 * in slots of a tile's a and b: three for float32 (48 KiB, four blocks: the next tile streams in
 * for a whole iteration), two for float64 (64 KiB, three blocks; three slots would leave two,
 * measured slower). Its look-back leaves a block's warps waiting at a barrier, and other blocks
 * fill the time (docs/performance-notes.md). */
#define GS_LR_SLOTS_f32 3
#define GS_LR_SLOTS_f64 2
#define GS_LR_MIN_BLOCKS_f32 3
#define GS_LR_MIN_BLOCKS_f64 2
#define GS_LR_AHEAD_MIN_BLOCKS_f32 4
#define GS_LR_AHEAD_MIN_BLOCKS_f64 3

/* The scan runs one block per tile, or, over many tiles, a persistent grid of lookahead blocks
 * (agent/scan.cuh) once the tiles number at least this many times the resident blocks (below
 * that, one tile per block is as fast or faster). */
#define GS_AHEAD_MIN_WAVES 4

#endif /* GS_TUNING_H */
