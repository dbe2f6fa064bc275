// Internal to tooling/: parsing a generated translation unit with Clang's CUDA front end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "spmvc/kernel.hpp"

namespace clang {
class ASTUnit;
class FunctionDecl;
}  // namespace clang

namespace spmvc::tooling::detail {

/// Parses `src` (its headers supplied in memory) in CUDA device mode with no CUDA headers: a
/// prelude declares the qualifiers, built-in variables and intrinsics the templates use. Throws
/// InternalError with Clang's diagnostics when the source does not parse. `include_dirs` are
/// searched after the in-memory headers (a kernel read from disk beside its headers).
std::unique_ptr<clang::ASTUnit> parse_cuda(const KernelSource& src,
                                           const std::vector<std::string>& include_dirs = {});

/// The extern "C" __global__ definition named src.kernel_name (InternalError when absent), or
/// when the name is empty the only one (InputError when there is not exactly one).
const clang::FunctionDecl& find_entry(clang::ASTUnit& ast, const KernelSource& src);

/// The unit's extern "C" __global__ definitions: those src.launches() names, in launch order,
/// then any other it defines (hyb's COO kernel when the COO part is empty), in source order.
/// With src.kernel_name empty (a file from disk), every definition in source order.
std::vector<const clang::FunctionDecl*> entry_points(clang::ASTUnit& ast, const KernelSource& src);

}  // namespace spmvc::tooling::detail
