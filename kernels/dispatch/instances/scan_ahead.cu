/* dispatch/instances/scan_ahead.cu - the scan kernels of family "ahead" (the lookahead driver,
 * plain scans): dispatch/instances/scan_kernels.cuh. */
#define GS_SCAN_FAMILY ahead
#define GS_SCAN_AHEAD 1
#define GS_SCAN_SEG 0
#include "dispatch/instances/scan_kernels.cuh"
