// Deterministic generators. Randomness comes only from splitmix64/xoshiro256** written out here:
// the standard library's distributions are implementation-defined, so the same seed would give
// different matrices under libstdc++ and libc++. Values that depend on a position are drawn from
// a hash of (seed, row, column) rather than a running stream, so they do not depend on the order
// the entries are produced in, and mirror entries can be given identical values.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/memory_budget.hpp"
#include "spmvc/parallel.hpp"

namespace spmvc::gen {

namespace {

constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int32_t>::max();

// splitmix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t hash3(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  return mix64(mix64(mix64(seed) ^ a) ^ (b * 0xd6e8feb86659fd93ULL));
}

// Uniform in (0, 1]: never 0, so a generated value is never an explicit zero.
double unit_interval(std::uint64_t bits) {
  return static_cast<double>((bits >> 11) + 1) * 0x1.0p-53;
}

// xoshiro256** (Blackman & Vigna 2018), seeded through splitmix64 as its authors recommend.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      w = mix64(seed);
    }
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, range) by Lemire's multiply-shift. Its bias is below range/2^64, which no
  // matrix generated here can detect, and it needs no rejection loop, so it stays branch-free.
  std::uint64_t below(std::uint64_t range) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * range) >> 64);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<std::uint64_t, 4> s_{};
};

[[noreturn]] void bad(const char* generator, const std::string& detail) {
  throw InputError(generator, 0, detail);
}

void require_at_least(const char* generator, const char* name, std::int64_t value,
                      std::int64_t min) {
  if (value < min) bad(generator, fmt::format("{} must be at least {}, got {}", name, min, value));
}

// Product of the grid dimensions and unknowns per point, which must fit a 32-bit column index.
std::int64_t checked_unknowns(const char* generator, std::int64_t nx, std::int64_t ny,
                              std::int64_t nz, std::int64_t per_point) {
  require_at_least(generator, "nx", nx, 1);
  require_at_least(generator, "ny", ny, 1);
  require_at_least(generator, "nz", nz, 1);
  // Each factor is at least 1, so dividing the limit avoids overflowing the product itself.
  std::int64_t limit = kMaxIndex / per_point;
  if (nx > limit || ny > limit / nx || nz > limit / (nx * ny)) {
    bad(generator, fmt::format("{}x{}x{} grid with {} unknowns per point exceeds 2^31-1 rows: "
                               "column indices are 32-bit",
                               nx, ny, nz, per_point));
  }
  return nx * ny * nz * per_point;
}

struct Offset {
  int dx, dy, dz;
};

// Offsets listed by (dz, dy, dx) ascending, which with x fastest is ascending column order.
std::vector<Offset> box_offsets(bool full_box, bool three_d) {
  std::vector<Offset> out;
  const int zr = three_d ? 1 : 0;
  for (int dz = -zr; dz <= zr; ++dz) {
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        const int manhattan = std::abs(dx) + std::abs(dy) + std::abs(dz);
        if (full_box || manhattan <= 1) out.push_back({dx, dy, dz});
      }
    }
  }
  return out;
}

// A grid operator: every grid point couples to its in-range neighbours listed in `offsets`,
// each coupling a dense b×b block. `value(row, col)` gives the off-diagonal entries; the
// diagonal entry is `diagonal(row, sum of |off-diagonal|, neighbours outside the grid)`.
// Bytes of a CSR matrix with `rows` rows and `entries` nonzeros: 8-byte row offsets, 4-byte
// columns, 8-byte values. In double, so that sizes from a spec never overflow.
double csr_bytes(double rows, double entries) { return 8.0 * (rows + 1.0) + 12.0 * entries; }

template <typename OffFn, typename DiagFn>
CsrMatrix grid_operator(const char* generator, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                        int b, std::span<const Offset> offsets, OffFn off_value,
                        DiagFn diag_value) {
  const std::int64_t n = nx * ny * nz * b;
  check_memory_budget(generator, 0,
                      fmt::format("{}x{}x{} grid with {} unknowns per point", nx, ny, nz, b),
                      csr_bytes(static_cast<double>(n),
                                static_cast<double>(n) * static_cast<double>(offsets.size()) * b));
  CsrMatrix a;
  a.nrows = n;
  a.ncols = n;
  a.row_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  const std::size_t bound =
      static_cast<std::size_t>(n) * offsets.size() * static_cast<std::size_t>(b);
  a.col_idx.reserve(bound);
  a.values.reserve(bound);
  std::int64_t row = 0;
  for (std::int64_t z = 0; z < nz; ++z) {
    for (std::int64_t y = 0; y < ny; ++y) {
      for (std::int64_t x = 0; x < nx; ++x) {
        for (int comp = 0; comp < b; ++comp, ++row) {
          std::int64_t diag_pos = -1;
          double off_sum = 0.0;
          int missing = 0;
          for (const Offset& o : offsets) {
            const std::int64_t xx = x + o.dx, yy = y + o.dy, zz = z + o.dz;
            if (xx < 0 || xx >= nx || yy < 0 || yy >= ny || zz < 0 || zz >= nz) {
              ++missing;
              continue;
            }
            const std::int64_t base = (xx + nx * (yy + ny * zz)) * b;
            for (int cc = 0; cc < b; ++cc) {
              const std::int64_t col = base + cc;
              a.col_idx.push_back(static_cast<std::int32_t>(col));
              if (col == row) {
                diag_pos = static_cast<std::int64_t>(a.values.size());
                a.values.push_back(0.0);
              } else {
                const double v = off_value(row, col);
                off_sum += std::abs(v);
                a.values.push_back(v);
              }
            }
          }
          a.values[static_cast<std::size_t>(diag_pos)] = diag_value(row, off_sum, missing);
          a.row_ptr[row + 1] = static_cast<std::int64_t>(a.col_idx.size());
        }
      }
    }
  }
  return a;
}

