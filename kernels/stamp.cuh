/*
 * stamp.cuh - stamps the per-type layers (thread, warp, block, look-back) and one agent
 * (GS_AGENT, a header name) once for every register type.  The one list of register types.
 * Usage, in a primitive's .cu:  #define GS_AGENT "agent/scan.cuh"  #include "stamp.cuh"
 * (without GS_AGENT: the layers alone, for an agent that is not per register type).
 */

#define GS_R uint32_t
#define GS_RS u32
#define GS_R_KIND 'u'
#include "thread/thread_ops.cuh"
#include "warp/warp_scan.cuh"
#include "block/block_scan.cuh"
#include "device/lookback.cuh"
#ifdef GS_AGENT
#include GS_AGENT
#endif
#undef GS_R
#undef GS_RS
#undef GS_R_KIND

#define GS_R int32_t
#define GS_RS i32
#define GS_R_KIND 'i'
#include "thread/thread_ops.cuh"
#include "warp/warp_scan.cuh"
#include "block/block_scan.cuh"
#include "device/lookback.cuh"
#ifdef GS_AGENT
#include GS_AGENT
#endif
#undef GS_R
#undef GS_RS
#undef GS_R_KIND

#define GS_R uint64_t
#define GS_RS u64
#define GS_R_KIND 'u'
#include "thread/thread_ops.cuh"
#include "warp/warp_scan.cuh"
#include "block/block_scan.cuh"
#include "device/lookback.cuh"
#ifdef GS_AGENT
#include GS_AGENT
#endif
#undef GS_R
#undef GS_RS
#undef GS_R_KIND

#define GS_R int64_t
#define GS_RS i64
#define GS_R_KIND 'i'
#include "thread/thread_ops.cuh"
#include "warp/warp_scan.cuh"
#include "block/block_scan.cuh"
#include "device/lookback.cuh"
#ifdef GS_AGENT
#include GS_AGENT
#endif
#undef GS_R
#undef GS_RS
#undef GS_R_KIND

#define GS_R float
#define GS_RS f32
#define GS_R_KIND 'f'
#include "thread/thread_ops.cuh"
#include "warp/warp_scan.cuh"
#include "block/block_scan.cuh"
#include "device/lookback.cuh"
#ifdef GS_AGENT
#include GS_AGENT
#endif
#undef GS_R
#undef GS_RS
#undef GS_R_KIND

#define GS_R double
#define GS_RS f64
#define GS_R_KIND 'f'
#include "thread/thread_ops.cuh"
#include "warp/warp_scan.cuh"
#include "block/block_scan.cuh"
#include "device/lookback.cuh"
#ifdef GS_AGENT
#include GS_AGENT
#endif
#undef GS_R
#undef GS_RS
#undef GS_R_KIND
