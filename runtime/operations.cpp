// Operator::apply_many (SpMM over the plan's own encoding, or over an encoding built for it) and
// Operator::apply_transpose (A^T built on the GPU by a counting sort, then planned and compiled
// as compile(DeviceCsr) does). Both take their vectors in the order apply() does: an operator in
// the plan's order (Options::plan_order) keeps its CSR reordered, and its own encoding has no row
// map.
#include "operations.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <variant>

#include <fmt/format.h>

#include "generic_tier.hpp"
#include "operator_impl.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc {

namespace runtime {

namespace {

Operations& operations_of(const Operator::Impl& im) {
  if (!im.operations) throw InternalError("operator has no operations attached");
  return *im.operations;
}

// Options for an operator built from the kept CSR: what compile(DeviceCsr) accepts of the
// caller's (precision, cache, device, value coding); everything else default.
Options device_options(const Options& o) {
  Options d;
  d.precision = o.precision;
  d.disk_cache = o.disk_cache;
  d.cache_dir = o.cache_dir;
  d.device = o.device;
  d.value_coding = o.value_coding;
  d.spmm_cusparse = o.spmm_cusparse;
  return d;
}

const DeviceCsr& kept_csr(Operations& ops, const char* operation, const std::string& what) {
  if (!ops.csr)
    throw InputError(operation, 0,
                     fmt::format("{}, and the operator keeps no plain CSR of the matrix to build "
                                 "one from: {}",
                                 what, ops.no_csr));
  return *ops.csr;
}

void launch_spmm(const Operator::Impl& im, const Operations::SpmmUnit& unit, const void* x, void* y,
                 double alpha, double beta, void* stream) {
  runtime::LaunchArgs args(im.nrows, im.ncols, im.plan.precision != Precision::f32, alpha, beta);
  unit.kernel->launch(unit.source.grid, unit.source.block, unit.source.shared_bytes,
                      args.bind(unit.source.params, unit.array_args, x, y), stream);
  check_last_launch(unit.source.kernel_name);
}

const Operations::SpmmUnit* generated_unit(const Operator::Impl& im, Operations& ops, int k,
                                           DenseLayout layout);
Operations::SpmmUnit load_spmm_unit(const Operator::Impl& im, const Operations& ops, int k,
                                    DenseLayout layout, bool packs);

// Whether X and Y both start on a multiple of `bytes`.
bool aligned_to(const void* x, const void* y, int bytes) {
  const auto bits = reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(y);
  return bits % static_cast<std::uintptr_t>(bytes) == 0;
}

// The cusparseSpMM unit for (k, layout) on the kept CSR, set up and recorded. Called with
// ops.mutex held.
const Operations::SpmmUnit* cusparse_unit(const Operator::Impl& im, Operations& ops, int k,
                                          DenseLayout layout) {
  if (!ops.cusparse_spmm)
    ops.cusparse_spmm = std::make_unique<CusparseSpmmEngine>(*ops.csr, im.plan.precision);
  Operations::SpmmUnit unit;
  unit.engine = compiler::SpmmEngine::cusparse;
  unit.source.kernel_name = ops.cusparse_spmm->prepare(k, layout);
  return &ops.spmm.insert_or_assign(std::pair{k, layout}, std::move(unit)).first->second;
}

// The median milliseconds of `run(x, y)` on zeroed scratch X and Y of the operator's sizes, after
// a warm-up call.
template <typename F>
double time_spmm(const Operator::Impl& im, int k, const F& run) {
  const std::size_t vb = value_bytes(im.plan.precision);
  const auto ku = static_cast<std::size_t>(k);
  DeviceBuffer x(std::max<std::size_t>(static_cast<std::size_t>(im.ncols) * ku * vb, 8));
  DeviceBuffer y(std::max<std::size_t>(static_cast<std::size_t>(im.nrows) * ku * vb, 8));
  x.fill_bytes(0);
  y.fill_bytes(0);
  run(x.get(), y.get());
  synchronize();
  constexpr int kRuns = 7;
  std::array<double, kRuns> ms{};
  EventTimer timer;
  for (double& t : ms) {
    timer.start();
    run(x.get(), y.get());
    t = timer.stop_ms();
  }
  std::sort(ms.begin(), ms.end());
  return ms[kRuns / 2];
}

// The operator's SpMM unit for (k, layout), compiled and loaded on first use; nullptr when the
// plan's encoding has none (then ops.spmm_fallback is built). Called with ops.mutex held.
const Operations::SpmmUnit* spmm_unit(const Operator::Impl& im, Operations& ops, int k,
                                      DenseLayout layout) {
  if (k < 1 || k > kMaxDenseColumns)
    throw InputError("apply_many", 0,
                     fmt::format("k = {} vectors: apply_many takes 1..{}", k, kMaxDenseColumns));
  if (auto found = ops.spmm.find({k, layout}); found != ops.spmm.end()) return &found->second;
  if (ops.spmm_on_fallback.contains({k, layout})) return nullptr;
  CompileTimings& timings = const_cast<Operator::Impl&>(im).timings;
  const auto t0 = Clock::now();
  std::optional<compiler::SpmmChoice> choice;
  if (ops.subject) {
    choice = compiler::choose_spmm_engine(*ops.subject, k, layout, ops.options.spmm_cusparse,
                                          ops.options.planner == PlannerMode::measure,
                                          ops.csr.has_value(), ops.no_csr);
    if (choice->engine == compiler::SpmmEngine::cusparse && !choice->time_both) {
      const Operations::SpmmUnit* unit = cusparse_unit(im, ops, k, layout);
      timings.spmm += seconds_since(t0);
      timings.spmm_note = "cuSPARSE: " + choice->why;
      return unit;
    }
  }
  const Operations::SpmmUnit* own = generated_unit(im, ops, k, layout);
  if (own == nullptr) ops.spmm_on_fallback.insert({k, layout});
  if (!choice || !choice->time_both) {
    timings.spmm += seconds_since(t0);
    return own;
  }
  // Measured: the generated unit (or the fallback operator) against cusparseSpMM, on scratch X
  // and Y, and the faster kept for (k, layout).
  const std::string own_note = timings.spmm_note;
  const double own_ms = time_spmm(im, k, [&](const void* x, void* y) {
    if (own == nullptr)
      ops.spmm_fallback->apply_many(x, y, k, layout, 1.0, 0.0, nullptr);
    else
      launch_spmm(im, *own, x, y, 1.0, 0.0, nullptr);
  });
  if (!ops.cusparse_spmm)
    ops.cusparse_spmm = std::make_unique<CusparseSpmmEngine>(*ops.csr, im.plan.precision);
  const std::string alg = ops.cusparse_spmm->prepare(k, layout);
  const double cusparse_ms = time_spmm(im, k, [&](const void* x, void* y) {
    ops.cusparse_spmm->apply(k, layout, x, y, 1.0, 0.0, nullptr);
  });
  timings.spmm += seconds_since(t0);
  // The model's pick and the rows it read stay in the note, to check the model against.
  const std::string times =
      fmt::format("measured {:.4f} ms generated, {:.4f} ms {}; the model's pick: {}", own_ms,
                  cusparse_ms, alg, choice->why);
  if (cusparse_ms < own_ms) {
    ops.spmm_on_fallback.erase({k, layout});
    const Operations::SpmmUnit* unit = cusparse_unit(im, ops, k, layout);
    timings.spmm_note = "cuSPARSE: " + times;
    return unit;
  }
  timings.spmm_note = fmt::format("{} ({})", own_note, times);
  return own;
}

// The generated unit for (k, layout) (nullptr: the fallback operator runs it), built and
// recorded for later calls. Called with ops.mutex held.
const Operations::SpmmUnit* generated_unit(const Operator::Impl& im, Operations& ops, int k,
                                           DenseLayout layout) {
  CompileTimings& timings = const_cast<Operator::Impl&>(im).timings;
  if (ops.spmm_fallback) return nullptr;
  const std::optional<std::string> why =
      ops.subject ? compiler::spmm_unsupported(*ops.subject)
                  : std::optional<std::string>("the operator's encoding is not described");
  if (why) {
    const DeviceCsr& csr = kept_csr(ops, "apply_many", "no SpMM kernel here: " + *why);
    Options fallback = device_options(ops.options);
    // This operator chose the generated unit for (k, layout): its fallback runs one too.
    fallback.spmm_cusparse = "never";
    ops.spmm_fallback = std::make_unique<Operator>(compile(csr, fallback));
    // The planner may pick a format with no SpMM kernel of its own (bro_ell) from device arrays
    // too: csr_stream then, which has one for any matrix; and where that (or the caller's
    // parameters) takes two rows a lane, which the SpMM unit does not, the same shape with one.
    const auto two_rows_a_lane = [&] {
      const auto* p = std::get_if<CsrStreamParams>(&ops.spmm_fallback->plan().params);
      return p != nullptr && p->rows_per_lane > 1;
    };
    const std::string& picked = ops.spmm_fallback->plan().format;
    if (picked != "csr" && picked != "csr_stream") {
      fallback.format = "csr_stream";
      ops.spmm_fallback = std::make_unique<Operator>(compile(csr, fallback));
    }
    if (two_rows_a_lane()) {
      CsrStreamParams one = std::get<CsrStreamParams>(ops.spmm_fallback->plan().params);
      one.rows_per_lane = 1;
      fallback.params = FormatParams{one};
      ops.spmm_fallback = std::make_unique<Operator>(compile(csr, fallback));
    }
    timings.spmm_note = fmt::format("built a {} encoding from the kept CSR ({}): {}",
                                    ops.spmm_fallback->plan().format, *why,
                                    describe(ops.spmm_fallback->plan().params));
    return nullptr;
  }
  Operations::SpmmUnit unit = load_spmm_unit(im, ops, k, layout, true);
  timings.spmm_note = "own encoding: " + unit.source.kernel_name;
  return &ops.spmm.emplace(std::pair{k, layout}, std::move(unit)).first->second;
}

// The generated unit for (k, layout) that moves one element per load and store, for X or Y off
// the packed unit's alignment, built on the first such call. Called with ops.mutex held.
const Operations::SpmmUnit* unpacked_unit(const Operator::Impl& im, Operations& ops, int k,
                                          DenseLayout layout) {
  if (auto found = ops.spmm_unpacked.find({k, layout}); found != ops.spmm_unpacked.end())
    return &found->second;
  return &ops.spmm_unpacked.emplace(std::pair{k, layout}, load_spmm_unit(im, ops, k, layout, false))
              .first->second;
}

// The generated SpMM unit for (k, layout) compiled (through the kernel cache), loaded and bound to
// the operator's arrays.
Operations::SpmmUnit load_spmm_unit(const Operator::Impl& im, const Operations& ops, int k,
                                    DenseLayout layout, bool packs) {
  Operations::SpmmUnit unit;
  unit.source = compiler::generate_spmm(*ops.subject, k, layout, packs);
  // Only a unit of packs needs more than its element type's alignment.
  const compiler::SpmmShape shape = compiler::spmm_shape(*ops.subject, k, layout, packs);
  if (shape.vector > 1) unit.pack_bytes = compiler::spmm_pack_bytes(shape, ops.subject->precision);
  const DeviceInfo device = probe_device(ops.options.device);
  const CachedKernel cached = cache_for(cache_dir_of(ops.options)).get(unit.source, device.arch());
  // A reordered unit's row map is set per operator, so it loads its own image.
  if (ops.subject->row_map) {
    auto own = std::make_shared<const LoadedKernel>(cached.cubin.image, unit.source.kernel_name);
    const void* map = im.array("row_map");
    own->set_global("spmvc_row_map", &map, sizeof map);
    unit.kernel = std::move(own);
  } else {
    unit.kernel = shared_kernel(cached, unit.source.kernel_name, device.ordinal);
  }
  if (unit.source.params.size() > Operator::Impl::kMaxParams)
    throw InternalError("SpMM unit " + unit.source.kernel_name + " has too many parameters");
  for (const KernelParam& p : unit.source.params)
    unit.array_args.push_back(p.kind == KernelParam::Kind::array ? im.array(p.name) : nullptr);
  return unit;
}

// A^T built on the GPU and compiled, on first use. Called with ops.mutex held.
const Operator& transposed(const Operator::Impl& im, Operations& ops) {
  if (ops.transposed) return *ops.transposed;
  const DeviceCsr& a = kept_csr(ops, "apply_transpose", "A^T is built on first use");
  const auto t0 = Clock::now();
  const DeviceInfo device = probe_device(ops.options.device);
  set_device(ops.options.device);
  KernelCache& cache = cache_for(cache_dir_of(ops.options));
  const KernelSource src = compiler::transpose_source();
  const CachedKernel cached = cache.get(src, device.arch());
  const auto count = shared_kernel(cached, compiler::kTransposeCountEntry, device.ordinal);
  const bool f64 = im.plan.precision == Precision::f64;
  const auto fill = shared_kernel(
      cached, f64 ? compiler::kTransposeFillF64Entry : compiler::kTransposeFillF32Entry,
      device.ordinal);
  const DeviceCsrKernels build_kernels = load_device_csr_kernels(cache, device);

  const auto n = static_cast<std::size_t>(a.ncols);
  const auto nnz = static_cast<std::size_t>(a.nnz);
  const std::size_t vb = f64 ? 8 : 4;
  DeviceBuffer counts(std::max<std::size_t>(n * 4, 4));
  counts.fill_bytes(0);
  DeviceBuffer next((n + 1) * 4);
  ops.t_row_ptr = DeviceBuffer((n + 1) * 4);
  ops.t_col_idx = DeviceBuffer(std::max<std::size_t>(nnz * 4, 4));
  ops.t_values = DeviceBuffer(std::max<std::size_t>(nnz * vb, 8));
  const int block = compiler::kTransposeBlock;
  if (nnz > 0) {
    long long total = a.nnz;
    const void* col = a.col_idx;
    void* counts_ptr = counts.get();
    void* args[] = {&total, &col, &counts_ptr};
    count->launch((a.nnz + block - 1) / block, block, 0, args, nullptr);
    check_last_launch(compiler::kTransposeCountEntry);
  }
  // The exclusive scan twice: A^T's row_ptr, and the fill's cursors.
  for (void* out : {ops.t_row_ptr.get(), next.get()}) {
    const void* counts_ptr = counts.get();
    long long columns = a.ncols;
    void* args[] = {&counts_ptr, &columns, &out};
    build_kernels.stream_scan->launch(1, codegen::kStreamScanBlock, 0, args, nullptr);
    check_last_launch(codegen::kStreamScanEntry);
  }
  if (nnz > 0) {
    long long rows = a.nrows;
    const void* row_ptr = a.row_ptr;
    const void* col = a.col_idx;
    const void* values = a.values;
    void* next_ptr = next.get();
    void* t_col = ops.t_col_idx.get();
    void* t_values = ops.t_values.get();
    void* args[] = {&rows, &row_ptr, &col, &values, &next_ptr, &t_col, &t_values};
    fill->launch(std::max<long long>(1, (a.nrows + block - 1) / block), block, 0, args, nullptr);
    check_last_launch(fill->name());
  }
  synchronize();
  const DeviceCsr t{a.ncols,
                    a.nrows,
                    a.nnz,
                    static_cast<const std::int32_t*>(ops.t_row_ptr.get()),
                    static_cast<const std::int32_t*>(ops.t_col_idx.get()),
                    ops.t_values.get()};
  ops.transposed = std::make_unique<Operator>(compile(t, device_options(ops.options)));
  CompileTimings& timings = const_cast<Operator::Impl&>(im).timings;
  timings.transpose = seconds_since(t0);
  timings.transpose_note =
      fmt::format("A^T ({} x {}) built on the GPU by a counting sort, planned {} [{}]", t.nrows,
                  t.ncols, ops.transposed->plan().format, describe(ops.transposed->plan().params));
  return *ops.transposed;
}

}  // namespace

void attach_operations(Operator::Impl& im, const Build& build, const Options& options) {
  auto ops = std::make_shared<Operations>();
  ops->options = options;
  ops->options.transform_source = nullptr;
  ops->subject = compiler::spmm_subject(build.plan, build.encoded, build.profile);
  ops->no_csr = "compile(CsrMatrix) keeps one only with Options::keep_csr";
  im.operations = std::move(ops);
}

void keep_csr(Operator::Impl& im, const CsrMatrix& a, const Options& options,
              const RowColumnMap* plan_order_map) {
  Operations& ops = operations_of(im);
  if (a.nnz() >= std::numeric_limits<std::int32_t>::max() ||
      a.nrows >= std::numeric_limits<std::int32_t>::max()) {
    ops.no_csr =
        fmt::format("{} rows and {} nonzeros do not fit its 32-bit offsets", a.nrows, a.nnz());
    return;
  }
  if (plan_order_map) {
    // The matrix as the plan's order has it, and where each entry came from.
    std::vector<std::int64_t> sources;
    const CsrMatrix reordered = permute(a, ordering_of(*plan_order_map, "plan order"), &sources);
    const std::vector<std::int32_t> narrow(sources.begin(), sources.end());
    ops.value_sources = DeviceBuffer(std::max<std::size_t>(narrow.size() * 4, 4));
    if (!narrow.empty()) ops.value_sources.upload(narrow.data(), narrow.size() * 4);
    ops.resident = upload_csr(reordered, options.precision);
  } else {
    ops.resident = upload_csr(a, options.precision);
  }
  ops.csr = ops.resident->view;
  im.device_bytes += static_cast<std::int64_t>(
      ops.resident->row_ptr.bytes() + ops.resident->col_idx.bytes() + ops.resident->values.bytes());
  synchronize();
}

void attach_operations(Operator::Impl& im, const DeviceCsr& a, const Options& options,
                       std::int64_t row_blocks) {
  auto ops = std::make_shared<Operations>();
  ops->options = options;
  ops->options.transform_source = nullptr;
  ops->subject = compiler::spmm_subject_device(im.plan, im.profile, row_blocks);
  ops->csr = a;
  im.operations = std::move(ops);
}

void values_changed(Operator::Impl& im, const void* values, bool on_device) {
  if (!im.operations) return;
  Operations& ops = *im.operations;
  std::lock_guard lock(ops.mutex);
  // Built from the old values on first use: built again at the next use.
  ops.spmm_fallback.reset();
  ops.transposed.reset();
  if (!ops.resident) return;
  const auto nnz = static_cast<std::size_t>(ops.resident->view.nnz);
  const Precision p = im.plan.precision;
  const std::span<const double> host(static_cast<const double*>(values), on_device ? 0 : nnz);
  if (ops.value_sources.bytes() == 0) {
    if (on_device)
      ops.resident->values.copy_from(values, nnz * value_bytes(p));
    else
      upload_values(ops.resident->values, host, p);
  } else if (nnz > 0) {
    // In the plan's order: the new values (the caller's CSR order) gathered into the kept
    // matrix's, on the device.
    DeviceBuffer staged;
    const void* in = values;
    if (!on_device) {
      staged = DeviceBuffer(nnz * static_cast<std::size_t>(value_bytes(p)));
      upload_values(staged, host, p);
      in = staged.get();
    }
    permute_vector(static_cast<const std::int32_t*>(ops.value_sources.get()),
                   static_cast<std::int64_t>(nnz), in, ops.resident->values.get(), value_bytes(p),
                   /*scatter=*/false, nullptr, im.options.device);
  }
  synchronize();
}

}  // namespace runtime

