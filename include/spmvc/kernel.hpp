// Generated kernel source and the encoded matrix it runs on: what codegen hands the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spmvc/plan.hpp"

namespace spmvc {

enum class ElemType { i32, i64, u32, u64, f32, f64 };
std::string_view to_string(ElemType t);
int size_of(ElemType t);

/// One array of an encoded matrix, as raw little-endian bytes of `type`.
struct EncodedArray {
  std::string name;
  ElemType type = ElemType::i32;
  std::vector<std::byte> bytes;
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
    array,  ///< const pointer to Encoded array `name`
    x,      ///< const pointer to the input vector
    y,      ///< pointer to the output vector
    alpha,  ///< scalar of the accumulation type
    beta,   ///< scalar of the accumulation type
  };
  Kind kind;
  std::string name;
};

/// A generated translation unit and how to launch its entry point.
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
};

}  // namespace spmvc
