// matrix:  216 x 216, 1296 nonzeros; rows 4..7 (mean 6.00, sd 0.82), 0 empty
// plan:    bro_hyb [K=7 h=32 sym=32 T=1 b=256 u=1 tab=2 I=1024 val=2], f64, reorder none
// model:   7024 bytes per multiply, 9.64 us predicted
// why:     parameters forced by the caller
//
// Flattened by `spmvc emit --flatten`: each function the entry points reach, printed
// with compile-time parameters as values and only the branches they select.
// Standalone: it needs no spmvc header.

extern "C" __device__ int __nvvm_reflect(const char *);

struct TableValues_double_unsignedchar;
struct bro_WidthPattern_8_6_3_6_6_6_5;
struct bro_SymbolStream_unsignedint_32_false;
struct bro_BitReader_32;

struct TableValues_double_unsignedchar {
  const unsigned char *__restrict code;
  const double *__restrict table;
  __device__ TableValues_double_unsignedchar operator+(int i) const;
  __device__ TableValues_double_unsignedchar operator+(long long i) const;
};

struct bro_WidthPattern_8_6_3_6_6_6_5 {};

struct bro_SymbolStream_unsignedint_32_false {
  const unsigned int *__restrict p;
  __device__ bro_SymbolStream_unsignedint_32_false(const unsigned int *start);
  __device__ unsigned int operator()();
};

struct bro_BitReader_32 {
  unsigned long long window = 0;
  int left = 0;
  __device__ unsigned int take(int bits,
                               bro_SymbolStream_unsignedint_32_false &next);
};

__device__ __forceinline__ void allow_next_launch() {
  if (__nvvm_reflect("__CUDA_ARCH") >= 900)
    asm volatile("griddepcontrol.launch_dependents;");
}

__device__ __forceinline__ unsigned int load_stream_unsignedint(
    const unsigned int *p) {
  return __ldcs(p);
}

__device__ __forceinline__ unsigned int
bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_0_unsignedint_2(
    const unsigned int (&sym)[2]) {
  static_assert(8 >= 1 && 8 <= 32, "widths are 1..32 bits");
  {
    return static_cast<unsigned int>(static_cast<unsigned int>(sym[0] << 0) >>
                                     (32 - 8));
  }
}

__device__ __forceinline__ double load_stream_double_unsignedchar(
    const TableValues_double_unsignedchar &p) {
  return __ldg(p.table + __ldcs(p.code));
}

__device__ __forceinline__ TableValues_double_unsignedchar
TableValues_double_unsignedchar::operator+(int i) const {
  return TableValues_double_unsignedchar{this->code + i, this->table};
}

__device__ __forceinline__ double load_ro_double(const double *p) {
  return __ldg(p);
}

__device__ __forceinline__ unsigned int
bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_1_unsignedint_2(
    const unsigned int (&sym)[2]) {
  static_assert(6 >= 1 && 6 <= 32, "widths are 1..32 bits");
  {
    return static_cast<unsigned int>(static_cast<unsigned int>(sym[0] << 8) >>
                                     (32 - 6));
  }
}

__device__ __forceinline__ unsigned int
bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_2_unsignedint_2(
    const unsigned int (&sym)[2]) {
  static_assert(3 >= 1 && 3 <= 32, "widths are 1..32 bits");
  {
    return static_cast<unsigned int>(static_cast<unsigned int>(sym[0] << 14) >>
                                     (32 - 3));
  }
}

__device__ __forceinline__ unsigned int
bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_3_unsignedint_2(
    const unsigned int (&sym)[2]) {
  static_assert(6 >= 1 && 6 <= 32, "widths are 1..32 bits");
  {
    return static_cast<unsigned int>(static_cast<unsigned int>(sym[0] << 17) >>
                                     (32 - 6));
  }
}

__device__ __forceinline__ unsigned int
bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_4_unsignedint_2(
    const unsigned int (&sym)[2]) {
  static_assert(6 >= 1 && 6 <= 32, "widths are 1..32 bits");
  {
    return static_cast<unsigned int>(static_cast<unsigned int>(sym[0] << 23) >>
                                     (32 - 6));
  }
}

__device__ __forceinline__ unsigned int
bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_5_unsignedint_2(
    const unsigned int (&sym)[2]) {
  static_assert(6 >= 1 && 6 <= 32, "widths are 1..32 bits");
  {
    static_assert(0 + 1 < 2, "a field spanning two symbols has both loaded");
    return static_cast<unsigned int>(
        (static_cast<unsigned int>(sym[0] << 29) >> (32 - 6)) |
        (sym[0 + 1] >> (2 * 32 - 29 - 6)));
  }
}

