// Generated kernel source and the encoded matrix it runs on: what codegen hands the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmvc/plan.hpp"

namespace spmvc {

/// Element types of encoded arrays (the order is part of the matrix.bin format: append only).
enum class ElemType { i32, i64, u32, u64, f32, f64, u8, u16 };
std::string_view to_string(ElemType t);
int size_of(ElemType t);

/// std::allocator, except that elements made without a value (resize(n), vector(n)) are
/// default-initialised: for bytes, left unwritten. A 16M-nonzero encoding is hundreds of MB, and
/// zeroing it in one memset (page faults included) cost more than the encoders' own work once
/// they ran on all cores; the encoders now write every byte themselves, on the host threads.
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// Bytes that resize(n) leaves unwritten (resize(n, std::byte{0}) zeroes them).
using ByteBuffer = std::vector<std::byte, DefaultInitAllocator<std::byte>>;

/// One array of an encoded matrix, as raw little-endian bytes of `type`.
struct EncodedArray {
  std::string name;
  ElemType type = ElemType::i32;
  /// Whoever sizes it writes every byte (formats/arrays.hpp's make_array and zero_array do).
  ByteBuffer bytes;
  /// Workspace the kernels write (e.g. x gathered into a permuted order): `bytes` are its
  /// initial contents; not matrix data, so not counted in total_bytes().
  bool scratch = false;
  std::int64_t count() const { return static_cast<std::int64_t>(bytes.size()) / size_of(type); }
};

/// A matrix encoded for one plan: the arrays a kernel reads, in kernel-parameter order.
struct Encoded {
  std::string format;
  Precision precision = Precision::f64;
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  std::vector<EncodedArray> arrays;
  std::int64_t total_bytes() const;
  const EncodedArray& array(std::string_view name) const;
};

/// One parameter of a generated entry point, in order.
struct KernelParam {
  enum class Kind {
    rows,   ///< int64: number of rows
    cols,   ///< int64: number of columns
    array,  ///< const pointer to Encoded array `name`
    x,      ///< const pointer to the input vector
    y,      ///< pointer to the output vector
    alpha,  ///< scalar of the accumulation type
    beta,   ///< scalar of the accumulation type
  };
  Kind kind;
  std::string name;
};

/// One further entry point of a unit and how to launch it.
struct KernelLaunch {
  std::string entry;  ///< extern "C" name
  std::vector<KernelParam> params;
  std::int64_t grid = 1;
  int block = 256;
  std::size_t shared_bytes = 0;
};

/// A generated translation unit and how to launch its entry points: the main one (kernel_name,
/// params, grid, block), preceded by `pre_launches` and followed by `post_launches`, all on the
/// caller's stream in that order (hyb's COO part after its ELL part, a gather of x into a
/// permuted scratch array before the main kernel, ...).
struct KernelSource {
  std::string kernel_name;  ///< extern "C" entry point, e.g. spmv_csr_t8_b256_u2_f64
  std::string file_name;    ///< e.g. spmv_csr_t8_b256_u2_f64.cu
  std::string source;       ///< the translation unit
  std::vector<std::pair<std::string, std::string>> headers;  ///< (include name, text)
  std::vector<std::string> options;                          ///< NVRTC options (arch added later)
  std::vector<KernelParam> params;
  std::int64_t grid = 1;  ///< blocks
  int block = 256;        ///< threads per block
  std::size_t shared_bytes = 0;
  std::vector<KernelLaunch> pre_launches, post_launches;
  /// Every launch after the first waits inside for the one before it (griddepcontrol.wait,
  /// codegen::chain_launches), so that the runtime may launch it before that one ends
  /// (programmatic dependent launch, sm_90 and up).
  bool chained = false;
  /// Every launch in order, the main one included.
  std::vector<KernelLaunch> launches() const;
};

}  // namespace spmvc
