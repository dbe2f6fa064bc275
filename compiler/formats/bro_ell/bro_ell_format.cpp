#include "formats/bro_ell/bro_ell_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/bro_ell/bro_ell_model.hpp"
#include "formats/csr/csr_format.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

constexpr std::int64_t kWholeRow = std::numeric_limits<std::int64_t>::max();

const BroEllParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<BroEllParams>(&params);
  if (p == nullptr) throw InternalError("bro_ell format given another format's parameters");
  return *p;
}

const char* tables_tag(int tables) { return tables == 1 ? "_const" : tables == 2 ? "_baked" : ""; }

}  // namespace

std::string BroEllFormat::kernel_name(const BroEllParams& p, Precision precision) {
  return fmt::format("spmv_bro_ell_h{}_s{}_t{}_b{}_u{}{}{}{}_{}", p.slice_height, p.symbol_bits,
                     p.threads_per_row, p.block_size, p.unroll, p.prefetch ? "_pf" : "",
                     tables_tag(p.tables), value_coding_tag(p.values),
                     codegen::precision_tag(precision));
}

double BroEllFormat::decode_efficiency(const Profile& profile, const bro::EllShape& shape) {
  const double per_lane = profile.row_mean / shape.threads_per_row;
  const double latency = std::min(1.0, bro::model::kEllNonzerosPerLane / std::max(per_lane, 1e-9));
  return bro::model::kDecodeEfficiency[std::clamp(shape.tables, 0, 2)] * latency;
}

double BroEllFormat::gather_efficiency(const Profile& profile) {
  namespace m = bro::model;
  if (profile.nnz <= 0 || profile.x_sectors <= 0) return m::kScatteredGatherEfficiency;
  const double s = static_cast<double>(profile.x_sectors) / static_cast<double>(profile.nnz);
  const double t = std::clamp((s - m::kLocalSectorsPerNonzero) /
                                  (m::kScatteredSectorsPerNonzero - m::kLocalSectorsPerNonzero),
                              0.0, 1.0);
  return 1.0 - t * (1.0 - m::kScatteredGatherEfficiency);
}

double BroEllFormat::decode_seconds(const bro::EllShape& shape, double padded_entries) {
  return shape.tables == 2 ? 0.0 : padded_entries / bro::model::kWidthTableEntriesPerSecond;
}

Cost BroEllFormat::cost(const Profile& profile, const FormatParams& params,
                        Precision precision) const {
  const BroEllParams& p = params_of(params);
  const bro::EllShape shape = bro::shape_of(p);
  const bro::EllEstimate est = bro::estimate_ell(profile, kWholeRow, shape);
  const double vb = value_bytes(precision);
  Cost c;
  // Baked widths are in the code; constant ones are read once per SM, not per lane.
  const double tables = p.tables == 0 ? 0.0 : est.table_bytes;
  c.matrix_bytes = est.index_bytes - tables +
                   est.overread_bytes * bro::model::kOverreadBytesFactor +
                   est.padded_entries * value_code_bytes(p.values, precision) +
                   value_table_bytes(p.values, profile, precision);
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  // Padding is charged once, in bytes (its symbols and values are read like any entry's) and
  // in the decode floor: baked kernels branch over padded entries, so idle lanes cost no more
  // time of their own than that.
  c.lane_efficiency = decode_efficiency(profile, shape) * gather_efficiency(profile) *
                      value_coding_efficiency(p.values, profile, precision);
  c.serial_seconds =
      std::max(est.max_columns * heuristics::kCsrStepSeconds * bro::model::kStepFactor,
               decode_seconds(shape, est.padded_entries));
  return c;
}

std::optional<std::string> BroEllFormat::cannot_implement(const Profile& profile,
                                                          const FormatParams& params,
                                                          Precision precision) const {
  const BroEllParams& p = params_of(params);
  std::string why = bro::check_ell_shape(profile, kWholeRow, bro::shape_of(p), p.block_size,
                                         p.unroll, p.prefetch);
  if (!why.empty()) return why;
  return value_coding_problem(profile, p.values, precision);
}

