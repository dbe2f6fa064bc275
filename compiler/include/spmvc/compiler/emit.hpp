// Offline emission: everything needed to rebuild and rerun one plan with plain nvcc.
//
//   DIR/<kernel>.cu        the generated translation unit
//   DIR/spmvc/*.cuh        the templates it includes
//   DIR/matrix.bin         the encoded matrix (format below)
//   DIR/y_ref.bin          the host reference y for the test vector, fp64
//   DIR/harness.cu         loads matrix.bin, runs the kernel on the test vector, reports the
//                          relative error against y_ref.bin and a checksum of y
//   DIR/plan.json, DIR/README.txt
//
// matrix.bin: "SPMVCENC" | u32 version (1) | u32 array count | i64 nrows | i64 ncols | i64 nnz |
// u32 precision (0 f64, 1 f32, 2 f32acc64) | u32 0 | per array: char name[32] | u32 element type
// (ElemType order) | u32 element bytes | i64 count | the elements. Little-endian.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::codegen {

inline constexpr std::uint32_t kEncodedFileVersion = 1;

/// Writes the files above into `dir` (created if needed); returns the paths written.
std::vector<std::filesystem::path> emit(const Plan& plan, const Encoded& encoded,
                                        const KernelSource& source,
                                        const std::vector<double>& y_reference,
                                        const std::filesystem::path& dir);

/// The harness source for `source` over `encoded` (exposed for tests).
std::string harness_source(const Encoded& encoded, const KernelSource& source);

/// Serialises / reads back `matrix.bin`.
void write_encoded(const Encoded& encoded, const std::filesystem::path& path);
Encoded read_encoded(const std::filesystem::path& path);

}  // namespace spmvc::codegen
