// Explain: a static report on a generated kernel, read from its AST: what each parameter is for,
// every global-memory access and loop, and the bytes per nonzero the kernel moves, set beside the
// planner's byte model and NVRTC's resource report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spmvc/kernel.hpp"

namespace spmvc::tooling {

/// An entry-point parameter and the role its uses give it.
struct ParamRole {
  std::string name;
  std::string type;  ///< canonical, e.g. `const double *__restrict`
  std::string role;  ///< e.g. "row pointer", "column indices", "x (gathered)"
};

/// One global-memory load or store in the source (after constant folding).
struct AccessSite {
  std::string array;         ///< the entry parameter the address derives from
  bool store = false;        ///< a write (a read-modify-write appears as a load and a store)
  std::string element_type;  ///< what one access moves: `uint4` for a 16-byte vector load
  int bytes = 0;             ///< bytes one access moves
  bool per_nonzero = false;  ///< inside a loop whose trip count depends on the row pointer
  bool gather = false;       ///< the address depends on a loaded value (x[col])
  std::string where;         ///< function and file:line
};

/// A loop, with its trip count when constant after folding.
struct LoopSite {
  std::string where;
  std::optional<std::int64_t> trip_count;
  bool per_nonzero = false;
  std::string unroll;  ///< "#pragma unroll" / "#pragma unroll 4", or empty
};

/// A __shared__ array.
struct SharedArray {
  std::string name;
  std::int64_t bytes = 0;
};

/// The matrix a kernel runs on, for amortising per-row bytes over nonzeros.
struct MatrixShape {
  std::int64_t nrows = 0;
  std::int64_t nnz = 0;         ///< true nonzeros
  std::int64_t stored_nnz = 0;  ///< entries stored in the per-nonzero arrays (padding included)
};

/// What ptxas reported for the kernel (NVRTC, no GPU needed).
struct Resources {
  std::string arch;
  int registers = -1;
  int spill_store_bytes = -1;
  int spill_load_bytes = -1;
  int stack_bytes = -1;
  int shared_bytes = -1;
};

/// The report. Byte model: every matrix array is read once. Arrays loaded inside the per-nonzero
/// loop cost their element size per stored nonzero; arrays loaded outside it but not gathered
/// (the row pointer) cost their element size per row, plus one. x and y are not matrix bytes.
struct ExplainReport {
  std::string kernel_name;
  int launch_bounds = 0;  ///< 0 when absent
  std::vector<ParamRole> params;
  std::vector<AccessSite> accesses;
  std::vector<LoopSite> loops;
  std::vector<SharedArray> shared;
  int atomics = 0;           ///< atomic call sites
  int shuffles = 0;          ///< warp shuffle call sites
  double nonzero_bytes = 0;  ///< matrix bytes per stored nonzero
  double row_bytes = 0;      ///< matrix bytes per row (+1)
  std::optional<MatrixShape> shape;
  std::optional<double> planner_bytes_per_nonzero;  ///< the format's Cost::matrix_bytes / nnz
  std::optional<Resources> resources;
  /// Matrix bytes per true nonzero under the model above; nonzero_bytes without a shape.
  double matrix_bytes_per_nonzero() const;
};

/// What explain() looks at besides the source.
struct ExplainOptions {
  std::optional<MatrixShape> shape;
  std::string arch = "sm_90";  ///< NVRTC target for the resource report; empty: no compile
  std::vector<std::string> include_dirs;  ///< for a source read from disk with its headers
  /// The matrix the unit was generated for (explain_unit): array sizes and the value table.
  /// Not owned; must outlive the call.
  const Encoded* encoded = nullptr;
  /// The plan's format name ("csr", "bro_ell", ...): names why explain and the model differ.
  std::string format;
  std::optional<double> planner_bytes_per_nonzero;  ///< the format's Cost::matrix_bytes / nnz
};

/// One array of the encoded matrix and which kernels of the unit read or write it.
struct ArrayUse {
  std::string name;
  std::string type;  ///< element type, e.g. "u16"
  std::int64_t elements = 0;
  std::int64_t bytes = 0;
  bool scratch = false;                          ///< workspace the kernels write, not matrix data
  std::vector<std::string> read_by, written_by;  ///< kernel names
};

/// Data the unit carries in its own source: a __constant__ or constexpr table, a width pattern
/// passed as template arguments, or the value table of coded values (an array, shown in full).
struct BakedData {
  std::string name;
  std::string what;     ///< e.g. "__constant__ unsigned char[5]"
  std::string content;  ///< the values, comma-separated (long ones elided in the middle)
};

/// A whole unit: every kernel in launch order (then any it defines but does not launch), and
/// the matrix bytes of one multiply.
struct UnitReport {
  std::vector<ExplainReport> kernels;
  std::vector<ArrayUse> arrays;  ///< with options.encoded
  std::vector<BakedData> baked;
  std::optional<MatrixShape> shape;
  /// Bytes of the matrix arrays some kernel reads (each once) per true nonzero; with
  /// options.encoded and a shape.
  std::optional<double> bytes_per_nonzero;
  std::optional<double> planner_bytes_per_nonzero;
  /// Why bytes_per_nonzero and the planner's figure differ, when they do (empty when they agree).
  std::string difference;
  bool agrees() const;
};

/// Every kernel of `src`: src.launches() in order when src names its entry points (a generated
/// unit: roles from its parameter list), else every extern "C" __global__ definition (a file
/// from disk: roles from the uses). InternalError when Clang rejects the source; CompileError
/// when NVRTC does.
UnitReport explain_unit(const KernelSource& src, const ExplainOptions& options = {});

/// Parses `src` (see flatten()) and reports on its entry point: src.kernel_name, or the only
/// extern "C" __global__ definition when that is empty. InternalError when Clang rejects the
/// source; CompileError when NVRTC does.
ExplainReport explain(const KernelSource& src, const ExplainOptions& options = {});

/// The report as text for a person.
std::string to_report(const ExplainReport& r);
/// The report as JSON for tools.
std::string to_json(const ExplainReport& r);
/// The unit's report as text: each kernel's, then the arrays, baked data and bytes.
std::string to_report(const UnitReport& r);
/// The unit's report as JSON.
std::string to_json(const UnitReport& r);

}  // namespace spmvc::tooling
