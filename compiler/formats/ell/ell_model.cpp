#include "formats/ell/ell_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>

#include "formats/csr/csr_format.hpp"
#include "formats/model_shortcuts.hpp"

namespace spmvc::formats::ell_model {

double Lengths::mean() const {
  double sum = 0;
  for (const auto& [len, count] : bins) sum += len * count;
  return rows > 0 ? sum / rows : 0.0;
}

Lengths lengths(const Profile& profile) {
  std::map<double, double> bins;
  for (const HistogramBin& bin : profile.row_histogram) {
    const auto count = static_cast<double>(bin.count);
    const std::int64_t hi = std::min(bin.hi, profile.row_max);
    if (bin.lo == hi) {
      bins[static_cast<double>(hi)] += count;
    } else if (hi == profile.row_max && bin.count > 0) {
      // The top range bin holds the longest row: keep it at its true length, so a single long
      // row pads as much as it really does; the others stand at the range's midpoint.
      bins[static_cast<double>(hi)] += 1;
      if (bin.count > 1) bins[0.5 * static_cast<double>(bin.lo + hi)] += count - 1;
    } else {
      bins[0.5 * static_cast<double>(bin.lo + hi)] += count;
    }
  }
  Lengths out;
  for (const auto& [len, count] : bins) {
    out.bins.emplace_back(len, count);
    out.rows += count;
  }
  return out;
}

Lengths map(const Lengths& lengths, const std::function<double(double)>& f) {
  std::map<double, double> bins;
  for (const auto& [len, count] : lengths.bins) bins[f(len)] += count;
  Lengths out;
  out.rows = lengths.rows;
  for (const auto& [len, count] : bins) out.bins.emplace_back(len, count);
  return out;
}

namespace {

// E[ceil(N / pack)] summed term by term (expected_groups keeps the answers).
double expected_groups_summed(std::int64_t window, double p, std::int64_t pack) {
  if (window <= 0 || p <= 0) return 0.0;
  const auto w = static_cast<double>(window);
  const auto c = static_cast<double>(pack);
  if (p >= 1) return std::ceil(w / c);
  // At most one group per window: the chance that any of its rows reaches the level.
  if (window <= pack) return -std::expm1(w * std::log1p(-p));
  const double mean = w * p;
  const double sd = std::sqrt(w * p * (1 - p));
  // N spread over many multiples of pack: ceil adds half a group on average.
  if (sd > 8 * c) return mean / c + 0.5;
  const double lo = std::max(0.0, std::floor(mean - 12 * sd - 1));
  const double hi = std::min(w, std::ceil(mean + 12 * sd + 1));
  // The binomial pmf from lo up, each term from the last: pmf(k+1) = pmf(k) (w-k)/(k+1) p/q
  // (lo is 12 standard deviations below the mean at most, so pmf(lo) stays a normal double).
  const double log_q = std::log1p(-p), ratio = p / (1 - p);
  double pmf = std::exp(std::lgamma(w + 1) - std::lgamma(lo + 1) - std::lgamma(w - lo + 1) +
                        lo * std::log(p) + (w - lo) * log_q);
  double sum = 0;
  for (double k = lo; k <= hi; k += 1) {
    sum += pmf * std::ceil(k / c);
    pmf *= (w - k) / (k + 1) * ratio;
  }
  return sum;
}

struct GroupsKey {
  std::int64_t window, pack;
  double p;
  bool operator==(const GroupsKey&) const = default;
};

struct GroupsKeyHash {
  std::size_t operator()(const GroupsKey& k) const {
    std::size_t h = std::hash<std::int64_t>{}(k.window);
    h = h * 31 + std::hash<std::int64_t>{}(k.pack);
    return h * 31 + std::hash<double>{}(k.p);
  }
};

}  // namespace

double expected_groups(std::int64_t window, double p, std::int64_t pack) {
  // The binomial sum runs over up to 24 standard deviations of N (hundreds of terms for a
  // 1024-row window), and sell's and hyb's costs ask for the same (window, level share, pack)
  // many times over in one plan: the answers are kept per thread.
  if (window <= pack || p <= 0 || p >= 1 || !model_shortcuts())
    return expected_groups_summed(window, p, pack);
  thread_local std::unordered_map<GroupsKey, double, GroupsKeyHash> known;
  const GroupsKey key{window, pack, p};
  if (auto it = known.find(key); it != known.end()) return it->second;
  const double groups = expected_groups_summed(window, p, pack);
  if (known.size() > 4096) known.clear();
  known.emplace(key, groups);
  return groups;
}

double expected_groups_uncached(std::int64_t window, double p, std::int64_t pack) {
  return expected_groups_summed(window, p, pack);
}

double padded_per_row(const Lengths& lengths, std::int64_t window, std::int64_t pack, int round,
                      double floor) {
  if (lengths.rows <= 0 || pack <= 0) return 0.0;
  const std::int64_t w = std::max(window, pack);
  // Levels: each row's length rounded up to `round` and raised to `floor`, increasing.
  std::map<double, double> levels;
  for (const auto& [len, count] : lengths.bins) {
    const double r = std::max(floor, std::ceil(len / round - 1e-9) * round);
    levels[r] += count;
  }
  double above = lengths.rows;  // rows whose level is at least the current one
  double previous = 0, slots = 0;
  for (const auto& [level, count] : levels) {
    if (level > previous) {
      const double p = std::min(1.0, above / lengths.rows);
      slots += (level - previous) * expected_groups(w, p, pack);
      previous = level;
    }
    above -= count;
  }
  return slots * static_cast<double>(pack) / static_cast<double>(w);
}

double fetched_per_row(const Lengths& lengths, int elem_bytes, int threads_per_row,
                       std::int64_t window) {
  constexpr int kSectorBytes = 32;  // the unit DRAM and L2 move on NVIDIA GPUs since Volta
  const int per_sector = std::max(1, kSectorBytes / elem_bytes);
  // A sector holds `round` interleaved slots of each of `rows` consecutive rows.
  const int round = std::min(threads_per_row, per_sector);
  const int rows = per_sector / round;
  return padded_per_row(lengths, window, rows, round);
}

int threads_per_row_for(double mean, Precision precision) {
  const double per_lane = CsrFormat::nonzeros_per_lane(precision);
  for (int t = 1; t < 32; t *= 2) {
    if (mean / t <= per_lane) return t;
  }
  return 32;
}

double latency_factor(double per_lane, Precision precision) {
  return std::min(1.0, CsrFormat::nonzeros_per_lane(precision) / std::max(per_lane, 1e-9));
}

}  // namespace spmvc::formats::ell_model
