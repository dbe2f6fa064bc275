// `spmvc bench --suite`: the named, versioned benchmark suite. For every matrix and precision it
// times every applicable format (each with the planner's parameters for it) and the planner's own
// pick against cuSPARSE CSR ALG1 (with preprocess) and ALG2, in one process, on one GPU, with the
// same x (../shared/docs/BENCHMARKING.md). Results are appended to a JSON document after every
// matrix, so a run cut short keeps what it measured; scripts/report/bench-plots.py draws the
// figures.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "spmvc/bench/bandwidth.hpp"
#include "spmvc/bench/cusparse.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/bench/suite.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc::cli {

namespace {

// The suite times the host pipeline's plans (Options::build host), as every earlier run did,
// except in the fields named for another build (planner_device, planner_host_gpu).
Options host_pipeline() {
  Options o;
  o.build = BuildMode::host;
  return o;
}

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

constexpr std::int64_t kBandwidthNnz = 16'000'000;

// The horizons the break-even-aware planner is asked about (planner_by_multiplies): from a few
// multiplies to a long solve.
constexpr std::int64_t kBreakEvenMultiplies[] = {10, 100, 1000, 100000};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Every public matrix with at least 100k nonzeros (after symmetric expansion; index.csv's
// full_nnz): the suites' real matrices.
constexpr const char* kPublic[] = {
    "G3_circuit",       "wave",         "landmark",    "Andrews",  "cage11",        "Maragal_6",
    "MIT8_facebook100", "delaunay_n16", "email-Enron", "ct2010",   "rgg_n_2_15_s0", "EX5",
    "bcsstk16",         "wing",         "astro-ph",    "nh2010",   "delaunay_n15",  "ca-CondMat",
    "ego-Facebook",     "vt2010",       "de2010",      "wiki-Vote"};

// Version 1 of the suite. Changing an entry changes the version.
std::vector<SuiteEntry> suite_v1() {
  // The public matrices as they are (the small, launch-bound regime) and replicated as I_k ⊗ A
  // to at least 16M nonzeros (the bandwidth regime), every copy repeating A's values.
  std::vector<SuiteEntry> s;
  for (const char* m : kPublic) s.push_back({m, "small", m, 0, gen::ReplicaValues::repeated});
  for (const char* m : kPublic)
    s.push_back(
        {std::string(m) + " x16M", "bandwidth", m, kBandwidthNnz, gen::ReplicaValues::repeated});
  // Generated classes at bandwidth scale.
  s.push_back({"stencil2d 2000^2", "bandwidth", "stencil2d:n=2000", 0});
  s.push_back({"stencil27 126^3", "bandwidth", "stencil27:nx=126,ny=126,nz=126", 0});
  s.push_back({"elasticity 60^3", "bandwidth", "elasticity:n=60", 0});
  s.push_back({"kronecker scale 21", "bandwidth", "rmat:scale=21,ef=16", 0});
  s.push_back({"random 1M x 16", "bandwidth", "random:n=1000000,per_row=16", 0});
  s.push_back({"banded 1M hbw 8", "bandwidth", "banded:n=1000000,hbw=8", 0});
  return s;
}

// Version 13: the bandwidth regime with values that scale like real ones. Replicas scale each
// copy's values (pattern matrices stay pattern), generated stencils come in constant- and
// variable-coefficient forms, and large matrices that are not replicas (a Kronecker graph, a
// random geometric graph, a variable-coefficient 3D stencil) give x accesses that span the whole
// vector. Each entry's class (R, P, G) comes from its profile.
std::vector<SuiteEntry> suite_v13() {
  std::vector<SuiteEntry> s;
  for (const char* m : kPublic)
    s.push_back({std::string(m) + " x16M", "bandwidth", m, kBandwidthNnz});
  s.push_back({"stencil2d 2000^2", "bandwidth", "stencil2d:n=2000", 0});
  s.push_back({"stencil2d 2000^2 var", "bandwidth", "stencil2d:n=2000,contrast=1000", 0});
  s.push_back({"stencil27 126^3", "bandwidth", "stencil27:nx=126,ny=126,nz=126", 0});
  s.push_back(
      {"stencil27 126^3 var", "bandwidth", "stencil27:nx=126,ny=126,nz=126,contrast=1000", 0});
  s.push_back({"elasticity 60^3", "bandwidth", "elasticity:n=60", 0});
  s.push_back({"kronecker scale 21", "bandwidth", "rmat:scale=21,ef=16", 0});
  s.push_back({"random 1M x 16", "bandwidth", "random:n=1000000,per_row=16", 0});
  s.push_back({"banded 1M hbw 8", "bandwidth", "banded:n=1000000,hbw=8", 0});
  // Large, not replicated (>= 50M nonzeros).
  s.push_back({"kronecker scale 22 large", "bandwidth", "rmat:scale=22,ef=16", 0});
  s.push_back({"rgg 3.4M large", "bandwidth", "rgg:n=3400000,degree=16", 0});
  s.push_back({"stencil7 200^3 var large", "bandwidth", "stencil7:n=200,contrast=1000", 0});
  return s;
}

// The entry's matrix before replication, and the replication factor k (I_k ⊗ A).
std::pair<CsrMatrix, std::int64_t> load_entry(const SuiteEntry& e, const fs::path& matrix_dir) {
  CsrMatrix a;
  if (gen::is_spec(e.source)) {
    a = gen::from_spec(e.source);
  } else {
    const fs::path path = matrix_dir / (e.source + ".mtx.xz");
    if (!fs::exists(path))
      throw InputError(path.string(), 0,
                       "suite matrix not found (set SPMVC_MATRIX_DIR to the public matrices)");
    a = read_matrix_market(path);
  }
  const std::int64_t k = replication_factor(1, e.replicate_to, a.nnz());
  return {std::move(a), k};
}

// An ordering of A repeated on every diagonal block of I_k ⊗ A: the ordering each algorithm
// gives the block-diagonal matrix up to the order of its components, without running it on k
// copies.
Ordering replicate_ordering(const Ordering& o, std::int64_t n, std::int64_t k) {
  Ordering r = o;
  r.perm.resize(static_cast<std::size_t>(n * k));
  for (std::int64_t b = 0; b < k; ++b)
    for (std::int64_t i = 0; i < n; ++i)
      r.perm[static_cast<std::size_t>(b * n + i)] =
          static_cast<std::int32_t>(b * n + o.perm[static_cast<std::size_t>(i)]);
  return r;
}

}  // namespace

std::vector<SuiteEntry> suite_entries(const std::string& version) {
  if (version == "v1") return suite_v1();
  if (version == "v13") return suite_v13();
  throw InputError("--suite", 0, fmt::format("unknown suite '{}' (known: v1, v13)", version));
}

// The mixed-precision mode `--mixed-precision LIST` asks of precision `p` (f32 for fp64, bf16
// for fp32 and f32acc64), or none. LIST: comma-separated modes, "on" for both, "off".
static std::optional<MixedPrecision> suite_mixed_mode(const std::string& list, Precision p) {
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (item == "on") return p == Precision::f64 ? MixedPrecision::f32 : MixedPrecision::bf16;
    const MixedPrecision m = parse_mixed_precision(item);
    if ((m == MixedPrecision::f32 && p == Precision::f64) ||
        (m == MixedPrecision::bf16 && p != Precision::f64))
      return m;
  }
  return std::nullopt;
}

