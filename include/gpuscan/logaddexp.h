/*
 * gpuscan/logaddexp.h - log(e^x + e^y) and log2(2^x + 2^y): the logaddexp and logaddexp2
 * operators of both backends, one function.
 * Level: shared by the host layer (the CPU backend) and the device layer (kernels/thread/).
 *
 * NumPy's npy_logaddexp in double: equal arguments give x + log(2) (infinities of one sign
 * included, with no inf - inf), else the larger plus log1p(exp(-|x - y|)); a NaN argument gives
 * a NaN.  float32 values are computed in double and rounded once, one rounding per combine where
 * NumPy's float loop rounds each of its steps: at least as accurate as NumPy's.  -inf is the
 * identity: logaddexp(-inf, y) is y + log1p(0), y itself.
 */
#ifndef GS_LOGADDEXP_H
#define GS_LOGADDEXP_H

#include <math.h>

#include "gpuscan/types.h"

static inline GS_HD double gs_logaddexp(double x, double y, int base2)
{
    const double ln2 = 0.693147180559945309417232121458176568;
    const double d = x - y;

    if (x == y)
        return base2 ? x + 1.0 : x + ln2;
    if (d != d)
        return d;
    if (base2)
        return (d > 0 ? x : y) + log1p(exp2(-fabs(d))) * (1.0 / ln2);
    return (d > 0 ? x : y) + log1p(exp(-fabs(d)));
}

#endif /* GS_LOGADDEXP_H */