__device__ __forceinline__ unsigned int
bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_6_unsignedint_2(
    const unsigned int (&sym)[2]) {
  static_assert(5 >= 1 && 5 <= 32, "widths are 1..32 bits");
  {
    return static_cast<unsigned int>(static_cast<unsigned int>(sym[1] << 3) >>
                                     (32 - 5));
  }
}

__device__ __forceinline__ void
bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_7_unsignedint_2_TableValues_double_unsignedchar_double_double(
    const unsigned int (&sym)[2], int ncol, int col,
    TableValues_double_unsignedchar v, const double *__restrict x,
    double &sum) {
  {}
}

__device__ __forceinline__ void
bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_6_unsignedint_2_TableValues_double_unsignedchar_double_double(
    const unsigned int (&sym)[2], int ncol, int col,
    TableValues_double_unsignedchar v, const double *__restrict x,
    double &sum) {
  {
    const unsigned int d =
        bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_6_unsignedint_2(sym);
    {
      if (6 < ncol && d != 0U) {
        col += static_cast<int>(d);
        sum +=
            static_cast<double>(load_stream_double_unsignedchar(v + 6 * 32)) *
            static_cast<double>(load_ro_double(x + col));
      }
    }
    bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_7_unsignedint_2_TableValues_double_unsignedchar_double_double(
        sym, ncol, col, v, x, sum);
  }
}

__device__ __forceinline__ void
bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_5_unsignedint_2_TableValues_double_unsignedchar_double_double(
    const unsigned int (&sym)[2], int ncol, int col,
    TableValues_double_unsignedchar v, const double *__restrict x,
    double &sum) {
  {
    const unsigned int d =
        bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_5_unsignedint_2(sym);
    {
      if (5 < ncol && d != 0U) {
        col += static_cast<int>(d);
        sum +=
            static_cast<double>(load_stream_double_unsignedchar(v + 5 * 32)) *
            static_cast<double>(load_ro_double(x + col));
      }
    }
    bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_6_unsignedint_2_TableValues_double_unsignedchar_double_double(
        sym, ncol, col, v, x, sum);
  }
}

__device__ __forceinline__ void
bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_4_unsignedint_2_TableValues_double_unsignedchar_double_double(
    const unsigned int (&sym)[2], int ncol, int col,
    TableValues_double_unsignedchar v, const double *__restrict x,
    double &sum) {
  {
    const unsigned int d =
        bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_4_unsignedint_2(sym);
    {
      if (4 < ncol && d != 0U) {
        col += static_cast<int>(d);
        sum +=
            static_cast<double>(load_stream_double_unsignedchar(v + 4 * 32)) *
            static_cast<double>(load_ro_double(x + col));
      }
    }
    bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_5_unsignedint_2_TableValues_double_unsignedchar_double_double(
        sym, ncol, col, v, x, sum);
  }
}

__device__ __forceinline__ void
bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_3_unsignedint_2_TableValues_double_unsignedchar_double_double(
    const unsigned int (&sym)[2], int ncol, int col,
    TableValues_double_unsignedchar v, const double *__restrict x,
    double &sum) {
  {
    const unsigned int d =
        bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_3_unsignedint_2(sym);
    {
      if (3 < ncol && d != 0U) {
        col += static_cast<int>(d);
        sum +=
            static_cast<double>(load_stream_double_unsignedchar(v + 3 * 32)) *
            static_cast<double>(load_ro_double(x + col));
      }
    }
    bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_4_unsignedint_2_TableValues_double_unsignedchar_double_double(
        sym, ncol, col, v, x, sum);
  }
}

__device__ __forceinline__ void
bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_2_unsignedint_2_TableValues_double_unsignedchar_double_double(
    const unsigned int (&sym)[2], int ncol, int col,
    TableValues_double_unsignedchar v, const double *__restrict x,
    double &sum) {
  {
    const unsigned int d =
        bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_2_unsignedint_2(sym);
    {
      if (2 < ncol && d != 0U) {
        col += static_cast<int>(d);
        sum +=
            static_cast<double>(load_stream_double_unsignedchar(v + 2 * 32)) *
            static_cast<double>(load_ro_double(x + col));
      }
    }
    bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_3_unsignedint_2_TableValues_double_unsignedchar_double_double(
        sym, ncol, col, v, x, sum);
  }
}

