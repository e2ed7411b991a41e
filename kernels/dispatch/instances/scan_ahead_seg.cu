/* dispatch/instances/scan_ahead_seg.cu - the scan kernels of family "ahead_seg" (the lookahead
 * driver, row-wise and segmented scans): dispatch/instances/scan_kernels.cuh. */
#define GS_SCAN_FAMILY ahead_seg
#define GS_SCAN_AHEAD 1
#define GS_SCAN_SEG 1
#include "dispatch/instances/scan_kernels.cuh"
