#include "spmvc/compiler/build_choice.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "heuristics.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/error.hpp"

namespace spmvc::compiler {

namespace {

// Why forced parameters the GPU build accepts by format still need the host encoder: what
// device_plan.cpp refuses on any device arrays (it also reads pointer alignment and the
// columns' order, which only the GPU sees; cudaMalloc's alignment meets every vector width).
std::optional<OptionRefusal> params_refusal(const FormatParams& params, std::int64_t nnz) {
  if (const auto* p = std::get_if<CsrParams>(&params)) {
    if (p->offsets64)
      return OptionRefusal{"params", "64-bit row offsets (the GPU build's are 32-bit)"};
    if (p->vector_width > 1 && nnz % p->vector_width != 0)
      return OptionRefusal{"params",
                           fmt::format("{}-wide loads over {} nonzeros (not a multiple of {}) "
                                       "need the host encoder's padding",
                                       p->vector_width, nnz, p->vector_width)};
  } else if (const auto* q = std::get_if<CsrStreamParams>(&params)) {
    if (q->offsets64)
      return OptionRefusal{"params", "64-bit row offsets (the GPU build's are 32-bit)"};
    if (q->sorted)
      return OptionRefusal{"params", "csr_stream's sorted tiles (srt) are built on the host only"};
  } else if (const auto* b = std::get_if<BcsrParams>(&params); b != nullptr && b->symmetric) {
    return OptionRefusal{"params", "bcsr's symmetric half (S=1) is built on the host only"};
  } else if (const auto* h = std::get_if<HybParams>(&params); h != nullptr && h->narrow_rows) {
    return OptionRefusal{"params", "hyb's 16-bit COO rows (r16) are built on the host only"};
  } else if (const auto* c = std::get_if<SellParams>(&params)) {
    if (c->sigma > codegen::kDeviceSortWindow)
      return OptionRefusal{"params", fmt::format("sorting windows of {} rows (the GPU sorts at "
                                                 "most {})",
                                                 c->sigma, codegen::kDeviceSortWindow)};
  }
  return std::nullopt;
}

// The first reason the options or the matrix need the host pipeline.
std::optional<OptionRefusal> host_only(const Options& options, const BuildSubject& m) {
  if (std::optional<OptionRefusal> refusal = device_options_refusal(options)) {
    // The same refusals as compile(DeviceCsr)'s, said for a caller of compile(CsrMatrix).
    const std::string& f = refusal->field;
    if (f == "planner") refusal->why = "measure mode times candidates the host pipeline builds";
    if (f == "reorder") refusal->why = "orderings are computed and applied on the host";
    if (f == "full_inspection") refusal->why = "the full Profile is inspected on the host";
    if (f == "mixed_precision") refusal->why = "the rounded values' encoding is built on the host";
    if (f == "format") refusal->why = fmt::format("{} has a host encoder only", options.format);
    if (f == "params")
      refusal->why = fmt::format("{} has a host encoder only", format_of(*options.params));
    return refusal;
  }
  if (options.cusparse == "always")
    return OptionRefusal{"cusparse", "cuSPARSE as the engine runs on the host build's csr arrays"};
  if (options.csr)
    if (std::optional<OptionRefusal> r = params_refusal(FormatParams{*options.csr}, m.nnz))
      return r;
  if (options.params)
    if (std::optional<OptionRefusal> r = params_refusal(*options.params, m.nnz)) return r;
  if (m.nrows <= 0 || m.ncols <= 0)
    return OptionRefusal{"matrix", fmt::format("a {} x {} matrix has nothing for the GPU to build",
                                               m.nrows, m.ncols)};
  constexpr std::int64_t kMax32 = std::numeric_limits<std::int32_t>::max();
  if (m.nrows >= kMax32 || m.ncols > kMax32 || m.nnz > kMax32)
    return OptionRefusal{"matrix",
                         fmt::format("{} x {} with {} nonzeros is past the GPU build's 32-bit "
                                     "row offsets and columns",
                                     m.nrows, m.ncols, m.nnz)};
  if (const double need = gpu_build_bytes(m, options.precision);
      m.device_bytes > 0 && need > static_cast<double>(m.device_bytes))
    return OptionRefusal{"matrix",
                         fmt::format("the GPU build takes about {:.2f} GB (the CSR copy it keeps "
                                     "and an encoding of about its size), and the device can "
                                     "allocate {:.2f} GB",
                                     need / 1e9, static_cast<double>(m.device_bytes) / 1e9)};
  return std::nullopt;
}

}  // namespace

double uploaded_csr_bytes(std::int64_t nrows, std::int64_t nnz, Precision precision) {
  return static_cast<double>(nrows + 1) * 4.0 +
         static_cast<double>(nnz) * (4.0 + value_bytes(precision));
}

double gpu_build_bytes(const BuildSubject& subject, Precision precision) {
  return 2.0 * uploaded_csr_bytes(subject.nrows, subject.nnz, precision);
}

BuildChoice choose_build(const Options& options, const BuildSubject& subject) {
  switch (options.build) {
    case BuildMode::host:
      return {BuildPath::host, "build = host: asked for"};
    case BuildMode::device: {
      if (const std::optional<OptionRefusal> why = host_only(options, subject))
        throw InputError("build", 0,
                         fmt::format("build = device, but {} needs the host pipeline: {}",
                                     why->field, why->why));
      return {BuildPath::device, "build = device: asked for"};
    }
    case BuildMode::automatic:
      break;
  }
  if (const std::optional<OptionRefusal> why = host_only(options, subject))
    return {BuildPath::host, fmt::format("build = auto: host, since {} needs the host pipeline "
                                         "({})",
                                         why->field, why->why)};
  const std::int64_t many = options.precision == Precision::f64
                                ? heuristics::kHostPipelineMultiplies64
                                : heuristics::kHostPipelineMultiplies32;
  if (options.multiplies && *options.multiplies >= many)
    return {BuildPath::host,
            fmt::format("build = auto: host, since {} multiplies repay the host pipeline's "
                        "one-time cost (its picks multiply about 1.5% faster; from {} multiplies "
                        "at this precision)",
                        *options.multiplies, many)};
  return {BuildPath::device,
          "build = auto: on the GPU (the CSR uploaded once, then GPU inspection, planning over "
          "the formats the GPU builds, GPU encode)"};
}

std::string_view to_string(BuildMode mode) {
  switch (mode) {
    case BuildMode::automatic:
      return "auto";
    case BuildMode::host:
      return "host";
    case BuildMode::device:
      return "device";
  }
  throw InternalError("unknown BuildMode");
}

BuildMode parse_build_mode(std::string_view text) {
  if (text == "auto") return BuildMode::automatic;
  if (text == "host") return BuildMode::host;
  if (text == "device") return BuildMode::device;
  throw InputError("build", 0, fmt::format("'{}' is not auto, host or device", text));
}

}  // namespace spmvc::compiler
