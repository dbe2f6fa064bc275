// Device helpers shared by every spmvc kernel template.
#pragma once

#include "spmvc/value_round.cuh"

// Row map: a unit generated for a reordered matrix defines SPMVC_ROW_MAP before its includes.
// Its kernels then compute rows in the reordered order and write each to the caller's row
// spmvc_row_map[r] (set by the runtime, or by an emitted harness, before the first launch), so y
// needs no permuting pass. Every write of y goes through spmvc::y_row().
#ifdef SPMVC_ROW_MAP
extern "C" {
__device__ const int* spmvc_row_map;
}
#endif

// NVVM's reflection (NVRTC declares it; nvcc and Clang need the declaration): the target's
// architecture, folded at compile time (wait_for_previous_launch below).
extern "C" __device__ int __nvvm_reflect(const char*);

namespace spmvc {

/// The caller's index of the kernel's output row `row`.
__device__ __forceinline__ long long y_row(long long row) {
#ifdef SPMVC_ROW_MAP
  return __ldg(spmvc_row_map + row);
#else
  return row;
#endif
}

/// Programmatic dependent launch (sm_90 and up). A unit with several launches per multiply
/// begins each launch after the first with wait_for_previous_launch(), which returns once the
/// launch before it has ended and its writes are visible: the runtime may then start that launch
/// while the previous one is still running, and its blocks are resident when the wait returns
/// instead of being launched after it. allow_next_launch() lets the next launch start once every
/// block of this one has run it. Both do nothing where the launch was not made that way, and
/// below sm_90. The architecture is tested with NVVM's reflection, which the compiler folds to
/// the target's (900 for sm_90) after preprocessing: `spmvc flatten`, which preprocesses the
/// templates for sm_80, keeps the test instead of dropping the instructions.
__device__ __forceinline__ void wait_for_previous_launch() {
#if defined(__CUDA_ARCH__)
  if (__nvvm_reflect("__CUDA_ARCH") >= 900) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_next_launch() {
#if defined(__CUDA_ARCH__)
  if (__nvvm_reflect("__CUDA_ARCH") >= 900) asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/// Read-only load through the non-coherent (texture) path: x and the matrix never change while
/// a kernel runs, and this path keeps them out of the way of y's writes.
template <typename T>
__device__ __forceinline__ T load_ro(const T* p) {
  return __ldg(p);
}

// Value coding. A kernel template takes its stored values as `Values values` and reads value k
// as load_ro(values + k). Plain units pass `const Value*`; a matrix with few distinct values
// passes one of these instead, and the template's code is the same:
//   UnitValues<Value>            every stored value is 1 (pattern matrices): no array, no load
//   TableValues<Value, Code>     a Code (unsigned char or unsigned short) per stored value, the
//                                index of its value in a table of the distinct values
//   NarrowValues<Value, Stored>  each value stored as Stored (float for an fp64 matrix whose
//                                values are all exact in fp32, or rounded to fp32 when the
//                                caller asked for mixed precision), widened to Value as read
//   Bf16Values<Value>            each value stored as a bf16 word (mixed precision of an fp32
//                                operator: value_round.cuh), widened with a shift as read
// Padding slots are masked by the templates' index checks, never by a zero value, so their codes
// may point at any table entry.
template <typename Value>
struct UnitValues {
  template <typename I>
  __device__ __forceinline__ UnitValues operator+(I) const {
    return *this;
  }
};

template <typename Value, typename Code>
struct TableValues {
  const Code* __restrict__ code;
  const Value* __restrict__ table;
  template <typename I>
  __device__ __forceinline__ TableValues operator+(I i) const {
    return TableValues{code + i, table};
  }
};

template <typename Value, typename Stored>
struct NarrowValues {
  const Stored* __restrict__ stored;
  template <typename I>
  __device__ __forceinline__ NarrowValues operator+(I i) const {
    return NarrowValues{stored + i};
  }
};

template <typename Value>
struct Bf16Values {
  const unsigned short* __restrict__ stored;
  template <typename I>
  __device__ __forceinline__ Bf16Values operator+(I i) const {
    return Bf16Values{stored + i};
  }
};

template <typename Value>
__device__ __forceinline__ Value load_ro(const UnitValues<Value>&) {
  return Value(1);
}

/// The table is a few KiB at most for 8-bit codes: after the first reads it is served by L1.
template <typename Value, typename Code>
__device__ __forceinline__ Value load_ro(const TableValues<Value, Code>& p) {
  return __ldg(p.table + __ldg(p.code));
}

/// The widening is exact; the stored values are the matrix's where fp32 holds them exactly
/// (value coding), or their rounding when the caller asked for mixed precision.
template <typename Value, typename Stored>
__device__ __forceinline__ Value load_ro(const NarrowValues<Value, Stored>& p) {
  return static_cast<Value>(__ldg(p.stored));
}

/// A bf16 word is the high half of the fp32 word it stands for.
template <typename Value>
__device__ __forceinline__ Value load_ro(const Bf16Values<Value>& p) {
  return static_cast<Value>(__uint_as_float(bf16_widen_bits(__ldg(p.stored))));
}

// x read in two parts (codegen::split_x_reads). A unit whose columns were renumbered by the hub
// order reads the hub columns, gathered into x_hub before the multiply, from there, and every
// other column from the caller's x in place: its column indices name column c of x for c below
// `direct`, and hub j as direct + j. So only the hubs are gathered, not all of x. A template
// that supports it takes x as `X x` and reads column c as load_ro(x + c), whether X is a plain
// `const Value*` or this.
template <typename Value>
struct SplitX {
  const Value* __restrict__ x;
  const Value* __restrict__ hubs;
  long long direct;
  template <typename I>
  __device__ __forceinline__ const Value* operator+(I c) const {
    return c < direct ? x + c : hubs + (c - direct);
  }
};

/// A matrix stream's load (column indices, stored values: read once per multiply), marked
/// evict-first (ld.global.cs) so that it does not push x's lines out of L1 while x is gathered.
/// Coded values stream their codes; the table is looked up as load_ro does. The overloads repeat
/// load_ro's rather than share one template with a load policy: tooling/flatten's output of such
/// a template (an auto return, an if constexpr per load) no longer compiled to the kernel's own
/// registers and instructions, which its test requires.
template <typename T>
__device__ __forceinline__ T load_stream(const T* p) {
  return __ldcs(p);
}
template <typename Value>
__device__ __forceinline__ Value load_stream(const UnitValues<Value>&) {
  return Value(1);
}
template <typename Value, typename Code>
__device__ __forceinline__ Value load_stream(const TableValues<Value, Code>& p) {
  return __ldg(p.table + __ldcs(p.code));
}
template <typename Value, typename Stored>
__device__ __forceinline__ Value load_stream(const NarrowValues<Value, Stored>& p) {
  return static_cast<Value>(__ldcs(p.stored));
}
template <typename Value>
__device__ __forceinline__ Value load_stream(const Bf16Values<Value>& p) {
  return static_cast<Value>(__uint_as_float(bf16_widen_bits(__ldcs(p.stored))));
}

/// Sums `v` over each aligned group of kGroup lanes (kGroup a power of two <= 32). Every lane of
/// the warp must call it; lane 0 of each group receives the group's total.
template <int kGroup, typename Acc>
__device__ __forceinline__ Acc group_sum(Acc v) {
  static_assert(kGroup >= 1 && kGroup <= 32 && (kGroup & (kGroup - 1)) == 0,
                "group size must be a power of two no larger than a warp");
#pragma unroll
  for (int offset = kGroup / 2; offset > 0; offset /= 2) {
    v += __shfl_down_sync(0xffffffffu, v, offset, kGroup);
  }
  return v;
}

/// y = alpha*sum + beta*y, without reading y when beta is zero (y may hold garbage then, as
/// BLAS allows). y is stored evict-first (st.global.cs): written once per multiply, its lines
/// then leave the L2 to x's first (on the H200: G3_circuit x16M fp32 3.6% and email-Enron x16M
/// fp64 1.5% less time, ten other picks within 0.6%; bench/results/2026-12-01-h200-y-evict-first/).
template <typename Value, typename Acc>
__device__ __forceinline__ void store_y(Value* y, long long row, Acc sum, Acc alpha, Acc beta) {
  const long long i = y_row(row);
  Acc out = alpha * sum;
  if (beta != Acc(0)) out += beta * static_cast<Acc>(y[i]);
  __stcs(y + i, static_cast<Value>(out));
}

}  // namespace spmvc