__device__ __forceinline__ void
bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_1_unsignedint_2_TableValues_double_unsignedchar_double_double(
    const unsigned int (&sym)[2], int ncol, int col,
    TableValues_double_unsignedchar v, const double *__restrict x,
    double &sum) {
  {
    const unsigned int d =
        bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_1_unsignedint_2(sym);
    {
      if (1 < ncol && d != 0U) {
        col += static_cast<int>(d);
        sum +=
            static_cast<double>(load_stream_double_unsignedchar(v + 1 * 32)) *
            static_cast<double>(load_ro_double(x + col));
      }
    }
    bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_2_unsignedint_2_TableValues_double_unsignedchar_double_double(
        sym, ncol, col, v, x, sum);
  }
}

__device__ __forceinline__ void
bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_0_unsignedint_2_TableValues_double_unsignedchar_double_double(
    const unsigned int (&sym)[2], int ncol, int col,
    TableValues_double_unsignedchar v, const double *__restrict x,
    double &sum) {
  {
    const unsigned int d =
        bro_baked_field_bro_WidthPattern_8_6_3_6_6_6_5_32_0_unsignedint_2(sym);
    {
      if (0 < ncol && d != 0U) {
        col += static_cast<int>(d);
        sum +=
            static_cast<double>(load_stream_double_unsignedchar(v + 0 * 32)) *
            static_cast<double>(load_ro_double(x + col));
      }
    }
    bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_1_unsignedint_2_TableValues_double_unsignedchar_double_double(
        sym, ncol, col, v, x, sum);
  }
}

__device__ __forceinline__ TableValues_double_unsignedchar
TableValues_double_unsignedchar::operator+(long long i) const {
  return TableValues_double_unsignedchar{this->code + i, this->table};
}

__device__ __forceinline__ double group_sum_1_double(double v) {
  static_assert(1 >= 1 && 1 <= 32 && (1 & (1 - 1)) == 0,
                "group size must be a power of two no larger than a warp");

#pragma unroll
  for (int offset = 1 / 2; offset > 0; offset /= 2) {
    v += __shfl_down_sync(4294967295U, v, offset, 1);
  }
  return v;
}

__device__ __forceinline__ long long y_row(long long row) { return row; }

__device__ __forceinline__ void store_y_double_double(double *y, long long row,
                                                      double sum, double alpha,
                                                      double beta) {
  const long long i = y_row(row);
  double out = alpha * sum;
  if (beta != double(0)) out += beta * static_cast<double>(y[i]);
  __stcs(y + i, static_cast<double>(out));
}

__device__ __forceinline__ void
bro_spmv_baked_32_1_32_256_bro_WidthPattern_8_6_3_6_6_6_5_double_double_TableValues_double_unsignedchar(
    long long nrows, const long long *__restrict col_ptr,
    const long long *__restrict sym_ptr, const unsigned int *__restrict symbols,
    TableValues_double_unsignedchar values, const double *__restrict x,
    double *__restrict y, double alpha, double beta) {
  static_assert(32 % 32 == 0,
                "a slice is whole warps (uniform decode branches)");
  static_assert(256 % 32 == 0, "a slice stays inside one block");
  const long long tid = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  const long long slice = tid / 32;
  const int local = static_cast<int>(tid % 32);
  const long long row = slice * 32 + local / 1;
  const long long nslices = (nrows + 32 - 1) / 32;
  double sum = double(0);
  if (slice < nslices) {
    const long long cbase = col_ptr[slice];
    const int ncol = static_cast<int>(col_ptr[slice + 1] - cbase);
    const unsigned int *__restrict s = symbols + sym_ptr[slice] * 32 + local;
    unsigned int sym[2];

#pragma unroll
    for (int m = 0; m < 2; ++m) sym[m] = load_stream_unsignedint(s + m * 32);
    bro_baked_steps_bro_WidthPattern_8_6_3_6_6_6_5_32_32_0_unsignedint_2_TableValues_double_unsignedchar_double_double(
        sym, ncol, -1, values + cbase * 32 + local, x, sum);
  }
  sum = group_sum_1_double(sum);
  if (local % 1 == 0 && row < nrows)
    store_y_double_double(y, row, sum, alpha, beta);
}

__device__ __forceinline__ void wait_for_previous_launch() {
  if (__nvvm_reflect("__CUDA_ARCH") >= 900)
    asm volatile("griddepcontrol.wait;" : : : "memory");
}

__device__ __forceinline__ long long load_ro_longlong(const long long *p) {
  return __ldg(p);
}

__device__ __forceinline__ unsigned char load_ro_unsignedchar(
    const unsigned char *p) {
  return __ldg(p);
}

__device__ __forceinline__
bro_SymbolStream_unsignedint_32_false::bro_SymbolStream_unsignedint_32_false(
    const unsigned int *start)
    : p(start) {}

