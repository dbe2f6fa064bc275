// matrix:  216 x 216, 4096 nonzeros; rows 8..27 (mean 18.96, sd 5.90), 0 empty
// plan:    csr_stream [b=256 tile=1024 c16 val=3 m=1], f32, reorder none
// model:   19029 bytes per multiply, 1.69 us predicted
// why:     parameters forced by the caller
//
// Flattened by `spmvc emit --flatten`: each function the entry points reach, printed
// with compile-time parameters as values and only the branches they select.
// Standalone: it needs no spmvc header.

struct csr_stream_NarrowColumns;
struct TableValues_float_unsignedshort;
struct csr_stream_InPlace;
struct csr_stream_WholeRows;
struct
    csr_stream_StreamTile_256_4_float_float_TableValues_float_unsignedshort_csr_stream_InPlace;
struct csr_stream_ShortColumn;
struct csr_stream_IntColumn;
struct
    csr_stream_LongRowSum_256_int_float_float_TableValues_float_unsignedshort_false;

struct csr_stream_NarrowColumns {
  const int *__restrict base;
  const unsigned short *__restrict narrow;
  const int *__restrict wide;
  __device__ int block_code(int b) const;
  __device__ void with_block(
      int at, long long start,
      const csr_stream_StreamTile_256_4_float_float_TableValues_float_unsignedshort_csr_stream_InPlace
          &f) const;
  __device__ float with_block_absolute(
      int at, long long start,
      const csr_stream_LongRowSum_256_int_float_float_TableValues_float_unsignedshort_false
          &f) const;
};

struct TableValues_float_unsignedshort {
  const unsigned short *__restrict code;
  const float *__restrict table;
  __device__ TableValues_float_unsignedshort operator+(int i) const;
};

struct csr_stream_InPlace {
  __device__ csr_stream_InPlace operator+(int) const;
};

struct csr_stream_WholeRows {
  __device__ unsigned int lane(long long) const;
};

struct
    csr_stream_StreamTile_256_4_float_float_TableValues_float_unsignedshort_csr_stream_InPlace {
  TableValues_float_unsignedshort values;
  const float *__restrict x;
  float *products;
  int n;
  int t;
  csr_stream_InPlace slots;
  __device__ void operator()(csr_stream_ShortColumn column) const;
  __device__ void operator()(csr_stream_IntColumn column) const;
};

struct csr_stream_ShortColumn {
  const unsigned short *__restrict narrow;
  int base;
  __device__ csr_stream_ShortColumn operator+(int i) const;
  __device__ int operator()(int k) const;
};

struct csr_stream_IntColumn {
  const int *__restrict col_idx;
  __device__ csr_stream_IntColumn operator+(int i) const;
  __device__ int operator()(int k) const;
};

struct
    csr_stream_LongRowSum_256_int_float_float_TableValues_float_unsignedshort_false {
  TableValues_float_unsignedshort values;
  const float *__restrict x;
  int start;
  int end;
  int t;
  __device__ float operator()(csr_stream_ShortColumn column) const;
  __device__ float operator()(csr_stream_IntColumn column) const;
};

__device__ __forceinline__ int csr_stream_lanes_per_row_log2_256(int rows) {
  int s = __clz(rows) - __clz(256);
  s = s < 0 ? 0 : s > 5 ? 5 : s;
  s -= (rows << s) > 256 ? 1 : 0;
  return s < 0 ? 0 : s;
}

__device__ __forceinline__ unsigned int csr_stream_WholeRows::lane(
    long long) const {
  return 0U;
}

__device__ __forceinline__ int csr_stream_NarrowColumns::block_code(
    int b) const {
  return __ldg(this->base + b);
}

__device__ __forceinline__ csr_stream_ShortColumn
csr_stream_ShortColumn::operator+(int i) const {
  return csr_stream_ShortColumn{this->narrow + i, this->base};
}

__device__ __forceinline__ TableValues_float_unsignedshort
TableValues_float_unsignedshort::operator+(int i) const {
  return TableValues_float_unsignedshort{this->code + i, this->table};
}

__device__ __forceinline__ csr_stream_InPlace
csr_stream_InPlace::operator+(int) const {
  return {};
}

__device__ __forceinline__ unsigned short load_stream_unsignedshort(
    const unsigned short *p) {
  return __ldcs(p);
}

__device__ __forceinline__ int csr_stream_ShortColumn::operator()(int k) const {
  return this->base +
         static_cast<int>(load_stream_unsignedshort(this->narrow + k));
}

__device__ __forceinline__ float load_stream_float_unsignedshort(
    const TableValues_float_unsignedshort &p) {
  return __ldg(p.table + __ldcs(p.code));
}

__device__ __forceinline__ float load_ro_float(const float *p) {
  return __ldg(p);
}

