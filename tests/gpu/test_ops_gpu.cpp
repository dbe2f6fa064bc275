// Operations on a compiled operator beyond one multiply: update_values (new values, same pattern)
// gives what a fresh compile of the new values gives, for every format, reordered and
// device-built operators, and re-plans when a value-coded plan no longer fits; deterministic
// plans give bitwise the same y in 100 multiplies, every format they allow; apply() on a user
// stream is captured into a CUDA graph and replayed 100 times with correct results. Skipped
// without a GPU.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "formats/format.hpp"
#include "formats/values/values.hpp"
#include "gpu_support.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"

using namespace spmvc;
using test::forced;
using test::have_device;
using test::tolerance;

namespace {

void cuda_check(cudaError_t e, const char* what) {
  REQUIRE_MESSAGE(e == cudaSuccess, what << ": " << cudaGetErrorString(e));
}

// Device memory for a test's vectors and values.
class Buffer {
 public:
  explicit Buffer(std::size_t bytes) : bytes_(std::max<std::size_t>(bytes, 8)) {
    cuda_check(cudaMalloc(&ptr_, bytes_), "cudaMalloc");
  }
  ~Buffer() { (void)cudaFree(ptr_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return ptr_; }
  /// Done when it returns: a pageable cudaMemcpy may return before its DMA ends, and a stream
  /// made with cudaStreamNonBlocking does not wait for it.
  void upload(const void* host, std::size_t bytes) {
    cuda_check(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), "upload");
    cuda_check(cudaDeviceSynchronize(), "upload: cudaDeviceSynchronize");
  }
  void download(void* host, std::size_t bytes) const {
    cuda_check(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost), "download");
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

std::size_t vbytes(Precision p) { return p == Precision::f64 ? 8 : 4; }

// fp64 values as the precision's type, in a byte vector ready to upload.
std::vector<unsigned char> as_bytes(const std::vector<double>& v, Precision p) {
  std::vector<unsigned char> out(v.size() * vbytes(p));
  if (p == Precision::f64) {
    std::memcpy(out.data(), v.data(), out.size());
  } else {
    const std::vector<float> f(v.begin(), v.end());
    std::memcpy(out.data(), f.data(), out.size());
  }
  return out;
}

// y = op(x) on device vectors (x the test vector, beta 0), downloaded as raw bytes: the bits of
// the result, for bitwise comparison.
struct Product {
  Precision p;
  std::int64_t nrows, ncols;
  Buffer x, y;
  Product(const Operator& op, Precision precision)
      : p(precision),
        nrows(op.nrows()),
        ncols(op.ncols()),
        x(static_cast<std::size_t>(op.ncols()) * vbytes(precision)),
        y(static_cast<std::size_t>(op.nrows()) * vbytes(precision)) {
    const auto xs = as_bytes(codegen::test_vector(ncols, p), p);
    x.upload(xs.data(), xs.size());
  }
  std::vector<unsigned char> operator()(const Operator& op) {
    cuda_check(cudaMemset(y.get(), 0xff, static_cast<std::size_t>(nrows) * vbytes(p)), "memset");
    op.apply(x.get(), y.get());
    cuda_check(cudaDeviceSynchronize(), "sync");
    std::vector<unsigned char> out(static_cast<std::size_t>(nrows) * vbytes(p));
    y.download(out.data(), out.size());
    return out;
  }
  std::vector<double> values(const std::vector<unsigned char>& bytes) const {
    std::vector<double> out(static_cast<std::size_t>(nrows));
    if (p == Precision::f64) {
      std::memcpy(out.data(), bytes.data(), bytes.size());
    } else {
      std::vector<float> f(out.size());
      std::memcpy(f.data(), bytes.data(), bytes.size());
      std::copy(f.begin(), f.end(), out.begin());
    }
    return out;
  }
};

double error_against(const CsrMatrix& a, const Product& prod, const std::vector<unsigned char>& y) {
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, codegen::test_vector(a.ncols, prod.p), ref);
  return compiler::relative_error(prod.values(y), ref);
}

// `a` with each nonzero's own new value.
CsrMatrix renewed(const CsrMatrix& a) {
  CsrMatrix b = a;
  for (std::size_t k = 0; k < b.values.size(); ++k)
    b.values[k] = 0.75 + static_cast<double>(k % 997) / 512.0;
  return b;
}

bool has_atomics(const Plan& plan) {
  return formats::find_format(plan.format).nondeterminism(plan.params).has_value();
}

}  // namespace

