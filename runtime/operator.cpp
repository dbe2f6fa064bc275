// The public Operator: compiler output + a loaded kernel + the encoded matrix on the device.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <variant>

#include <fmt/format.h>
#include <xxhash.h>

#include "codegen/codegen.hpp"
#include "codegen/test_vector.hpp"
#include "compiler.hpp"
#include "device.hpp"
#include "device_csr.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "formats/values/values.hpp"
#include "kernel_cache.hpp"
#include "spmvc/reorder.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One cache per directory for the whole process, so repeated compile() calls share the
// in-memory level.
runtime::KernelCache& cache_for(const std::filesystem::path& dir) {
  static std::mutex mutex;
  static std::map<std::filesystem::path, std::unique_ptr<runtime::KernelCache>> caches;
  std::lock_guard lock(mutex);
  auto& slot = caches[dir];
  if (!slot) slot = std::make_unique<runtime::KernelCache>(dir);
  return *slot;
}

}  // namespace

struct Operator::Impl {
  Profile profile;
  Plan plan;
  KernelSource source;
  CompileTimings timings;
  std::int64_t nrows = 0, ncols = 0, device_bytes = 0;
  std::vector<std::pair<std::string, runtime::DeviceBuffer>> arrays;
  /// Arrays the caller owns (compile(DeviceCsr)): read in place, never freed here.
  std::vector<std::pair<std::string, const void*>> borrowed;
  /// Kernel parameters are few (csr has 8); apply() keeps their slots on the stack.
  static constexpr std::size_t kMaxParams = 24;
  /// One per launch of the unit, in launch order.
  struct Launch {
    KernelLaunch desc;
    std::shared_ptr<const runtime::LoadedKernel> kernel;
    /// Device pointer of each array parameter, by parameter index (nullptr for the others).
    std::vector<const void*> array_args;
  };
  std::vector<Launch> launches;

  const void* array(const std::string& name) const {
    for (const auto& [n, buffer] : arrays) {
      if (n == name) return buffer.get();
    }
    for (const auto& [n, pointer] : borrowed) {
      if (n == name) return pointer;
    }
    throw InternalError("kernel parameter names no uploaded array: " + name);
  }

  /// Obtains the unit's CUBIN through `cache` and loads every launch's entry point: shared with
  /// other operators (runtime::shared_kernel), or a load of its own when `own_load` (a reordered
  /// unit, whose spmvc_row_map variable is set per operator). Fills the compile timings but the
  /// time, which it returns.
  double load_kernels(runtime::KernelCache& cache, const runtime::DeviceInfo& device,
                      bool own_load) {
    const auto t0 = Clock::now();
    const runtime::CachedKernel cached = cache.get(source, device.arch());
    for (KernelLaunch& desc : source.launches()) {
      Launch& launch = launches.emplace_back();
      launch.kernel =
          own_load ? std::make_shared<const runtime::LoadedKernel>(cached.cubin.image, desc.entry)
                   : runtime::shared_kernel(cached, desc.entry, device.ordinal);
      launch.desc = std::move(desc);
    }
    // The main kernel's resources stand for the unit's (it does the multiply).
    const runtime::LoadedKernel& main_kernel = *launches[source.pre_launches.size()].kernel;
    const double seconds = seconds_since(t0);
    timings.kernel_origin = std::string(runtime::to_string(cached.origin));
    // The driver's numbers for the loaded image; the ptxas log lacks them when NVRTC served the
    // CUBIN from its own cache (seen on the H100 machines: 15 ms compiles, no resource lines).
    timings.registers =
        cached.cubin.registers >= 0 ? cached.cubin.registers : main_kernel.registers();
    timings.spill_bytes = cached.cubin.spill_store_bytes >= 0 ? cached.cubin.spill_store_bytes
                                                              : main_kernel.local_bytes();
    timings.compile_log = cached.cubin.log;
    return seconds;
  }

  /// Resolves every launch's array parameters to device pointers (after the arrays are in place).
  void bind_arrays() {
    for (Launch& launch : launches) {
      if (launch.desc.params.size() > kMaxParams)
        throw InternalError("generated kernel " + launch.desc.entry +
                            " has more parameters than Operator supports");
      launch.array_args.clear();
      for (const KernelParam& p : launch.desc.params)
        launch.array_args.push_back(p.kind == KernelParam::Kind::array ? array(p.name) : nullptr);
    }
  }
};

