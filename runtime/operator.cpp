// The public Operator: the host pipeline's build (spmvc/build.hpp) compiled through the kernel
// cache, its encoded matrix uploaded, and apply() launching it; or, where compiler::choose_build
// lets it (Options::build), the CSR uploaded and built on the GPU (device_build.cpp).
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cusparse_engine.hpp"
#include "device_csr.hpp"
#include "generic_tier.hpp"
#include "operations.hpp"
#include "operator_impl.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/build_choice.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/params/values.hpp"
#include "spmvc/spmvc.hpp"
#include "upload.hpp"

namespace spmvc {

namespace runtime {

KernelCache& cache_for(const std::filesystem::path& dir) {
  static std::mutex mutex;
  static std::map<std::filesystem::path, std::unique_ptr<KernelCache>> caches;
  std::lock_guard lock(mutex);
  auto& slot = caches[dir];
  if (!slot) slot = std::make_unique<KernelCache>(dir);
  return *slot;
}

std::filesystem::path cache_dir_of(const Options& options) {
  if (!options.disk_cache) return {};
  return options.cache_dir.empty() ? KernelCache::default_dir()
                                   : std::filesystem::path(options.cache_dir);
}

}  // namespace runtime

using runtime::Clock;
using runtime::seconds_since;

const runtime::DeviceBuffer* Operator::Impl::own_array(const std::string& name) const {
  for (const auto& [n, buffer] : arrays) {
    if (n == name) return &buffer;
  }
  return nullptr;
}

const void* Operator::Impl::array(const std::string& name) const {
  if (const runtime::DeviceBuffer* own = own_array(name)) return own->get();
  for (const auto& [n, pointer] : borrowed) {
    if (n == name) return pointer;
  }
  throw InternalError("kernel parameter names no uploaded array: " + name);
}

std::int64_t Operator::Impl::read_bytes() const {
  // cuSPARSE as the engine multiplies the plan's csr arrays alone; the launches then serve SpMM
  // and the transposed multiply.
  std::vector<std::string> names;
  if (plan.engine == Engine::cusparse) {
    names = {"row_ptr", "col_idx", "values"};
  } else {
    for (const Launch& launch : launches) {
      for (const KernelParam& p : launch.desc.params) {
        if (p.kind == KernelParam::Kind::array &&
            std::find(names.begin(), names.end(), p.name) == names.end())
          names.push_back(p.name);
      }
    }
  }
  std::int64_t total = 0;
  for (const std::string& name : names) {
    if (const runtime::DeviceBuffer* own = own_array(name)) {
      total += static_cast<std::int64_t>(own->bytes());
      continue;
    }
    const auto lent = std::find_if(borrowed_read_bytes.begin(), borrowed_read_bytes.end(),
                                   [&](const auto& a) { return a.first == name; });
    if (lent == borrowed_read_bytes.end())
      throw InternalError("kernel parameter names no array of known size: " + name);
    total += lent->second == kReadOnWideBlocks ? wide_column_bytes() : lent->second;
  }
  return total;
}

std::int64_t Operator::Impl::wide_column_bytes() const {
  const runtime::DeviceBuffer* starts_array = own_array("row_blocks");
  const runtime::DeviceBuffer* codes_array = own_array("col_base");
  if (starts_array == nullptr || codes_array == nullptr)
    throw InternalError("a GPU-built unit with wide column blocks has no row_blocks or col_base");
  const runtime::DeviceBuffer& starts = *starts_array;
  const runtime::DeviceBuffer& codes = *codes_array;
  const std::size_t nblocks = starts.bytes() / 4 - 1;
  // A block's code is its base column, or -1 - w where its columns sit at col_idx[w...].
  std::vector<std::int32_t> code(nblocks);
  codes.download(code.data(), nblocks * 4);
  if (std::none_of(code.begin(), code.end(), [](std::int32_t c) { return c < 0; })) return 0;
  std::vector<std::int32_t> first_row(nblocks + 1);
  starts.download(first_row.data(), (nblocks + 1) * 4);
  std::vector<std::int32_t> row_ptr(static_cast<std::size_t>(nrows) + 1);
  runtime::copy_to_host(row_ptr.data(), array("row_ptr"), row_ptr.size() * 4);
  std::int64_t wide = 0;
  for (std::size_t b = 0; b < nblocks; ++b) {
    if (code[b] < 0) wide += row_ptr[first_row[b + 1]] - row_ptr[first_row[b]];
  }
  return wide * 4;
}

double Operator::Impl::load_kernels(runtime::KernelCache& cache, const runtime::DeviceInfo& device,
                                    bool own_load) {
  const auto t0 = Clock::now();
  const runtime::CachedKernel cached = cache.get(source, device.arch());
  const double obtained = seconds_since(t0);
  return obtained + load_cached(cached, device, own_load, timings);
}

double Operator::Impl::load_cached(const runtime::CachedKernel& cached,
                                   const runtime::DeviceInfo& device, bool own_load,
                                   CompileTimings& t) {
  const auto t0 = Clock::now();
  for (KernelLaunch& desc : source.launches()) {
    Launch& launch = launches.emplace_back();
    launch.kernel =
        own_load ? std::make_shared<const runtime::LoadedKernel>(cached.cubin.image, desc.entry)
                 : runtime::shared_kernel(cached, desc.entry, device.ordinal);
    launch.desc = std::move(desc);
  }
  early_launches = source.chained && runtime::early_launch(device);
  t.early_launches = early_launches ? static_cast<int>(launches.size()) - 1 : 0;
  // The main kernel's resources stand for the unit's (it does the multiply).
  const runtime::LoadedKernel& main_kernel = *launches[source.pre_launches.size()].kernel;
  const double seconds = seconds_since(t0);
  t.kernel_origin = std::string(runtime::to_string(cached.origin));
  if (!cached.disk_note.empty()) t.cache_note = cached.disk_note;
  // The driver's numbers for the loaded image; the ptxas log lacks them when NVRTC served the
  // CUBIN from its own cache (no resource lines then).
  t.registers = cached.cubin.registers >= 0 ? cached.cubin.registers : main_kernel.registers();
  t.spill_bytes = cached.cubin.spill_store_bytes >= 0 ? cached.cubin.spill_store_bytes
                                                      : main_kernel.local_bytes();
  t.compile_log = cached.cubin.log;
  return seconds;
}

void Operator::Impl::bind_arrays() {
  for (Launch& launch : launches) {
    if (launch.desc.params.size() > kMaxParams)
      throw InternalError("generated kernel " + launch.desc.entry +
                          " has more parameters than Operator supports");
    // Done here, not in apply(): apply() must make no driver calls but the launches, so that
    // it can be captured into a CUDA graph.
    launch.kernel->opt_in_shared(launch.desc.shared_bytes);
    launch.array_args.clear();
    for (const KernelParam& p : launch.desc.params)
      launch.array_args.push_back(p.kind == KernelParam::Kind::array ? array(p.name) : nullptr);
  }
}

namespace {

// The operator's fields that come from `build` alone (no device work).
void adopt_build(Operator::Impl& im, const Build& build) {
  im.nrows = build.encoded.nrows;
  im.ncols = build.encoded.ncols;
  im.profile = build.profile;
  im.plan = build.plan;
  im.source = build.source;
  im.timings.encode = build.timings.encode;
  im.timings.codegen = build.timings.codegen;
  for (const EncodedArray& arr : build.encoded.arrays)
    im.device_bytes += static_cast<std::int64_t>(arr.bytes.size());
}

// Whether the build's unit writes y through spmvc_row_map: a reordered unit in the caller's order
// whose rows moved (codegen::attach_reordering).
bool writes_through_row_map(const Build& build) {
  return std::any_of(build.encoded.arrays.begin(), build.encoded.arrays.end(),
                     [](const EncodedArray& a) { return a.name == "row_map"; });
}

// Uploads the encoded arrays, points a reordered unit's row map at its uploaded copy and binds
// every launch's arrays; waits for the device. Returns the seconds it took.
double upload_encoded(Operator::Impl& im, const Build& build) {
  const auto t0 = Clock::now();
  // A value table gets room for as many values as its coding holds, so that update_values can
  // write a larger one in place (device pointers kept).
  const int coding = compiler::value_coding(build.plan);
  const std::int64_t table_capacity = coding == formats::kValuesTable8    ? 256
                                      : coding == formats::kValuesTable16 ? 65536
                                                                          : 0;
  // All arrays in one staged upload (runtime/upload.hpp), its fillers dealt chunks across them.
  std::vector<runtime::UploadPart> parts;
  for (const EncodedArray& arr : build.encoded.arrays) {
    std::size_t room = arr.bytes.size();
    if (table_capacity > 0 && arr.name.ends_with("_table") &&
        (arr.type == ElemType::f64 || arr.type == ElemType::f32))
      room = std::max(room, static_cast<std::size_t>(table_capacity * size_of(arr.type)));
    runtime::DeviceBuffer buffer(std::max<std::size_t>(room, 1));
    parts.push_back(runtime::upload_part(buffer.get(), arr.bytes.data(), arr.bytes.size()));
    im.arrays.emplace_back(arr.name, std::move(buffer));
  }
  runtime::staged_upload(parts);
  runtime::synchronize();
  const double seconds = seconds_since(t0);
  // A reordered unit writes y through spmvc_row_map (templates/common.cuh): point it at the
  // uploaded map in every loaded image.
  for (const auto& [name, buffer] : im.arrays) {
    if (name != "row_map") continue;
    const void* device_map = buffer.get();
    for (Operator::Impl::Launch& launch : im.launches)
      launch.kernel->set_global("spmvc_row_map", &device_map, sizeof device_map);
  }
  im.bind_arrays();
  return seconds;
}

}  // namespace

std::unique_ptr<Operator::Impl> Operator::Impl::from_build(const Build& build,
                                                           const Options& options,
                                                           const runtime::DeviceInfo& device,
                                                           CompileTimings timings,
                                                           const runtime::CachedKernel* found) {
  auto im = std::make_unique<Impl>();
  im->timings = std::move(timings);
  adopt_build(*im, build);
  // A unit that writes y through spmvc_row_map loads its own copy (the variable is per image).
  const bool own_load = writes_through_row_map(build);
  im->timings.compile =
      found != nullptr
          ? found->seconds + im->load_cached(*found, device, own_load, im->timings)
          : im->load_kernels(runtime::cache_for(runtime::cache_dir_of(options)), device, own_load);
  im->timings.upload = upload_encoded(*im, build);
  if (im->plan.engine == Engine::cusparse) {
    // The plan's csr arrays are what cuSPARSE multiplies; the csr kernel stays loaded for SpMM
    // and the transposed multiply, which run on the same encoding.
    const auto t0 = Clock::now();
    im->cusparse = std::make_shared<runtime::CusparseEngine>(
        im->nrows, im->ncols, im->profile.nnz, im->array("row_ptr"), im->array("col_idx"),
        im->array("values"), im->plan.precision, im->plan.cusparse_algorithm);
    im->timings.cusparse_setup = seconds_since(t0);
    im->timings.engine = "cusparse";
  }
  runtime::attach_operations(*im, build, options);
  return im;
}

std::unique_ptr<Operator::Impl> Operator::Impl::tiered_from_build(Build&& build, const CsrMatrix& a,
                                                                  const Options& options,
                                                                  const runtime::DeviceInfo& device,
                                                                  CompileTimings timings,
                                                                  Clock::time_point start) {
  runtime::KernelCache& cache = runtime::cache_for(runtime::cache_dir_of(options));
  auto im = std::make_unique<Impl>();
  im->timings = std::move(timings);
  adopt_build(*im, build);
  runtime::attach_operations(*im, build, options);

  const auto t0 = Clock::now();
  auto generic = std::make_unique<runtime::GenericCsr>(a, im->plan.precision, device.ordinal);
  runtime::synchronize();
  im->timings.generic_setup = seconds_since(t0);

  im->tiers =
      std::make_unique<runtime::Tiers>(std::move(generic), im->timings, start, device.ordinal);
  // The thread reads the operator's source and writes its launches and arrays, which apply()
  // reads only after the switch; the Impl outlives the thread (Tiers is its last member).
  Impl* raw = im.get();
  auto kept = std::make_shared<Build>(std::move(build));
  im->tiers->start(
      [raw, kept, &cache, device](CompileTimings& t, const std::atomic<bool>& abandoned) {
        const auto t1 = Clock::now();
        const runtime::CachedKernel cached = cache.get(raw->source, device.arch());
        if (abandoned.load()) return;
        const double obtained = seconds_since(t1);
        t.compile = obtained + raw->load_cached(cached, device, writes_through_row_map(*kept), t);
        t.upload = upload_encoded(*raw, *kept);
      });
  return im;
}

Operator::Operator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  // Without a generic tier every apply runs the specialised kernel.
  if (!impl_->tiers) impl_->timings.tier = "specialised";
}
Operator::Operator(Operator&&) noexcept = default;
Operator& Operator::operator=(Operator&&) noexcept = default;
Operator::~Operator() = default;

