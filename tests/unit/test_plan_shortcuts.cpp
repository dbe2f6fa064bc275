// The planner's shortcuts (formats/model_shortcuts.hpp) change its cost, not its answers: every
// plan made with them equals the plan made the long way (cci's unbounded code-table search,
// amb's column-at-a-time synthetic rows, the ELL family's binomial sums and padding evaluated
// afresh, BRO-ELL's estimates and the row lengths recomputed at every question), candidate for
// candidate, on generated matrices and on the public ones, from host and from device arrays.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "formats/amb/amb_traffic.hpp"
#include "formats/cci/cci_format.hpp"
#include "formats/ell/ell_model.hpp"
#include "formats/model_shortcuts.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/options.hpp"
#include "spmvc/profile.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

// Restores the shortcuts however a test ends.
struct Shortcuts {
  explicit Shortcuts(bool on) { formats::set_model_shortcuts(on); }
  ~Shortcuts() { formats::set_model_shortcuts(true); }
  Shortcuts(const Shortcuts&) = delete;
  Shortcuts& operator=(const Shortcuts&) = delete;
};

bool close(double a, double b) {
  return a == b || std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

void check_same_plan(const Plan& fast, const Plan& slow) {
  CHECK(fast.format == slow.format);
  CHECK(describe(fast.params) == describe(slow.params));
  CHECK(close(fast.predicted_seconds, slow.predicted_seconds));
  CHECK(close(fast.predicted_bytes, slow.predicted_bytes));
  REQUIRE(fast.candidates.size() == slow.candidates.size());
  for (std::size_t i = 0; i < fast.candidates.size(); ++i) {
    const Candidate& f = fast.candidates[i];
    const Candidate& s = slow.candidates[i];
    CAPTURE(s.format);
    CAPTURE(s.label);
    CHECK(f.format == s.format);
    CHECK(f.label == s.label);
    CHECK(f.applicable == s.applicable);
    CHECK(f.reason == s.reason);
    CHECK(close(f.predicted_seconds, s.predicted_seconds));
    CHECK(close(f.predicted_bytes, s.predicted_bytes));
  }
}

// Plans `profile` the long way, then with the shortcuts twice (their kept answers empty for
// this profile, then filled), after planning `other` in between so a kept answer of another
// matrix would show.
void check_profile(const Profile& profile, const Profile& other,
                   const compiler::PlanOptions& options) {
  Plan slow;
  {
    Shortcuts off(false);
    slow = compiler::make_plan(profile, options);
  }
  const Plan first = compiler::make_plan(profile, options);
  (void)compiler::make_plan(other, options);
  const Plan again = compiler::make_plan(profile, options);
  check_same_plan(first, slow);
  check_same_plan(again, slow);
}

std::vector<compiler::PlanOptions> option_sets() {
  std::vector<compiler::PlanOptions> out(3);
  out[1].precision = Precision::f32;
  out[2].cost_model = compiler::CostModel::traffic;
  out[2].multiplies = 1000;
  return out;
}

// The objective cci's search minimises, for a table it returned: classes in rising immediate
// width, each coding the widths above the previous class's, at its opcode plus its width.
double partition_bits(const formats::CciTable& table, const std::array<std::int64_t, 33>& hist) {
  std::vector<formats::CciClass> classes = table.classes;
  std::sort(classes.begin(), classes.end(),
            [](const auto& a, const auto& b) { return a.imm_bits < b.imm_bits; });
  double bits = 0;
  int below = -1;
  for (const formats::CciClass& c : classes) {
    for (int b = below + 1; b <= c.imm_bits; ++b)
      bits += static_cast<double>(hist[static_cast<std::size_t>(b)]) * (c.opcode_len + c.imm_bits);
    below = c.imm_bits;
  }
  return bits;
}

// The same minimum by enumeration: every cut of the present widths into contiguous classes and
// every order of every complete prefix code's opcode lengths (at most 3 bits) over them.
double exhaustive_bits(const std::array<std::int64_t, 33>& hist) {
  const std::vector<std::vector<int>> shapes = {{0},
                                                {1, 1},
                                                {1, 2, 2},
                                                {2, 2, 2, 2},
                                                {1, 2, 3, 3},
                                                {1, 3, 3, 3, 3},
                                                {2, 2, 2, 3, 3},
                                                {2, 2, 3, 3, 3, 3},
                                                {2, 3, 3, 3, 3, 3, 3},
                                                {3, 3, 3, 3, 3, 3, 3, 3}};
  std::vector<int> widths;
  for (int b = 0; b <= 32; ++b)
    if (hist[static_cast<std::size_t>(b)] > 0) widths.push_back(b);
  const int np = static_cast<int>(widths.size());
  double best = INFINITY;
  for (unsigned cuts = 0; cuts < (1u << (np - 1)); ++cuts) {
    // Classes: (frequency, widest width).
    std::vector<std::pair<double, int>> classes;
    double freq = 0;
    for (int j = 0; j < np; ++j) {
      freq +=
          static_cast<double>(hist[static_cast<std::size_t>(widths[static_cast<std::size_t>(j)])]);
      if (j == np - 1 || (cuts >> j & 1u)) {
        classes.emplace_back(freq, widths[static_cast<std::size_t>(j)]);
        freq = 0;
      }
    }
    for (std::vector<int> lens : shapes) {
      if (lens.size() != classes.size()) continue;
      std::sort(lens.begin(), lens.end());
      do {
        double bits = 0;
        bool fits = true;
        for (std::size_t k = 0; k < lens.size(); ++k) {
          fits = fits && lens[k] + classes[k].second <= 32;
          bits += classes[k].first * (lens[k] + classes[k].second);
        }
        if (fits) best = std::min(best, bits);
      } while (std::next_permutation(lens.begin(), lens.end()));
    }
  }
  return best;
}

void check_same_table(const std::array<std::int64_t, 33>& hist) {
  const formats::CciTable bounded = formats::cci_choose_table(hist);
  const formats::CciTable unbounded = formats::cci_search_table_unbounded(hist);
  REQUIRE(bounded.classes.size() == unbounded.classes.size());
  for (std::size_t i = 0; i < bounded.classes.size(); ++i) {
    CHECK(bounded.classes[i].opcode_len == unbounded.classes[i].opcode_len);
    CHECK(bounded.classes[i].opcode == unbounded.classes[i].opcode);
    CHECK(bounded.classes[i].imm_bits == unbounded.classes[i].imm_bits);
  }
}

}  // namespace