// A diffusion operator with coefficient kappa(p) = contrast^u(p) at each grid point, u uniform in
// (0, 1] hashed from (seed, p): heterogeneous media with `contrast` between the largest and
// smallest coefficient. The coupling of neighbours p and q is minus the harmonic mean of their
// coefficients; the diagonal is the sum of the couplings of every neighbour offset, one outside
// the grid coupling with kappa(p) (a Dirichlet boundary). Symmetric, diagonally dominant and
// strictly so on the boundary: positive definite. contrast = 1 is the constant-coefficient
// Laplacian (off-diagonal -1, the diagonal the number of neighbour offsets) exactly.
CsrMatrix laplacian(const char* name, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                    bool full_box, bool three_d, double contrast, std::uint64_t seed) {
  checked_unknowns(name, nx, ny, nz, 1);
  if (!(contrast >= 1.0) || !std::isfinite(contrast))
    bad(name, fmt::format("contrast must be a finite number >= 1, got {}", contrast));
  const std::vector<Offset> offsets = box_offsets(full_box, three_d);
  if (contrast == 1.0) {
    const auto neighbours = static_cast<double>(offsets.size() - 1);
    return grid_operator(
        name, nx, ny, nz, 1, offsets, [](std::int64_t, std::int64_t) { return -1.0; },
        [neighbours](std::int64_t, double, int) { return neighbours; });
  }
  const double log_contrast = std::log(contrast);
  const std::uint64_t field = mix64(seed ^ 0x4b41505041ULL);
  auto kappa = [=](std::int64_t p) {
    return std::exp(log_contrast * unit_interval(mix64(field ^ static_cast<std::uint64_t>(p))));
  };
  return grid_operator(
      name, nx, ny, nz, 1, offsets,
      [&](std::int64_t r, std::int64_t c) {
        const double kr = kappa(r), kc = kappa(c);
        return -2.0 * kr * kc / (kr + kc);
      },
      [&](std::int64_t r, double off_sum, int missing) {
        return off_sum + kappa(r) * static_cast<double>(missing);
      });
}

}  // namespace

CsrMatrix stencil_2d_5pt(std::int64_t nx, std::int64_t ny, double contrast, std::uint64_t seed) {
  return laplacian("stencil_2d_5pt", nx, ny, 1, false, false, contrast, seed);
}

CsrMatrix stencil_3d_7pt(std::int64_t nx, std::int64_t ny, std::int64_t nz, double contrast,
                         std::uint64_t seed) {
  return laplacian("stencil_3d_7pt", nx, ny, nz, false, true, contrast, seed);
}

CsrMatrix stencil_3d_27pt(std::int64_t nx, std::int64_t ny, std::int64_t nz, double contrast,
                          std::uint64_t seed) {
  return laplacian("stencil_3d_27pt", nx, ny, nz, true, true, contrast, seed);
}

CsrMatrix elasticity_3d(std::int64_t nx, std::int64_t ny, std::int64_t nz, std::uint64_t seed) {
  checked_unknowns("elasticity_3d", nx, ny, nz, 3);
  const std::vector<Offset> offsets = box_offsets(true, true);
  // Off-diagonal entries in (-1, 1], hashed from the unordered pair so the matrix is symmetric;
  // the diagonal exceeds the row's absolute off-diagonal sum by 1, so the matrix is strictly
  // diagonally dominant with a positive diagonal, hence symmetric positive definite like a real
  // stiffness matrix.
  return grid_operator(
      "elasticity_3d", nx, ny, nz, 3, offsets,
      [seed](std::int64_t r, std::int64_t c) {
        const auto lo = static_cast<std::uint64_t>(std::min(r, c));
        const auto hi = static_cast<std::uint64_t>(std::max(r, c));
        return 2.0 * unit_interval(hash3(seed, lo, hi)) - 1.0;
      },
      [](std::int64_t, double off_sum, int) { return off_sum + 1.0; });
}

