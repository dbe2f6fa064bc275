// `spmvc run|bench --k K [--layout row|col]` (SpMM) and `--transpose` (y = A^T x): checked
// against the host reference, and timed against cuSPARSE (cusparseSpMM CSR ALG1/ALG2/ALG3, k
// separate SpMVs, cusparseSpMV with opA = TRANSPOSE).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "spmvc/bench/cusparse.hpp"
#include "spmvc/bench/cusparse_spmm.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/spmm.hpp"
#include "spmvc/compiler/test_vector.hpp"

namespace spmvc::cli {

namespace {

struct Operation {
  bool transpose = false;
  int k = 1;
  DenseLayout layout = DenseLayout::col_major;
  std::size_t x_size = 0, y_size = 0;
  std::vector<double> x, reference;
};

Operation describe_operation(const MatrixArgs& args, const CsrMatrix& a, Precision p) {
  Operation o;
  o.transpose = args.transpose;
  if (args.transpose && args.k > 0)
    throw UsageError("--transpose and --k do not combine (apply_transpose takes one vector)");
  o.k = args.transpose ? 1 : args.k;
  o.layout = parse_dense_layout(args.layout);
  const auto ku = static_cast<std::size_t>(o.k);
  const auto nr = static_cast<std::size_t>(a.nrows), nc = static_cast<std::size_t>(a.ncols);
  o.x_size = (o.transpose ? nr : nc) * ku;
  o.y_size = (o.transpose ? nc : nr) * ku;
  o.x = codegen::test_vector(static_cast<std::int64_t>(o.x_size), p);
  o.reference.assign(o.y_size, 0.0);
  if (o.transpose) {
    compiler::csr_reference_spmv(compiler::transpose(a), o.x, o.reference);
  } else {
    compiler::reference_spmm(a, o.k, o.layout, o.x, o.reference, 1.0, 0.0);
  }
  return o;
}

std::string operation_name(const Operation& o) {
  return o.transpose ? "A^T x" : fmt::format("A X, k = {}, {}-major", o.k, to_string(o.layout));
}

}  // namespace

int run_operation(const MatrixArgs& args) {
  const CsrMatrix a = load_matrix(args);
  Options options = make_options(args);
  options.keep_csr = true;
  Operator op = compile(a, options);
  const Precision p = op.plan().precision;
  const Operation o = describe_operation(args, a, p);
  std::vector<double> y(o.y_size, std::numeric_limits<double>::quiet_NaN());
  if (o.transpose) {
    op.apply_transpose_host(o.x, y);
  } else {
    op.apply_many_host(o.x, y, o.k, o.layout);
  }
  const double err = compiler::relative_error(y, o.reference);
  bool ok = err <= compiler::result_tolerance(p) && !std::isnan(err);
  // Mixed precision: each element judged by the plan's bound relative to (|A||X|), the
  // reference's product of the absolute values (a fallback operator without the rounding stays
  // well within it).
  double mixed_err = 0;
  const double mixed_tol = compiler::mixed_error_tolerance(op.plan());
  if (op.plan().rounding) {
    CsrMatrix abs_a = a;
    for (double& v : abs_a.values) v = std::fabs(v);
    std::vector<double> abs_x(o.x.size()), scale(o.y_size, 0.0);
    for (std::size_t i = 0; i < abs_x.size(); ++i) abs_x[i] = std::fabs(o.x[i]);
    if (o.transpose) {
      compiler::csr_reference_spmv(compiler::transpose(abs_a), abs_x, scale);
    } else {
      compiler::reference_spmm(abs_a, o.k, o.layout, abs_x, scale, 1.0, 0.0);
    }
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double diff = std::fabs(y[i] - o.reference[i]);
      const double rel = scale[i] > 0 ? diff / scale[i] : (diff == 0 ? 0.0 : HUGE_VAL);
      mixed_err = std::max(mixed_err, std::isnan(rel) ? HUGE_VAL : rel);
    }
    ok = mixed_err <= mixed_tol;
  }
  const double tolerance = op.plan().rounding ? mixed_tol : compiler::result_tolerance(p);
  const CompileTimings& t = op.timings();
  const std::string kernel =
      o.transpose ? op.transpose_plan().format : op.spmm_source(o.k, o.layout).kernel_name;
  const std::string note = o.transpose ? t.transpose_note : t.spmm_note;
  if (args.json) {
    nlohmann::ordered_json j;
    j["operation"] = o.transpose ? "transpose" : "spmm";
    j["k"] = o.k;
    j["layout"] = std::string(to_string(o.layout));
    j["kernel"] = kernel;
    j["note"] = note;
    j["plan"] = nlohmann::json::parse(to_json(op.plan()));
    j["relative_error"] = err;
    if (op.plan().rounding) j["mixed_precision_max_error"] = mixed_err;
    j["tolerance"] = tolerance;
    j["passed"] = ok;
    j["prepare_seconds"] = o.transpose ? t.transpose : t.spmm;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("operation       {}\n", operation_name(o));
    fmt::print("plan            {} [{}]\n", op.plan().format, describe(op.plan().params));
    fmt::print("{}          {}\n", o.transpose ? "A^T  " : "spmm ", note);
    fmt::print("prepared in     {:.1f} ms\n", (o.transpose ? t.transpose : t.spmm) * 1e3);
    fmt::print("relative error  {:.3e}\n", err);
    if (op.plan().rounding)
      fmt::print("mixed precision max |y_i - ref_i| / (|A||X|)_i = {:.3e} (bound {:.3e})\n",
                 mixed_err, mixed_tol);
    fmt::print("{}   (tolerance {:.0e}, {})\n", ok ? "PASSED" : "FAILED", tolerance, to_string(p));
  }
  return ok ? 0 : 1;
}

