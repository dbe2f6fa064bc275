// Where compile(CsrMatrix) builds (Options::build): the host pipeline, or the GPU build of
// compile(DeviceCsr) on an uploaded copy of the matrix. Decided from the options and the
// matrix's sizes alone, so the rule is tested without a GPU (planner/build_choice.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/options.hpp"

namespace spmvc::compiler {

/// What compile(CsrMatrix) runs, and why, in words for timings().build_why and `spmvc run -v`.
struct BuildChoice {
  BuildPath path = BuildPath::host;
  std::string why;
};

/// The sizes and features of the caller's matrix the choice reads.
struct BuildSubject {
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  /// Bytes the device can allocate now (runtime::allocatable_bytes); 0: unknown, not checked.
  std::uint64_t device_bytes = 0;
};

/// Bytes of the CSR compile(CsrMatrix) uploads for its GPU build (runtime::upload_csr): 32-bit
/// offsets and columns, values in the precision's type.
double uploaded_csr_bytes(std::int64_t nrows, std::int64_t nnz, Precision precision);

/// Device memory the GPU build of compile(CsrMatrix) takes for `subject` at `precision`, about:
/// the CSR copy the operator keeps (32-bit offsets and columns, values in the precision's type)
/// and an encoding of about its size.
double gpu_build_bytes(const BuildSubject& subject, Precision precision);

/// Options::build for a matrix of `subject`'s sizes: `host` always builds on the host; `device`
/// builds on the GPU, or throws an InputError naming the option (or the size) that needs the
/// host pipeline; `automatic` builds on the GPU unless one does, and says which. cusparse
/// "always" stays on the host (the GPU build weighs cuSPARSE under "auto" only); an ordering,
/// measure mode, full inspection, mixed precision, a format (or forced parameters) with only a
/// host encoder, 64-bit row offsets, sell windows past the GPU's sort, matrices past 32-bit
/// offsets, matrices with no rows or no columns, and matrices whose GPU build would not fit the
/// device's allocatable memory (gpu_build_bytes against subject.device_bytes) do too.
BuildChoice choose_build(const Options& options, const BuildSubject& subject);

/// "auto", "host" or "device" (the CLI's --build), and back; InputError naming the text.
std::string_view to_string(BuildMode mode);
BuildMode parse_build_mode(std::string_view text);

}  // namespace spmvc::compiler