void Operator::apply_many(const void* x, void* y, int k, DenseLayout layout, double alpha,
                          double beta, void* stream) const {
  // The SpMM units read the specialised tier's arrays: a tiered operator waits for them.
  if (impl_->tiers) impl_->tiers->switch_now();
  runtime::Operations& ops = runtime::operations_of(*impl_);
  const runtime::Operations::SpmmUnit* unit = nullptr;
  {
    std::lock_guard lock(ops.mutex);
    unit = runtime::spmm_unit(*impl_, ops, k, layout);
    if (unit != nullptr && unit->pack_bytes > 0 && !runtime::aligned_to(x, y, unit->pack_bytes))
      unit = runtime::unpacked_unit(*impl_, ops, k, layout);
  }
  if (unit == nullptr) {
    ops.spmm_fallback->apply_many(x, y, k, layout, alpha, beta, stream);
    return;
  }
  if (unit->engine == compiler::SpmmEngine::cusparse) {
    ops.cusparse_spmm->apply(k, layout, x, y, alpha, beta, stream);
    return;
  }
  runtime::launch_spmm(*impl_, *unit, x, y, alpha, beta, stream);
}

const KernelSource& Operator::spmm_source(int k, DenseLayout layout) const {
  if (impl_->tiers) impl_->tiers->switch_now();
  runtime::Operations& ops = runtime::operations_of(*impl_);
  std::lock_guard lock(ops.mutex);
  const runtime::Operations::SpmmUnit* unit = runtime::spmm_unit(*impl_, ops, k, layout);
  if (unit == nullptr) return ops.spmm_fallback->spmm_source(k, layout);
  return unit->source;
}