nlohmann::ordered_json time_operation(const CsrMatrix& a, const Options& base,
                                      const OperationArgs& args, const BenchArgs& b, bool quiet) {
  Options options = base;
  options.keep_csr = true;
  options.spmm_cusparse = args.spmm_cusparse;
  const Precision p = options.precision;
  const std::size_t vb = static_cast<std::size_t>(value_bytes(p));
  if (!quiet) fmt::print(stderr, "compiling ...\n");
  Operator op = compile(a, options);
  MatrixArgs margs;
  margs.k = args.transpose ? 0 : args.k;
  margs.layout = std::string(to_string(args.layout));
  margs.transpose = args.transpose;
  const Operation o = describe_operation(margs, a, p);

  bench::DeviceArray dx(std::max<std::size_t>(o.x_size * vb, 1));
  bench::DeviceArray dy(std::max<std::size_t>(o.y_size * vb, 1));
  dx.upload_values(o.x, p);
  auto check = [&](const std::function<void()>& fn) {
    return checked_error(dy, p, o.reference, fn);
  };

  nlohmann::ordered_json results = nlohmann::json::array();
  auto time = [&](const std::string& name, const std::function<void()>& fn) {
    nlohmann::ordered_json r;
    r["name"] = name;
    r["relative_error"] = check(fn);
    r["ms"] = median_ms(fn, b);
    if (!quiet) fmt::print(stderr, "  {:<28} {:.4f} ms\n", name, r["ms"].get<double>());
    results.push_back(r);
    return r["ms"].get<double>();
  };
  const auto nr = static_cast<std::size_t>(a.nrows), nc = static_cast<std::size_t>(a.ncols);

  double ours = 0, best_cusparse = std::numeric_limits<double>::infinity(), separate = 0;
  std::string best_name;
  bench::CusparseSpmm cusparse(a, p);
  if (o.transpose) {
    ours = time("spmvc transpose", [&] { op.apply_transpose(dx.get(), dy.get()); });
    best_name = "cusparse spmv transpose csr_alg1";
    best_cusparse =
        time(best_name, [&] { cusparse.spmv_transpose(dx.get(), dy.get(), 1.0, 0.0, nullptr); });
  } else {
    ours = time("spmvc spmm", [&] { op.apply_many(dx.get(), dy.get(), o.k, o.layout); });
    for (bench::CusparseSpmmAlg alg :
         {bench::CusparseSpmmAlg::csr_alg1, bench::CusparseSpmmAlg::csr_alg2,
          bench::CusparseSpmmAlg::csr_alg3}) {
      const std::string name = "cusparse " + std::string(bench::to_string(alg));
      if (const auto why = cusparse.prepare(alg, o.k, o.layout, dx.get(), dy.get())) {
        results.push_back({{"name", name}, {"not_applicable", *why}});
        continue;
      }
      const double ms = time(
          name, [&] { cusparse.spmm(alg, o.k, o.layout, dx.get(), dy.get(), 1.0, 0.0, nullptr); });
      if (ms < best_cusparse) {
        best_cusparse = ms;
        best_name = name;
      }
    }
    // k separate SpMVs need each column as a vector: column-major only.
    if (o.layout == DenseLayout::col_major) {
      const auto* xs = static_cast<const char*>(dx.get());
      auto* ys = static_cast<char*>(dy.get());
      separate = time(fmt::format("spmvc {} x apply", o.k), [&] {
        for (std::size_t q = 0; q < static_cast<std::size_t>(o.k); ++q)
          op.apply(xs + q * nc * vb, ys + q * nr * vb);
      });
      bench::CusparseCsr csr(a, p);
      time(fmt::format("cusparse {} x spmv csr_alg1", o.k), [&] {
        for (std::size_t q = 0; q < static_cast<std::size_t>(o.k); ++q)
          csr.spmv(bench::CusparseAlg::csr_alg1, xs + q * nc * vb, ys + q * nr * vb, 1.0, 0.0,
                   nullptr);
      });
    }
  }
  const CompileTimings& t = op.timings();
  nlohmann::ordered_json j;
  j["nrows"] = a.nrows;
  j["ncols"] = a.ncols;
  j["nnz"] = a.nnz();
  j["precision"] = std::string(to_string(p));
  j["operation"] = o.transpose ? "transpose" : "spmm";
  j["k"] = o.k;
  j["layout"] = std::string(to_string(o.layout));
  j["plan"] = nlohmann::json::parse(to_json(op.plan()));
  j["kernel"] =
      o.transpose ? op.transpose_plan().format : op.spmm_source(o.k, o.layout).kernel_name;
  j["note"] = o.transpose ? t.transpose_note : t.spmm_note;
  // apply_many handed to cusparseSpMM: the suite counts it as cuSPARSE's, not ours.
  j["engine"] = j["kernel"].get<std::string>().rfind("cusparseSpMM", 0) == 0 ? "cusparse" : "spmvc";
  j["prepare_seconds"] = o.transpose ? t.transpose : t.spmm;
  j["results"] = results;
  j["spmvc_ms"] = ours;
  j["cusparse_best"] = best_name;
  j["cusparse_best_ms"] = best_cusparse;
  j["speedup_vs_cusparse_best"] = best_cusparse / ours;
  if (separate > 0) j["speedup_vs_separate_spmv"] = separate / ours;
  return j;
}