TEST_CASE("gpu: update_values gives what a fresh compile of the new values gives, every format") {
  if (!have_device()) return;
  std::set<std::string> formats_seen;
  for (const char* spec :
       {"random:n=4000,per_row=12", "elasticity:n=8", "rmat:scale=11,ef=8", "stencil2d:n=40"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const CsrMatrix b = renewed(a);
    const Profile profile = inspect(a);
    for (const Precision p : {Precision::f64, Precision::f32}) {
      for (const formats::FormatUnit* unit : formats::registry()) {
        compiler::PlanOptions po;
        po.format = std::string(unit->name());
        po.precision = p;
        po.value_coding = false;
        Plan plan;
        try {
          plan = compiler::make_plan(profile, po);
        } catch (const InputError&) {
          continue;  // the format cannot implement this matrix
        }
        // renewed() breaks symmetry, which a plan storing a symmetric half cannot take without
        // planning again (test_blocks_gpu.cpp and test_dia_gpu.cpp update those): its full
        // variant here.
        if (auto* bcsr = std::get_if<BcsrParams>(&plan.params)) bcsr->symmetric = false;
        if (auto* dia = std::get_if<DiaParams>(&plan.params)) dia->symmetric = false;
        CAPTURE(spec);
        CAPTURE(plan.format);
        CAPTURE(describe(plan.params));
        CAPTURE(to_string(p));
        Operator op = compile(a, forced(p, plan.params));
        Product prod(op, p);
        const ValueUpdate u = op.update_values(b.values);
        CHECK_FALSE(u.replanned);
        const auto updated = prod(op);
        const Operator fresh = compile(b, forced(p, plan.params));
        const auto expected = prod(fresh);
        if (has_atomics(plan)) {
          // Atomics may add in another order: the same product up to rounding.
          CHECK(error_against(b, prod, updated) <= tolerance(p));
        } else {
          CHECK(updated == expected);
        }
        // From device memory: back to the old values, then the new ones again.
        const auto old_bytes = as_bytes(a.values, p), new_bytes = as_bytes(b.values, p);
        Buffer d_old(old_bytes.size()), d_new(new_bytes.size());
        d_old.upload(old_bytes.data(), old_bytes.size());
        d_new.upload(new_bytes.data(), new_bytes.size());
        CHECK_FALSE(op.update_values(d_old.get()).replanned);
        CHECK(error_against(a, prod, prod(op)) <= tolerance(p));
        CHECK_FALSE(op.update_values(d_new.get()).replanned);
        if (!has_atomics(plan)) CHECK(prod(op) == expected);
        formats_seen.insert(plan.format);
      }
    }
  }
  for (const formats::FormatUnit* unit : formats::registry())
    CHECK_MESSAGE(formats_seen.count(std::string(unit->name())), unit->name());
}

TEST_CASE("gpu: update_values on reordered operators keeps x and y in the caller's order") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("random:n=6000,per_row=9");
  const CsrMatrix b = renewed(a);
  for (const auto& [reorder, renumber, format, keep_rows] :
       {std::tuple{"rcm", true, "csr", false}, std::tuple{"rcm", false, "ell", false},
        std::tuple{"sort", false, "sell", false}, std::tuple{"amd", true, "bro_ell", false},
        std::tuple{"dbg", true, "hyb", true}}) {
    CAPTURE(reorder);
    CAPTURE(format);
    CAPTURE(keep_rows);
    Options o;
    o.disk_cache = false;
    o.reorder = reorder;
    o.renumber_columns = renumber;
    o.keep_row_order = keep_rows;
    o.format = format;
    o.value_coding = false;
    Operator op = compile(a, o);
    Product prod(op, o.precision);
    CHECK_FALSE(op.update_values(b.values).replanned);
    const Operator fresh = compile(b, o);
    CHECK(prod(op) == prod(fresh));
  }
}

