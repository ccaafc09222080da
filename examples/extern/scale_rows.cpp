// SPMD kernel for PyPTO: each block scales its own share of the rows (see docs/tools.md).
//
//   out[i, :] = x[i, :] * s[i, 0]      for the rows i of this block
//
// Declared with core_num=4 in examples/extern_spmd.py: every call runs as 4 tasks, block
// pypto_block_idx() of pypto_block_num(), on different vector cores at the same time.
//   args[0]  x    In   [M, N] fp32
//   args[1]  s    In   [M, 1] fp32
//   args[2]  out  Out  [M, N] fp32
#include "pypto_kernel.h"

extern "C" void kernel_entry(int64_t* args) {
    const pypto_tensor* x = pypto_arg_tensor(args[0]);
    const pypto_tensor* s = pypto_arg_tensor(args[1]);
    const pypto_tensor* out = pypto_arg_tensor(args[2]);
    const int64_t M = pypto_rows(x), N = pypto_cols(x);
    const int64_t nb = pypto_block_num(), b = pypto_block_idx();
    const int64_t per = (M + nb - 1) / nb;            // rows per block, the last one may get fewer
    const int64_t lo = b * per, hi = (lo + per < M) ? lo + per : M;

    float row_buf[4096], scale_buf[1];
    pypto_tile row = pypto_tile_make(row_buf, 4096, 1, N);
    pypto_tile scale = pypto_tile_make(scale_buf, 1, 1, 1);
    for (int64_t i = lo; i < hi && pypto_ok(); i++) {
        pypto_load(&row, x, i, 0);
        pypto_load(&scale, s, i, 0);
        pypto_row_expand_mul(&row, &row, &scale);
        pypto_store(out, i, 0, &row);
    }
}