__device__ __forceinline__ int load_ro_int(const int *p) { return __ldg(p); }

__device__ __forceinline__ unsigned int
bro_SymbolStream_unsignedint_32_false::operator()() {
  const unsigned int w = load_stream_unsignedint(this->p);
  this->p += 32;
  return w;
}

__device__ __forceinline__ unsigned int bro_BitReader_32::take(
    int bits, bro_SymbolStream_unsignedint_32_false &next) {
  if (bits > this->left) {
    this->window |= static_cast<unsigned long long>(next())
                    << (32 - this->left);
    this->left += 32;
  }
  const unsigned int d = static_cast<unsigned int>(this->window >> (64 - bits));
  this->window <<= bits;
  this->left -= bits;
  return d;
}

__device__ __forceinline__ int load_stream_int(const int *p) {
  return __ldcs(p);
}

__device__ __forceinline__ void
bro_spmv_coo_1024_32_256_double_double_TableValues_double_unsignedchar(
    const long long *__restrict count, const int *__restrict row_base,
    const unsigned char *__restrict widths, const long long *__restrict sym_ptr,
    const unsigned int *__restrict symbols, const int *__restrict col_idx,
    TableValues_double_unsignedchar values, const double *__restrict x,
    double *__restrict y, double alpha) {
  static_assert(1024 % 32 == 0, "an interval is 32 lanes' runs");
  static_assert(256 % 32 == 0, "blocks are whole warps");
  const long long warp =
      (static_cast<long long>(blockIdx.x) * 256 + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const long long entries = load_ro_longlong(count);
  if (warp >= (entries + 1024 - 1) / 1024) return;
  const long long base = warp * 1024;
  const int first_bits = load_ro_unsignedchar(widths + 2 * warp);
  const int rest_bits = load_ro_unsignedchar(widths + 2 * warp + 1);
  bro_SymbolStream_unsignedint_32_false next(symbols + sym_ptr[warp] * 32 +
                                             lane);
  bro_BitReader_32 reader;
  int row = load_ro_int(row_base + warp);
  if (first_bits != 0) row += static_cast<int>(reader.take(first_bits, next));
  const long long left = entries - (base + static_cast<long long>(lane) * 32);
  const int valid = left <= 0 ? 0 : (left >= 32 ? 32 : static_cast<int>(left));
  double sum = double(0);

#pragma unroll 4
  for (int e = 0; e < 32; ++e) {
    if (e > 0 && rest_bits != 0) {
      const unsigned int d = reader.take(rest_bits, next);
      if (d != 0U) {
        atomicAdd(y + y_row(row), static_cast<double>(alpha * sum));
        sum = double(0);
        row += static_cast<int>(d);
      }
    }
    if (e < valid) {
      const long long i = base + static_cast<long long>(e) * 32 + lane;
      sum +=
          static_cast<double>(load_stream_double_unsignedchar(values + i)) *
          static_cast<double>(load_ro_double(x + load_stream_int(col_idx + i)));
    }
  }
  if (valid > 0) atomicAdd(y + y_row(row), static_cast<double>(alpha * sum));
}

extern "C" __global__ void __launch_bounds__(256)
    spmv_bro_hyb_k7_h32_s32_t1_b256_u1_baked_i1024_vt8_f64(
        long long nrows, const long long *__restrict col_ptr,
        const long long *__restrict sym_ptr,
        const unsigned int *__restrict symbols,
        const unsigned char *__restrict values,
        const double *__restrict values_table, const double *__restrict x,
        double *__restrict y, double alpha, double beta) {
  allow_next_launch();
  bro_spmv_baked_32_1_32_256_bro_WidthPattern_8_6_3_6_6_6_5_double_double_TableValues_double_unsignedchar(
      nrows, col_ptr, sym_ptr, symbols,
      TableValues_double_unsignedchar{values, values_table}, x, y, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(256)
    spmv_bro_hyb_k7_h32_s32_t1_b256_u1_baked_i1024_vt8_f64_coo(
        const long long *__restrict count, const int *__restrict row_base,
        const unsigned char *__restrict widths,
        const long long *__restrict sym_ptr,
        const unsigned int *__restrict symbols, const int *__restrict col_idx,
        const unsigned char *__restrict values,
        const double *__restrict values_table, const double *__restrict x,
        double *__restrict y, double alpha) {
  wait_for_previous_launch();
  bro_spmv_coo_1024_32_256_double_double_TableValues_double_unsignedchar(
      count, row_base, widths, sym_ptr, symbols, col_idx,
      TableValues_double_unsignedchar{values, values_table}, x, y, alpha);
}