CsrMatrix rmat(int scale, int edge_factor, std::uint64_t seed, double a, double b, double c) {
  const char* name = "rmat";
  // 2^31 vertices would need column index 2^31, one past what 32 bits hold.
  if (scale < 1 || scale > 30) bad(name, fmt::format("scale must be in [1, 30], got {}", scale));
  require_at_least(name, "edge_factor", edge_factor, 1);
  const double d = 1.0 - a - b - c;
  if (!(a >= 0 && b >= 0 && c >= 0 && d >= -1e-12) || !std::isfinite(d)) {
    bad(name, fmt::format("probabilities must be non-negative and a+b+c <= 1, got a={}, b={}, c={}",
                          a, b, c));
  }
  const std::int64_t n = std::int64_t{1} << scale;
  const std::int64_t m = n * edge_factor;
  // Peak: the edge keys and the radix sort's second buffer (8 bytes each per edge), the label
  // permutation, then the CSR result beside the keys.
  check_memory_budget(name, 0,
                      fmt::format("scale {} with edge factor {}: 2^{} vertices and {} edges", scale,
                                  edge_factor, scale, m),
                      16.0 * static_cast<double>(m) + 4.0 * static_cast<double>(n) +
                          csr_bytes(static_cast<double>(n), static_cast<double>(m)));

  // Quadrant thresholds on a 32-bit draw: u < t1 -> (0,0), < t2 -> (0,1), < t3 -> (1,0), else
  // (1,1). 32-bit resolution (2.3e-10) is far below anything the degree distribution shows.
  auto threshold = [](double p) {
    return static_cast<std::uint64_t>(std::clamp(p, 0.0, 1.0) * 4294967296.0);
  };
  const std::uint64_t t1 = threshold(a), t2 = threshold(a + b), t3 = threshold(a + b + c);

  // Label permutation (Fisher-Yates), from its own stream so it does not shift the edge stream.
  std::vector<std::int32_t> perm(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) perm[i] = static_cast<std::int32_t>(i);
  {
    Rng rng(mix64(seed) ^ 0x5045524d55544531ULL);
    for (std::int64_t i = n - 1; i > 0; --i) {
      std::swap(perm[i], perm[rng.below(static_cast<std::uint64_t>(i) + 1)]);
    }
  }

  // Edges are directed (row u, column v) and not symmetrised; Graph500's per-level noise on the
  // probabilities is not applied. Each edge becomes one 64-bit key (row << scale | column),
  // sorted by an LSD radix sort. Counting-sorting straight into CSR costs several cache misses
  // per edge (scale 22 took a minute that way); a radix pass streams its input and writes to at
  // most 2048 sequential bucket cursors (four passes: ~2 s at scale 22). Sorted keys give rows
  // in order and columns sorted within them, with duplicates adjacent.
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(m));
  {
    Rng rng(seed);
    for (std::int64_t e = 0; e < m; ++e) {
      std::uint64_t u = 0, v = 0;
      std::uint64_t bits = 0;
      for (int level = 0; level < scale; ++level) {
        std::uint64_t draw;
        if ((level & 1) == 0) {
          bits = rng.next();
          draw = bits & 0xffffffffULL;
        } else {
          draw = bits >> 32;
        }
        const std::uint64_t row_bit = draw >= t2;
        const std::uint64_t col_bit = draw >= (row_bit ? t3 : t1);
        u = (u << 1) | row_bit;
        v = (v << 1) | col_bit;
      }
      keys[e] = u << scale | v;
    }
  }
  // Relabelling in its own tight loop rather than inside the generator: the perm lookups are
  // random reads of a table larger than L2, and only a short independent loop lets the CPU keep
  // many of them in flight (scale 21 went from 4.6 s to 2.8 s in all).
  {
    const std::uint64_t low_mask = (std::uint64_t{1} << scale) - 1;
    for (std::uint64_t& k : keys) {
      k = static_cast<std::uint64_t>(perm[k >> scale]) << scale |
          static_cast<std::uint64_t>(perm[k & low_mask]);
    }
  }
  std::vector<std::int32_t>().swap(perm);
  {
    const int key_bits = 2 * scale;
    // Digits of at most 11 bits: 2048 cursors of 8 bytes stay in L1 with room to spare.
    const int passes = (key_bits + 10) / 11;
    const int digit_bits = (key_bits + passes - 1) / passes;
    const std::size_t buckets = std::size_t{1} << digit_bits;
    std::vector<std::uint64_t> tmp(keys.size());
    std::vector<std::size_t> offset(buckets);
    for (int pass = 0; pass < passes; ++pass) {
      const int shift = pass * digit_bits;
      const std::uint64_t digit_mask = buckets - 1;
      std::fill(offset.begin(), offset.end(), 0);
      for (const std::uint64_t k : keys) ++offset[(k >> shift) & digit_mask];
      std::size_t sum = 0;
      for (auto& o : offset) sum += std::exchange(o, sum);
      for (const std::uint64_t k : keys) tmp[offset[(k >> shift) & digit_mask]++] = k;
      keys.swap(tmp);
    }
  }

  // Merge duplicate edges. The value of (r, c) is hashed from the position, so a merged edge
  // gets the same value however many times it was drawn: multiplicity is not recorded.
  CsrMatrix out;
  out.nrows = n;
  out.ncols = n;
  out.row_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  std::size_t distinct = 0;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (k == 0 || keys[k] != keys[k - 1]) keys[distinct++] = keys[k];
  }
  keys.resize(distinct);
  out.col_idx.resize(distinct);
  out.values.resize(distinct);
  const std::uint64_t value_seed = mix64(seed ^ 0x56414c5545530000ULL);
  const std::uint64_t col_mask = (std::uint64_t{1} << scale) - 1;
  for (std::size_t k = 0; k < distinct; ++k) {
    const std::uint64_t r = keys[k] >> scale;
    const std::uint64_t col = keys[k] & col_mask;
    ++out.row_ptr[r + 1];
    out.col_idx[k] = static_cast<std::int32_t>(col);
    out.values[k] = unit_interval(hash3(value_seed, r, col));
  }
  for (std::int64_t r = 0; r < n; ++r) out.row_ptr[r + 1] += out.row_ptr[r];
  return out;
}

