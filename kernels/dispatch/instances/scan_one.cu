/* dispatch/instances/scan_one.cu - the scan kernels of family "one" (one tile per block, plain
 * scans): dispatch/instances/scan_kernels.cuh. */
#define GS_SCAN_FAMILY one
#define GS_SCAN_AHEAD 0
#define GS_SCAN_SEG 0
#include "dispatch/instances/scan_kernels.cuh"
