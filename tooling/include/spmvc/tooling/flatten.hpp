// Flattening: a generated translation unit (templates included from in-memory headers) printed
// back as one standalone CUDA file with no templates, for users who read, diff or hand-tune it.
#pragma once

#include "spmvc/kernel.hpp"

namespace spmvc::tooling {

/// How flatten() prints.
struct FlattenOptions {
  bool format = true;  ///< run clang-format (Google style) over the result
  /// Print each helper's body at its call sites (GNU statement expressions `({ ... })`, which
  /// nvcc and NVRTC accept) instead of as separate functions: one function, read top to bottom.
  bool inline_helpers = false;
};

/// Parses `src` with Clang's CUDA front end (no CUDA headers: a small prelude declares the
/// intrinsics the templates use) and prints the extern "C" entry point and every function
/// template specialisation it reaches as plain `__device__ __forceinline__` functions: template
/// parameters replaced by their values, `if constexpr` and constant conditionals folded to the
/// branch taken, canonical types, `#pragma unroll` kept. The entry point keeps its name,
/// signature and `__launch_bounds__`, so the result replaces `src` as is: the returned
/// KernelSource equals `src` but for `source` (and `file_name`, suffixed `.flat.cu`), and has no
/// headers. A source Clang rejects is an InternalError carrying the diagnostics.
KernelSource flatten(const KernelSource& src, const FlattenOptions& options = {});

}  // namespace spmvc::tooling
