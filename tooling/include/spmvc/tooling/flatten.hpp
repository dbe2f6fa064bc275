// Flattening: a generated translation unit (templates included from in-memory headers) printed
// back as one standalone CUDA file with no templates, for users who read, diff or hand-tune it.
#pragma once

#include "spmvc/kernel.hpp"

namespace spmvc::tooling {

/// How flatten() prints.
struct FlattenOptions {
  bool format = true;  ///< run clang-format (Google style) over the result
  /// Print each free helper with one exit at its call sites (plain blocks) instead of as a
  /// separate function; helpers with early returns and struct member functions stay functions.
  bool inline_helpers = false;
};

/// Parses `src` with Clang's CUDA front end (no CUDA headers: a small prelude declares the
/// intrinsics the templates use) and prints every extern "C" entry point of the unit (those
/// src.launches() names, in launch order, then any other it defines), every function template
/// specialisation they reach as a plain `__device__ __forceinline__` function and every struct
/// their code uses as a plain struct: template parameters replaced by their values,
/// `if constexpr` and constant conditionals folded to the branch taken, canonical types,
/// `#pragma unroll` kept, namespace-scope tables and the row map's pointer declared. The entry
/// points keep their names, signatures and `__launch_bounds__`, so the result replaces `src` as
/// is: the returned KernelSource equals `src` but for `source` (and `file_name`, suffixed
/// `.flat.cu`), and has no headers. A source Clang rejects is an InternalError carrying the
/// diagnostics; so is a construct the printer cannot write yet, named with its file and line.
KernelSource flatten(const KernelSource& src, const FlattenOptions& options = {});

}  // namespace spmvc::tooling