TEST_CASE("cci's bounded code-table search finds the unbounded search's table") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    CAPTURE(trial);
    std::array<std::int64_t, 33> hist{};
    // Few widths (exhaustive enumeration stays small), counts from 1 to 10^9, with clusters.
    const int present = 1 + static_cast<int>(rng() % 9);
    for (int k = 0; k < present; ++k) {
      const auto b = static_cast<std::size_t>(rng() % 33);
      hist[b] = static_cast<std::int64_t>(1 + rng() % (trial % 3 == 0 ? 10 : 1000000000));
    }
    check_same_table(hist);
    const formats::CciTable table = formats::cci_choose_table(hist);
    CHECK(partition_bits(table, hist) == exhaustive_bits(hist));
  }
  // Wide histograms, as power-law matrices have them: every width present.
  for (int trial = 0; trial < 20; ++trial) {
    std::array<std::int64_t, 33> hist{};
    for (std::int64_t& h : hist) h = static_cast<std::int64_t>(1 + rng() % 100000);
    check_same_table(hist);
  }
}

TEST_CASE("amb's blocking estimate laid out by runs equals the column-at-a-time layout") {
  std::vector<Profile> profiles;
  for (const char* spec :
       {"stencil27:n=12", "rmat:scale=12,ef=16", "random:n=5000,per_row=16", "banded:n=4000,hbw=8"})
    profiles.push_back(inspect(gen::from_spec(spec), InspectDepth::rows));
  profiles.push_back(inspect(test::short_and_long_rows(20000, true), InspectDepth::rows));
  for (const Profile& p : profiles) {
    for (int b = 1; b <= 12; ++b) {
      CAPTURE(b);
      CHECK(formats::amb_estimated_blocks(p, b) == formats::amb_estimated_blocks_simulated(p, b));
    }
  }
}

TEST_CASE("kept binomial sums answer for their own window, share and pack") {
  for (std::int64_t window : {64, 1024, 4096}) {
    for (std::int64_t pack : {4, 8, 32}) {
      for (double p : {1e-6, 0.013, 0.25, 0.5, 0.9, 0.999}) {
        const double kept = formats::ell_model::expected_groups(window, p, pack);
        CHECK(formats::ell_model::expected_groups(window, p, pack) == kept);
        CHECK(kept == formats::ell_model::expected_groups_uncached(window, p, pack));
      }
    }
  }
}

