/*
 * pypto_kernel.h -- the C++ side of PyPTO's hand-written ("external") kernels.
 *
 * SPEC §10; reference: docs/tools.md, section "External C++ kernels".
 *
 * A kernel file defines exactly one entry point:
 *
 *     #include "pypto_kernel.h"
 *     extern "C" void kernel_entry(int64_t* args) { ... }
 *
 * args[i] follows the parameter order of the kernel's Python declaration:
 *   - a tensor parameter is a pointer to a pypto_tensor descriptor
 *     (use pypto_arg_tensor(args[i]));
 *   - a scalar parameter is its value as int64 (integers, bools); a float scalar is the bit
 *     pattern of a double (use pypto_arg_float(args[i])).
 *
 * On the simulator this header is implemented for the host CPU: tensors live in host memory,
 * tiles are plain float32 arrays, every helper computes in float32 and reads/writes the tensor's
 * storage type (FP32, FP16, BF16; integer types convert with saturation).
 *
 * Errors: a helper used wrongly (shape mismatch, a box outside a tensor, an unsupported dtype)
 * records the first error and does nothing further; the simulator raises it (with the kernel's
 * name) when kernel_entry returns. pypto_ok() tells the kernel whether it may continue.
 */
#ifndef PYPTO_KERNEL_H
#define PYPTO_KERNEL_H

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

#define PYPTO_ABI_VERSION 1
#define PYPTO_MAX_RANK 8

/* Storage type codes: the 1-byte DataType codes of SPEC §2.1. */
enum pypto_dtype : int32_t {
    PYPTO_BOOL = 0x00,
    PYPTO_INT8 = 0x11,
    PYPTO_INT16 = 0x12,
    PYPTO_INT32 = 0x13,
    PYPTO_INT64 = 0x14,
    PYPTO_UINT8 = 0x21,
    PYPTO_FP16 = 0x33,
    PYPTO_FP32 = 0x34,
    PYPTO_BF16 = 0x40,
};

/* A DDR tensor (or a view of one): element (i0, i1, ...) is at
 * data + (i0 * strides[0] + i1 * strides[1] + ...) * element size. Strides count elements. */
typedef struct pypto_tensor {
    void* data;
    int32_t dtype;
    int32_t rank;
    int64_t shape[PYPTO_MAX_RANK];
    int64_t strides[PYPTO_MAX_RANK];
} pypto_tensor;

static_assert(sizeof(pypto_tensor) == 144, "pypto_tensor layout is part of the ABI");

/* A local tile: a dense row-major float32 buffer of rows x cols (cap = elements of storage). */
typedef struct pypto_tile {
    float* data;
    int64_t rows;
    int64_t cols;
    int64_t cap;
} pypto_tile;

