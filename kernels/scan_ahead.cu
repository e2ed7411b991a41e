/* scan_ahead.cu - the scan kernels of family "ahead" (the lookahead driver, plain scans):
 * scan_kernels.cuh. */
#define GS_SCAN_FAMILY ahead
#define GS_SCAN_AHEAD 1
#define GS_SCAN_SEG 0
#include "scan_kernels.cuh"