__device__ __forceinline__ void
csr_stream_StreamTile_256_4_float_float_TableValues_float_unsignedshort_csr_stream_InPlace::
operator()(csr_stream_ShortColumn column) const {
  const csr_stream_ShortColumn column_t = column + this->t;
  const TableValues_float_unsignedshort values_t = this->values + this->t;
  const csr_stream_InPlace slots_t = this->slots + this->t;
  float *const products_t = this->products + this->t;
  const int left = this->n - this->t;

#pragma unroll
  for (int r = 0; r < 4; r += 2) {
    int c[2];
    float v[2];
    int at[2];

#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int k = (r + i) * 256;
      if (k < left) {
        c[i] = column_t(k);
        v[i] = load_stream_float_unsignedshort(values_t + k);
        {}
      }
    }

#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int k = (r + i) * 256;
      if (k < left) {
        const float product = static_cast<float>(v[i]) *
                              static_cast<float>(load_ro_float(this->x + c[i]));
        { products_t[k] = product; }
      }
    }
  }
}

__device__ __forceinline__ csr_stream_IntColumn
csr_stream_IntColumn::operator+(int i) const {
  return csr_stream_IntColumn{this->col_idx + i};
}

__device__ __forceinline__ int load_stream_int(const int *p) {
  return __ldcs(p);
}

__device__ __forceinline__ int csr_stream_IntColumn::operator()(int k) const {
  return load_stream_int(this->col_idx + k);
}

__device__ __forceinline__ void
csr_stream_StreamTile_256_4_float_float_TableValues_float_unsignedshort_csr_stream_InPlace::
operator()(csr_stream_IntColumn column) const {
  const csr_stream_IntColumn column_t = column + this->t;
  const TableValues_float_unsignedshort values_t = this->values + this->t;
  const csr_stream_InPlace slots_t = this->slots + this->t;
  float *const products_t = this->products + this->t;
  const int left = this->n - this->t;

#pragma unroll
  for (int r = 0; r < 4; r += 4) {
    int c[4];
    float v[4];
    int at[4];

#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = (r + i) * 256;
      if (k < left) {
        c[i] = column_t(k);
        v[i] = load_stream_float_unsignedshort(values_t + k);
        {}
      }
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = (r + i) * 256;
      if (k < left) {
        const float product = static_cast<float>(v[i]) *
                              static_cast<float>(load_ro_float(this->x + c[i]));
        { products_t[k] = product; }
      }
    }
  }
}

__device__ __forceinline__ void csr_stream_NarrowColumns::with_block(
    int at, long long start,
    const csr_stream_StreamTile_256_4_float_float_TableValues_float_unsignedshort_csr_stream_InPlace
        &f) const {
  if (at >= 0) return f(csr_stream_ShortColumn{this->narrow + start, at});
  return f(csr_stream_IntColumn{this->wide + (-1 - at)});
}