std::vector<Candidate> BroEllFormat::propose(const Profile& profile, Precision precision) const {
  // The paper's kernel (h = block = 256, one thread per row, 32-bit symbols, widths in constant
  // memory when they fit), then Hopper variants: one warp per slice (narrower widths, less
  // padding), T lanes per row for long rows, 64-bit symbols, prefetch and unroll, and the baked
  // pattern at each T up to twice the row walk's (fewer lanes per row: narrower deltas; more:
  // less padding and a shorter pattern, which may be what lets it be baked at all).
  struct Variant {
    BroEllParams p;
    const char* why;
  };
  std::vector<Variant> variants;
  BroEllParams paper{256, 32, 1, 256, 1, false, 1};
  if (cannot_implement(profile, paper, precision)) paper.tables = 0;
  variants.push_back({paper, "the paper's kernel"});
  int t = 1;
  while (t < 32 && profile.row_mean / t > CsrFormat::nonzeros_per_lane(precision)) t *= 2;
  const int h = std::max(1, 32 / t);
  variants.push_back({BroEllParams{32, 32, 1, 256, 2, true, 0}, "warp slices, prefetch"});
  variants.push_back({BroEllParams{32, 64, 1, 256, 2, true, 0}, "warp slices, 64-bit symbols"});
  if (t > 1) {
    variants.push_back({BroEllParams{h, 32, t, 256, 2, true, 0}, "lanes share long rows"});
    variants.push_back({BroEllParams{h, 64, t, 256, 2, true, 0}, "lanes share long rows"});
  }
  if (t > 2) {
    // Half as many lanes per row: each lane's deltas span fewer nonzeros (narrower fields) and
    // its stream fills more of its last symbol.
    variants.push_back(
        {BroEllParams{2 * h, 32, t / 2, 256, 2, true, 0}, "fewer lanes per row, narrower deltas"});
  }
  for (int tb = 1; tb <= std::min(32, 2 * t); tb *= 2)
    variants.push_back(
        {BroEllParams{std::max(1, 32 / tb), 32, tb, 256, 1, false, 2}, "one width pattern, baked"});
  std::vector<Candidate> out;
  for (const Variant& v : variants) {
    Candidate c = candidate(profile, v.p, precision);
    if (c.applicable) {
      const bro::EllEstimate est = bro::estimate_ell(profile, kWholeRow, bro::shape_of(v.p));
      const double index_bits =
          profile.nnz > 0 ? 8.0 * est.index_bytes / static_cast<double>(profile.nnz) : 0.0;
      c.reason = fmt::format("{}: ~{:.1f} index bits per nonzero, {:.0f}% of slice lanes busy",
                             v.why, index_bits, 100.0 * est.lane_efficiency);
    }
    out.push_back(std::move(c));
  }
  add_value_coded(out, profile, precision);
  return out;
}

Encoded BroEllFormat::encode(const CsrMatrix& a, const FormatParams& params,
                             Precision precision) const {
  const BroEllParams& p = params_of(params);
  Encoded e = encoded_for(a, precision);
  bro::encode_ell(a, kWholeRow, bro::shape_of(p), precision, "", e.arrays);
  return e;
}

void BroEllFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                                  std::span<const double> x, std::span<double> y, double alpha,
                                  double beta) const {
  const BroEllParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  std::vector<double> acc(y.size(), 0.0);
  bro::accumulate_ell(e, "", bro::shape_of(p), x, acc);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = alpha * acc[i] + (beta != 0.0 ? beta * y[i] : 0.0);
}