CsrMatrix random_uniform(std::int64_t nrows, std::int64_t ncols, std::int64_t per_row,
                         std::uint64_t seed) {
  const char* name = "random_uniform";
  require_at_least(name, "nrows", nrows, 1);
  require_at_least(name, "ncols", ncols, 1);
  require_at_least(name, "per_row", per_row, 1);
  if (ncols > kMaxIndex) {
    bad(name, fmt::format("ncols = {} exceeds 2^31-1: column indices are 32-bit", ncols));
  }
  if (per_row > ncols) {
    bad(name, fmt::format("per_row = {} exceeds ncols = {}: a row cannot hold that many distinct "
                          "columns",
                          per_row, ncols));
  }
  // nrows * per_row can overflow int64: the estimate is in double and checked first.
  check_memory_budget(name, 0, fmt::format("{} rows with {} nonzeros each", nrows, per_row),
                      csr_bytes(static_cast<double>(nrows),
                                static_cast<double>(nrows) * static_cast<double>(per_row)));
  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  a.row_ptr.resize(static_cast<std::size_t>(nrows) + 1);
  a.col_idx.resize(static_cast<std::size_t>(nrows * per_row));
  a.values.resize(a.col_idx.size());

  // Floyd's sampling (Bentley & Floyd, CACM 1987) draws exactly per_row distinct columns in
  // per_row steps; membership is an open-addressing table stamped per row so it is never cleared.
  std::size_t slots = 1;
  while (slots < static_cast<std::size_t>(per_row) * 2) slots <<= 1;
  std::vector<std::int64_t> keys(slots);
  std::vector<std::int64_t> stamp(slots, -1);
  const std::size_t mask = slots - 1;
  auto insert_if_absent = [&](std::int64_t row, std::int64_t key) {
    std::size_t h = mix64(static_cast<std::uint64_t>(key)) & mask;
    while (stamp[h] == row) {
      if (keys[h] == key) return false;
      h = (h + 1) & mask;
    }
    stamp[h] = row;
    keys[h] = key;
    return true;
  };

  for (std::int64_t r = 0; r < nrows; ++r) {
    Rng rng(hash3(seed, static_cast<std::uint64_t>(r), 0x524f57ULL));
    std::int32_t* cols = a.col_idx.data() + r * per_row;
    std::int64_t count = 0;
    for (std::int64_t j = ncols - per_row; j < ncols; ++j) {
      const auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(j) + 1));
      const std::int64_t pick = insert_if_absent(r, t) ? t : j;
      if (pick == j && t != j) insert_if_absent(r, j);
      cols[count++] = static_cast<std::int32_t>(pick);
    }
    std::sort(cols, cols + per_row);
    for (std::int64_t k = 0; k < per_row; ++k) {
      a.values[r * per_row + k] = unit_interval(
          hash3(seed, static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(cols[k])));
    }
    a.row_ptr[r + 1] = (r + 1) * per_row;
  }
  return a;
}