std::int64_t Operator::nrows() const { return impl_->nrows; }
std::int64_t Operator::ncols() const { return impl_->ncols; }
// A GPU build on its tiers' thread (Tiers::Scope::build) writes what these return: they wait
// for it to settle.
const Plan& Operator::plan() const {
  impl_->settled();
  return impl_->plan;
}
const Profile& Operator::profile() const {
  impl_->settled();
  return impl_->profile;
}
const KernelSource& Operator::source() const {
  impl_->settled();
  return impl_->source;
}
const CompileTimings& Operator::timings() const {
  if (impl_->tiers) impl_->tiers->refresh(impl_->timings);
  return impl_->timings;
}
void Operator::wait_specialised() const {
  if (impl_->tiers) impl_->tiers->wait_ready();
}
std::int64_t Operator::device_bytes() const {
  impl_->settled();
  return impl_->device_bytes;
}
std::int64_t Operator::read_bytes() const {
  impl_->settled();
  return impl_->read_bytes();
}

void Operator::apply(const void* x, void* y, double alpha, double beta, void* stream) const {
  // The hot path: no allocation and no lookups. Argument slots live on the stack; device
  // pointers of the encoded arrays were resolved once in compile(). A tiered operator costs one
  // atomic load here once it has switched.
  const Impl& im = *impl_;
  // The generic tier until the background work lets apply() switch: for a cuSPARSE plan that is
  // as soon as its engine is ready (at once where compile() set it up, the background then
  // compiling only the csr kernel for SpMM and the transposed multiply).
  if (im.tiers && !im.tiers->switched() && im.tiers->apply_generic(x, y, alpha, beta, stream))
    return;
  if (im.cusparse) {
    im.cusparse->apply(x, y, alpha, beta, stream);
    return;
  }
  runtime::LaunchArgs args(im.nrows, im.ncols, im.plan.precision != Precision::f32, alpha, beta);
  bool early = false;  // the first launch follows whatever the caller queued: in stream order
  for (const Impl::Launch& launch : im.launches) {
    launch.kernel->launch(launch.desc.grid, launch.desc.block, launch.desc.shared_bytes,
                          args.bind(launch.desc.params, launch.array_args, x, y), stream, early);
    runtime::check_last_launch(launch.desc.entry);
    early = im.early_launches;
  }
}

