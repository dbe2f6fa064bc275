#include "spmvc/error.hpp"

#include <fmt/format.h>

namespace spmvc {

namespace {
std::string input_message(const std::string& source, std::uint64_t line,
                          const std::string& detail) {
  if (line == 0) return fmt::format("{}: {}", source, detail);
  return fmt::format("{}:{}: {}", source, line, detail);
}
}  // namespace

InputError::InputError(std::string source, std::uint64_t line, const std::string& detail)
    : Error(input_message(source, line, detail)),
      source_(std::move(source)),
      line_(line),
      detail_(detail) {}

CompileError::CompileError(std::string kernel_name, std::vector<std::string> options,
                           std::string log, std::string dump_path)
    : Error(fmt::format("NVRTC failed to compile {} (source written to {}):\n{}", kernel_name,
                        dump_path.empty() ? "<nowhere: dump failed>" : dump_path, log)),
      kernel_name_(std::move(kernel_name)),
      options_(std::move(options)),
      log_(std::move(log)),
      dump_path_(std::move(dump_path)) {}

DeviceError::DeviceError(std::string call, int code, const std::string& detail)
    : Error(fmt::format("{} failed ({}): {}", call, code, detail)),
      call_(std::move(call)),
      code_(code) {}

DeviceError::DeviceError(FullMessage, std::string call, int code, const std::string& message)
    : Error(message), call_(std::move(call)), code_(code) {}

NoDeviceError::NoDeviceError(const std::string& detail)
    : DeviceError(FullMessage{}, "device", 0, "no CUDA device available: " + detail) {}

}  // namespace spmvc