int bench_operation(const MatrixArgs& args, const BenchArgs& b) {
  const bench::Gpu device = bench::open_gpu(0);
  std::string label;
  const CsrMatrix a = load_matrix(args, &label);
  if (args.transpose && args.k > 0)
    throw UsageError("--transpose and --k do not combine (apply_transpose takes one vector)");
  const OperationArgs o{args.transpose ? 1 : args.k, parse_dense_layout(args.layout),
                        args.transpose, args.spmm_cusparse};
  nlohmann::ordered_json j;
  j["matrix"] = label;
  j["gpu"] = device.name;
  j["cusparse_version"] = bench::CusparseCsr::version();
  j.update(time_operation(a, make_options(args), o, b, args.quiet));
  if (args.json) {
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{}: {} x {}, {} nonzeros, {}; {} k={} {}\n", label, a.nrows, a.ncols, a.nnz(),
               j["precision"].get<std::string>(), j["operation"].get<std::string>(), o.k,
               to_string(o.layout));
    fmt::print("{}\n", j["note"].get<std::string>());
    fmt::print("spmvc {:.4f} ms; {} {:.4f} ms: {:.2f}x\n", j["spmvc_ms"].get<double>(),
               j["cusparse_best"].get<std::string>(), j["cusparse_best_ms"].get<double>(),
               j["speedup_vs_cusparse_best"].get<double>());
    if (j.contains("speedup_vs_separate_spmv"))
      fmt::print("against k separate spmvc SpMVs: {:.2f}x\n",
                 j["speedup_vs_separate_spmv"].get<double>());
  }
  return 0;
}

}  // namespace spmvc::cli