Operator::Operator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Operator::Operator(Operator&&) noexcept = default;
Operator& Operator::operator=(Operator&&) noexcept = default;
Operator::~Operator() = default;

std::int64_t Operator::nrows() const { return impl_->nrows; }
std::int64_t Operator::ncols() const { return impl_->ncols; }
const Plan& Operator::plan() const { return impl_->plan; }
const Profile& Operator::profile() const { return impl_->profile; }
const KernelSource& Operator::source() const { return impl_->source; }
const CompileTimings& Operator::timings() const { return impl_->timings; }
std::int64_t Operator::device_bytes() const { return impl_->device_bytes; }

void Operator::apply(const void* x, void* y, double alpha, double beta, void* stream) const {
  // The hot path: no allocation and no lookups. Argument slots live on the stack; device
  // pointers of the encoded arrays were resolved once in compile().
  const Impl& im = *impl_;
  const bool acc64 = im.plan.precision != Precision::f32;
  long long rows = im.nrows, cols = im.ncols;
  double alpha64 = alpha, beta64 = beta;
  float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta);
  for (const Impl::Launch& launch : im.launches) {
    const std::size_t n = launch.desc.params.size();
    std::array<const void*, Impl::kMaxParams> pointers{};
    std::array<void*, Impl::kMaxParams> args{};
    for (std::size_t i = 0; i < n; ++i) {
      switch (launch.desc.params[i].kind) {
        case KernelParam::Kind::rows:
          args[i] = &rows;
          continue;
        case KernelParam::Kind::cols:
          args[i] = &cols;
          continue;
        case KernelParam::Kind::alpha:
          args[i] = acc64 ? static_cast<void*>(&alpha64) : static_cast<void*>(&alpha32);
          continue;
        case KernelParam::Kind::beta:
          args[i] = acc64 ? static_cast<void*>(&beta64) : static_cast<void*>(&beta32);
          continue;
        case KernelParam::Kind::array:
          pointers[i] = launch.array_args[i];
          break;
        case KernelParam::Kind::x:
          pointers[i] = x;
          break;
        case KernelParam::Kind::y:
          pointers[i] = y;
          break;
      }
      args[i] = &pointers[i];
    }
    launch.kernel->launch(launch.desc.grid, launch.desc.block, launch.desc.shared_bytes,
                          args.data(), stream);
    runtime::check_last_launch(launch.desc.entry);
  }
}

void Operator::apply_host(std::span<const double> x, std::span<double> y, double alpha,
                          double beta) const {
  if (static_cast<std::int64_t>(x.size()) != impl_->ncols ||
      static_cast<std::int64_t>(y.size()) != impl_->nrows)
    throw InputError("apply_host", 0,
                     fmt::format("x has {} elements (need {}), y has {} (need {})", x.size(),
                                 impl_->ncols, y.size(), impl_->nrows));
  const bool f64 = impl_->plan.precision == Precision::f64;
  const std::size_t vb = f64 ? 8 : 4;
  runtime::DeviceBuffer dx(std::max<std::size_t>(x.size() * vb, 1));
  runtime::DeviceBuffer dy(std::max<std::size_t>(y.size() * vb, 1));
  if (f64) {
    dx.upload(x.data(), x.size() * vb);
    dy.upload(y.data(), y.size() * vb);
    apply(dx.get(), dy.get(), alpha, beta);
    dy.download(y.data(), y.size() * vb);
  } else {
    std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
    dx.upload(xf.data(), xf.size() * vb);
    dy.upload(yf.data(), yf.size() * vb);
    apply(dx.get(), dy.get(), alpha, beta);
    dy.download(yf.data(), yf.size() * vb);
    std::copy(yf.begin(), yf.end(), y.begin());
  }
  runtime::synchronize();
}