CsrMatrix banded(std::int64_t n, std::int64_t half_bandwidth, std::uint64_t seed) {
  const char* name = "banded";
  require_at_least(name, "n", n, 1);
  require_at_least(name, "half_bandwidth", half_bandwidth, 0);
  if (n > kMaxIndex) bad(name, fmt::format("n = {} exceeds 2^31-1: column indices are 32-bit", n));
  const std::int64_t hbw = std::min(half_bandwidth, n - 1);
  check_memory_budget(name, 0, fmt::format("n = {} with half bandwidth {}", n, hbw),
                      csr_bytes(static_cast<double>(n),
                                static_cast<double>(n) * (2.0 * static_cast<double>(hbw) + 1.0)));
  CsrMatrix a;
  a.nrows = n;
  a.ncols = n;
  a.row_ptr.resize(static_cast<std::size_t>(n) + 1);
  const auto bound = static_cast<std::size_t>(n * (2 * hbw + 1));
  a.col_idx.reserve(bound);
  a.values.reserve(bound);
  // Off-diagonal values in [-1, 0), symmetric; the diagonal 2*hbw+1 dominates every row.
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = std::max<std::int64_t>(0, i - hbw); j <= std::min(n - 1, i + hbw); ++j) {
      a.col_idx.push_back(static_cast<std::int32_t>(j));
      if (i == j) {
        a.values.push_back(static_cast<double>(2 * hbw + 1));
      } else {
        const auto lo = static_cast<std::uint64_t>(std::min(i, j));
        const auto hi = static_cast<std::uint64_t>(std::max(i, j));
        a.values.push_back(-unit_interval(hash3(seed, lo, hi)));
      }
    }
    a.row_ptr[i + 1] = static_cast<std::int64_t>(a.col_idx.size());
  }
  return a;
}

CsrMatrix random_geometric(std::int64_t n, double degree, std::uint64_t seed) {
  const char* name = "random_geometric";
  require_at_least(name, "n", n, 2);
  if (n > kMaxIndex) bad(name, fmt::format("n = {} exceeds 2^31-1: column indices are 32-bit", n));
  if (!(degree > 0) || !std::isfinite(degree) || degree > static_cast<double>(n - 1))
    bad(name, fmt::format("degree must be in (0, n-1], got {}", degree));
  // pi r^2 (n - 1) neighbours on average, away from the border.
  const double radius = std::sqrt(degree / (std::numbers::pi * static_cast<double>(n - 1)));
  // Entries: about n * degree, a little less for the border; the points and their cell keys.
  check_memory_budget(name, 0, fmt::format("{} points with {} neighbours on average", n, degree),
                      csr_bytes(static_cast<double>(n), static_cast<double>(n) * degree) +
                          32.0 * static_cast<double>(n));
  const auto cells = static_cast<std::int64_t>(
      std::clamp(std::floor(1.0 / radius), 1.0, std::sqrt(static_cast<double>(n)) + 1.0));
  const double cell_size = 1.0 / static_cast<double>(cells);

  // Points, then counting-sorted by cell (row-major), which numbers the vertices.
  struct Point {
    double x, y;
  };
  auto cell_of = [&](double v) {
    return std::min(cells - 1, static_cast<std::int64_t>(v / cell_size));
  };
  std::vector<Point> drawn(static_cast<std::size_t>(n));
  {
    Rng rng(seed);
    for (Point& p : drawn) {
      p.x = unit_interval(rng.next()) - 0x1.0p-53;  // [0, 1)
      p.y = unit_interval(rng.next()) - 0x1.0p-53;
    }
  }
  std::vector<std::int64_t> cell_start(static_cast<std::size_t>(cells * cells) + 1, 0);
  for (const Point& p : drawn) ++cell_start[cell_of(p.y) * cells + cell_of(p.x) + 1];
  for (std::size_t c = 1; c < cell_start.size(); ++c) cell_start[c] += cell_start[c - 1];
  std::vector<Point> pts(drawn.size());
  {
    std::vector<std::int64_t> cursor(cell_start.begin(), cell_start.end() - 1);
    for (const Point& p : drawn) pts[cursor[cell_of(p.y) * cells + cell_of(p.x)]++] = p;
  }
  std::vector<Point>().swap(drawn);

  // Neighbours of vertex v: the 3x3 cells around its own, scanned in increasing cell order, so the
  // columns of a row come out sorted (vertices are numbered by cell).
  const double r2 = radius * radius;
  auto for_each_neighbour = [&](std::int64_t v, auto&& emit) {
    const Point p = pts[v];
    const std::int64_t cx = cell_of(p.x), cy = cell_of(p.y);
    for (std::int64_t y = std::max<std::int64_t>(cy - 1, 0); y <= std::min(cy + 1, cells - 1);
         ++y) {
      const std::int64_t x0 = std::max<std::int64_t>(cx - 1, 0), x1 = std::min(cx + 1, cells - 1);
      for (std::int64_t u = cell_start[y * cells + x0]; u < cell_start[y * cells + x1 + 1]; ++u) {
        const double dx = pts[u].x - p.x, dy = pts[u].y - p.y;
        if (u != v && dx * dx + dy * dy <= r2) emit(u);
      }
    }
  };
  CsrMatrix a;
  a.nrows = n;
  a.ncols = n;
  a.row_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  constexpr std::int64_t kGrain = std::int64_t{1} << 14;
  parallel_for(n, kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t v = begin; v < end; ++v) {
      std::int64_t count = 0;
      for_each_neighbour(v, [&](std::int64_t) { ++count; });
      a.row_ptr[v + 1] = count;
    }
  });
  for (std::int64_t v = 0; v < n; ++v) a.row_ptr[v + 1] += a.row_ptr[v];
  a.col_idx.resize(static_cast<std::size_t>(a.row_ptr[n]));
  a.values.assign(a.col_idx.size(), 1.0);
  parallel_for(n, kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t v = begin; v < end; ++v) {
      std::int64_t k = a.row_ptr[v];
      for_each_neighbour(v, [&](std::int64_t u) { a.col_idx[k++] = static_cast<std::int32_t>(u); });
    }
  });
  return a;
}