bool Operator::plan_order() const { return impl_->plan_ordered; }

std::span<const std::int32_t> Operator::plan_rows() const {
  if (!impl_->plan_ordered) return {};
  return impl_->map->rows;
}

std::span<const std::int32_t> Operator::plan_columns() const {
  if (!impl_->plan_ordered) return {};
  return impl_->map->cols;
}

namespace {

// to_plan_order (gather) and from_plan_order (scatter) on `axis`.
void permute(const Operator::Impl& im, const void* in, void* out, PlanAxis axis, bool scatter,
             void* stream, const char* what) {
  const bool rows = axis == PlanAxis::rows;
  const std::int64_t n = rows ? im.nrows : im.ncols;
  const runtime::DeviceBuffer& map = rows ? im.plan_rows : im.plan_columns;
  // Empty where the plan's order is the caller's on this side (attach_plan_order).
  const auto* device_map = map.bytes() > 0 ? static_cast<const std::int32_t*>(map.get()) : nullptr;
  if (n == 0) return;
  if (!runtime::is_device_pointer(in) || !runtime::is_device_pointer(out))
    throw InputError(what, 0, "the vectors must be device memory");
  // The options' precision: a GPU build on its tiers' thread may still be writing the plan.
  const std::size_t bytes = im.options.precision == Precision::f64 ? 8 : 4;
  const auto* a = static_cast<const char*>(in);
  const auto* b = static_cast<const char*>(out);
  const std::size_t span = static_cast<std::size_t>(n) * bytes;
  if (a < b + span && b < a + span)
    throw InputError(what, 0,
                     fmt::format("the input and output of {} elements overlap: it permutes out "
                                 "of place",
                                 n));
  runtime::permute_vector(device_map, n, in, out, static_cast<int>(bytes), scatter, stream,
                          im.options.device);
}

}  // namespace

