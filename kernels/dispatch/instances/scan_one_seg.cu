/* dispatch/instances/scan_one_seg.cu - the scan kernels of family "one_seg" (one tile per block,
 * row-wise and segmented scans): dispatch/instances/scan_kernels.cuh. */
#define GS_SCAN_FAMILY one_seg
#define GS_SCAN_AHEAD 0
#define GS_SCAN_SEG 1
#include "dispatch/instances/scan_kernels.cuh"