double replica_scale(std::int64_t copy, std::uint64_t seed) {
  if (copy == 0) return 1.0;
  // 2^(2u - 1), u uniform in (0, 1]: a factor in (0.5, 2], distinct per copy with probability
  // 1 - 2^-40 or so, and positive, so a copy of a positive definite block stays one.
  const double u = unit_interval(hash3(seed, static_cast<std::uint64_t>(copy), 0x5245504cULL));
  return std::exp2(2.0 * u - 1.0);
}

CsrMatrix replicate(const CsrMatrix& a, std::int64_t k, ReplicaValues values, std::uint64_t seed) {
  const char* name = "replicate";
  require_at_least(name, "k", k, 1);
  // k * ncols is not formed before it is known to fit: k can be anything up to 2^63-1.
  if (a.ncols > 0 && k > kMaxIndex / a.ncols) {
    bad(name, fmt::format("{} copies of a matrix with {} columns need more than 2^31-1 columns: "
                          "column indices are 32-bit",
                          k, a.ncols));
  }
  if (a.nrows > 0 && k > std::numeric_limits<std::int64_t>::max() / 2 / a.nrows) {
    bad(name, fmt::format("{} copies of {} rows overflow the row count", k, a.nrows));
  }
  const std::int64_t nnz = a.nnz();
  check_memory_budget(
      name, 0,
      fmt::format("{} copies of a {} x {} matrix with {} nonzeros", k, a.nrows, a.ncols, nnz),
      csr_bytes(static_cast<double>(a.nrows) * static_cast<double>(k),
                static_cast<double>(nnz) * static_cast<double>(k)));
  CsrMatrix out;
  out.nrows = a.nrows * k;
  out.ncols = a.ncols * k;
  out.row_ptr.resize(static_cast<std::size_t>(out.nrows) + 1);
  out.col_idx.resize(static_cast<std::size_t>(nnz * k));
  out.values.resize(out.col_idx.size());
  out.row_ptr[0] = 0;
  // Entries (and rows) of the result in ranges per host thread, each range walking the copies it
  // overlaps: every output element is written by exactly one range.
  // A matrix whose nonzeros all hold one value (a pattern matrix, unit edge weights, a constant
  // coupling) keeps it: scaling would invent values the class of matrix does not have.
  const bool one_value =
      std::all_of(a.values.begin(), a.values.end(), [&](double v) { return v == a.values[0]; });
  const bool scaled = values == ReplicaValues::scaled && !one_value;
  constexpr std::int64_t kGrain = std::int64_t{1} << 18;
  parallel_for(nnz * k, kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t copy = begin / std::max<std::int64_t>(nnz, 1); copy * nnz < end; ++copy) {
      const std::int64_t nz_base = copy * nnz;
      const auto col_base = static_cast<std::int32_t>(copy * a.ncols);
      const std::int64_t j0 = std::max(begin, nz_base) - nz_base;
      const std::int64_t j1 = std::min(end, nz_base + nnz) - nz_base;
      for (std::int64_t j = j0; j < j1; ++j) out.col_idx[nz_base + j] = a.col_idx[j] + col_base;
      const double f = scaled ? replica_scale(copy, seed) : 1.0;
      if (f == 1.0) {
        std::copy(a.values.begin() + j0, a.values.begin() + j1, out.values.begin() + nz_base + j0);
      } else {
        for (std::int64_t j = j0; j < j1; ++j) out.values[nz_base + j] = a.values[j] * f;
      }
    }
  });
  parallel_for(a.nrows * k, kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t copy = i / a.nrows, r = i % a.nrows;
      out.row_ptr[i + 1] = copy * nnz + a.row_ptr[r + 1];
    }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Specs: "name:key=value,key=value".

