#include "nvrtc_compiler.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

namespace fs = std::filesystem;

void check_nvrtc(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw DeviceError(call, static_cast<int>(r), nvrtcGetErrorString(r));
}

// nvrtcDestroyProgram must run on every path out of compile_cubin, exceptions included.
class ProgramGuard {
 public:
  explicit ProgramGuard(nvrtcProgram p) : p_(p) {}
  ~ProgramGuard() { nvrtcDestroyProgram(&p_); }
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;

 private:
  nvrtcProgram p_;
};

std::string program_log(nvrtcProgram prog) {
  std::size_t size = 0;
  check_nvrtc(nvrtcGetProgramLogSize(prog, &size), "nvrtcGetProgramLogSize");
  std::string log(size, '\0');
  if (size > 0) check_nvrtc(nvrtcGetProgramLog(prog, log.data()), "nvrtcGetProgramLog");
  // The size counts the terminating NUL.
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// Include names come from codegen, but a dump must never escape its directory: an absolute name
// or one with ".." is written under its last component only.
fs::path safe_relative(const std::string& name) {
  fs::path p(name);
  bool ok = !p.empty() && p.is_relative();
  for (const auto& part : p) {
    if (part == "..") ok = false;
  }
  if (ok) return p;
  fs::path leaf = p.filename();
  return leaf.empty() || leaf == ".." ? fs::path("unnamed") : leaf;
}

bool write_text(const fs::path& path, const std::string& text) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec) return false;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return static_cast<bool>(out);
}

fs::path dump_dir() {
  const char* env = std::getenv("SPMVC_DUMP_DIR");
  if (env != nullptr && *env != '\0') return env;
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return tmp / "spmvc-dump";
}

// Writes the source, its headers (at their include names, so `nvcc -I<dir>` reproduces the
// compile) and the options and log beside them. Returns the source's path, or "" if any of it
// could not be written: a failed dump must not hide the compile error it documents.
std::string dump_source(const KernelSource& src, const std::vector<std::string>& options,
                        const std::string& log) {
  const fs::path dir = dump_dir();
  const std::string file = src.file_name.empty() ? src.kernel_name + ".cu" : src.file_name;
  const fs::path source_path = dir / safe_relative(file);
  bool ok = write_text(source_path, src.source);
  for (const auto& [name, text] : src.headers) {
    ok = write_text(dir / safe_relative(name), text) && ok;
  }
  std::string notes = "options:";
  for (const auto& o : options) notes += " " + o;
  notes += "\n\n" + log + "\n";
  ok = write_text(fs::path(source_path.string() + ".log"), notes) && ok;
  return ok ? source_path.string() : std::string{};
}

// The integer that ends just before `end` in `line` (skipping spaces), or -1.
int number_before(std::string_view line, std::size_t end) {
  while (end > 0 && line[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  if (begin == end) return -1;
  int value = -1;
  std::from_chars(line.data() + begin, line.data() + end, value);
  return value;
}

// Records the number before `token` in `line`, keeping the largest seen: with several functions
// in one program the worst one decides occupancy and spilling.
void take_max(std::string_view line, std::string_view token, int& field) {
  const std::size_t pos = line.find(token);
  if (pos == std::string_view::npos) return;
  const int v = number_before(line, pos);
  if (v >= 0) field = std::max(field, v);
}

}  // namespace

std::string arch_name(int cc_major, int cc_minor) {
  return fmt::format("sm_{}{}", cc_major, cc_minor);
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return fmt::format("{}.{}", major, minor);
}

std::vector<int> nvrtc_supported_archs() {
  int n = 0;
  check_nvrtc(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<std::size_t>(std::max(n, 0)));
  if (n > 0) check_nvrtc(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

void parse_ptxas_log(const std::string& log, Cubin& out) {
  out.registers = out.spill_store_bytes = out.spill_load_bytes = out.stack_bytes = -1;
  std::string_view rest(log);
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    // "ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, ..."
    if (const std::size_t used = line.find("Used "); used != std::string_view::npos) {
      take_max(line.substr(used), " registers", out.registers);
    }
    // "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
    take_max(line, " bytes stack frame", out.stack_bytes);
    take_max(line, " bytes spill stores", out.spill_store_bytes);
    take_max(line, " bytes spill loads", out.spill_load_bytes);
  }
}

Cubin compile_cubin(const KernelSource& src, const std::string& arch) {
  // A CUBIN needs a real architecture; "compute_90" would make NVRTC emit PTX only.
  if (arch.rfind("sm_", 0) != 0) {
    throw InputError("arch", 0, fmt::format("'{}' is not a GPU architecture such as sm_90", arch));
  }
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : src.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  const std::string file = src.file_name.empty() ? src.kernel_name + ".cu" : src.file_name;

  nvrtcProgram prog = nullptr;
  check_nvrtc(nvrtcCreateProgram(&prog, src.source.c_str(), file.c_str(),
                                 static_cast<int>(header_texts.size()), header_texts.data(),
                                 header_names.data()),
              "nvrtcCreateProgram");
  ProgramGuard guard(prog);

  std::vector<std::string> options = src.options;
  options.push_back("-arch=" + arch);
  options.push_back("--ptxas-options=-v");
  std::vector<const char*> option_ptrs;
  option_ptrs.reserve(options.size());
  for (const auto& o : options) option_ptrs.push_back(o.c_str());

  const nvrtcResult r =
      nvrtcCompileProgram(prog, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  Cubin out;
  out.log = program_log(prog);
  // A rejected option is as much a fault of the generated input as a syntax error, and NVRTC
  // explains both in the log, so both become CompileError.
  if (r == NVRTC_ERROR_COMPILATION || r == NVRTC_ERROR_INVALID_OPTION) {
    std::string log = out.log.empty() ? std::string(nvrtcGetErrorString(r)) : out.log;
    std::string path = dump_source(src, options, log);
    throw CompileError(src.kernel_name, std::move(options), std::move(log), std::move(path));
  }
  check_nvrtc(r, "nvrtcCompileProgram");

  std::size_t size = 0;
  check_nvrtc(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
  if (size == 0) {
    throw InternalError(
        fmt::format("NVRTC produced an empty CUBIN for {} ({})", src.kernel_name, arch));
  }
  out.image.resize(size);
  check_nvrtc(nvrtcGetCUBIN(prog, out.image.data()), "nvrtcGetCUBIN");
  parse_ptxas_log(out.log, out);
  return out;
}

}  // namespace spmvc::runtime