namespace {

std::filesystem::path cache_dir_of(const Options& options) {
  if (!options.disk_cache) return {};
  return options.cache_dir.empty() ? runtime::KernelCache::default_dir()
                                   : std::filesystem::path(options.cache_dir);
}

// Encodes `a` for `plan`, generates, compiles (through the kernel cache), uploads and binds:
// everything after planning. `timings` arrives with inspect and plan filled in. `map`, when
// given, says how the reordered `a` maps back to the caller's rows and columns.
std::unique_ptr<Operator::Impl> realize(const CsrMatrix& a, const Profile& profile,
                                        const Plan& plan, const Options& options,
                                        const runtime::DeviceInfo& device, CompileTimings timings,
                                        const codegen::RowColumnMap* map) {
  auto im = std::make_unique<Operator::Impl>();
  im->nrows = a.nrows;
  im->ncols = a.ncols;
  im->profile = profile;
  im->plan = plan;
  im->timings = std::move(timings);

  auto t0 = Clock::now();
  Encoded encoded = compiler::encode(a, im->plan);
  im->timings.encode = seconds_since(t0);

  t0 = Clock::now();
  im->source = codegen::generate(im->plan, encoded, im->profile);
  if (map != nullptr) codegen::attach_reordering(im->source, encoded, *map);
  if (options.transform_source) im->source = options.transform_source(im->source);
  im->timings.codegen = seconds_since(t0);

  im->timings.compile =
      im->load_kernels(cache_for(cache_dir_of(options)), device, /*own_load=*/map != nullptr);

  t0 = Clock::now();
  for (const EncodedArray& arr : encoded.arrays) {
    runtime::DeviceBuffer buffer(std::max<std::size_t>(arr.bytes.size(), 1));
    if (!arr.bytes.empty()) buffer.upload(arr.bytes.data(), arr.bytes.size());
    im->device_bytes += static_cast<std::int64_t>(arr.bytes.size());
    im->arrays.emplace_back(arr.name, std::move(buffer));
  }
  runtime::synchronize();
  im->timings.upload = seconds_since(t0);
  // A reordered unit writes y through spmvc_row_map (templates/common.cuh): point it at the
  // uploaded map in every loaded image.
  for (const auto& [name, buffer] : im->arrays) {
    if (name != "row_map") continue;
    const void* device_map = buffer.get();
    for (Operator::Impl::Launch& launch : im->launches)
      launch.kernel->set_global("spmvc_row_map", &device_map, sizeof device_map);
  }
  im->bind_arrays();
  return im;
}

// Measure mode's memory: the winner per (matrix contents, precision, forced format, device,
// spmvc), one small text file per decision under <cache dir>/decisions/.
std::string decision_key(const CsrMatrix& a, const Options& options,
                         const runtime::DeviceInfo& device) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  auto add = [&](const void* p, std::size_t n) { XXH3_128bits_update(st, p, n); };
  const std::string tag =
      fmt::format("spmvc-decision-1|{}|{}|{}|{}|{}{}", to_string(options.precision), options.format,
                  device.name, device.arch(), a.nrows, options.value_coding ? "" : "|plain-values");
  add(tag.data(), tag.size());
  add(&a.ncols, sizeof a.ncols);
  add(a.row_ptr.data(), a.row_ptr.size() * sizeof(std::int64_t));
  add(a.col_idx.data(), a.col_idx.size() * sizeof(std::int32_t));
  add(a.values.data(), a.values.size() * sizeof(double));
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::optional<FormatParams> read_decision(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string format, assignments;
  if (!in || !std::getline(in, format) || !std::getline(in, assignments)) return std::nullopt;
  try {
    FormatParams p = default_params(format);
    set_params(p, assignments);
    return p;
  } catch (const InputError&) {
    return std::nullopt;  // written by another version: measure again
  }
}

void write_decision(const std::filesystem::path& path, const FormatParams& params) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << format_of(params) << "\n" << to_assignments(params) << "\n";
    if (!out) return;  // a read-only cache only costs a re-measurement next time
  }
  std::filesystem::rename(tmp, path, ec);
}