void Operator::to_plan_order(const void* v, void* v_plan, PlanAxis axis, void* stream) const {
  permute(*impl_, v, v_plan, axis, /*scatter=*/false, stream, "to_plan_order");
}

void Operator::from_plan_order(const void* v_plan, void* v, PlanAxis axis, void* stream) const {
  permute(*impl_, v_plan, v, axis, /*scatter=*/true, stream, "from_plan_order");
}

void Operator::apply_host(std::span<const double> x, std::span<double> y, double alpha,
                          double beta) const {
  if (static_cast<std::int64_t>(x.size()) != impl_->ncols ||
      static_cast<std::int64_t>(y.size()) != impl_->nrows)
    throw InputError("apply_host", 0,
                     fmt::format("x has {} elements (need {}), y has {} (need {})", x.size(),
                                 impl_->ncols, y.size(), impl_->nrows));
  const bool f64 = plan().precision == Precision::f64;
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

// compile(CsrMatrix) on the GPU (Options::build): the CSR uploaded once, then compile(DeviceCsr)'s
// stages on the copy, which the operator keeps. The GPU inspection checks the arrays; its
// errors name the caller's matrix.
Operator build_on_device(const CsrMatrix& a, const Options& options,
                         const runtime::DeviceInfo& device, Clock::time_point start,
                         std::string why) {
  HostUpload upload;
  const auto t0 = Clock::now();
  {
    // The build's modules load meanwhile: a fresh process's first build loads three build units
    // and the generic tier's image, 2-3 ms on an H200 that the upload's host threads and copy
    // engine do not wait for (bench/results/2026-11-29-h200-first-multiply/design-ab.txt).
    std::jthread preload([&] {
      preload_device_build(options, device, a.nrows, static_cast<std::int64_t>(a.nnz()));
    });
    upload.resident =
        std::make_shared<runtime::ResidentCsr>(runtime::upload_csr(a, options.precision));
    runtime::synchronize();
  }
  upload.seconds = seconds_since(t0);
  upload.why = std::move(why);
  try {
    return Operator::Impl::wrap(
        build_from_device_arrays(upload.resident->view, options, device, start, &upload));
  } catch (const InputError& e) {
    if (e.source() != "DeviceCsr") throw;
    throw InputError("CsrMatrix", e.line(), e.detail());
  }
}

// Options::plan_order: the map on the device for to_plan_order and from_plan_order.
void attach_plan_order(Operator::Impl& im) {
  im.plan_ordered = true;
  auto upload = [](const std::vector<std::int32_t>& v) {
    runtime::DeviceBuffer b(std::max<std::size_t>(v.size() * 4, 1));
    if (!v.empty()) b.upload(v.data(), v.size() * 4);
    return b;
  };
  im.plan_rows = upload(im.map->rows);
  if (!im.map->cols.empty()) im.plan_columns = upload(im.map->cols);
  runtime::synchronize();
}

}  // namespace