/* Declare a local tile `name` of R x C float32 elements (storage on the stack). */
#define PYPTO_TILE(name, R, C)                    \
    float name##_storage[(R) * (C)];              \
    pypto_tile name = {name##_storage, (R), (C), (R) * (C)}

/* ---- runtime state: block identity and the first error (set by the simulator) ------------- */
struct pypto_block_state {
    int64_t idx, num, sub, subnum;
};
inline thread_local pypto_block_state pypto_block_ = {0, 1, 0, 1};
inline thread_local char pypto_error_[1024] = {0};

extern "C" __attribute__((weak, visibility("default"))) void pypto_runtime_set_block(
    int64_t idx, int64_t num, int64_t sub, int64_t subnum) {
    pypto_block_ = {idx, num, sub, subnum};
}
extern "C" __attribute__((weak, visibility("default"))) const char* pypto_runtime_error(void) {
    return pypto_error_[0] ? pypto_error_ : nullptr;
}
extern "C" __attribute__((weak, visibility("default"))) void pypto_runtime_clear_error(void) {
    pypto_error_[0] = 0;
}
/* ABI check for the loader: version * 1000 + sizeof(pypto_tensor). */
extern "C" __attribute__((weak, visibility("default"))) int64_t pypto_runtime_abi(void) {
    return PYPTO_ABI_VERSION * 1000 + (int64_t)sizeof(pypto_tensor);
}

/* Index of the running block of the launch (0-based), and the number of blocks. */
static inline int64_t pypto_block_idx(void) { return pypto_block_.idx; }
static inline int64_t pypto_block_num(void) { return pypto_block_.num; }
/* Vector core of the cluster (0 or 1) and how many the launch uses. */
static inline int64_t pypto_subblock_idx(void) { return pypto_block_.sub; }
static inline int64_t pypto_subblock_num(void) { return pypto_block_.subnum; }

/* Record an error (printf format); only the first one is kept. */
static inline void pypto_fail(const char* fmt, ...) {
    if (pypto_error_[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pypto_error_, sizeof(pypto_error_), fmt, ap);
    va_end(ap);
    if (!pypto_error_[0]) snprintf(pypto_error_, sizeof(pypto_error_), "error");
}
/* True while no error has been recorded. */
static inline bool pypto_ok(void) { return pypto_error_[0] == 0; }

/* ---- arguments ---------------------------------------------------------------------------- */
static inline pypto_tensor* pypto_arg_tensor(int64_t arg) { return (pypto_tensor*)(intptr_t)arg; }
static inline int64_t pypto_arg_int(int64_t arg) { return arg; }
static inline double pypto_arg_float(int64_t arg) {
    double d;
    memcpy(&d, &arg, sizeof d);
    return d;
}

/* ---- storage conversion --------------------------------------------------------------------- */
static inline float pypto_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else {  /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400u)) { man <<= 1; exp--; }
            u = sign | (exp << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t pypto_float_to_half(float f) { /* round to nearest even */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u); /* NaN / Inf */
    if (a >= 0x477ff000u) return sign | 0x7c00u;                               /* overflow */
    if (a < 0x38800000u) {                                                     /* subnormal / 0 */
        if (a < 0x33000000u) return sign;
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e;  /* 14..24 */
        uint32_t half = m >> shift, rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return sign | (uint16_t)half;
    }
    uint32_t r = a + 0xc8000fffu + ((a >> 13) & 1u); /* rebias exponent, round to nearest even */
    return sign | (uint16_t)(r >> 13);
}

static inline float pypto_bf16_to_float(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t pypto_float_to_bf16(float f) { /* round to nearest even */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline double pypto_clamp_(double v, double lo, double hi) {
    if (v != v) return 0;  /* NaN -> 0 */
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Bytes per element of a storage type (0 for an unsupported one). */
static inline int64_t pypto_dtype_size(int32_t dtype) {
    switch (dtype) {
        case PYPTO_BOOL: case PYPTO_INT8: case PYPTO_UINT8: return 1;
        case PYPTO_INT16: case PYPTO_FP16: case PYPTO_BF16: return 2;
        case PYPTO_INT32: case PYPTO_FP32: return 4;
        case PYPTO_INT64: return 8;
        default: return 0;
    }
}

/* Element `offset` (in elements from t->data) as float / stored from float. */
static inline float pypto_get(const pypto_tensor* t, int64_t offset) {
    const char* p = (const char*)t->data;
    switch (t->dtype) {
        case PYPTO_FP32: return ((const float*)p)[offset];
        case PYPTO_FP16: return pypto_half_to_float(((const uint16_t*)p)[offset]);
        case PYPTO_BF16: return pypto_bf16_to_float(((const uint16_t*)p)[offset]);
        case PYPTO_INT8: return (float)((const int8_t*)p)[offset];
        case PYPTO_UINT8: return (float)((const uint8_t*)p)[offset];
        case PYPTO_BOOL: return ((const uint8_t*)p)[offset] ? 1.0f : 0.0f;
        case PYPTO_INT16: return (float)((const int16_t*)p)[offset];
        case PYPTO_INT32: return (float)((const int32_t*)p)[offset];
        case PYPTO_INT64: return (float)((const int64_t*)p)[offset];
        default: pypto_fail("pypto_get: unsupported dtype code 0x%x", (unsigned)t->dtype); return 0;
    }
}

static inline void pypto_set(const pypto_tensor* t, int64_t offset, float v) {
    char* p = (char*)t->data;
    switch (t->dtype) {
        case PYPTO_FP32: ((float*)p)[offset] = v; break;
        case PYPTO_FP16: ((uint16_t*)p)[offset] = pypto_float_to_half(v); break;
        case PYPTO_BF16: ((uint16_t*)p)[offset] = pypto_float_to_bf16(v); break;
        case PYPTO_INT8: ((int8_t*)p)[offset] = (int8_t)pypto_clamp_(std::trunc(v), -128, 127); break;
        case PYPTO_UINT8: ((uint8_t*)p)[offset] = (uint8_t)pypto_clamp_(std::trunc(v), 0, 255); break;
        case PYPTO_BOOL: ((uint8_t*)p)[offset] = v != 0.0f; break;
        case PYPTO_INT16: ((int16_t*)p)[offset] = (int16_t)pypto_clamp_(std::trunc(v), -32768, 32767); break;
        case PYPTO_INT32:
            ((int32_t*)p)[offset] = (int32_t)pypto_clamp_(std::trunc(v), -2147483648.0, 2147483647.0);
            break;
        case PYPTO_INT64:
            ((int64_t*)p)[offset] = (int64_t)pypto_clamp_(std::trunc(v), -9223372036854775808.0,
                                                         9223372036854774784.0);
            break;
        default: pypto_fail("pypto_set: unsupported dtype code 0x%x", (unsigned)t->dtype);
    }
}

/* ---- 2-D view of a tensor ------------------------------------------------------------------
 * Helpers see a tensor as rows x cols: cols is the last dimension, rows the product of the
 * others (which must be contiguous among themselves); a rank-1 tensor is 1 x n. */
static inline int64_t pypto_cols(const pypto_tensor* t) { return t->rank ? t->shape[t->rank - 1] : 1; }
static inline int64_t pypto_rows(const pypto_tensor* t) {
    int64_t r = 1;
    for (int i = 0; i + 1 < t->rank; i++) r *= t->shape[i];
    return r;
}
static inline bool pypto_view2d_(const pypto_tensor* t, int64_t* rs, int64_t* cs, const char* who) {
    if (t->rank < 0 || t->rank > PYPTO_MAX_RANK) { pypto_fail("%s: bad tensor rank %d", who, t->rank); return false; }
    for (int i = 0; i + 2 < t->rank; i++)
        if (t->strides[i] != t->strides[i + 1] * t->shape[i + 1]) {
            pypto_fail("%s: the leading dimensions of a rank-%d tensor must be contiguous to be seen as rows",
                       who, t->rank);
            return false;
        }
    *cs = t->rank ? t->strides[t->rank - 1] : 1;
    *rs = t->rank >= 2 ? t->strides[t->rank - 2] : 0;
    if (pypto_dtype_size(t->dtype) == 0) {
        pypto_fail("%s: unsupported dtype code 0x%x", who, (unsigned)t->dtype);
        return false;
    }
    return true;
}

/* Element (row, col) of the 2-D view of `t` as float (bounds checked). */
static inline float pypto_load_elem(const pypto_tensor* t, int64_t row, int64_t col) {
    int64_t rs, cs;
    if (!pypto_ok() || !pypto_view2d_(t, &rs, &cs, "pypto_load_elem")) return 0;
    if (row < 0 || col < 0 || row >= pypto_rows(t) || col >= pypto_cols(t)) {
        pypto_fail("pypto_load_elem: (%lld, %lld) outside a %lld x %lld tensor", (long long)row,
                   (long long)col, (long long)pypto_rows(t), (long long)pypto_cols(t));
        return 0;
    }
    return pypto_get(t, row * rs + col * cs);
}

/* ---- tiles ---------------------------------------------------------------------------------- */
/* A tile over caller storage `buf` of `cap` floats, shaped rows x cols. */
static inline pypto_tile pypto_tile_make(float* buf, int64_t cap, int64_t rows, int64_t cols) {
    pypto_tile t = {buf, rows, cols, cap};
    if (rows < 0 || cols < 0 || rows * cols > cap) {
        pypto_fail("pypto_tile_make: %lld x %lld does not fit %lld elements", (long long)rows,
                   (long long)cols, (long long)cap);
        t.rows = t.cols = 0;
    }
    return t;
}
/* Reshape a tile within its storage (e.g. a partial last block): rows * cols <= cap. */
static inline void pypto_tile_reshape(pypto_tile* t, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0 || rows * cols > t->cap) {
        pypto_fail("pypto_tile_reshape: %lld x %lld does not fit %lld elements", (long long)rows,
                   (long long)cols, (long long)t->cap);
        return;
    }
    t->rows = rows;
    t->cols = cols;
}

static inline bool pypto_box_(const pypto_tensor* x, int64_t row, int64_t col, const pypto_tile* t,
                              int64_t* rs, int64_t* cs, const char* who) {
    if (!pypto_ok() || !pypto_view2d_(x, rs, cs, who)) return false;
    if (row < 0 || col < 0 || row + t->rows > pypto_rows(x) || col + t->cols > pypto_cols(x)) {
        pypto_fail("%s: box [%lld:%lld, %lld:%lld] is outside the %lld x %lld tensor", who,
                   (long long)row, (long long)(row + t->rows), (long long)col, (long long)(col + t->cols),
                   (long long)pypto_rows(x), (long long)pypto_cols(x));
        return false;
    }
    return true;
}

/* DDR -> tile: dst (rows x cols) = src[row : row + rows, col : col + cols] (2-D view). */
static inline void pypto_load(pypto_tile* dst, const pypto_tensor* src, int64_t row, int64_t col) {
    int64_t rs, cs;
    if (!pypto_box_(src, row, col, dst, &rs, &cs, "pypto_load")) return;
    for (int64_t i = 0; i < dst->rows; i++) {
        int64_t base = (row + i) * rs + col * cs;
        float* d = dst->data + i * dst->cols;
        if (src->dtype == PYPTO_FP32 && cs == 1) {
            memcpy(d, (const float*)src->data + base, (size_t)dst->cols * sizeof(float));
        } else {
            for (int64_t j = 0; j < dst->cols; j++) d[j] = pypto_get(src, base + j * cs);
        }
    }
}

/* tile -> DDR: dst[row : row + rows, col : col + cols] = src, converted to dst's dtype. */
static inline void pypto_store(const pypto_tensor* dst, int64_t row, int64_t col, const pypto_tile* src) {
    int64_t rs, cs;
    if (!pypto_box_(dst, row, col, src, &rs, &cs, "pypto_store")) return;
    for (int64_t i = 0; i < src->rows; i++) {
        int64_t base = (row + i) * rs + col * cs;
        const float* s = src->data + i * src->cols;
        if (dst->dtype == PYPTO_FP32 && cs == 1) {
            memcpy((float*)dst->data + base, s, (size_t)src->cols * sizeof(float));
        } else {
            for (int64_t j = 0; j < src->cols; j++) pypto_set(dst, base + j * cs, s[j]);
        }
    }
}

static inline bool pypto_same_(const pypto_tile* a, const pypto_tile* b, const char* who) {
    if (!pypto_ok()) return false;
    if (a->rows != b->rows || a->cols != b->cols) {
        pypto_fail("%s: tile shapes %lld x %lld and %lld x %lld differ", who, (long long)a->rows,
                   (long long)a->cols, (long long)b->rows, (long long)b->cols);
        return false;
    }
    return true;
}

/* Fill / copy. */
static inline void pypto_fill(pypto_tile* dst, float v) {
    if (!pypto_ok()) return;
    for (int64_t i = 0; i < dst->rows * dst->cols; i++) dst->data[i] = v;
}
static inline void pypto_copy(pypto_tile* dst, const pypto_tile* src) {
    if (!pypto_same_(dst, src, "pypto_copy")) return;
    memmove(dst->data, src->data, (size_t)(src->rows * src->cols) * sizeof(float));
}

/* Elementwise: dst = a OP b (same shapes; dst may be a or b). */
#define PYPTO_BINARY_(NAME, EXPR)                                                     \
    static inline void NAME(pypto_tile* dst, const pypto_tile* a, const pypto_tile* b) { \
        if (!pypto_same_(a, b, #NAME) || !pypto_same_(dst, a, #NAME)) return;          \
        for (int64_t i = 0; i < a->rows * a->cols; i++) {                              \
            float x = a->data[i], y = b->data[i];                                       \
            dst->data[i] = (EXPR);                                                      \
        }                                                                               \
    }
PYPTO_BINARY_(pypto_add, x + y)
PYPTO_BINARY_(pypto_sub, x - y)
PYPTO_BINARY_(pypto_mul, x * y)
PYPTO_BINARY_(pypto_div, x / y)
PYPTO_BINARY_(pypto_max, std::fmax(x, y))
PYPTO_BINARY_(pypto_min, std::fmin(x, y))

/* Elementwise with a scalar: dst = a OP s. */
#define PYPTO_SCALAR_(NAME, EXPR)                                               \
    static inline void NAME(pypto_tile* dst, const pypto_tile* a, float y) {   \
        if (!pypto_same_(dst, a, #NAME)) return;                                \
        for (int64_t i = 0; i < a->rows * a->cols; i++) {                       \
            float x = a->data[i];                                               \
            dst->data[i] = (EXPR);                                              \
        }                                                                       \
    }
PYPTO_SCALAR_(pypto_adds, x + y)
PYPTO_SCALAR_(pypto_subs, x - y)
PYPTO_SCALAR_(pypto_muls, x * y)
PYPTO_SCALAR_(pypto_divs, x / y)
PYPTO_SCALAR_(pypto_maxs, std::fmax(x, y))
PYPTO_SCALAR_(pypto_mins, std::fmin(x, y))

/* Elementwise unary: dst = f(a). */
#define PYPTO_UNARY_(NAME, EXPR)                                    \
    static inline void NAME(pypto_tile* dst, const pypto_tile* a) { \
        if (!pypto_same_(dst, a, #NAME)) return;                    \
        for (int64_t i = 0; i < a->rows * a->cols; i++) {           \
            float x = a->data[i];                                   \
            dst->data[i] = (EXPR);                                  \
        }                                                           \
    }
PYPTO_UNARY_(pypto_exp, std::exp(x))
PYPTO_UNARY_(pypto_log, std::log(x))
PYPTO_UNARY_(pypto_sqrt, std::sqrt(x))
PYPTO_UNARY_(pypto_rsqrt, 1.0f / std::sqrt(x))
PYPTO_UNARY_(pypto_abs, std::fabs(x))
PYPTO_UNARY_(pypto_neg, -x)
PYPTO_UNARY_(pypto_recip, 1.0f / x)

/* Row reductions: dst (rows x 1) = reduce over each row of src (rows x cols). */
#define PYPTO_ROW_REDUCE_(NAME, INIT, EXPR)                                                      \
    static inline void NAME(pypto_tile* dst, const pypto_tile* src) {                           \
        if (!pypto_ok()) return;                                                                 \
        if (dst->rows != src->rows || dst->cols != 1) {                                          \
            pypto_fail(#NAME ": dst must be %lld x 1, got %lld x %lld", (long long)src->rows,   \
                       (long long)dst->rows, (long long)dst->cols);                              \
            return;                                                                              \
        }                                                                                        \
        for (int64_t i = 0; i < src->rows; i++) {                                                \
            const float* r = src->data + i * src->cols;                                          \
            float acc = (INIT);                                                                  \
            for (int64_t j = 0; j < src->cols; j++) {                                            \
                float x = r[j];                                                                  \
                acc = (EXPR);                                                                    \
            }                                                                                    \
            dst->data[i] = acc;                                                                  \
        }                                                                                        \
    }
PYPTO_ROW_REDUCE_(pypto_row_sum, 0.0f, acc + x)
PYPTO_ROW_REDUCE_(pypto_row_max, -INFINITY, std::fmax(acc, x))
PYPTO_ROW_REDUCE_(pypto_row_min, INFINITY, std::fmin(acc, x))

/* Broadcasts: dst = a OP v, v being rows x 1 (one value per row: row_expand) or 1 x cols (one
 * value per column: col_expand). */
#define PYPTO_EXPAND_(NAME, ROWWISE, EXPR)                                                        \
    static inline void NAME(pypto_tile* dst, const pypto_tile* a, const pypto_tile* v) {         \
        if (!pypto_same_(dst, a, #NAME)) return;                                                  \
        bool ok = (ROWWISE) ? (v->rows == a->rows && v->cols == 1) : (v->rows == 1 && v->cols == a->cols); \
        if (!ok) {                                                                                \
            pypto_fail(#NAME ": vector is %lld x %lld, expected %lld x %lld", (long long)v->rows,  \
                       (long long)v->cols, (long long)((ROWWISE) ? a->rows : 1),                  \
                       (long long)((ROWWISE) ? 1 : a->cols));                                     \
            return;                                                                               \
        }                                                                                         \
        for (int64_t i = 0; i < a->rows; i++)                                                     \
            for (int64_t j = 0; j < a->cols; j++) {                                               \
                float x = a->data[i * a->cols + j], y = v->data[(ROWWISE) ? i : j];               \
                dst->data[i * a->cols + j] = (EXPR);                                              \
            }                                                                                     \
    }
PYPTO_EXPAND_(pypto_row_expand_add, true, x + y)
PYPTO_EXPAND_(pypto_row_expand_sub, true, x - y)
PYPTO_EXPAND_(pypto_row_expand_mul, true, x * y)
PYPTO_EXPAND_(pypto_row_expand_div, true, x / y)
PYPTO_EXPAND_(pypto_col_expand_add, false, x + y)
PYPTO_EXPAND_(pypto_col_expand_sub, false, x - y)
PYPTO_EXPAND_(pypto_col_expand_mul, false, x * y)
PYPTO_EXPAND_(pypto_col_expand_div, false, x / y)

/* Matrix multiply: dst (M x N) = a (M x K) @ b (K x N); _acc adds to dst. dst must not be a or b. */
static inline void pypto_matmul_(pypto_tile* dst, const pypto_tile* a, const pypto_tile* b, bool acc,
                                 const char* who) {
    if (!pypto_ok()) return;
    if (a->cols != b->rows || dst->rows != a->rows || dst->cols != b->cols) {
        pypto_fail("%s: %lld x %lld @ %lld x %lld into %lld x %lld", who, (long long)a->rows,
                   (long long)a->cols, (long long)b->rows, (long long)b->cols, (long long)dst->rows,
                   (long long)dst->cols);
        return;
    }
    if (dst->data == a->data || dst->data == b->data) {
        pypto_fail("%s: the result tile must not be an operand", who);
        return;
    }
    int64_t M = a->rows, K = a->cols, N = b->cols;
    if (!acc) memset(dst->data, 0, (size_t)(M * N) * sizeof(float));
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++) {
            float x = a->data[i * K + k];
            const float* brow = b->data + k * N;
            float* drow = dst->data + i * N;
            for (int64_t j = 0; j < N; j++) drow[j] += x * brow[j];
        }
}
static inline void pypto_matmul(pypto_tile* dst, const pypto_tile* a, const pypto_tile* b) {
    pypto_matmul_(dst, a, b, false, "pypto_matmul");
}
static inline void pypto_matmul_acc(pypto_tile* dst, const pypto_tile* a, const pypto_tile* b) {
    pypto_matmul_(dst, a, b, true, "pypto_matmul_acc");
}

#endif /* PYPTO_KERNEL_H */
