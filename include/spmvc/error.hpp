// Errors thrown by spmvc. The library never prints: every failure reaches the caller as one of
// these, carrying what is needed to act on it. User errors (bad input, no device) are kept apart
// from internal invariant failures (bugs).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace spmvc {

/// Base of every spmvc exception.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input from the user: a malformed file, an invalid argument, an impossible request.
/// `source()` names the file (or "<arrays>", a generator spec, an option); `line()` is 1-based,
/// 0 when the error has no line.
class InputError : public Error {
 public:
  InputError(std::string source, std::uint64_t line, const std::string& detail);
  const std::string& source() const { return source_; }
  std::uint64_t line() const { return line_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string source_;
  std::uint64_t line_;
  std::string detail_;
};

/// NVRTC rejected a generated kernel. Carries the log, the options and where the source was
/// written (empty when it could not be written).
class CompileError : public Error {
 public:
  CompileError(std::string kernel_name, std::vector<std::string> options, std::string log,
               std::string dump_path);
  const std::string& kernel_name() const { return kernel_name_; }
  const std::vector<std::string>& options() const { return options_; }
  const std::string& log() const { return log_; }
  const std::string& dump_path() const { return dump_path_; }

 private:
  std::string kernel_name_;
  std::vector<std::string> options_;
  std::string log_;
  std::string dump_path_;
};

/// A CUDA, cuSPARSE or driver call failed, or no usable device is present.
class DeviceError : public Error {
 public:
  DeviceError(std::string call, int code, const std::string& detail);
  const std::string& call() const { return call_; }
  int code() const { return code_; }

 protected:
  struct FullMessage {};
  DeviceError(FullMessage, std::string call, int code, const std::string& message);

 private:
  std::string call_;
  int code_;
};

/// No CUDA device (or no driver) on this machine. Binaries catch this to say so and carry on.
class NoDeviceError : public DeviceError {
 public:
  explicit NoDeviceError(const std::string& detail);
};

/// An internal invariant failed: a bug in spmvc, never the user's fault.
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace spmvc