TEST_CASE("gpu: value-coded plans take new values that fit and re-plan for ones that do not") {
  if (!have_device()) return;
  // Seven distinct values: every coded format gets an 8-bit table.
  CsrMatrix a = gen::from_spec("random:n=5000,per_row=10");
  for (std::size_t k = 0; k < a.values.size(); ++k) a.values[k] = 1.0 + static_cast<double>(k % 7);
  CsrMatrix fits = a;  // 200 distinct values: still an 8-bit table
  for (std::size_t k = 0; k < fits.values.size(); ++k)
    fits.values[k] = -0.5 * static_cast<double>(k % 200);
  const CsrMatrix too_many = renewed(a);  // 997 distinct values
  for (const Precision p : {Precision::f64, Precision::f32}) {
    for (const char* format :
         {"csr", "ell", "hyb", "bro_ell", "bro_coo", "bro_hyb", "csr_stream"}) {
      CAPTURE(format);
      CAPTURE(to_string(p));
      compiler::PlanOptions po;
      po.format = format;
      po.precision = p;
      const Plan plan = compiler::make_plan(inspect(a), po);
      const FormatParams table8 = formats::with_value_coding(plan.params, formats::kValuesTable8);
      Operator op = compile(a, forced(p, table8));
      Product prod(op, p);
      const ValueUpdate fit = op.update_values(fits.values);
      CHECK_FALSE(fit.replanned);
      const auto after_fit = prod(op);
      if (!has_atomics(plan)) {
        CHECK(after_fit == prod(compile(fits, forced(p, table8))));
      } else {
        CHECK(error_against(fits, prod, after_fit) <= tolerance(p));
      }
      const ValueUpdate over = op.update_values(too_many.values);
      CHECK(over.replanned);
      CHECK(over.why.find("8-bit value table holds 256") != std::string::npos);
      CHECK(over.why.find("now store plain values") != std::string::npos);
      CHECK(formats::value_coding_of(op.plan().params) == formats::kValuesPlain);
      CHECK(error_against(too_many, prod, prod(op)) <= tolerance(p));
    }
  }
  // A pattern matrix with its values dropped (all ones); new ones re-plan.
  CsrMatrix pattern = gen::from_spec("rmat:scale=12,ef=8");
  std::fill(pattern.values.begin(), pattern.values.end(), 1.0);
  CsrStreamParams ones;
  ones.values = formats::kValuesUnit;
  const Options o = forced(Precision::f64, ones);
  Operator op = compile(pattern, o);
  REQUIRE(formats::value_coding_of(op.plan().params) == formats::kValuesUnit);
  Product prod(op, o.precision);
  CHECK_FALSE(op.update_values(pattern.values).replanned);
  CsrMatrix doubled = pattern;
  for (double& v : doubled.values) v = 2.0;
  const ValueUpdate u = op.update_values(doubled.values);
  CHECK(u.replanned);
  CHECK(u.why.find("all were 1") != std::string::npos);
  CHECK(error_against(doubled, prod, prod(op)) <= tolerance(o.precision));
  // fp64 values stored as fp32: others exact in fp32 fit, 0.1 does not.
  CsrMatrix halves = gen::from_spec("random:n=3000,per_row=8");
  for (std::size_t k = 0; k < halves.values.size(); ++k)
    halves.values[k] = 0.5 * static_cast<double>(k % 5000);
  CsrParams f32v;
  f32v.values = formats::kValuesF32;
  Operator narrow = compile(halves, forced(Precision::f64, f32v));
  Product nprod(narrow, Precision::f64);
  CsrMatrix quarters = halves;
  for (double& v : quarters.values) v *= 0.5;
  CHECK_FALSE(narrow.update_values(quarters.values).replanned);
  CHECK(nprod(narrow) == nprod(compile(quarters, forced(Precision::f64, f32v))));
  CsrMatrix tenths = halves;
  for (double& v : tenths.values) v += 0.1;
  Buffer d_tenths(tenths.values.size() * 8);
  d_tenths.upload(tenths.values.data(), tenths.values.size() * 8);
  const ValueUpdate inexact = narrow.update_values(d_tenths.get());  // checked on the GPU
  CHECK(inexact.replanned);
  CHECK(inexact.why.find("fp32") != std::string::npos);
  CHECK(error_against(tenths, nprod, nprod(narrow)) <= tolerance(Precision::f64));
}