namespace bro {

EllKernelText ell_kernel_text(const Encoded& e, const std::string& prefix, const EllShape& shape,
                              int block_size, int unroll, bool prefetch,
                              const std::string& entry_name) {
  using K = KernelParam::Kind;
  EllKernelText k;
  const std::int64_t nslices = (e.nrows + shape.slice_height - 1) / shape.slice_height;
  k.grid = std::max<std::int64_t>(1, (nslices * shape.lanes() + block_size - 1) / block_size);
  k.constants = {
      {fmt::format("constexpr int kSliceRows = {};", shape.slice_height), "h: rows per slice"},
      {fmt::format("constexpr int kThreadsPerRow = {};", shape.threads_per_row),
       "T: lanes that share one row"},
      {fmt::format("constexpr int kSymbolBits = {};", shape.symbol_bits),
       "bits per symbol of the multiplexed streams"},
      {fmt::format("constexpr int kBlockSize = {};", block_size), "threads per block"},
  };
  if (shape.tables != 2) {
    k.constants.push_back({fmt::format("constexpr int kUnroll = {};", unroll),
                           "indices decoded before their gathers"});
    k.constants.push_back(
        {fmt::format("constexpr bool kPrefetch = {};", prefetch ? "true" : "false"),
         "next symbol loaded as soon as the current one is taken"});
  }
  k.params = {{K::rows, "nrows"}, {K::array, prefix + "col_ptr"}, {K::array, prefix + "sym_ptr"}};
  const ValueArgs vals = value_args(shape.values, "values", prefix + "values");
  // The symbols and values, then the vectors and scalars; the signature names the arrays
  // without the part's prefix.
  const auto finish_params = [&] {
    k.params.push_back({K::array, prefix + "symbols"});
    k.params.insert(k.params.end(), vals.params.begin(), vals.params.end());
    k.params.insert(k.params.end(),
                    {{K::x, "x"}, {K::y, "y"}, {K::alpha, "alpha"}, {K::beta, "beta"}});
    return codegen::entry_signature(entry_name, k.params, e, "kBlockSize", prefix);
  };
  k.asserts = fmt::format(
      "static_assert(sizeof(spmvc::bro::SymbolWord<kSymbolBits>::type) == {}, \"symbols were "
      "encoded as {}-bit words\");\n",
      shape.symbol_bits / 8, shape.symbol_bits);

  if (shape.tables == 2) {
    std::vector<int> pattern = baked_pattern(e, prefix);
    const bool empty = pattern.empty();
    if (empty) pattern.push_back(1);  // no slice has a column: the pattern is never read
    int bits = 0;
    for (int b : pattern) bits += b;
    k.definitions = "\n// The bit width of every column position, the same in every slice";
    k.definitions += empty ? " (no slice has a column)" : "";
    k.definitions += ".\nusing Pattern = spmvc::bro::WidthPattern<";
    for (std::size_t j = 0; j < pattern.size(); ++j) {
      if (j > 0) k.definitions += j % 16 == 0 ? ",\n    " : ", ";
      k.definitions += std::to_string(pattern[j]);
    }
    k.definitions += ">;\n";
    k.asserts += fmt::format(
        "static_assert(Pattern::kColumns == {} && Pattern::bits() == {}, \"the encoding's width "
        "pattern\");\n",
        pattern.size(), bits);
    const std::string signature = finish_params();
    k.entry = fmt::format(
        R"(
{SIG}  spmvc::bro::spmv_baked<kSliceRows, kThreadsPerRow, kSymbolBits, kBlockSize, Pattern, Value,
                         Acc>(nrows, col_ptr, sym_ptr, symbols, {VP}, x, y, alpha, beta);
}}
)",
        fmt::arg("SIG", signature), fmt::arg("VP", vals.pass));
  } else {
    std::string widths_value;
    if (shape.tables == 1) {
      const EncodedArray& w = e.array(prefix + "widths");
      const auto* table = reinterpret_cast<const std::uint8_t*>(w.bytes.data());
      const std::int64_t n = std::max<std::int64_t>(1, w.count());
      if (w.count() > kConstantTableBytes)
        throw InternalError(
            fmt::format("bro_ell: {} bytes of width tables exceed constant memory", w.count()));
      k.definitions = fmt::format(
          "\n// Bit width of column position j of slice s at [col_ptr[s] + j] ({} bytes).\n"
          "__constant__ unsigned char kWidthTable[{}] = {{",
          w.count(), n);
      for (std::int64_t i = 0; i < n; ++i) {
        k.definitions += (i % 32 == 0 ? "\n    " : " ");
        k.definitions += std::to_string(i < w.count() ? table[i] : 0) + ",";
      }
      k.definitions +=
          "\n};\n\nstruct ConstantWidths {\n  __device__ __forceinline__ int operator()(long long "
          "i) const { return kWidthTable[i]; }\n};\n";
      k.asserts += fmt::format(
          "static_assert(sizeof(kWidthTable) == {}, \"one width per slice column\");\n", n);
      widths_value = "ConstantWidths{}";
    } else {
      widths_value = "spmvc::bro::GlobalWidths{widths}";
      k.params.push_back({K::array, prefix + "widths"});
    }
    const std::string signature = finish_params();
    k.entry = fmt::format(
        R"(
{SIG}  spmvc::bro::spmv<kSliceRows, kThreadsPerRow, kSymbolBits, kBlockSize, kUnroll, kPrefetch>(
      nrows, col_ptr, sym_ptr, {WV}, symbols, {VP}, x, y, alpha, beta);
}}
)",
        fmt::arg("SIG", signature), fmt::arg("WV", widths_value), fmt::arg("VP", vals.pass));
  }
  return k;
}

}  // namespace bro

KernelSource BroEllFormat::generate(const Encoded& e, const FormatParams& params,
                                    const std::string& banner) const {
  const BroEllParams& p = params_of(params);
  KernelSource k = kernel_source(kernel_name(p, e.precision), {"spmvc/bro_ell.cuh"}, banner);
  k.block = p.block_size;
  bro::EllKernelText text = bro::ell_kernel_text(e, "", bro::shape_of(p), p.block_size, p.unroll,
                                                 p.prefetch, k.kernel_name);
  k.grid = text.grid;
  k.params = text.params;
  text.constants.push_back({fmt::format("using Value = {};", codegen::value_type(e.precision)),
                            "stored values, x and y"});
  text.constants.push_back(
      {fmt::format("using Acc = {};", codegen::accumulate_type(e.precision)), "accumulation"});
  k.source += "#include \"spmvc/bro_ell.cuh\"\n\n";
  k.source += codegen::constants_block(text.constants);
  k.source += text.definitions;
  k.source += "\n";
  k.source += fmt::format(
      "static_assert(sizeof(Value) == {}, \"values were encoded with {}-byte "
      "elements\");\n",
      value_bytes(e.precision), value_bytes(e.precision));
  k.source += text.asserts;
  k.source += text.entry;
  return k;
}

}  // namespace spmvc::formats
