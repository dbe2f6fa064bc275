// matrix:  144 x 144, 672 nonzeros; rows 3..5 (mean 4.67, sd 0.53), 0 empty
// plan:    csr [T=2 V=4 b=256 u=2], f32, reorder none
// model:   7876 bytes per multiply, 6.33 us predicted
// why:     parameters forced by the caller
//
// Flattened by `spmvc emit --flatten`: each function the entry points reach, printed
// with compile-time parameters as values and only the branches they select.
// Standalone: it needs no spmvc header.

__device__ __forceinline__ void csr_load_vector_4_int(const int *__restrict p,
                                                      int (&out)[4]) {
  {
    const uint4 word = __ldg(reinterpret_cast<const uint4 *>(p));
    memcpy(out, &word, sizeof(uint4));
  }
}

__device__ __forceinline__ void csr_load_vector_4_float(
    const float *__restrict p, float (&out)[4]) {
  {
    const uint4 word = __ldg(reinterpret_cast<const uint4 *>(p));
    memcpy(out, &word, sizeof(uint4));
  }
}

__device__ __forceinline__ float load_ro_float(const float *p) {
  return __ldg(p);
}

__device__ __forceinline__ float group_sum_2_float(float v) {
  static_assert(2 >= 1 && 2 <= 32 && (2 & (2 - 1)) == 0,
                "group size must be a power of two no larger than a warp");

#pragma unroll
  for (int offset = 2 / 2; offset > 0; offset /= 2) {
    v += __shfl_down_sync(4294967295U, v, offset, 2);
  }
  return v;
}

__device__ __forceinline__ long long y_row(long long row) { return row; }

__device__ __forceinline__ void store_y_float_float(float *y, long long row,
                                                    float sum, float alpha,
                                                    float beta) {
  const long long i = y_row(row);
  float out = alpha * sum;
  if (beta != float(0)) out += beta * static_cast<float>(y[i]);
  __stcs(y + i, static_cast<float>(out));
}

__device__ __forceinline__ void
csr_spmv_2_4_256_2_true_int_float_float_constfloat(
    long long nrows, const int *__restrict row_ptr,
    const int *__restrict col_idx, const float *values,
    const float *__restrict x, float *__restrict y, float alpha, float beta) {
  static_assert(256 % 32 == 0, "blocks are whole warps");
  static_assert(256 % 2 == 0, "a row's lanes stay inside one block");
  static_assert(2 >= 1 && 2 <= 8, "unroll depth out of range");
  static_assert(4 == 1 || 4 == 2 || 4 == 4, "vector width is 1, 2 or 4");
  static_assert(4 == 1 || true, "vector loads need the aligned start");
  static_assert(8 <= 128, "padding must cover one step of a group");
  const long long tid = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  const long long row = tid / 2;
  const int lane = static_cast<int>(threadIdx.x) % 2;
  float sum = float(0);
  if (row < nrows) {
    const int start = row_ptr[row];
    const int end = row_ptr[row + 1];
    const int base = (start & ~static_cast<int>(8 - 1));
    for (int j = base + lane * 4; j < end; j += 8 * 2) {
      int c[2][4];
      float v[2][4];

#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int ju = j + u * 8;
        if (ju < end) {
          csr_load_vector_4_int(col_idx + ju, c[u]);
          csr_load_vector_4_float(values + ju, v[u]);
        }
      }

#pragma unroll
      for (int u = 0; u < 2; ++u) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int e = j + u * 8 + i;
          if (e >= start && e < end) {
            sum += static_cast<float>(v[u][i]) *
                   static_cast<float>(load_ro_float(x + c[u][i]));
          }
        }
      }
    }
  }
  sum = group_sum_2_float(sum);
  if (lane == 0 && row < nrows) store_y_float_float(y, row, sum, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(256)
    spmv_csr_t2_v4_b256_u2_f32(long long nrows, const int *__restrict row_ptr,
                               const int *__restrict col_idx,
                               const float *__restrict values,
                               const float *__restrict x, float *__restrict y,
                               float alpha, float beta) {
  csr_spmv_2_4_256_2_true_int_float_float_constfloat(nrows, row_ptr, col_idx,
                                                     values, x, y, alpha, beta);
}
