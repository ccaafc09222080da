// Hand-written fused RMSNorm for PyPTO (see docs/tools.md, "External C++ kernels").
//
//   y[i, :] = x[i, :] * rsqrt(mean(x[i, :]^2) + eps) * w[0, :]
//
// Parameters, in the order of the Python declaration in examples/extern_rmsnorm.py:
//   args[0]  x    In   [M, N] fp16
//   args[1]  w    In   [1, N] fp16
//   args[2]  y    Out  [M, N] fp16
//   args[3]  eps  scalar FP32 (a float scalar arrives as the bits of a double)
// Rows are processed in blocks of ROWS; the last block may be partial.
#include "pypto_kernel.h"

#include "rmsnorm_config.h"

extern "C" void kernel_entry(int64_t* args) {
    const pypto_tensor* x = pypto_arg_tensor(args[0]);
    const pypto_tensor* w = pypto_arg_tensor(args[1]);
    const pypto_tensor* y = pypto_arg_tensor(args[2]);
    const float eps = (float)pypto_arg_float(args[3]);
    const int64_t M = pypto_rows(x), N = pypto_cols(x);
    if (N > MAX_COLS) {
        pypto_fail("rmsnorm: %lld columns exceed MAX_COLS=%d", (long long)N, MAX_COLS);
        return;
    }

    PYPTO_TILE(weight, 1, MAX_COLS);
    PYPTO_TILE(xb, ROWS, MAX_COLS);
    PYPTO_TILE(sq, ROWS, MAX_COLS);
    PYPTO_TILE(ss, ROWS, 1);
    pypto_tile_reshape(&weight, 1, N);
    pypto_load(&weight, w, 0, 0);

    for (int64_t r0 = 0; r0 < M && pypto_ok(); r0 += ROWS) {
        const int64_t rows = (M - r0 < ROWS) ? M - r0 : ROWS;
        pypto_tile_reshape(&xb, rows, N);
        pypto_tile_reshape(&sq, rows, N);
        pypto_tile_reshape(&ss, rows, 1);
        pypto_load(&xb, x, r0, 0);
        pypto_mul(&sq, &xb, &xb);
        pypto_row_sum(&ss, &sq);                 // sum of squares per row
        pypto_muls(&ss, &ss, 1.0f / (float)N);   // mean
        pypto_adds(&ss, &ss, eps);
        pypto_rsqrt(&ss, &ss);
        pypto_row_expand_mul(&xb, &xb, &ss);     // normalise each row
        pypto_col_expand_mul(&xb, &xb, &weight); // scale each column
        pypto_store(y, r0, 0, &xb);
    }
}
