#include "formats/ell/ell_model.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "formats/csr/csr_format.hpp"
#include "formats/model_shortcuts.hpp"

namespace spmvc::formats::ell_model {

double Lengths::mean() const {
  double sum = 0;
  for (const auto& [len, count] : bins) sum += len * count;
  return rows > 0 ? sum / rows : 0.0;
}

namespace {

// (length, rows) pairs sorted by length with equal lengths merged, their counts summed in the
// order given (the pairs come from a few dozen histogram bins: a sorted vector, no tree).
std::vector<std::pair<double, double>> merged(std::vector<std::pair<double, double>> pairs) {
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<double, double>> out;
  out.reserve(pairs.size());
  for (const auto& [len, count] : pairs) {
    if (!out.empty() && out.back().first == len) {
      out.back().second += count;
    } else {
      out.emplace_back(len, count);
    }
  }
  return out;
}

Lengths lengths_afresh(const Profile& profile) {
  std::vector<std::pair<double, double>> pairs;
  pairs.reserve(profile.row_histogram.size() + 1);
  for (const HistogramBin& bin : profile.row_histogram) {
    const auto count = static_cast<double>(bin.count);
    const std::int64_t hi = std::min(bin.hi, profile.row_max);
    if (bin.lo == hi) {
      pairs.emplace_back(static_cast<double>(hi), count);
    } else if (hi == profile.row_max && bin.count > 0) {
      // The top range bin holds the longest row: keep it at its true length, so a single long
      // row pads as much as it really does; the others stand at the range's midpoint.
      pairs.emplace_back(static_cast<double>(hi), 1.0);
      if (bin.count > 1) pairs.emplace_back(0.5 * static_cast<double>(bin.lo + hi), count - 1);
    } else {
      pairs.emplace_back(0.5 * static_cast<double>(bin.lo + hi), count);
    }
  }
  Lengths out;
  out.bins = merged(std::move(pairs));
  for (const auto& [len, count] : out.bins) out.rows += count;
  return out;
}

}  // namespace

Lengths lengths(const Profile& profile) {
  // Every ELL-family cost, refusal and reason starts here: within one planning, once.
  const std::uint64_t number = planning(profile);
  if (number == 0) return lengths_afresh(profile);
  thread_local std::uint64_t kept_for = 0;
  thread_local Lengths kept;
  if (kept_for != number) {
    kept = lengths_afresh(profile);
    kept_for = number;
  }
  return kept;
}

Lengths map(const Lengths& lengths, const std::function<double(double)>& f) {
  std::vector<std::pair<double, double>> pairs;
  pairs.reserve(lengths.bins.size());
  for (const auto& [len, count] : lengths.bins) pairs.emplace_back(f(len), count);
  Lengths out;
  out.rows = lengths.rows;
  out.bins = merged(std::move(pairs));
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

namespace {

double padded_per_row_summed(const Lengths& lengths, std::int64_t window, std::int64_t pack,
                             int round, double floor) {
  if (lengths.rows <= 0 || pack <= 0) return 0.0;
  const std::int64_t w = std::max(window, pack);
  // Levels: each row's length rounded up to `round` and raised to `floor`, increasing.
  std::vector<std::pair<double, double>> levels;
  levels.reserve(lengths.bins.size());
  for (const auto& [len, count] : lengths.bins)
    levels.emplace_back(std::max(floor, std::ceil(len / round - 1e-9) * round), count);
  levels = merged(std::move(levels));
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

// A padded_per_row question: its arguments, the lengths by value.
struct PaddedKey {
  std::vector<std::pair<double, double>> bins;
  double rows;
  std::int64_t window, pack;
  int round;
  double floor;
  bool operator==(const PaddedKey&) const = default;
};

struct PaddedKeyHash {
  // The doubles' bit patterns mixed (std::hash<double> hashes their bytes one by one).
  std::size_t operator()(const PaddedKey& k) const {
    std::uint64_t h = 0;
    auto mix = [&h](std::uint64_t v) {
      h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
    };
    auto bits = [](double d) { return std::bit_cast<std::uint64_t>(d); };
    mix(bits(k.rows));
    for (const auto& [len, count] : k.bins) {
      mix(bits(len));
      mix(bits(count));
    }
    mix(static_cast<std::uint64_t>(k.window));
    mix(static_cast<std::uint64_t>(k.pack));
    mix(static_cast<std::uint64_t>(k.round));
    mix(bits(k.floor));
    return static_cast<std::size_t>(h);
  }
};

}  // namespace

double padded_per_row(const Lengths& lengths, std::int64_t window, std::int64_t pack, int round,
                      double floor) {
  // sell's, ell's and hyb's costs, their refusals and their reasons ask the same question several
  // times per candidate (each candidate's cost is also asked again when it is ranked): the
  // answers are kept per thread, by the lengths' contents.
  if (!model_shortcuts()) return padded_per_row_summed(lengths, window, pack, round, floor);
  thread_local std::unordered_map<PaddedKey, double, PaddedKeyHash> known;
  PaddedKey key{lengths.bins, lengths.rows, window, pack, round, floor};
  if (auto it = known.find(key); it != known.end()) return it->second;
  const double slots = padded_per_row_summed(lengths, window, pack, round, floor);
  if (known.size() > 4096) known.clear();
  known.emplace(std::move(key), slots);
  return slots;
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
