// The two ways a Profile leaves the program: a JSON document for tools (stable keys, schema
// version) and a text report for a person.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "spmvc/profile.hpp"

namespace spmvc {
namespace {

// Arrays of {bits, count} rather than an object keyed by bit count: nlohmann::json orders object
// keys as strings, which would put "10" before "2".
nlohmann::json bits_json(const std::array<std::int64_t, 33>& counts) {
  nlohmann::json out = nlohmann::json::array();
  for (int b = 0; b <= 32; ++b) {
    if (counts[b] != 0) out.push_back({{"bits", b}, {"count", counts[b]}});
  }
  return out;
}

// 7660826 -> "7,660,826".
std::string grouped(std::int64_t v) {
  const std::string digits =
      fmt::format("{}", v < 0 ? -static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v));
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

double percent(std::int64_t part, std::int64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

void append_histogram(std::string& out, const Profile& p) {
  constexpr std::int64_t kBarWidth = 40;
  std::int64_t biggest = 0;
  for (const HistogramBin& b : p.row_histogram) biggest = std::max(biggest, b.count);
  out += fmt::format("  {:>23}  {:>13}  {:>7}\n", "length", "rows", "%");
  for (const HistogramBin& b : p.row_histogram) {
    const std::string range =
        b.lo == b.hi ? grouped(b.lo) : fmt::format("{}..{}", grouped(b.lo), grouped(b.hi));
    // Every non-empty bin gets at least one '#', so rare row lengths stay visible.
    const std::int64_t bar = std::max<std::int64_t>(1, b.count * kBarWidth / biggest);
    out += fmt::format("  {:>23}  {:>13}  {:>6.2f}%  {}\n", range, grouped(b.count),
                       percent(b.count, p.nrows), std::string(static_cast<std::size_t>(bar), '#'));
  }
}

void append_delta_bits(std::string& out, const Profile& p) {
  std::int64_t total = 0;
  for (const std::int64_t n : p.delta_bits) total += n;
  if (total == 0) {
    out += "Column deltas: none (no row holds two nonzeros)\n";
    return;
  }
  out += fmt::format("Column deltas ({} within rows) fitting in", grouped(total));
  std::int64_t cumulative = 0;
  int next_bits = 0;
  for (const int limit : {1, 2, 4, 8, 16, 32}) {
    for (; next_bits <= limit; ++next_bits) cumulative += p.delta_bits[next_bits];
    out += fmt::format("{} {} bit{} {:.1f}%", limit == 1 ? ":" : ",", limit, limit == 1 ? "" : "s",
                       percent(cumulative, total));
  }
  int widest = 0;
  for (int b = 0; b <= 32; ++b) {
    if (p.first_col_bits[b] != 0) widest = b;
  }
  out += fmt::format("\nFirst columns of rows need at most {} bits\n", widest);
}

void append_block_fill(std::string& out, const Profile& p) {
  if (p.block_fill.empty()) return;
  std::vector<BlockFill> best = p.block_fill;
  // Stable, so equal fills keep the inspector's shape order and the report is deterministic.
  std::stable_sort(best.begin(), best.end(),
                   [](const BlockFill& x, const BlockFill& y) { return x.fill > y.fill; });
  constexpr std::size_t kShown = 4;
  out += "Block fill (best first):";
  for (std::size_t i = 0; i < std::min(kShown, best.size()); ++i) {
    out += fmt::format("{} {}x{} {:.3f} ({} blocks)", i == 0 ? "" : ";", best[i].r, best[i].c,
                       best[i].fill, grouped(best[i].blocks));
  }
  out += '\n';
}

}  // namespace

std::string to_json(const Profile& p) {
  nlohmann::json histogram = nlohmann::json::array();
  for (const HistogramBin& b : p.row_histogram) {
    histogram.push_back({{"lo", b.lo}, {"hi", b.hi}, {"count", b.count}});
  }
  nlohmann::json blocks = nlohmann::json::array();
  for (const BlockFill& f : p.block_fill) {
    blocks.push_back({{"r", f.r}, {"c", f.c}, {"blocks", f.blocks}, {"fill", f.fill}});
  }
  const nlohmann::json doc = {
      {"schema_version", Profile::kSchemaVersion},
      {"nrows", p.nrows},
      {"ncols", p.ncols},
      {"nnz", p.nnz},
      {"row_length",
       {{"mean", p.row_mean},
        {"stddev", p.row_stddev},
        {"min", p.row_min},
        {"max", p.row_max},
        {"empty_rows", p.empty_rows},
        {"trailing_empty_rows", p.trailing_empty_rows},
        {"histogram", histogram},
        {"slice_longest", p.slice_longest}}},
      {"narrow_slice_nnz", p.narrow_slice_nnz},
      {"bandwidth", p.bandwidth},
      {"profile", p.profile},
      {"diagonals", p.diagonals},
      {"delta_bits", bits_json(p.delta_bits)},
      {"first_col_bits", bits_json(p.first_col_bits)},
      {"x_sectors", p.x_sectors},
      {"block_fill", blocks},
      {"distinct_values", p.distinct_values},
      {"unit_values", p.unit_values},
      {"fp32_exact_values", p.fp32_exact_values},
      {"value_rounding",
       {{"f32_error", p.f32_rounding_error},
        {"bf16_error", p.bf16_rounding_error},
        {"f32_overflow", p.f32_overflow},
        {"bf16_overflow", p.bf16_overflow}}},
      {"symmetry",
       {{"square", p.square},
        {"structural", p.structurally_symmetric},
        {"numerical", p.numerically_symmetric}}},
      {"inspect_seconds", p.inspect_seconds},
      {"depth", p.depth == InspectDepth::full   ? "full"
                : p.depth == InspectDepth::rows ? "rows"
                                                : "row_lengths"},
  };
  return doc.dump(2) + "\n";
}

std::string to_report(const Profile& p) {
  std::string out;
  out += fmt::format("Matrix {} x {}, {} nonzeros ({:.2f}% dense)\n", grouped(p.nrows),
                     grouped(p.ncols), grouped(p.nnz),
                     p.nrows == 0 || p.ncols == 0
                         ? 0.0
                         : 100.0 * static_cast<double>(p.nnz) /
                               (static_cast<double>(p.nrows) * static_cast<double>(p.ncols)));
  out += fmt::format(
      "Row lengths: mean {:.2f}, stddev {:.2f}, min {}, max {}, empty rows {}{}\n", p.row_mean,
      p.row_stddev, grouped(p.row_min), grouped(p.row_max), grouped(p.empty_rows),
      p.trailing_empty_rows > 0
          ? fmt::format(" ({} after the last row with an entry)", grouped(p.trailing_empty_rows))
          : std::string());
  append_histogram(out, p);
  if (p.depth == InspectDepth::row_lengths) {
    out += "Columns, values, blocks and symmetry: not inspected (row lengths on the GPU only)\n";
    out += fmt::format("Inspected in {:.3f} s\n", p.inspect_seconds);
    return out;
  }
  out += fmt::format("Bandwidth {}, profile {}, diagonals {}\n", grouped(p.bandwidth),
                     grouped(p.profile),
                     p.diagonals < 0 ? fmt::format("more than {}", kMaxDiagonals)
                                     : fmt::format("{}", p.diagonals));
  append_delta_bits(out, p);
  out += fmt::format(
      "x sectors (32 B) read row by row: {} ({:.3f} per nonzero)\n", grouped(p.x_sectors),
      p.nnz == 0 ? 0.0 : static_cast<double>(p.x_sectors) / static_cast<double>(p.nnz));
  if (p.narrow_slice_nnz >= 0) {
    out += fmt::format("Nonzeros in 256-row slices spanning <= 65536 columns: {} ({:.1f}%)\n",
                       grouped(p.narrow_slice_nnz), percent(p.narrow_slice_nnz, p.nnz));
  }
  if (p.depth == InspectDepth::rows) {
    out += "Block fill, distinct values and symmetry: not inspected (row scan only)\n";
    out += fmt::format("Inspected in {:.3f} s\n", p.inspect_seconds);
    return out;
  }
  append_block_fill(out, p);
  out +=
      fmt::format("Distinct values: {}; exact in fp32: {} ({:.1f}%)\n", grouped(p.distinct_values),
                  grouped(p.fp32_exact_values), percent(p.fp32_exact_values, p.nnz));
  out += fmt::format(
      "Largest relative rounding error of a value (mixed precision): fp32 {:.3g}, bf16 {:.3g}{}\n",
      p.f32_rounding_error, p.bf16_rounding_error,
      p.f32_overflow + p.bf16_overflow > 0
          ? fmt::format(" ({} values overflow fp32, {} bf16)", p.f32_overflow, p.bf16_overflow)
          : "");
  out += fmt::format("Symmetry: {}\n", !p.square                  ? "not square"
                                       : p.numerically_symmetric  ? "symmetric (pattern and values)"
                                       : p.structurally_symmetric ? "pattern symmetric, values not"
                                                                  : "square, not symmetric");
  out += fmt::format("Inspected in {:.3f} s\n", p.inspect_seconds);
  return out;
}

}  // namespace spmvc