namespace {

struct GeneratorInfo {
  std::string_view name;
  std::string_view help;
};

constexpr GeneratorInfo kGenerators[] = {
    {"stencil2d", "stencil2d:nx=1024,ny=1024   2D 5-point Laplacian (n sets nx=ny; default 1024)"},
    {"stencil7", "stencil7:nx=64,ny=64,nz=64   3D 7-point Laplacian (n sets nx=ny=nz; default 64)"},
    {"stencil27", "stencil27:nx=64,ny=64,nz=64  3D 27-point stencil (n sets nx=ny=nz; default 64)"},
    {"elasticity",
     "elasticity:n=32,seed=1       3D elasticity, 3x3 blocks on a 27-point grid (nx,ny,nz; n sets "
     "all; default 32)"},
    {"rmat",
     "rmat:scale=16,ef=16,seed=1,a=0.57,b=0.19,c=0.19  Graph500 R-MAT, 2^scale vertices, "
     "ef*2^scale edges"},
    {"random",
     "random:n=100000,per_row=16,seed=1  uniform random columns (nrows, ncols override n; "
     "default 100000)"},
    {"banded", "banded:n=100000,hbw=8,seed=1  banded, all |i-j| <= hbw present"},
    {"rgg",
     "rgg:n=100000,degree=16,seed=1  random geometric graph in the unit square (pattern), "
     "vertices numbered by cell"},
};

constexpr std::string_view kStencilHelp =
    "the stencils take contrast=C,seed=S: a coefficient in [1, C] per grid point (default C=1: "
    "constant)";
constexpr std::string_view kRepHelp =
    "any spec may end with rep=K: I_K (x) A, K copies down the diagonal (default 1), each copy's "
    "values scaled by its own factor unless A holds a single value";

bool known_generator(std::string_view name) {
  return std::any_of(std::begin(kGenerators), std::end(kGenerators),
                     [&](const GeneratorInfo& g) { return g.name == name; });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

class SpecArgs {
 public:
  SpecArgs(std::string_view spec, std::string_view name, std::string_view args)
      : spec_(spec), name_(name) {
    while (!trim(args).empty()) {
      const std::size_t comma = args.find(',');
      const std::string_view item = trim(args.substr(0, comma));
      args = comma == std::string_view::npos ? std::string_view{} : args.substr(comma + 1);
      const std::size_t eq = item.find('=');
      if (item.empty() || eq == std::string_view::npos || eq == 0) {
        fail(fmt::format("expected key=value, found '{}'", item));
      }
      const std::string_view key = trim(item.substr(0, eq));
      for (const auto& [k, v] : items_) {
        if (k == key) fail(fmt::format("key '{}' given twice", key));
      }
      items_.push_back({key, trim(item.substr(eq + 1))});
    }
    used_.assign(items_.size(), false);
  }

  [[noreturn]] void fail(const std::string& detail) const {
    throw InputError(std::string(spec_), 0, detail);
  }

  std::int64_t size(std::string_view key, std::int64_t fallback, std::int64_t min = 1) {
    const std::string_view* text = take(key);
    if (!text) return fallback;
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (text->empty() || ec != std::errc{} || ptr != text->data() + text->size()) {
      fail(fmt::format("{}={} is not an integer", key, *text));
    }
    if (v < min) fail(fmt::format("{}={} must be at least {}", key, v, min));
    return v;
  }

  std::uint64_t seed(std::uint64_t fallback) {
    const std::string_view* text = take("seed");
    if (!text) return fallback;
    std::uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (text->empty() || ec != std::errc{} || ptr != text->data() + text->size()) {
      fail(fmt::format("seed={} is not a non-negative integer", *text));
    }
    return v;
  }

  double real(std::string_view key, double fallback) {
    const std::string_view* text = take(key);
    if (!text) return fallback;
    double v = 0;
    const auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (text->empty() || ec != std::errc{} || ptr != text->data() + text->size() ||
        !std::isfinite(v)) {
      fail(fmt::format("{}={} is not a number", key, *text));
    }
    return v;
  }

  // Every key must have been consumed by the generator; leftovers are typos.
  void finish(std::string_view keys) const {
    for (std::size_t i = 0; i < items_.size(); ++i) {
      if (!used_[i]) {
        fail(fmt::format("unknown key '{}' for generator '{}' (keys: {})", items_[i].first, name_,
                         keys));
      }
    }
  }

 private:
  const std::string_view* take(std::string_view key) {
    for (std::size_t i = 0; i < items_.size(); ++i) {
      if (items_[i].first == key) {
        used_[i] = true;
        return &items_[i].second;
      }
    }
    return nullptr;
  }

  std::string_view spec_;
  std::string_view name_;
  std::vector<std::pair<std::string_view, std::string_view>> items_;
  std::vector<bool> used_;
};

CsrMatrix build(std::string_view name, SpecArgs& args) {
  auto grid = [&](std::int64_t fallback, bool three_d) {
    const std::int64_t n = args.size("n", fallback);
    std::array<std::int64_t, 3> dims{args.size("nx", n), args.size("ny", n),
                                     three_d ? args.size("nz", n) : 1};
    return dims;
  };
  if (name == "stencil2d") {
    const auto d = grid(1024, false);
    const double contrast = args.real("contrast", 1.0);
    const std::uint64_t seed = args.seed(1);
    args.finish("n, nx, ny, contrast, seed, rep");
    return stencil_2d_5pt(d[0], d[1], contrast, seed);
  }
  if (name == "stencil7") {
    const auto d = grid(64, true);
    const double contrast = args.real("contrast", 1.0);
    const std::uint64_t seed = args.seed(1);
    args.finish("n, nx, ny, nz, contrast, seed, rep");
    return stencil_3d_7pt(d[0], d[1], d[2], contrast, seed);
  }
  if (name == "stencil27") {
    const auto d = grid(64, true);
    const double contrast = args.real("contrast", 1.0);
    const std::uint64_t seed = args.seed(1);
    args.finish("n, nx, ny, nz, contrast, seed, rep");
    return stencil_3d_27pt(d[0], d[1], d[2], contrast, seed);
  }
  if (name == "elasticity") {
    const auto d = grid(32, true);
    const std::uint64_t seed = args.seed(1);
    args.finish("n, nx, ny, nz, seed, rep");
    return elasticity_3d(d[0], d[1], d[2], seed);
  }
  if (name == "rmat") {
    const std::int64_t scale = args.size("scale", 16);
    const std::int64_t ef = args.size("ef", 16);
    const std::uint64_t seed = args.seed(1);
    const double a = args.real("a", 0.57), b = args.real("b", 0.19), c = args.real("c", 0.19);
    args.finish("scale, ef, seed, a, b, c, rep");
    if (scale > 30) args.fail(fmt::format("scale={} exceeds 30: column indices are 32-bit", scale));
    if (ef > std::numeric_limits<int>::max()) args.fail(fmt::format("ef={} is too large", ef));
    return rmat(static_cast<int>(scale), static_cast<int>(ef), seed, a, b, c);
  }
  if (name == "random") {
    const std::int64_t n = args.size("n", 100000);
    const std::int64_t nrows = args.size("nrows", n);
    const std::int64_t ncols = args.size("ncols", n);
    const std::int64_t per_row = args.size("per_row", 16);
    const std::uint64_t seed = args.seed(1);
    args.finish("n, nrows, ncols, per_row, seed, rep");
    return random_uniform(nrows, ncols, per_row, seed);
  }
  if (name == "banded") {
    const std::int64_t n = args.size("n", 100000);
    const std::int64_t hbw = args.size("hbw", 8, 0);
    const std::uint64_t seed = args.seed(1);
    args.finish("n, hbw, seed, rep");
    return banded(n, hbw, seed);
  }
  if (name == "rgg") {
    const std::int64_t n = args.size("n", 100000, 2);
    const double degree = args.real("degree", 16.0);
    const std::uint64_t seed = args.seed(1);
    args.finish("n, degree, seed, rep");
    return random_geometric(n, degree, seed);
  }
  args.fail(fmt::format("unknown generator '{}'", name));
}

}  // namespace

bool is_spec(std::string_view text) {
  const std::size_t colon = text.find(':');
  return known_generator(colon == std::string_view::npos ? text : text.substr(0, colon));
}

CsrMatrix from_spec(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  const std::string_view name = trim(spec.substr(0, colon));
  const std::string_view rest =
      colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  SpecArgs args(spec, name, rest);
  if (!known_generator(name)) {
    std::string names;
    for (const auto& g : kGenerators) names += names.empty() ? g.name : ", " + std::string(g.name);
    args.fail(fmt::format("unknown generator '{}' (known: {})", name, names));
  }
  const std::int64_t rep = args.size("rep", 1);
  // Read before the generators run: the catch below relabels their errors with the spec, and an
  // invalid SPMVC_MEMORY_BUDGET must be reported as itself.
  (void)memory_budget();
  try {
    CsrMatrix a = build(name, args);
    return rep == 1 ? a : replicate(a, rep);
  } catch (const InputError& e) {
    // The generator functions name themselves; a spec user should see the spec they wrote.
    if (e.source() == spec) throw;
    args.fail(e.detail());
  }
}

std::string spec_help() {
  std::string out;
  for (const auto& g : kGenerators) {
    out += g.help;
    out += '\n';
  }
  out += kStencilHelp;
  out += '\n';
  out += kRepHelp;
  out += '\n';
  return out;
}

}  // namespace spmvc::gen