void Operator::apply_transpose(const void* x, void* y, double alpha, double beta,
                               void* stream) const {
  impl_->settled();
  runtime::Operations& ops = runtime::operations_of(*impl_);
  const Operator* t = nullptr;
  {
    std::lock_guard lock(ops.mutex);
    t = &runtime::transposed(*impl_, ops);
  }
  t->apply(x, y, alpha, beta, stream);
}

const Plan& Operator::transpose_plan() const {
  impl_->settled();
  runtime::Operations& ops = runtime::operations_of(*impl_);
  std::lock_guard lock(ops.mutex);
  return runtime::transposed(*impl_, ops).plan();
}

namespace {

// Copies `in` to the device in the plan's value type, runs `multiply(dx, dy)`, copies `out` back.
template <typename F>
void on_host_arrays(Precision precision, std::span<const double> in, std::span<double> out,
                    const F& multiply) {
  const bool f64 = precision == Precision::f64;
  const std::size_t vb = f64 ? 8 : 4;
  runtime::DeviceBuffer dx(std::max<std::size_t>(in.size() * vb, 1));
  runtime::DeviceBuffer dy(std::max<std::size_t>(out.size() * vb, 1));
  if (f64) {
    if (!in.empty()) dx.upload(in.data(), in.size() * vb);
    if (!out.empty()) dy.upload(out.data(), out.size() * vb);
    multiply(dx.get(), dy.get());
    if (!out.empty()) dy.download(out.data(), out.size() * vb);
  } else {
    std::vector<float> xf(in.begin(), in.end()), yf(out.begin(), out.end());
    if (!xf.empty()) dx.upload(xf.data(), xf.size() * vb);
    if (!yf.empty()) dy.upload(yf.data(), yf.size() * vb);
    multiply(dx.get(), dy.get());
    if (!yf.empty()) dy.download(yf.data(), yf.size() * vb);
    std::copy(yf.begin(), yf.end(), out.begin());
  }
  runtime::synchronize();
}

}  // namespace