// Median microseconds of a few multiplies: enough to rank candidates, not a benchmark.
double quick_time_us(const Operator::Impl& im, const std::function<void()>& run) {
  (void)im;
  run();
  runtime::synchronize();
  runtime::EventTimer timer;
  std::vector<double> samples;
  for (int r = 0; r < 5; ++r) {
    timer.start();
    for (int i = 0; i < 4; ++i) run();
    samples.push_back(1e3 * static_cast<double>(timer.stop_ms()) / 4);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

Operator compile(const CsrMatrix& a, const Options& options) {
  const runtime::DeviceInfo device = runtime::probe_device(options.device);
  runtime::set_device(options.device);
  CompileTimings timings;

  // Reordering: the kernels run on the reordered matrix B and the row map hides it (x in and y
  // out stay in the caller's order). A symmetric ordering moves the rows, and renumbers the
  // columns only when asked (x is then gathered once per multiply); otherwise B keeps the
  // caller's column numbers and x is read in place.
  auto t0 = Clock::now();
  std::optional<CsrMatrix> reordered;
  std::optional<codegen::RowColumnMap> map;
  std::string reorder_label = "none";
  std::string reorder_why;
  std::optional<Ordering> picked;
  bool renumber_columns = options.renumber_columns;
  if (!options.ordering && options.reorder == "auto") {
    compiler::OrderingChoice choice = compiler::choose_ordering(a, options.precision);
    reorder_why = choice.why;
    picked = std::move(choice.ordering);
    renumber_columns = choice.renumber_columns;
  } else if (options.ordering) {
    picked = options.ordering;
  } else if (options.reorder != "none" && !options.reorder.empty()) {
    picked = compute_ordering(a, options.reorder, options.reorder_options);
  }
  if (picked) {
    Ordering ordering = std::move(*picked);
    if (!is_permutation(ordering.perm, a.nrows) ||
        (ordering.kind == PermutationKind::symmetric && a.nrows != a.ncols))
      throw InputError("ordering", 0,
                       fmt::format("ordering '{}' is not a permutation of this matrix's {} rows",
                                   ordering.name, a.nrows));
    const bool renumber = ordering.kind == PermutationKind::symmetric && renumber_columns;
    map.emplace();
    map->rows = ordering.perm;
    if (renumber) {
      map->cols = ordering.perm;
    } else {
      ordering.kind = PermutationKind::rows_only;
    }
    reordered = permute(a, ordering);
    reorder_label = ordering.name + (renumber ? " (rows and columns)" : " (rows)");
  }
  // With reorder "auto" the decision is timed too: the locality measure, and an ordering
  // computed then found not worth using.
  timings.reorder = seconds_since(t0);
  const CsrMatrix& b = reordered ? *reordered : a;
  const codegen::RowColumnMap* map_ptr = map ? &*map : nullptr;

  t0 = Clock::now();
  const Profile profile =
      inspect(b, options.full_inspection ? InspectDepth::full : InspectDepth::rows);
  timings.inspect = seconds_since(t0);

  t0 = Clock::now();
  compiler::PlanOptions plan_options;
  plan_options.precision = options.precision;
  plan_options.format = options.format;
  plan_options.csr = options.csr;
  plan_options.params = options.params;
  plan_options.arch = device.arch();
  plan_options.value_coding = options.value_coding;
  Plan plan = compiler::make_plan(profile, plan_options);
  plan.reorder = reorder_label;
  plan.reorder_why = reorder_why;
  timings.plan = seconds_since(t0);

  const bool forced = options.csr || options.params;
  if (options.planner != PlannerMode::measure || forced)
    return Operator(realize(b, profile, plan, options, device, timings, map_ptr));

  // Measure mode: a remembered decision, else the model's best few candidates (the best of each
  // format, plus csr's, the fallback the planner must never lose to), each compiled and timed.
  t0 = Clock::now();
  const std::filesystem::path dir = cache_dir_of(options);
  const std::filesystem::path decision =
      dir.empty() ? std::filesystem::path()
                  : dir / "decisions" / (decision_key(a, options, device) + ".txt");
  if (!decision.empty()) {
    if (std::optional<FormatParams> remembered = read_decision(decision)) {
      plan_options.params = *remembered;
      Plan chosen = compiler::make_plan(profile, plan_options);
      chosen.reorder = reorder_label;
      chosen.reorder_why = reorder_why;
      chosen.candidates = plan.candidates;
      chosen.why = fmt::format("measured fastest earlier on this matrix and device (decision {})",
                               decision.filename().string());
      timings.plan += seconds_since(t0);
      return Operator(realize(b, profile, chosen, options, device, timings, map_ptr));
    }
  }
  std::vector<const Candidate*> picks;
  const int want = std::max(1, options.measure_candidates);
  for (const Candidate& c : plan.candidates) {
    if (!c.applicable) continue;
    const bool new_format = std::none_of(picks.begin(), picks.end(),
                                         [&](const Candidate* p) { return p->format == c.format; });
    if (new_format && (static_cast<int>(picks.size()) < want || c.format == "csr"))
      picks.push_back(&c);
  }
  const std::size_t vb = static_cast<std::size_t>(value_bytes(options.precision));
  runtime::DeviceBuffer dx(std::max<std::size_t>(static_cast<std::size_t>(a.ncols) * vb, 1));
  runtime::DeviceBuffer dy(std::max<std::size_t>(static_cast<std::size_t>(a.nrows) * vb, 1));
  dx.fill_bytes(0);
  std::unique_ptr<Operator::Impl> best;
  double best_us = 0;
  std::string report;
  for (const Candidate* c : picks) {
    Plan p = plan;
    p.format = c->format;
    p.params = c->params;
    p.predicted_bytes = c->predicted_bytes;
    p.predicted_seconds = c->predicted_seconds;
    std::unique_ptr<Operator::Impl> im = realize(b, profile, p, options, device, timings, map_ptr);
    const Operator::Impl* raw = im.get();
    Operator probe(std::move(im));
    const double us =
        quick_time_us(*raw, [&] { probe.apply(dx.get(), dy.get(), 1.0, 0.0, nullptr); });
    report += fmt::format("{}{} [{}] {:.2f} us (model {:.2f})", report.empty() ? "" : ", ",
                          c->format, c->label, us, c->predicted_seconds * 1e6);
    if (!best || us < best_us) {
      best_us = us;
      best = std::move(probe.impl_);
    }
  }
  best->plan.why = "measured fastest of the model's best candidates: " + report;
  best->timings.measure = seconds_since(t0);
  if (!decision.empty()) write_decision(decision, best->plan.params);
  return Operator(std::move(best));
}

namespace {

// What compile(DeviceCsr) cannot do, refused before any work.
void check_device_csr_request(const DeviceCsr& a, const Options& options) {
  if (options.planner != PlannerMode::model)
    throw InputError("planner", 0,
                     "measure mode remembers decisions by the matrix's contents, which are in "
                     "device memory here: use the model planner, or compile(CsrMatrix)");
  if ((!options.reorder.empty() && options.reorder != "none") || options.ordering)
    throw InputError("reorder", 0,
                     "a matrix in device memory is multiplied in its own order: reordering needs "
                     "compile(CsrMatrix)");
  if (options.full_inspection)
    throw InputError("full_inspection", 0,
                     "from device arrays only row lengths are inspected (on the GPU): a full "
                     "Profile needs compile(CsrMatrix)");
  if (options.format != "auto" && options.format != "csr" && options.format != "csr_stream")
    throw InputError("format", 0,
                     fmt::format("{} needs its own encoding of the matrix; from device arrays only "
                                 "csr and csr_stream (the CSR arrays as they are) run",
                                 options.format));
  if (options.params && !std::holds_alternative<CsrParams>(*options.params) &&
      !std::holds_alternative<CsrStreamParams>(*options.params))
    throw InputError("params", 0,
                     fmt::format("{} parameters: from device arrays only csr and csr_stream run",
                                 format_of(*options.params)));
  if (a.nrows < 0 || a.ncols < 0 || a.nnz < 0)
    throw InputError("DeviceCsr", 0,
                     fmt::format("negative size: {} x {}, {} nonzeros", a.nrows, a.ncols, a.nnz));
  if (a.nrows >= std::numeric_limits<std::int32_t>::max() ||
      a.ncols > std::numeric_limits<std::int32_t>::max() ||
      a.nnz > std::numeric_limits<std::int32_t>::max())
    throw InputError("DeviceCsr", 0,
                     fmt::format("{} x {} with {} nonzeros does not fit the 32-bit row offsets and "
                                 "columns of DeviceCsr",
                                 a.nrows, a.ncols, a.nnz));
  if (!runtime::is_device_pointer(a.row_ptr))
    throw InputError("DeviceCsr", 0, "row_ptr is not a device (or managed) pointer");
  if (a.nnz > 0 && !runtime::is_device_pointer(a.col_idx))
    throw InputError("DeviceCsr", 0, "col_idx is not a device (or managed) pointer");
  if (a.nnz > 0 && !runtime::is_device_pointer(a.values))
    throw InputError("DeviceCsr", 0, "values is not a device (or managed) pointer");
}

// Why `params` cannot run on the caller's arrays as they are (nullopt when they can).
std::optional<std::string> device_csr_refusal(const FormatParams& params, const DeviceCsr& a,
                                              Precision precision) {
  auto misaligned = [](const void* p, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % bytes != 0;
  };
  int values = formats::kValuesPlain;
  if (const auto* p = std::get_if<CsrParams>(&params)) {
    if (p->offsets64) return "64-bit row offsets: DeviceCsr has 32-bit ones";
    const auto v = static_cast<std::size_t>(p->vector_width);
    if (v > 1 && a.nnz % p->vector_width != 0)
      return fmt::format("{}-wide loads would read past the {} nonzeros (not a multiple of {})", v,
                         a.nnz, v);
    // Coded values are spmvc's own array; plain ones are the caller's.
    const bool own_values = p->values != formats::kValuesPlain;
    if (v > 1 && (misaligned(a.col_idx, 4 * v) ||
                  (!own_values &&
                   misaligned(a.values, static_cast<std::size_t>(value_bytes(precision)) * v))))
      return fmt::format("{}-wide loads need col_idx and values aligned to {} elements", v, v);
    values = p->values;
  } else if (const auto* q = std::get_if<CsrStreamParams>(&params)) {
    if (q->offsets64) return "64-bit row offsets: DeviceCsr has 32-bit ones";
    values = q->values;
  } else {
    return fmt::format("{} needs its own encoding of the matrix", format_of(params));
  }
  if (values == formats::kValuesTable16)
    return "16-bit value tables are built from host arrays only (device arrays: 8-bit tables)";
  return std::nullopt;
}

// The plan for device arrays: the planner's csr and csr_stream candidates that run on the arrays
// as they are (a csr candidate whose vector loads cannot is tried with single loads), the
// fastest predicted.
Plan plan_device_csr(const DeviceCsr& a, const Profile& profile, const Options& options,
                     const std::string& arch) {
  compiler::PlanOptions po;
  po.precision = options.precision;
  po.arch = arch;
  po.value_coding = options.value_coding;
  const bool forced = options.csr || options.params;
  std::vector<Candidate> all;
  for (const std::string format : {"csr", "csr_stream"}) {
    const bool wanted = forced
                            ? (options.csr ? format == "csr" : format_of(*options.params) == format)
                            : options.format == "auto" || options.format == format;
    if (!wanted) continue;
    po.format = format;
    po.csr = options.csr;
    po.params = options.params;
    for (Candidate& c : compiler::make_plan(profile, po).candidates) all.push_back(std::move(c));
  }
  std::vector<Candidate> twins;
  for (Candidate& c : all) {
    if (!c.applicable) continue;
    const std::optional<std::string> why = device_csr_refusal(c.params, a, options.precision);
    if (!why) continue;
    if (forced) throw InputError("params", 0, "from device arrays: " + *why);
    const auto* p = std::get_if<CsrParams>(&c.params);
    if (p != nullptr && p->vector_width > 1) {
      CsrParams single = *p;
      single.vector_width = 1;
      if (!device_csr_refusal(single, a, options.precision)) {
        const compiler::Prediction pr = compiler::predict(profile, single, po);
        twins.push_back({"csr", single, describe(single), true,
                         c.reason + "; single loads (device arrays)", pr.bytes(po.cost_model),
                         pr.seconds(po.cost_model)});
      }
    }
    c.applicable = false;
    c.reason = "from device arrays: " + *why;
  }
  for (Candidate& t : twins) {
    const bool seen = std::any_of(all.begin(), all.end(), [&](const Candidate& c) {
      return c.applicable && c.format == t.format && c.label == t.label;
    });
    if (!seen) all.push_back(std::move(t));
  }
  Plan plan = compiler::pick_candidate(std::move(all), options.precision);
  plan.why = forced ? "parameters forced by the caller (device arrays)"
                    : fmt::format(
                          "lowest predicted time of the csr and csr_stream candidates that "
                          "run on device arrays as they are ({})",
                          plan.candidates.front().reason);
  return plan;
}

}  // namespace

Operator compile(const DeviceCsr& a, const Options& options) {
  const runtime::DeviceInfo device = runtime::probe_device(options.device);
  runtime::set_device(options.device);
  check_device_csr_request(a, options);
  auto im = std::make_unique<Operator::Impl>();
  im->nrows = a.nrows;
  im->ncols = a.ncols;
  CompileTimings& timings = im->timings;
  runtime::KernelCache& cache = cache_for(cache_dir_of(options));

  // The build kernels are a unit of their own, cached like any other: their load counts as
  // compile time.
  const runtime::DeviceCsrKernels kernels = runtime::load_device_csr_kernels(cache, device);
  timings.compile = kernels.seconds;

  auto t0 = Clock::now();
  runtime::DeviceInspection inspection = runtime::inspect_device(a, options.precision, kernels);
  im->profile = std::move(inspection.profile);
  timings.inspect = seconds_since(t0);

  t0 = Clock::now();
  im->plan = plan_device_csr(a, im->profile, options, device.arch());
  timings.plan = seconds_since(t0);

  // What is encoded, on the GPU: csr_stream's row blocks and 16-bit columns, 8-bit value codes or
  // fp32 values.
  t0 = Clock::now();
  const int coding = formats::value_coding_of(im->plan.params);
  if (coding == formats::kValuesTable8) {
    runtime::DeviceValueCodes coded =
        runtime::code_values_device(a, options.precision, inspection.value_patterns, kernels);
    im->device_bytes += static_cast<std::int64_t>(coded.codes.bytes() + coded.table.bytes());
    im->arrays.emplace_back("values", std::move(coded.codes));
    im->arrays.emplace_back("values_table", std::move(coded.table));
  } else if (coding == formats::kValuesF32) {
    runtime::DeviceBuffer narrow = runtime::narrow_values_device(a, kernels);
    im->device_bytes += static_cast<std::int64_t>(narrow.bytes());
    im->arrays.emplace_back("values", std::move(narrow));
  }
  std::int64_t nblocks = 0;
  bool narrow_columns = false;
  if (const auto* params = std::get_if<CsrStreamParams>(&im->plan.params)) {
    runtime::DeviceRowBlocks blocks =
        runtime::stream_row_blocks(a.row_ptr, a.nrows, params->tile, params->block_size, kernels);
    nblocks = blocks.nblocks;
    if (params->narrow_columns) {
      // Wide blocks read the caller's col_idx (bound below as col_wide).
      runtime::DeviceNarrowColumns narrow =
          runtime::narrow_columns_device(a, blocks.starts, nblocks, kernels);
      im->device_bytes += static_cast<std::int64_t>(narrow.base.bytes() + narrow.col16.bytes());
      im->arrays.emplace_back("col_base", std::move(narrow.base));
      im->arrays.emplace_back("col16", std::move(narrow.col16));
      narrow_columns = true;
    }
    im->device_bytes += static_cast<std::int64_t>(blocks.starts.bytes());
    im->arrays.emplace_back("row_blocks", std::move(blocks.starts));
  }
  timings.encode = seconds_since(t0);

  t0 = Clock::now();
  const std::string banner = codegen::banner(im->plan, im->profile);
  if (const auto* params = std::get_if<CsrStreamParams>(&im->plan.params)) {
    im->source =
        formats::CsrStreamFormat::generate_kernel(*params, options.precision, nblocks, banner);
  } else {
    // csr's kernel needs only the sizes of the encoded matrix.
    Encoded sizes;
    sizes.format = "csr";
    sizes.precision = options.precision;
    sizes.nrows = a.nrows;
    sizes.ncols = a.ncols;
    sizes.nnz = a.nnz;
    im->source = codegen::generate(im->plan, sizes, im->profile);
  }
  if (options.transform_source) im->source = options.transform_source(im->source);
  timings.codegen = seconds_since(t0);

  timings.compile += im->load_kernels(cache, device, /*own_load=*/false);

  // The caller's arrays the kernel reads (its values only when they are not coded or dropped;
  // spmvc's own "values" array comes first when they are).
  const bool plain = coding == formats::kValuesPlain;
  const auto vb = static_cast<std::int64_t>(value_bytes(options.precision));
  im->device_bytes += (a.nrows + 1) * 4 + a.nnz * (4 + (plain ? vb : 0));
  im->borrowed = {{"row_ptr", a.row_ptr}, {"col_idx", a.col_idx}, {"values", a.values}};
  if (narrow_columns) im->borrowed.push_back({"col_wide", a.col_idx});
  im->bind_arrays();
  runtime::synchronize();
  return Operator(std::move(im));
}

bool device_available(std::string* why) {
  try {
    runtime::probe_device(0);
    return true;
  } catch (const NoDeviceError& e) {
    if (why != nullptr) *why = e.what();
    return false;
  }
}

}  // namespace spmvc
