// Where compile(CsrMatrix) builds (Options::build), decided without a GPU: the options the GPU
// build refuses keep the host pipeline under `auto` and are errors naming the option under
// `device`; `host` always builds on the host.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "heuristics.hpp"
#include "spmvc/compiler/build_choice.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/params/values.hpp"
#include "spmvc/profile.hpp"

using namespace spmvc;
using compiler::BuildChoice;
using compiler::BuildSubject;
using compiler::choose_build;

namespace {

const BuildSubject kSmall{1000, 1000, 27000};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The message of the InputError choose_build throws for `o` (build = device), "" when none.
std::string device_refusal(Options o, const BuildSubject& m = kSmall) {
  o.build = BuildMode::device;
  try {
    (void)choose_build(o, m);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Options with build = auto, which the cases below decide for.
Options auto_options() {
  Options o;
  o.build = BuildMode::automatic;
  return o;
}

}  // namespace

TEST_CASE("build choice: the default is auto, which builds on the GPU") {
  CHECK(Options{}.build == BuildMode::automatic);
  const BuildChoice c = choose_build(Options{}, kSmall);
  CHECK(c.path == compiler::BuildPath::device);
  CHECK(contains(c.why, "build = auto"));
  CHECK(contains(c.why, "GPU"));
}

TEST_CASE("build choice: host is always the host pipeline, device the GPU build") {
  Options o = auto_options();
  o.build = BuildMode::host;
  CHECK(choose_build(o, kSmall).path == compiler::BuildPath::host);
  CHECK(contains(choose_build(o, kSmall).why, "build = host"));
  o.build = BuildMode::device;
  CHECK(choose_build(o, kSmall).path == compiler::BuildPath::device);
  // Formats and parameters the GPU builds stay there.
  for (const char* format :
       {"csr", "csr_stream", "ell", "sell", "hyb", "bro_ell", "bro_coo", "bro_hyb"}) {
    CAPTURE(format);
    Options f = auto_options();
    f.format = format;
    CHECK(choose_build(f, kSmall).path == compiler::BuildPath::device);
  }
  Options forced = auto_options();
  forced.params = EllParams{};
  CHECK(choose_build(forced, kSmall).path == compiler::BuildPath::device);
  Options deterministic = auto_options();
  deterministic.deterministic = true;
  deterministic.multiplies = 100;
  CHECK(choose_build(deterministic, kSmall).path == compiler::BuildPath::device);
}

TEST_CASE("build choice: auto takes the host pipeline for as many multiplies as repay it") {
  for (const Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
    CAPTURE(to_string(p));
    const std::int64_t many = p == Precision::f64 ? heuristics::kHostPipelineMultiplies64
                                                  : heuristics::kHostPipelineMultiplies32;
    Options o = auto_options();
    o.precision = p;
    o.multiplies = many - 1;
    CHECK(choose_build(o, kSmall).path == compiler::BuildPath::device);
    o.multiplies = many;
    const BuildChoice c = choose_build(o, kSmall);
    CHECK(c.path == compiler::BuildPath::host);
    CHECK(contains(c.why, fmt::format("{} multiplies", many)));
    // Only auto decides by it: host and device stay as asked.
    o.build = BuildMode::device;
    CHECK(choose_build(o, kSmall).path == compiler::BuildPath::device);
  }
}

TEST_CASE(
    "build choice: a GPU build that would not fit the device's memory keeps auto on the host") {
  // 10M nonzeros, 1M rows: the CSR copy is 120 MB fp64 and 80 MB fp32 (plus 4 MB of offsets).
  BuildSubject m{1'000'000, 1'000'000, 10'000'000};
  for (const Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(to_string(p));
    Options o = auto_options();
    o.precision = p;
    const double need = compiler::gpu_build_bytes(m, p);
    CHECK(need == doctest::Approx(2.0 * (10e6 * (p == Precision::f64 ? 12 : 8) + 4e6 + 4)));
    m.device_bytes = 0;  // unknown: not checked
    CHECK(choose_build(o, m).path == compiler::BuildPath::device);
    m.device_bytes = static_cast<std::uint64_t>(need) + 1;
    CHECK(choose_build(o, m).path == compiler::BuildPath::device);
    m.device_bytes = static_cast<std::uint64_t>(need) - 1;
    const BuildChoice c = choose_build(o, m);
    CHECK(c.path == compiler::BuildPath::host);
    CHECK(contains(c.why, "can allocate"));
    o.build = BuildMode::device;
    CHECK(contains(device_refusal(o, m), "can allocate"));
  }
}

TEST_CASE("build choice: what only the host pipeline does keeps auto on the host") {
  struct Case {
    const char* name;
    Options options = auto_options();
    const char* field;
  };
  Options reorder = auto_options();
  reorder.reorder = "rcm";
  Options auto_reorder = auto_options();
  auto_reorder.reorder = "auto";
  Options ordering = auto_options();
  ordering.ordering = Ordering{};
  Options measure = auto_options();
  measure.planner = PlannerMode::measure;
  Options full = auto_options();
  full.full_inspection = true;
  Options mixed = auto_options();
  mixed.mixed_precision = MixedPrecision::f32;
  Options cci = auto_options();
  cci.format = "cci";
  Options amb = auto_options();
  amb.format = "amb";
  Options blocked = auto_options();
  blocked.params = BlockedParams{};
  Options cusparse = auto_options();
  cusparse.cusparse = "always";
  Options offsets64 = auto_options();
  CsrParams wide;
  wide.offsets64 = true;
  offsets64.csr = wide;
  {
    // csr_stream's and BRO's 16-bit codes are built on the GPU.
    Options stream16 = auto_options();
    CsrStreamParams s16;
    s16.values = formats::kValuesTable16;
    stream16.params = s16;
    CHECK(choose_build(stream16, kSmall).path == compiler::BuildPath::device);
    Options bro16 = auto_options();
    BroEllParams b16;
    b16.values = formats::kValuesTable16;
    bro16.params = b16;
    CHECK(choose_build(bro16, kSmall).path == compiler::BuildPath::device);
  }
  Options window = auto_options();
  SellParams sell;
  sell.sigma = 1 << 20;
  window.params = sell;
  Options half = auto_options();
  BcsrParams sym;
  sym.symmetric = true;
  half.params = sym;
  Options rows16 = auto_options();
  HybParams narrow_rows;
  narrow_rows.width = 2;
  narrow_rows.narrow_rows = true;
  rows16.params = narrow_rows;
  Options vector = auto_options();
  CsrParams v4;
  v4.vector_width = 4;
  vector.csr = v4;  // 27001 nonzeros below are not a multiple of 4
  for (const Case& c :
       {Case{"reorder", reorder, "reorder"}, Case{"reorder auto", auto_reorder, "reorder"},
        Case{"ordering", ordering, "reorder"}, Case{"measure", measure, "planner"},
        Case{"full inspection", full, "full_inspection"},
        Case{"mixed precision", mixed, "mixed_precision"}, Case{"cci", cci, "format"},
        Case{"amb", amb, "format"}, Case{"blocked params", blocked, "params"},
        Case{"cusparse always", cusparse, "cusparse"}, Case{"64-bit offsets", offsets64, "params"},
        Case{"sell window", window, "params"}, Case{"vector loads", vector, "params"},
        Case{"bcsr symmetric half", half, "params"},
        Case{"hyb 16-bit COO rows", rows16, "params"}}) {
    CAPTURE(c.name);
    const BuildSubject odd{1000, 1000, 27001};
    const BuildChoice choice = choose_build(c.options, odd);
    CHECK(choice.path == compiler::BuildPath::host);
    CHECK(contains(choice.why, std::string("since ") + c.field));
    const std::string error = device_refusal(c.options, odd);
    CHECK(contains(error, "build = device"));
    CHECK(contains(error, c.field));
  }
  // hyb with 32-bit COO rows is built on the GPU.
  narrow_rows.narrow_rows = false;
  rows16.params = narrow_rows;
  CHECK(choose_build(rows16, kSmall).path == compiler::BuildPath::device);
  // A vector width that divides the nonzeros needs no host padding.
  CHECK(choose_build(vector, kSmall).path == compiler::BuildPath::device);
  // cuSPARSE "never" and "auto" leave the choice to the planner of the GPU build.
  Options never = auto_options();
  never.cusparse = "never";
  CHECK(choose_build(never, kSmall).path == compiler::BuildPath::device);
}

TEST_CASE("build choice: matrices past 32-bit offsets or columns build on the host") {
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  CHECK(choose_build(auto_options(), {1000, 1000, kMax}).path == compiler::BuildPath::device);
  CHECK(choose_build(auto_options(), {1000, 1000, kMax + 1}).path == compiler::BuildPath::host);
  CHECK(choose_build(auto_options(), {kMax, 10, 10}).path == compiler::BuildPath::host);
  CHECK(choose_build(auto_options(), {10, kMax + 1, 10}).path == compiler::BuildPath::host);
  CHECK(contains(choose_build(auto_options(), {1000, 1000, kMax + 1}).why, "32-bit"));
  CHECK(contains(device_refusal(Options{}, {1000, 1000, kMax + 1}), "matrix"));
}

TEST_CASE("build choice: a matrix with no rows or no columns builds on the host") {
  CHECK(choose_build(auto_options(), {0, 10, 0}).path == compiler::BuildPath::host);
  CHECK(choose_build(auto_options(), {10, 0, 0}).path == compiler::BuildPath::host);
  CHECK(choose_build(auto_options(), {-1, 10, 0}).path ==
        compiler::BuildPath::host);  // the host says what is wrong
  CHECK(contains(choose_build(auto_options(), {10, 0, 0}).why, "10 x 0"));
  // Rows and columns without nonzeros are the GPU build's to handle.
  CHECK(choose_build(auto_options(), {10, 10, 0}).path == compiler::BuildPath::device);
}

TEST_CASE("build choice: --build names") {
  CHECK(compiler::parse_build_mode("auto") == BuildMode::automatic);
  CHECK(compiler::parse_build_mode("host") == BuildMode::host);
  CHECK(compiler::parse_build_mode("device") == BuildMode::device);
  for (const BuildMode m : {BuildMode::automatic, BuildMode::host, BuildMode::device})
    CHECK(compiler::parse_build_mode(compiler::to_string(m)) == m);
  try {
    (void)compiler::parse_build_mode("gpu");
    FAIL("no error for 'gpu'");
  } catch (const InputError& e) {
    CHECK(contains(e.what(), "'gpu' is not auto, host or device"));
  }
}

TEST_CASE("build choice: the GPU build of a host matrix is charged the upload of its CSR") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=100");
  const Profile profile = inspect(a, InspectDepth::rows);
  compiler::PlanOptions po;
  po.build_path = compiler::BuildPath::device;
  po.cached_kernels = true;
  const CsrParams params;
  const compiler::Prediction from_device = compiler::predict(profile, FormatParams{params}, po);
  CHECK(from_device.build.upload == 0.0);  // compile(DeviceCsr): nothing uploaded
  po.uploads_csr = true;
  const compiler::Prediction from_host = compiler::predict(profile, FormatParams{params}, po);
  CHECK(from_host.build.upload > 0.0);
  CHECK(from_host.build.inspect == from_device.build.inspect);
  CHECK(from_host.build.encode == from_device.build.encode);
  // The upload grows with the CSR's bytes: fp32 values are 4 bytes a nonzero fewer.
  po.precision = Precision::f32;
  const compiler::Prediction f32 = compiler::predict(profile, FormatParams{params}, po);
  CHECK(f32.build.upload < from_host.build.upload);
  CHECK(f32.build.upload > 0.0);
}