void Operator::apply_many_host(std::span<const double> x, std::span<double> y, int k,
                               DenseLayout layout, double alpha, double beta) const {
  if (k < 1 || k > kMaxDenseColumns)
    throw InputError("apply_many_host", 0,
                     fmt::format("k = {} vectors: apply_many takes 1..{}", k, kMaxDenseColumns));
  const auto ku = static_cast<std::size_t>(k);
  if (x.size() != static_cast<std::size_t>(impl_->ncols) * ku ||
      y.size() != static_cast<std::size_t>(impl_->nrows) * ku)
    throw InputError("apply_many_host", 0,
                     fmt::format("X has {} elements (need {} x {}), Y has {} (need {} x {})",
                                 x.size(), impl_->ncols, k, y.size(), impl_->nrows, k));
  on_host_arrays(plan().precision, x, y,
                 [&](const void* dx, void* dy) { apply_many(dx, dy, k, layout, alpha, beta); });
}

void Operator::apply_transpose_host(std::span<const double> x, std::span<double> y, double alpha,
                                    double beta) const {
  if (static_cast<std::int64_t>(x.size()) != impl_->nrows ||
      static_cast<std::int64_t>(y.size()) != impl_->ncols)
    throw InputError("apply_transpose_host", 0,
                     fmt::format("x has {} elements (need nrows = {}), y has {} (need ncols = {})",
                                 x.size(), impl_->nrows, y.size(), impl_->ncols));
  on_host_arrays(plan().precision, x, y,
                 [&](const void* dx, void* dy) { apply_transpose(dx, dy, alpha, beta); });
}

}  // namespace spmvc
