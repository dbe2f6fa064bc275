// NVRTC: generated source -> CUBIN for one GPU architecture. Needs no GPU and no driver.
#pragma once

#include <string>
#include <vector>

#include "spmvc/kernel.hpp"

namespace spmvc::runtime {

/// A compiled kernel binary and what ptxas said about it.
struct Cubin {
  std::vector<char> image;  ///< the CUBIN (ELF) bytes
  std::string log;          ///< NVRTC/ptxas log (resource usage lines included)
  int registers = -1;       ///< from the ptxas log; -1 if absent
  int spill_store_bytes = -1;
  int spill_load_bytes = -1;
  int stack_bytes = -1;
};

/// "sm_90" for compute capability 9.0.
std::string arch_name(int cc_major, int cc_minor);
/// NVRTC's version as "13.0".
std::string nvrtc_version();
/// Architectures this NVRTC can target, e.g. {75, 80, ..., 120}.
std::vector<int> nvrtc_supported_archs();

/// Compiles `src` to a CUBIN for `arch` ("sm_90"). Adds `-arch=<arch>` and `--ptxas-options=-v`
/// to src.options; supplies src.headers in memory. On failure throws CompileError with the log,
/// the full option list, and the path where the source was written: $SPMVC_DUMP_DIR if set,
/// else the system temporary directory (`spmvc-dump/<file_name>`, its headers at their include
/// names, and `<file_name>.log` with the options and log). A rejected option is a CompileError
/// too; an arch not of the form sm_XY is an InputError; NVRTC API failures are DeviceError.
Cubin compile_cubin(const KernelSource& src, const std::string& arch);

/// Parses ptxas "-v" output lines into `out` (registers, spills, stack).
void parse_ptxas_log(const std::string& log, Cubin& out);

}  // namespace spmvc::runtime