int run_suite(const SuiteArgs& s, const BenchArgs& b) {
  (void)suite_mixed_mode(s.mixed_precision, Precision::f64);  // a bad mode fails before any run
  std::vector<SuiteEntry> entries = suite_entries(s.version);
  if (!s.only.empty()) {
    std::regex re;
    try {
      re = std::regex(s.only);
    } catch (const std::regex_error& e) {
      throw InputError("--only", 0,
                       fmt::format("'{}' is not a valid regular expression: {}", s.only, e.what()));
    }
    std::erase_if(entries, [&](const SuiteEntry& e) {
      return !std::regex_search(e.name, re) && !std::regex_search(e.regime, re);
    });
  }
  if (s.limit < 0) throw InputError("--limit", 0, fmt::format("must be positive, got {}", s.limit));
  if (s.limit > 0 && static_cast<std::int64_t>(entries.size()) > s.limit)
    entries.resize(static_cast<std::size_t>(s.limit));
  // Every option is checked before --list returns, so a listing never hides a typo that the
  // real run would only report on the GPU machine.
  std::vector<std::string> formats;
  if (s.formats == "all") {
    formats = compiler::format_names();
  } else if (!s.formats.empty() && s.formats != "none") {
    std::stringstream ss(s.formats);
    for (std::string f; std::getline(ss, f, ',');)
      formats.push_back(compiler::canonical_format_name(f));
  }
  {
    std::stringstream ss(s.plain_twins);
    for (std::string f; std::getline(ss, f, ',');)
      if (!f.empty()) compiler::canonical_format_name(f);
  }
  std::vector<std::string> orderings;
  {
    const std::vector<std::string> known = ordering_names();
    std::stringstream ss(s.orderings);
    for (std::string o; std::getline(ss, o, ',');) {
      if (o.empty() || o == "none") continue;
      if (std::find(known.begin(), known.end(), o) == known.end())
        throw InputError(
            "--orderings", 0,
            fmt::format("unknown ordering '{}' (known: {})", o, fmt::join(known, ", ")));
      orderings.push_back(o);
    }
  }
  std::vector<Precision> precisions;
  {
    std::stringstream ss(s.precisions);
    for (std::string p; std::getline(ss, p, ',');) precisions.push_back(parse_precision(p));
  }
  if (s.list) {
    for (const SuiteEntry& e : entries)
      fmt::print(
          "{:<28} {:<10} {}{}\n", e.name, e.regime, e.source,
          e.replicate_to > 0 ? fmt::format(" replicated to >= {} nonzeros", e.replicate_to) : "");
    return 0;
  }
  const bench::Gpu device = bench::open_gpu(0);
  const fs::path matrix_dir = [] {
    if (const char* d = std::getenv("SPMVC_MATRIX_DIR")) return fs::path(d);
    return fs::path(SPMVC_DEFAULT_MATRIX_DIR);
  }();

  // --skip-bandwidth assumes the figure measured earlier on this GPU model (measured all the
  // same for a model not in the table).
  const bench::AssumedBandwidth bw = bench::assumed_read_bandwidth(device, b.skip_bandwidth);
  const double read_bw = bw.bytes_per_second;

  json doc;
  doc["suite"] = "spmvc-" + s.version;
  doc["classes"] = {
      {"G", fmt::format("power-law rows: longest row over {}x the mean", bench::kPowerLawRowRatio)},
      {"P", fmt::format("pattern or few values: at most {} distinct", kDistinctValuesCap)},
      {"R", "real values: too many distinct values to code"}};
  doc["gpu"] = device.name;
  doc["arch"] = device.arch;
  doc["cuda_runtime"] = device.runtime_version;
  doc["cuda_driver"] = device.driver_version;
  doc["nvrtc"] = bench::nvrtc_version();
  doc["cusparse"] = bench::CusparseCsr::version();
  doc["baselines"] = {"cusparse csr_alg1 (preprocessed)", "cusparse csr_alg2",
                      fmt::format("cusparse sell_alg1 (slice {})", bench::kCusparseSellSlice)};
  doc["read_bandwidth"] = read_bw;
  doc["read_bandwidth_measured"] = bw.measured;
  doc["repetitions"] = b.repetitions;
  doc["planner_reorder"] = s.planner_reorder;
  doc["planner_plan_order"] = s.plan_order;
  if (s.operation)
    doc["operation"] = s.operation->transpose
                           ? std::string("transpose: y = A^T x")
                           : fmt::format("spmm: Y = A X, k = {}, {}-major", s.operation->k,
                                         to_string(s.operation->layout));
  doc["results"] = json::array();
  auto save = [&] {
    if (s.out.empty()) return;
    std::ofstream(s.out) << doc.dump(1) << "\n";
  };

  int index = 0;
  for (const SuiteEntry& entry : entries) {
    ++index;
    fmt::print(stderr, "[{}/{}] {} ...\n", index, entries.size(), entry.name);
    CsrMatrix base, a;
    std::int64_t k = 1;
    try {
      std::tie(base, k) = load_entry(entry, matrix_dir);
      a = k > 1 ? gen::replicate(base, k, entry.replica_values) : base;
    } catch (const Error& e) {
      fmt::print(stderr, "  skipped: {}\n", e.what());
      doc["results"].push_back({{"matrix", entry.name}, {"skipped", e.what()}});
      save();
      continue;
    }
    const double nnz = static_cast<double>(a.nnz());
    // The entry's class and value count, from the row scan the planner reads.
    const Profile profile = inspect(a, InspectDepth::rows);
    const std::string klass(bench::matrix_class(profile));
    if (s.operation) {
      // SpMM or the transpose of the planner's pick, against cuSPARSE (time_operation).
      for (Precision p : precisions) {
        Options o = host_pipeline();
        o.precision = p;
        o.reorder = s.planner_reorder;
        json r;
        r["matrix"] = entry.name;
        r["regime"] = entry.regime;
        r["source"] = entry.source;
        r["replicas"] = k;
        r["class"] = klass;
        try {
          r.update(time_operation(a, o, *s.operation, b, false));
        } catch (const Error& e) {
          fmt::print(stderr, "  failed: {}\n", e.what());
          r["failed"] = e.what();
        }
        doc["results"].push_back(r);
        save();
      }
      continue;
    }
    for (Precision p : precisions) {
      const double vb = value_bytes(p);
      const std::size_t xb = static_cast<std::size_t>(a.ncols) * static_cast<std::size_t>(vb);
      const std::size_t yb = static_cast<std::size_t>(a.nrows) * static_cast<std::size_t>(vb);
      const std::vector<double> x_host = codegen::test_vector(a.ncols, p);
      std::vector<double> ref(static_cast<std::size_t>(a.nrows));
      compiler::csr_reference_spmv(a, x_host, ref);
      bench::DeviceArray dx(std::max<std::size_t>(xb, 1)), dy(std::max<std::size_t>(yb, 1));
      dx.upload_values(x_host, p);
      std::vector<double> last_y;  // the last check's y
      auto check = [&](const std::function<void()>& fn) {
        return checked_error(dy, p, ref, fn, &last_y);
      };
      const double csr_bytes =
          static_cast<double>(a.nrows + 1) * 4 + nnz * (4 + vb) + static_cast<double>(xb + yb);
      const double tol = compiler::result_tolerance(p);

      json r;
      r["matrix"] = entry.name;
      r["regime"] = entry.regime;
      r["source"] = entry.source;
      r["nrows"] = a.nrows;
      r["ncols"] = a.ncols;
      r["nnz"] = a.nnz();
      r["replicas"] = k;
      r["class"] = klass;
      // Counted up to kDistinctValuesCap; more reads as kDistinctValuesCap + 1.
      r["distinct_values"] = profile.distinct_values;
      r["distinct_values_capped"] = profile.distinct_values > kDistinctValuesCap;
      r["row_max"] = profile.row_max;
      r["row_mean"] = profile.row_mean;
      r["precision"] = std::string(to_string(p));
      r["csr_bytes"] = csr_bytes;

      // Baselines (not with --mixed-only, which times the planner's two picks alone).
      double best_cusparse = std::numeric_limits<double>::infinity();
      if (!s.mixed_only) {
        // cuSPARSE's one-time cost: the CSR upload, then each algorithm's descriptor, buffer and
        // preprocessing (scripts/report/break-even.py charges them against its multiplies).
        auto t_upload = std::chrono::steady_clock::now();
        bench::CusparseCsr cusparse(a, p);
        bench::synchronize();
        r["cusparse_upload_s"] = seconds_since(t_upload);
        for (bench::CusparseAlg alg : {bench::CusparseAlg::csr_alg1, bench::CusparseAlg::csr_alg2,
                                       bench::CusparseAlg::sell_alg1}) {
          json& cj = r["cusparse"][std::string(bench::to_string(alg))];
          if (const auto why = cusparse.not_applicable(alg)) {
            cj = {{"applicable", false}, {"reason", *why}};
            continue;
          }
          const auto t_prepare = std::chrono::steady_clock::now();
          cusparse.prepare(alg, dx.get(), dy.get());
          bench::synchronize();
          const double prepare_s = seconds_since(t_prepare);
          auto fn = [&] { cusparse.spmv(alg, dx.get(), dy.get(), 1.0, 0.0, nullptr); };
          const double err = check(fn);
          const double ms = median_ms(fn, b);
          // A baseline that returns a wrong product does not set the bar.
          if (err <= tol) best_cusparse = std::min(best_cusparse, ms);
          cj = {{"ms", ms},
                {"relative_error", err},
                {"correct", err <= tol},
                {"prepare_s", prepare_s}};
        }
      }
      r["best_cusparse_ms"] = best_cusparse;

      // One operator timed against the bar: its product checked, median time, bytes, one-time
      // cost with a cached kernel, break-even.
      auto measure_operator = [&](const Operator& op) -> json {
        json m;
        {
          // In the plan's order (Options::plan_order) the operator multiplies x and y of its own,
          // permuted here; the reference is permuted into that order.
          const bool ordered = op.plan_order();
          bench::DeviceArray px(ordered ? std::max<std::size_t>(xb, 1) : 1);
          bench::DeviceArray py(ordered ? std::max<std::size_t>(yb, 1) : 1);
          if (ordered) px.upload_values(into_plan_order(x_host, op.plan_columns()), p);
          bench::DeviceArray& ox = ordered ? px : dx;
          bench::DeviceArray& oy = ordered ? py : dy;
          auto fn = [&] { op.apply(ox.get(), oy.get()); };
          double err = 0;
          if (ordered) {
            err = checked_error(py, p, into_plan_order(ref, op.plan_rows()), fn, &last_y);
            last_y = out_of_plan_order(last_y, op.plan_rows());
          } else {
            err = check(fn);
          }
          const double ms = median_ms(fn, b);
          const double own = static_cast<double>(op.read_bytes()) + static_cast<double>(xb + yb);
          const CompileTimings& t = op.timings();
          // A plan that hands the multiply to cuSPARSE counts as "cusparse" in the tables.
          m = {{"format",
                op.plan().engine == Engine::cusparse ? std::string("cusparse") : op.plan().format},
               {"params", describe(op.plan().params)},
               {"ms", ms},
               {"relative_error", err},
               {"correct", err <= tol},
               {"predicted_ms", op.plan().predicted_seconds * 1e3},
               {"predicted_one_time_s", op.plan().predicted_build_seconds},
               {"own_bytes", own},
               {"pct_read_bw", 100 * own / (ms * 1e-3) / read_bw},
               {"csr_equiv_gbs", csr_bytes / (ms * 1e-3) / 1e9},
               {"speedup_vs_best_cusparse", best_cusparse / ms},
               {"one_time",
                {{"inspect", t.inspect},
                 {"plan", t.plan},
                 {"encode", t.encode},
                 {"codegen", t.codegen},
                 {"compile", t.compile},
                 {"kernel_origin", t.kernel_origin},
                 {"measure", t.measure},
                 {"reorder", t.reorder},
                 {"upload", t.upload}}}};
          if (!op.plan().reorder.empty() && op.plan().reorder != "none")
            m["reorder"] = op.plan().reorder;
          if (ordered) m["plan_order"] = true;
          m["build"] = t.build;  // host or device: where compile() inspected, planned and encoded
          const double one_time = t.inspect + t.reorder + t.plan + t.encode + t.codegen + t.upload +
                                  (t.kernel_origin == "nvrtc" ? 0.0 : t.compile);
          const double saving = (best_cusparse - ms) * 1e-3;
          m["one_time_cached_s"] = one_time;
          m["break_even_multiplies"] =
              saving > 0 ? json(one_time / saving) : json(nullptr);  // null: never
        }
        return m;
      };
      auto measure = [&](Options o) -> json {
        o.precision = p;
        // The suite times specialised kernels: the blocking compile, never the generic tier.
        o.tiered = false;
        o.disk_cache = true;
        json m;
        try {
          m = measure_operator(compile(a, o));
        } catch (const InputError& e) {
          m = {{"format", o.format}, {"applicable", false}, {"reason", e.detail()}};
        } catch (const Error& e) {
          m = {{"format", o.format}, {"error", e.what()}};
        }
        return m;
      };

      // The planner's pick. A first compile warms the kernel cache, so the measured one-time
      // cost is the one a long-running application pays per matrix once its kernel is cached.
      {
        Options o = host_pipeline();
        o.precision = p;
        o.reorder = s.planner_reorder;
        o.plan_order = s.plan_order;
        if (!s.mixed_only) (void)compile(a, o);
        r["planner"] = measure(o);
        // Measure mode: the model's best candidate of each of its top formats (csr's always)
        // timed on the GPU. The decision is remembered by matrix fingerprint, so this is the
        // mode's first, measuring compile.
        if (!s.mixed_only && !s.skip_measure) {
          Options om = o;
          om.planner = PlannerMode::measure;
          r["planner_measure"] = measure(om);
        }
        // --deterministic: the planner's pick among plans without floating-point atomics (to
        // set beside cuSPARSE's CSR ALG2, whose results are deterministic too).
        if (s.deterministic) {
          Options od = o;
          od.deterministic = true;
          (void)compile(a, od);
          r["planner_deterministic"] = measure(od);
        }
        // --mixed-precision: the planner's pick with values stored rounded (f32 for fp64, bf16
        // for fp32), its speed-up over the pick above and y's error against the fp64 reference
        // as the plan's bound states it (componentwise, relative to |A||x|) and normwise. Where
        // the planner kept the full-precision plan (Plan::mixed_fallback) that is the pick
        // above: speed-up 1, the error the full-precision plan's.
        if (const std::optional<MixedPrecision> mode = suite_mixed_mode(s.mixed_precision, p)) {
          Options om = o;
          om.mixed_precision = *mode;
          om.mixed_fallback = !s.insist_mixed;
          om.tiered = false;
          json m;
          try {
            if (!s.mixed_only) (void)compile(a, om);  // warms the kernel cache, as above
            const Operator op = compile(a, om);
            m = measure_operator(op);  // its check leaves y in last_y
            const compiler::MixedError err = compiler::mixed_error(a, x_host, last_y, ref);
            const ValueRounding rounding = op.plan().rounding.value_or(ValueRounding{});
            const double tolerance = compiler::mixed_error_tolerance(op.plan());
            m["mode"] = std::string(to_string(*mode));
            m["value_error"] = rounding.value_error;
            m["y_error_bound"] = rounding.y_error_bound;
            m["tolerance"] = tolerance;
            m["max_error"] = err.componentwise;
            m["normwise_error"] = err.normwise;
            m["within_bound"] = err.componentwise <= tolerance;
            m["correct"] = err.componentwise <= tolerance;
            m["fallback"] = op.plan().mixed_fallback.has_value();
            if (op.plan().mixed_fallback) {
              m["fallback_why"] = describe(*op.plan().mixed_fallback);
              m["speedup_vs_planner"] = 1.0;
            } else if (r["planner"].contains("ms")) {
              m["speedup_vs_planner"] = r["planner"]["ms"].get<double>() / m["ms"].get<double>();
            }
          } catch (const InputError& e) {
            m = {{"mode", std::string(to_string(*mode))},
                 {"applicable", false},
                 {"reason", e.detail()}};
          } catch (const Error& e) {
            m = {{"mode", std::string(to_string(*mode))}, {"error", e.what()}};
          }
          r["planner_mixed"] = m;
        }
      }
      if (!s.mixed_only) {
        // The planner from device arrays: the CSR arrays uploaded once, as cuSPARSE needs them too
        // (not counted), then compile(DeviceCsr), its kernels warmed by a first build: the
        // one-time cost of an application whose matrix is already on the GPU.
        {
          const bench::ResidentCsr resident(a, p);
          const DeviceCsr& view = resident.view();
          Options o;
          o.precision = p;
          o.tiered = false;
          try {
            (void)compile(view, o);
            r["planner_device"] = measure_operator(compile(view, o));
          } catch (const Error& e) {
            r["planner_device"] = {{"format", "csr_stream"}, {"error", e.what()}};
          }
        }
        // The planner from host CSR through the GPU build (Options::build automatic): the staged
        // upload, then compile(DeviceCsr)'s stages, kernels warmed by a first build; its
        // one_time_cached_s counts that upload as cusparse_upload_s counts cuSPARSE's (a pageable
        // copy, as a caller makes it). cuSPARSE given the same staged upload is timed too
        // (cusparse_staged_upload_s), so the break-even can also be read with equal uploads.
        {
          Options o;
          o.precision = p;
          o.tiered = false;
          o.build = BuildMode::automatic;
          try {
            (void)compile(a, o);
            r["planner_host_gpu"] = measure_operator(compile(a, o));
          } catch (const Error& e) {
            r["planner_host_gpu"] = {{"error", e.what()}};
          }
          const auto t_staged = std::chrono::steady_clock::now();
          {
            const bench::CusparseCsr staged(a, p, bench::CusparseUpload::staged);
            bench::synchronize();
            r["cusparse_staged_upload_s"] = seconds_since(t_staged);
          }
        }
        // The break-even-aware planner's picks (model planner, the matrix in its own order, the
        // compile counted cold) for each horizon scripts/report/break-even.py reports.
        for (const std::int64_t n : kBreakEvenMultiplies) {
          Options o;
          o.precision = p;
          o.multiplies = n;
          BuildTarget target;
          target.gpu = device.name;
          const Plan pick = compiler::make_plan(profile, compiler::plan_options(o, target));
          r["planner_by_multiplies"][std::to_string(n)] = {
              {"format", pick.engine == Engine::cusparse ? std::string("cusparse") : pick.format},
              {"params", describe(pick.params)},
              {"predicted_ms", pick.predicted_seconds * 1e3},
              {"predicted_one_time_s", pick.predicted_build_seconds}};
        }
      }
      r["formats"] = json::array();
      for (const std::string& f : s.mixed_only ? std::vector<std::string>{} : formats) {
        Options o = host_pipeline();
        o.format = f;
        fmt::print(stderr, "  {} {} ...\n", to_string(p), f);
        r["formats"].push_back(measure(o));
      }
      // Plain twins: the same formats with one stored value per nonzero, where the pick coded
      // them (what value coding gains, measured in the same run).
      if (!s.plain_twins.empty()) {
        r["formats_plain"] = json::array();
        std::stringstream twins(s.plain_twins);
        for (std::string f; std::getline(twins, f, ',');) {
          const auto coded =
              std::find_if(r["formats"].begin(), r["formats"].end(),
                           [&](const json& m) { return m.value("format", "") == f; });
          if (coded == r["formats"].end() ||
              coded->value("params", "").find("val=") == std::string::npos)
            continue;
          Options o = host_pipeline();
          o.format = f;
          o.value_coding = false;
          fmt::print(stderr, "  {} {} (plain values) ...\n", to_string(p), f);
          r["formats_plain"].push_back(measure(o));
        }
      }
      // The oracle: the fastest correct measured variant.
      double oracle = r["planner"].value("ms", std::numeric_limits<double>::infinity());
      std::string oracle_name = r["planner"].value("format", "");
      for (const json& m : r["formats"]) {
        if (m.value("correct", false) && m["ms"].get<double>() < oracle) {
          oracle = m["ms"].get<double>();
          oracle_name = m["format"].get<std::string>();
        }
      }
      r["oracle"] = {{"format", oracle_name}, {"ms", oracle}};

      // Orderings (the reordering experiment): each format again on the reordered matrix, the
      // ordering computed once on A and repeated over the k diagonal blocks.
      for (const std::string& name : orderings) {
        if (ordering_needs_square(name) && base.nrows != base.ncols) continue;
        json& oj = r["orderings"][name];
        try {
          const Ordering o = compute_ordering(base, name);
          oj["seconds_on_A"] = o.seconds;
          oj["renumber_columns"] = s.renumber_columns;
          oj["note"] = o.note;
          const Ordering ok = k > 1 ? replicate_ordering(o, base.nrows, k) : o;
          oj["formats"] = json::array();
          for (const json& plain : r["formats"]) {
            if (!plain.contains("ms")) continue;
            Options ro = host_pipeline();
            ro.format = plain["format"].get<std::string>();
            ro.ordering = ok;
            ro.renumber_columns = s.renumber_columns;
            json m = measure(ro);
            if (m.contains("ms"))
              m["speedup_vs_original"] = plain["ms"].get<double>() / m["ms"].get<double>();
            oj["formats"].push_back(std::move(m));
          }
        } catch (const Error& e) {
          oj["error"] = e.what();
        }
      }
      if (r["planner"].contains("ms"))
        r["planner_gap_pct"] = 100 * (r["planner"]["ms"].get<double>() / oracle - 1);
      if (r.contains("planner_measure") && r["planner_measure"].contains("ms"))
        r["planner_measure_gap_pct"] =
            100 * (r["planner_measure"]["ms"].get<double>() / oracle - 1);
      fmt::print(stderr, "  {} planner {} {:.3f}x vs cuSPARSE (oracle {} {:.3f}x)\n", to_string(p),
                 r["planner"].value("format", "?"),
                 r["planner"].value("speedup_vs_best_cusparse", 0.0), oracle_name,
                 best_cusparse / oracle);
      doc["results"].push_back(std::move(r));
      save();
    }
  }
  if (s.out.empty()) fmt::print("{}\n", doc.dump(1));
  return 0;
}

}  // namespace spmvc::cli