TEST_CASE("gpu: update_values on an operator built from device arrays") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=12,ef=8");
  const CsrMatrix b = renewed(a);
  for (const Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(to_string(p));
    const bench::ResidentCsr resident(a, p);
    Options o;
    o.precision = p;
    o.disk_cache = false;
    Operator op = compile(resident.view(), o);
    Product prod(op, p);
    const std::string before = describe(op.plan().params);
    const auto new_bytes = as_bytes(b.values, p);
    Buffer d_new(new_bytes.size());
    d_new.upload(new_bytes.data(), new_bytes.size());
    const ValueUpdate u = op.update_values(d_new.get());
    DeviceCsr view = resident.view();
    view.values = d_new.get();
    const Operator fresh = compile(view, o);
    CHECK(prod(op) == prod(fresh));
    CHECK(describe(op.plan().params) == describe(fresh.plan().params));
    CHECK(u.replanned == (before != describe(fresh.plan().params)));
    // From the host: the operator keeps its own copy of the values.
    (void)op.update_values(a.values);
    CHECK(error_against(a, prod, prod(op)) <= tolerance(p));
    CHECK_THROWS_AS((void)op.update_values(std::vector<double>(3, 1.0)), InputError);
  }
}

TEST_CASE("gpu: deterministic plans give bitwise the same y in 100 multiplies, every format") {
  if (!have_device()) return;
  std::set<std::string> formats_seen;
  for (const char* spec : {"rmat:scale=13,ef=16", "random:n=20000,per_row=14", "elasticity:n=10"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const Profile profile = inspect(a);
    for (const Precision p : {Precision::f64, Precision::f32}) {
      for (const formats::FormatUnit* unit : formats::registry()) {
        compiler::PlanOptions po;
        po.format = std::string(unit->name());
        po.precision = p;
        po.deterministic = true;
        Plan plan;
        try {
          plan = compiler::make_plan(profile, po);
        } catch (const InputError&) {
          continue;  // nondeterministic, or cannot implement the matrix
        }
        CAPTURE(spec);
        CAPTURE(describe(plan.params));
        CAPTURE(to_string(p));
        REQUIRE_FALSE(has_atomics(plan));
        Options o = forced(p, plan.params);
        o.deterministic = true;
        const Operator op = compile(a, o);
        Product prod(op, p);
        const auto first = prod(op);
        CHECK(error_against(a, prod, first) <= tolerance(p));
        int differing = 0;
        for (int i = 0; i < 100; ++i) differing += prod(op) != first ? 1 : 0;
        CHECK(differing == 0);
        formats_seen.insert(plan.format);
      }
    }
    // The planner's own pick under deterministic mode.
    Options o;
    o.disk_cache = false;
    o.deterministic = true;
    const Operator op = compile(a, o);
    CHECK_FALSE(has_atomics(op.plan()));
    // Measure mode times only deterministic candidates then.
    o.planner = PlannerMode::measure;
    CHECK_FALSE(has_atomics(compile(a, o).plan()));
  }
  CHECK(formats_seen.count("amb"));  // its fixed-order variant
  for (const char* atomic : {"hyb", "bro_coo", "bro_hyb"}) CHECK_FALSE(formats_seen.count(atomic));
  CHECK(formats_seen.size() >= 10);
}

TEST_CASE("gpu: apply on a user stream is captured into a CUDA graph and replayed") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("random:n=8000,per_row=11");
  struct Case {
    const char* what;
    Options options;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, const char* format, const char* reorder, bool renumber) {
    Options o;
    o.disk_cache = false;
    o.format = format;
    o.reorder = reorder;
    o.renumber_columns = renumber;
    o.value_coding = false;  // new real values then always fit
    cases.push_back({what, o});
  };
  add("csr", "csr", "none", false);
  add("csr reordered, x gathered before the multiply", "csr", "rcm", true);
  add("sell, rows through its permutation", "sell", "none", false);
  add("hyb: ELL then COO launch", "hyb", "none", false);
  add("bro_ell", "bro_ell", "none", false);
  add("csr_stream", "csr_stream", "none", false);
  // amb's parameters as the planner chooses them, in both variants.
  compiler::PlanOptions po;
  po.format = "amb";
  po.value_coding = false;
  AmbParams amb_params = std::get<AmbParams>(compiler::make_plan(inspect(a), po).params);
  for (const bool deterministic : {false, true}) {
    amb_params.deterministic = deterministic;
    Options amb;
    amb.disk_cache = false;
    amb.value_coding = false;
    amb.format = "amb";
    amb.params.emplace(amb_params);
    cases.push_back({deterministic ? "amb deterministic: reduction launch after"
                                   : "amb atomic: y = beta*y launch first",
                     amb});
  }

  // cuSPARSE as the engine: cusparseSpMV on the stream, its buffer and preprocessing made once.
  Options cusparse;
  cusparse.disk_cache = false;
  cusparse.value_coding = false;
  cusparse.cusparse = "always";
  cases.push_back({"cusparse engine", cusparse});

  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  for (Case& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    Operator op = compile(a, c.options);
    const Precision p = op.plan().precision;
    const std::vector<double> x = codegen::test_vector(a.ncols, p);
    std::vector<double> y0(static_cast<std::size_t>(a.nrows));
    for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
    Buffer dx(x.size() * 8), dy(y0.size() * 8);
    dx.upload(x.data(), x.size() * 8);
    dy.upload(y0.data(), y0.size() * 8);
    // y <- 1.5*A*x + 0.5*y, captured once, replayed 100 times.
    const double alpha = 1.5, beta = 0.5;
    cudaGraph_t graph = nullptr;
    cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "BeginCapture");
    op.apply(dx.get(), dy.get(), alpha, beta, stream);
    cuda_check(cudaStreamEndCapture(stream, &graph), "EndCapture");
    cudaGraphExec_t exec = nullptr;
    cuda_check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    for (int i = 0; i < 100; ++i) cuda_check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::vector<double> y(y0.size()), ref = y0;
    dy.download(y.data(), y.size() * 8);
    std::vector<double> ax(y0.size());
    compiler::csr_reference_spmv(a, x, ax);
    for (int i = 0; i < 100; ++i)
      for (std::size_t r = 0; r < ref.size(); ++r) ref[r] = alpha * ax[r] + beta * ref[r];
    CHECK(compiler::relative_error(y, ref) <= tolerance(p));

    // New values keep every device pointer: the same graph multiplies with them.
    const CsrMatrix b = renewed(a);
    if (!op.update_values(b.values).replanned) {
      dy.upload(y0.data(), y0.size() * 8);
      cuda_check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
      cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      dy.download(y.data(), y.size() * 8);
      compiler::csr_reference_spmv(b, x, ax);
      for (std::size_t r = 0; r < ref.size(); ++r) ref[r] = alpha * ax[r] + beta * y0[r];
      CHECK(compiler::relative_error(y, ref) <= tolerance(p));
    } else {
      FAIL_CHECK("new real values re-planned a plan with plain values");
    }
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
  }
  (void)cudaStreamDestroy(stream);
}
