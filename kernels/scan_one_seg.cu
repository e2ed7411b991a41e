/* scan_one_seg.cu - the scan kernels of family "one_seg" (one tile per block, row-wise and
 * segmented scans): scan_kernels.cuh. */
#define GS_SCAN_FAMILY one_seg
#define GS_SCAN_AHEAD 0
#define GS_SCAN_SEG 1
#include "scan_kernels.cuh"