__device__ __forceinline__ float csr_stream_strided_sum_float(
    const float *products, int k, int e, int stride) {
  float sum = float(0);

#pragma unroll 1
  for (; k + 3 * stride < e; k += 4 * stride) {
    sum += products[k];
    sum += products[k + stride];
    sum += products[k + 2 * stride];
    sum += products[k + 3 * stride];
  }
  if (k < e) sum += products[k];
  if (k + stride < e) sum += products[k + stride];
  if (k + 2 * stride < e) sum += products[k + 2 * stride];
  return sum;
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

__device__ __forceinline__ float
csr_stream_LongRowSum_256_int_float_float_TableValues_float_unsignedshort_false::
operator()(csr_stream_ShortColumn column) const {
  float sum = float(0);
  {
#pragma unroll 4
    for (int k = this->start + this->t; k < this->end; k += 256) {
      sum += static_cast<float>(
                 load_stream_float_unsignedshort(this->values + k)) *
             static_cast<float>(load_ro_float(this->x + column(k)));
    }
  }
  return sum;
}

__device__ __forceinline__ float
csr_stream_LongRowSum_256_int_float_float_TableValues_float_unsignedshort_false::
operator()(csr_stream_IntColumn column) const {
  float sum = float(0);
  {
#pragma unroll 4
    for (int k = this->start + this->t; k < this->end; k += 256) {
      sum += static_cast<float>(
                 load_stream_float_unsignedshort(this->values + k)) *
             static_cast<float>(load_ro_float(this->x + column(k)));
    }
  }
  return sum;
}

__device__ __forceinline__ float csr_stream_NarrowColumns::with_block_absolute(
    int at, long long start,
    const csr_stream_LongRowSum_256_int_float_float_TableValues_float_unsignedshort_false
        &f) const {
  if (at >= 0) return f(csr_stream_ShortColumn{this->narrow, at});
  return f(csr_stream_IntColumn{this->wide + (-1 - at) - start});
}

__device__ __forceinline__ float group_sum_32_float(float v) {
  static_assert(32 >= 1 && 32 <= 32 && (32 & (32 - 1)) == 0,
                "group size must be a power of two no larger than a warp");

#pragma unroll
  for (int offset = 32 / 2; offset > 0; offset /= 2) {
    v += __shfl_down_sync(4294967295U, v, offset, 32);
  }
  return v;
}

__device__ __forceinline__ void
csr_stream_spmv_256_1024_1_int_float_float_false_csr_stream_NarrowColumns_TableValues_float_unsignedshort_csr_stream_InPlace_csr_stream_WholeRows(
    const int *__restrict row_blocks, const int *__restrict row_ptr,
    csr_stream_NarrowColumns columns, TableValues_float_unsignedshort values,
    const float *__restrict x, float *__restrict y, float alpha, float beta,
    csr_stream_InPlace slots, csr_stream_WholeRows lanes) {
  static_assert(256 % 32 == 0, "blocks are whole warps");
  static_assert(1024 % 256 == 0,
                "the tile is a whole number of block-wide steps");
  static_assert(1 == 1 || 1 == 2, "a lane sums one or two rows");
  __shared__ static float products[1024];
  const int first = __ldg(row_blocks + blockIdx.x);
  const int last = __ldg(row_blocks + blockIdx.x + 1);
  const int t = static_cast<int>(threadIdx.x);
  const int rows = last - first;
  const int shift = csr_stream_lanes_per_row_log2_256(rows);
  const int local = t >> shift;
  const int *__restrict bounds = row_ptr + first;
  int row_begin = 0;
  int row_end = 0;
  const unsigned int segment = lanes.lane(
      static_cast<long long>(blockIdx.x) * 256 + static_cast<long long>(t));
  if (!false && local < rows) {
    row_begin = __ldg(bounds + local);
    row_end = __ldg(bounds + local + 1);
  }
  int row2_begin = 0;
  int row2_end = 0;
  {}
  const int start = __ldg(bounds);
  const int end = __ldg(bounds + rows);
  const int code = columns.block_code(static_cast<int>(blockIdx.x));
  int b = 0;
  int e = 0;
  {}
  if (end - start <= static_cast<int>(1024)) {
    columns.with_block(
        code, static_cast<long long>(start),
        csr_stream_StreamTile_256_4_float_float_TableValues_float_unsignedshort_csr_stream_InPlace{
            values + start, x, products, static_cast<int>(end - start), t,
            slots + start});
    __syncthreads();
    {} {
      b = static_cast<int>(row_begin - start);
      e = static_cast<int>(row_end - start);
    }
    if (rows > 256 / 2) {
      if (t < rows)
        store_y_float_float(y, first + t,
                            csr_stream_strided_sum_float(products, b, e, 1),
                            alpha, beta);
      {}
      return;
    }
    const int lanes = 1 << shift;
    const int lane = t & (lanes - 1);
    float sum = local < rows
                    ? csr_stream_strided_sum_float(products, b + lane, e, lanes)
                    : float(0);
    for (int offset = lanes / 2; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(4294967295U, sum, offset, lanes);
    }
    if (lane == 0 && local < rows)
      store_y_float_float(y, first + local, sum, alpha, beta);
    return;
  }
  float sum = columns.with_block_absolute(
      code, static_cast<long long>(start),
      csr_stream_LongRowSum_256_int_float_float_TableValues_float_unsignedshort_false{
          values, x, start, end, t});
  sum = group_sum_32_float(sum);
  if (t % 32 == 0) products[t / 32] = sum;
  __syncthreads();
  if (t < 32) {
    sum = t < 256 / 32 ? products[t] : float(0);
    sum = group_sum_32_float(sum);
    if (t == 0) store_y_float_float(y, first, sum, alpha, beta);
  }
}

extern "C" __global__ void __launch_bounds__(256)
    spmv_csr_stream_b256_t1024_c16_vt16_f32(
        const int *__restrict row_blocks, const int *__restrict row_ptr,
        const int *__restrict col_base, const unsigned short *__restrict col16,
        const int *__restrict col_wide, const unsigned short *__restrict values,
        const float *__restrict values_table, const float *__restrict x,
        float *__restrict y, float alpha, float beta) {
  csr_stream_spmv_256_1024_1_int_float_float_false_csr_stream_NarrowColumns_TableValues_float_unsignedshort_csr_stream_InPlace_csr_stream_WholeRows(
      row_blocks, row_ptr, csr_stream_NarrowColumns{col_base, col16, col_wide},
      TableValues_float_unsignedshort{values, values_table}, x, y, alpha, beta,
      csr_stream_InPlace{}, csr_stream_WholeRows{});
}