TEST_CASE("plans with the model shortcuts equal the plans made the long way: generated") {
  std::vector<Profile> profiles;
  for (const char* spec : {"stencil27:n=20", "rmat:scale=14,ef=16", "random:n=20000,per_row=16",
                           "banded:n=30000,hbw=8", "rmat:scale=12,ef=4,seed=3"})
    profiles.push_back(inspect(gen::from_spec(spec), InspectDepth::rows));
  profiles.push_back(inspect(test::short_and_long_rows(30000, true), InspectDepth::rows));
  for (const compiler::PlanOptions& options : option_sets()) {
    for (std::size_t i = 0; i < profiles.size(); ++i) {
      CAPTURE(i);
      check_profile(profiles[i], profiles[(i + 1) % profiles.size()], options);
    }
  }
}

TEST_CASE("plans with the model shortcuts equal the plans made the long way: public matrices") {
  const auto matrices = test::public_matrices(0, 2'000'000);
  if (matrices.empty()) return;  // the public matrices are not beside this clone
  const Profile other = inspect(gen::from_spec("rmat:scale=10,ef=8"), InspectDepth::rows);
  for (const auto& [name, file] : matrices) {
    CAPTURE(name);
    const Profile profile = inspect(read_matrix_market(file), InspectDepth::rows);
    for (const compiler::PlanOptions& options : option_sets())
      check_profile(profile, other, options);
  }
}

TEST_CASE("a planning keeps answers for its own Profile, while it lasts") {
  const Profile a = inspect(gen::from_spec("stencil2d:n=40"), InspectDepth::rows);
  const Profile b = inspect(gen::from_spec("rmat:scale=10,ef=8"), InspectDepth::rows);
  CHECK(formats::planning(a) == 0);  // no planning under way
  std::uint64_t first = 0;
  {
    const formats::PlanningScope outer(a);
    first = formats::planning(a);
    CHECK(first != 0);
    CHECK(formats::planning(b) == 0);  // another Profile keeps nothing
    {
      const formats::PlanningScope same(a);  // make_plan inside plan_device_csr
      CHECK(formats::planning(a) == first);
    }
    CHECK(formats::planning(a) == first);
    {
      const formats::PlanningScope other(b);  // another planning interrupts this one
      CHECK(formats::planning(b) != 0);
      CHECK(formats::planning(b) != first);
      CHECK(formats::planning(a) == 0);
    }
    CHECK(formats::planning(a) == first);  // and gives it back
    {
      const Shortcuts off(false);
      CHECK(formats::planning(a) == 0);
    }
  }
  CHECK(formats::planning(a) == 0);
  {
    const formats::PlanningScope again(a);  // a later planning of the same object: a new number
    CHECK(formats::planning(a) != first);
    CHECK(formats::planning(a) != 0);
  }
}

TEST_CASE("plans from device arrays with the model shortcuts equal the plans made the long way") {
  // compile(DeviceCsr)'s planner: every device format planned under one planning; the host
  // arrays stand in for device ones (the planner reads their sizes and alignment only).
  for (const char* spec : {"stencil27:n=20", "rmat:scale=14,ef=16", "random:n=20000,per_row=16",
                           "banded:n=30000,hbw=8"}) {
    CAPTURE(spec);
    const CsrMatrix a = gen::from_spec(spec);
    const test::HostDeviceCsr arrays(a);
    Profile profile = inspect(a, InspectDepth::rows);
    profile.block_shapes.clear();  // format auto from device arrays runs no block pass
    BuildTarget target;
    target.gpu = "H100";
    for (const Precision precision : {Precision::f64, Precision::f32}) {
      Options o;
      o.precision = precision;
      const Plan fast = compiler::plan_device_csr(arrays.view, profile, o, target);
      const Plan again = compiler::plan_device_csr(arrays.view, profile, o, target);
      Plan slow;
      {
        const Shortcuts off(false);
        slow = compiler::plan_device_csr(arrays.view, profile, o, target);
      }
      check_same_plan(fast, slow);
      check_same_plan(again, slow);  // the answers kept by a planning end with it
    }
  }
  // Another matrix's Profile in the same object: nothing kept from the plannings before.
  const CsrMatrix first = gen::from_spec("stencil27:n=20");
  const CsrMatrix second = gen::from_spec("rmat:scale=13,ef=8");
  const test::HostDeviceCsr first_arrays(first), second_arrays(second);
  BuildTarget target;
  target.gpu = "H100";
  Profile profile = inspect(first, InspectDepth::rows);
  (void)compiler::plan_device_csr(first_arrays.view, profile, Options{}, target);
  profile = inspect(second, InspectDepth::rows);
  const Plan fast = compiler::plan_device_csr(second_arrays.view, profile, Options{}, target);
  const Shortcuts off(false);
  check_same_plan(fast, compiler::plan_device_csr(second_arrays.view, profile, Options{}, target));
}