Operator compile(const CsrMatrix& a, const Options& options) {
  const auto start = Clock::now();
  // The sizes, for both builds, in constant time. The contents (offsets that never decrease,
  // columns in range) are checked by the GPU inspection on its path, not on the host's.
  if (a.nrows < 0 || a.ncols < 0 || static_cast<std::int64_t>(a.row_ptr.size()) != a.nrows + 1 ||
      a.values.size() != a.col_idx.size() ||
      a.row_ptr.back() != static_cast<std::int64_t>(a.col_idx.size()))
    throw InputError(
        "CsrMatrix", 0,
        fmt::format("{} rows need {} row offsets (has {}), the last equal to the {} columns "
                    "(it is {}); the columns and the {} values must be as many",
                    a.nrows, a.nrows + 1, a.row_ptr.size(), a.col_idx.size(),
                    a.row_ptr.empty() ? 0 : a.row_ptr.back(), a.values.size()));
  const runtime::DeviceInfo device = runtime::probe_device(options.device);
  runtime::set_device(options.device);
  compiler::BuildChoice choice =
      compiler::choose_build(options, {a.nrows, a.ncols, a.nnz(), runtime::allocatable_bytes()});
  if (choice.path == compiler::BuildPath::device) {
    // update_values builds again on the GPU from the copy the operator keeps: no host copy of
    // the pattern.
    return build_on_device(a, options, device, start, std::move(choice.why));
  }
  BuildTarget target;
  target.arch = device.arch();
  target.gpu = device.name;
  const bool measure = options.planner == PlannerMode::measure && !options.csr && !options.params;
  // Measure mode encodes and generates only the candidates it times.
  if (measure) target.until = BuildStage::plan;
  Build b = build(a, options, target);
  CompileTimings timings;
  timings.reorder = b.timings.reorder;
  timings.inspect = b.timings.inspect;
  timings.plan = b.timings.plan;
  std::shared_ptr<const RowColumnMap> map =
      b.map ? std::make_shared<const RowColumnMap>(*b.map) : nullptr;
  auto build = [&]() -> Operator {
    if (measure) return compile_measured(a, std::move(b), options, target, device, timings);
    // A cuSPARSE plan waits for no NVRTC compile worth hiding: its engine is ready at once. In
    // the plan's order (Options::plan_order) the generic tier, which multiplies the caller's
    // order, cannot stand in.
    const bool plan_ordered = b.map && options.plan_order;
    if (b.plan.engine == Engine::kernel && runtime::tiered(options) && !plan_ordered) {
      // The tiers only when the kernel must be compiled (a cached one loads at once), and when
      // the device holds the generic tier's copy of the matrix beside the encoding.
      runtime::KernelCache& cache = runtime::cache_for(runtime::cache_dir_of(options));
      const std::optional<runtime::CachedKernel> found = cache.find(b.source, device.arch());
      if (found) return Operator(Operator::Impl::from_build(b, options, device, timings, &*found));
      std::int64_t encoded = 0;
      for (const EncodedArray& arr : b.encoded.arrays)
        encoded += static_cast<std::int64_t>(arr.bytes.size());
      const auto needed = static_cast<std::uint64_t>(
          encoded + runtime::GenericCsr::copy_bytes(a, b.plan.precision));
      if (needed <= runtime::allocatable_bytes())
        return Operator(
            Operator::Impl::tiered_from_build(std::move(b), a, options, device, timings, start));
    }
    return Operator(Operator::Impl::from_build(b, options, device, timings));
  };
  Operator op = build();
  op.impl_->timings.build = "host";
  op.impl_->timings.build_why = std::move(choice.why);
  // What update_values traces and re-plans from.
  op.impl_->options = options;
  auto pattern = std::make_shared<CsrMatrix>();
  pattern->nrows = a.nrows;
  pattern->ncols = a.ncols;
  pattern->row_ptr = a.row_ptr;
  pattern->col_idx = a.col_idx;
  op.impl_->host_matrix = std::move(pattern);
  // A measured pick of cuSPARSE runs the caller's order (measure.cpp): its ordering, and the
  // map with it, were dropped. (Plan::reorder is "none" for a caller-chosen ordering too, whose
  // map update_values needs: only a cuSPARSE plan goes without.)
  if (!(op.impl_->plan.engine == Engine::cusparse && op.impl_->plan.reorder == "none"))
    op.impl_->map = std::move(map);
  const bool plan_ordered = options.plan_order && op.impl_->map;
  // SpMM and the transposed multiply run on this CSR: in the plan's order, reordered.
  if (options.keep_csr)
    runtime::keep_csr(*op.impl_, a, options, plan_ordered ? op.impl_->map.get() : nullptr);
  if (plan_ordered) attach_plan_order(*op.impl_);
  return op;
}

void warm_up(const Options& options) {
  const runtime::DeviceInfo device = runtime::probe_device(options.device);
  runtime::set_device(options.device);
  runtime::prepare_staging();
  preload_device_build(options, device, 0, -1);
  // Their code too: a first build launches a dozen of them (0.5-2 ms of first launches), and
  // here no upload waits for the driver.
  runtime::resolve_shared_kernels(device.ordinal);
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
