// compile(DeviceCsr): the build from a CSR matrix already in device memory, on the GPU (and
// compile(CsrMatrix)'s GPU build, on the CSR it uploaded: build_from_device_arrays). The GPU
// inspects the arrays (runtime/device_csr.cpp, and the slices' padding in
// runtime/device_build_ell.cpp), the planner chooses among the plans built from them
// (compiler/planner/device_plan.cpp), the GPU encodes what the plan needs beside the caller's
// arrays (ell, sell, hyb and dia in device_build_ell.cpp), and the kernel comes from the cache.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "cusparse_engine.hpp"
#include "device_block.hpp"
#include "device_bro.hpp"
#include "device_csr.hpp"
#include "device_ell.hpp"
#include "device_values.hpp"
#include "operations.hpp"
#include "operator_impl.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_block.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/params/values.hpp"

namespace spmvc {

namespace {

using runtime::Clock;
using runtime::seconds_since;

// What the arrays must be for any plan: sizes that fit DeviceCsr's 32-bit offsets and device
// pointers. InputError naming the fault.
void check_device_arrays(const DeviceCsr& a) {
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

}  // namespace

Operator compile(const DeviceCsr& a, const Options& options) {
  const auto start = Clock::now();
  const runtime::DeviceInfo device = runtime::probe_device(options.device);
  runtime::set_device(options.device);
  compiler::check_device_options(options);
  check_device_arrays(a);
  return Operator::Impl::wrap(build_from_device_arrays(a, options, device, start));
}

void preload_device_build(const Options& options, const runtime::DeviceInfo& device,
                          std::int64_t nrows, std::int64_t nnz) noexcept {
  try {
    runtime::set_device(options.device);
    runtime::KernelCache& cache = runtime::cache_for(runtime::cache_dir_of(options));
    (void)runtime::load_device_csr_kernels(cache, device);
    (void)runtime::load_device_ell_kernels(cache, device);
    const bool bro_wanted = options.format == "auto" || options.format.starts_with("bro_");
    if (bro_wanted && !options.csr && !options.params)
      (void)runtime::load_device_bro_kernels(cache, device);
    if (runtime::tiered(options)) {
      if (nnz >= 0)
        runtime::GenericCsr::preload(nrows, nnz, options.precision, device.ordinal);
      else
        runtime::GenericCsr::preload(options.precision, device.ordinal);
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): the build loads the same and reports
  }
}

namespace {

// What the GPU build has once the row pass has checked the arrays.
struct Checked {
  runtime::DeviceCsrKernels kernels;
  runtime::DeviceEllKernels ell_kernels;
  runtime::DeviceInspection inspection;
  double inspect_seconds = 0;  // the row pass's
};

// Whether the whole build goes to a tiered operator's background thread (Tiers::Scope::build):
// for format auto only, whose later passes raise no InputError (a named format's can: unsorted
// columns for BRO or the block formats), so every error about the caller's arrays still comes
// from compile(); and only while `cache` holds no kernel at all, when the plan's kernel must be
// compiled whatever the plan is, so that the generic tier would run first anyway. With any
// kernel cached the plan comes first: a cached kernel then runs every multiply, and a solve
// repeated with a warm cache rounds the same way each time.
bool build_in_background(const Options& options, runtime::KernelCache& cache) {
  return runtime::tiered(options) && options.format == "auto" && !options.csr && !options.params &&
         cache.holds_none();
}

// The generic tier on the caller's (checked) arrays, and the tiers around it whose thread does
// `scope`'s work (not started yet); its setup time goes into `timings` before the tiers copy them.
void make_tiers(Operator::Impl& im, CompileTimings& timings, const DeviceCsr& a,
                Precision precision, const runtime::DeviceInfo& device, Clock::time_point start,
                runtime::Tiers::Scope scope) {
  const auto t0 = Clock::now();
  auto generic = std::make_unique<runtime::GenericCsr>(a, precision, device.ordinal);
  timings.generic_setup = seconds_since(t0);
  im.tiers =
      std::make_unique<runtime::Tiers>(std::move(generic), timings, start, device.ordinal, scope);
}

// The tiers' thread's last step, in either scope: the kernel from the cache (NVRTC on a miss),
// loaded and bound to the arrays; nothing after the compile once the operator is going away.
void load_in_background(Operator::Impl& im, runtime::KernelCache& cache,
                        const runtime::DeviceInfo& device, CompileTimings& t,
                        const std::atomic<bool>& abandoned) {
  const auto t0 = Clock::now();
  const runtime::CachedKernel cached = cache.get(im.source, device.arch());
  if (abandoned.load()) return;
  const double obtained = seconds_since(t0);
  t.compile += obtained + im.load_cached(cached, device, /*own_load=*/false, t);
  im.bind_arrays();
}

// The GPU build after the row pass: the other inspection passes, the plan, the encoding, the
// source and the kernel, into `im` with its stages in `timings`. `tiers`: set when this runs on
// a tiered operator's background thread (Scope::build), which it settles once the operator's
// description is final and publishes once apply() may switch; else a kernel in neither cache
// level compiles on a thread of its own where the options tier (Scope::kernel).
void finish_build(Operator::Impl& im, CompileTimings& timings, const DeviceCsr& a,
                  const Options& options, const runtime::DeviceInfo& device, Checked checked,
                  Clock::time_point start, runtime::Tiers* tiers,
                  const std::atomic<bool>* abandoned) {
  const bool from_host = im.resident != nullptr;
  runtime::KernelCache& cache = runtime::cache_for(runtime::cache_dir_of(options));
  const runtime::DeviceCsrKernels& kernels = checked.kernels;
  const runtime::DeviceEllKernels& ell_kernels = checked.ell_kernels;
  runtime::DeviceInspection& inspection = checked.inspection;
  // The row pass's time counts towards the inspection.
  auto t0 = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(checked.inspect_seconds));
  im.profile = std::move(inspection.profile);
  std::string wanted_format = options.format;
  if (options.csr) wanted_format = "csr";
  if (options.params) wanted_format = std::string(format_of(*options.params));
  // More distinct values than the row pass tracks (256): counted up to a 16-bit table's 65,536,
  // and kept for its codes, where the plan may use a 16-bit table (format auto, csr,
  // csr_stream, ell, hyb and the BRO formats). The pass stops as soon as the set holds more than
  // 65,536 patterns and filters repeated values in shared memory (templates/device_values.cuh); its
  // cost is the bench's "16-bit value count" step (spmvc_bench_device_build).
  runtime::DeviceValueKernels value_kernels;
  runtime::DeviceValues16 values16;
  values16.patterns = inspection.value_patterns;
  const bool table16_wanted = wanted_format == "auto" || wanted_format == "csr" ||
                              wanted_format == "csr_stream" || wanted_format == "ell" ||
                              wanted_format == "hyb" || wanted_format.starts_with("bro_");
  const bool values_uncounted = a.nnz > 0 && inspection.value_patterns.empty() && !table16_wanted;
  const bool many_values = a.nnz > 0 && inspection.value_patterns.empty() && table16_wanted;
  if (many_values) {
    const auto t1 = Clock::now();
    value_kernels = runtime::load_device_value_kernels(cache, device);
    values16.kernels = &value_kernels;
    timings.compile += value_kernels.seconds;
    t0 += Clock::now() - t1;
  }
  if (many_values) {
    auto found = runtime::value_patterns16_device(a, options.precision, value_kernels);
    im.profile.distinct_values =
        found ? static_cast<std::int64_t>(found->size()) : kDistinctValuesCap + 1;
    if (found) values16.patterns = std::move(*found);
  }
  // The diagonals, for dia, where the options let it be chosen: a pass that stops as soon as it
  // has seen more than kMaxDiagonals of them (most matrices), and a symmetry check where dia's
  // symmetric half could store the matrix.
  runtime::DeviceDiagonals diagonals;
  if (wanted_format == "auto" || wanted_format == "dia") {
    diagonals = runtime::inspect_diagonals_device(a, options.precision, ell_kernels);
    im.profile.diagonals = diagonals.count;
    // On few diagonals the farthest one is the bandwidth, which dia's thread shape reads.
    for (const std::int32_t o : diagonals.occupied)
      im.profile.bandwidth = std::max(im.profile.bandwidth, std::abs(std::int64_t{o}));
    im.profile.structurally_symmetric = diagonals.structural;
    im.profile.numerically_symmetric = diagonals.numerical;
  }
  // The block shapes, for bcsr's and bellpack's models, where the caller asked for one of them.
  // Not for format "auto": on the H100 the pass took 9-31 ms at 16-53M nonzeros (27-point
  // stencil, G3_circuit x16M, R-MAT scale 20, wiki-Vote x16M), five to twenty times the rest of
  // the build, so the automatic build leaves the block formats out (no shapes: no candidates).
  std::optional<runtime::DeviceBlockKernels> block_kernels;
  if (codegen::device_block_family(wanted_format)) {
    const auto t1 = Clock::now();
    block_kernels = runtime::load_device_block_kernels(cache, device);
    timings.compile += block_kernels->seconds;
    t0 += Clock::now() - t1;
    runtime::DeviceBlockInspection blocks = runtime::inspect_blocks_device(a, *block_kernels);
    if (!blocks.sorted && wanted_format != "auto")
      throw InputError("DeviceCsr", 0,
                       fmt::format("{} is built on the GPU from sorted columns, but the columns "
                                   "do not strictly increase within every row",
                                   wanted_format));
    im.profile.block_shapes = std::move(blocks.shapes);
  }

  // The plan, in two parts (compiler::DevicePlanning): the formats the row pass's Profile
  // serves are planned on the host while BRO's column pass runs on the GPU, the BRO formats once
  // it is done. That part of the planning counts as plan time, not inspection.
  BuildTarget target;
  target.arch = device.arch();
  target.gpu = device.name;
  compiler::DevicePlanning planning(a, options, target, from_host);
  // A named format without 16-bit tables (sell and the block formats) and more than 256
  // distinct values, not counted further: the planner sees more than a 16-bit table holds;
  // the Profile keeps the row pass's "more than 256".
  const std::int64_t counted = im.profile.distinct_values;
  if (values_uncounted) im.profile.distinct_values = kDistinctValuesCap + 1;
  // The columns' deltas, for the BRO formats' models, where the options let BRO be chosen; that
  // pass measures each slice height's longest rows too (Profile::slice_longest), which the ell
  // unit's own pass measures otherwise. It is launched first and read back after the row
  // formats' planning, which runs on the host meanwhile.
  const bool bro_wanted = wanted_format == "auto" || wanted_format.starts_with("bro_");
  std::optional<runtime::DeviceBroKernels> bro_kernels;
  std::optional<runtime::PendingBroInspection> pending;
  if (bro_wanted) {
    const auto t1 = Clock::now();
    bro_kernels = runtime::load_device_bro_kernels(cache, device);
    timings.compile += bro_kernels->seconds;
    if (!bro_kernels->nvcc) timings.build_units = "nvrtc";
    t0 += Clock::now() - t1;  // the unit's load is compile time, not inspection
    pending = runtime::launch_bro_inspection(a, *bro_kernels);
  }
  const auto t_rows = Clock::now();
  planning.propose_row_formats(im.profile);
  const double plan_seconds = seconds_since(t_rows);
  bool slices_measured = false;
  if (pending) {
    const std::string problem = runtime::finish_bro_inspection(*pending, im.profile);
    slices_measured = problem.empty();  // unsorted columns: the pass keeps none of its counts
    if (!problem.empty() && (wanted_format == "bro_ell" || wanted_format == "bro_hyb"))
      throw InputError(
          "DeviceCsr", 0,
          fmt::format("{} delta-codes sorted columns, but {}", wanted_format, problem));
  }
  if (!slices_measured) im.profile.slice_longest = runtime::slice_longest_device(a, ell_kernels);
  timings.inspect = seconds_since(t0) - plan_seconds;
  im.profile.inspect_seconds = timings.inspect;

  t0 = Clock::now();
  im.plan = planning.finish(im.profile);
  im.profile.distinct_values = counted;
  timings.plan = plan_seconds + seconds_since(t0);

  // What is encoded, on the GPU: ell, sell and hyb's arrays, the BRO formats' whole encodings,
  // or csr_stream's row blocks and 16-bit columns, 8-bit value codes or fp32 values beside the
  // caller's arrays.
  t0 = Clock::now();
  const int coding = compiler::value_coding(im.plan);
  const bool ell_family = codegen::device_ell_family(im.plan.format);
  const bool block_family = codegen::device_block_family(im.plan.format);
  if (coding == formats::kValuesTable16 && values16.kernels == nullptr) {
    // A 16-bit table forced on at most 256 distinct values: the row pass's patterns serve.
    value_kernels = runtime::load_device_value_kernels(cache, device);
    values16.kernels = &value_kernels;
  }
  std::int64_t ell_width = 0, coo_entries = 0;
  std::optional<runtime::BroBuilt> bro;
  const bool dia = im.plan.format == "dia";
  std::vector<std::int32_t> dia_offsets;
  if (dia) {
    runtime::DeviceDiaBuild built =
        runtime::build_dia_device(a, im.plan, diagonals.occupied, ell_kernels);
    dia_offsets = std::move(built.offsets);
    for (auto& [name, buffer] : built.arrays) {
      im.device_bytes += static_cast<std::int64_t>(buffer.bytes());
      im.arrays.emplace_back(std::move(name), std::move(buffer));
    }
  } else if (block_family) {
    if (!block_kernels) throw InternalError("a block plan without the block inspection");
    runtime::DeviceBlockBuild built =
        runtime::build_block_device(a, im.plan, *block_kernels, ell_kernels);
    for (auto& [name, buffer] : built.arrays) {
      im.device_bytes += static_cast<std::int64_t>(buffer.bytes());
      im.arrays.emplace_back(std::move(name), std::move(buffer));
    }
  } else if (ell_family) {
    runtime::DeviceEllBuild built = runtime::build_ell_family_device(
        a, im.plan, im.profile, inspection.value_patterns, kernels, ell_kernels,
        values16.kernels != nullptr ? &values16 : nullptr);
    ell_width = built.width;
    coo_entries = built.coo;
    for (auto& [name, buffer] : built.arrays) {
      im.device_bytes += static_cast<std::int64_t>(buffer.bytes());
      im.arrays.emplace_back(std::move(name), std::move(buffer));
    }
  } else {
    bro = runtime::encode_bro_plan(im, a, inspection.value_patterns,
                                   bro_kernels ? &*bro_kernels : nullptr,
                                   values16.kernels != nullptr ? &values16 : nullptr);
  }
  // The ell family's and the BRO encodings hold the values as the plan codes them; the others
  // code them here.
  const bool own_encoding = ell_family || block_family || dia || bro.has_value();
  if (!own_encoding && coding == formats::kValuesTable8) {
    runtime::DeviceValueCodes coded =
        runtime::code_values_device(a, options.precision, inspection.value_patterns, kernels);
    im.device_bytes += static_cast<std::int64_t>(coded.codes.bytes() + coded.table.bytes());
    im.arrays.emplace_back("values", std::move(coded.codes));
    im.arrays.emplace_back("values_table", std::move(coded.table));
  } else if (!own_encoding && coding == formats::kValuesTable16) {
    runtime::DeviceValueCodes coded =
        runtime::code_values16_device(a, options.precision, values16.patterns, value_kernels);
    im.device_bytes += static_cast<std::int64_t>(coded.codes.bytes() + coded.table.bytes());
    im.arrays.emplace_back("values", std::move(coded.codes));
    im.arrays.emplace_back("values_table", std::move(coded.table));
  } else if (!own_encoding && coding == formats::kValuesF32) {
    runtime::DeviceBuffer narrow = runtime::narrow_values_device(a, kernels);
    im.device_bytes += static_cast<std::int64_t>(narrow.bytes());
    im.arrays.emplace_back("values", std::move(narrow));
  }
  std::int64_t nblocks = 0;
  bool narrow_columns = false;
  if (const auto* params = std::get_if<CsrStreamParams>(&im.plan.params)) {
    runtime::DeviceRowBlocks blocks = runtime::stream_row_blocks(
        a.row_ptr, a.nrows, params->tile, params->block_rows(), kernels, params->split);
    nblocks = blocks.nblocks;
    if (params->split > 0) {
      im.device_bytes += static_cast<std::int64_t>(blocks.lanes.bytes());
      im.arrays.emplace_back("lanes", std::move(blocks.lanes));
    }
    if (params->narrow_columns) {
      // Wide blocks read the caller's col_idx (bound below as col_wide).
      runtime::DeviceNarrowColumns narrow =
          runtime::narrow_columns_device(a, blocks.starts, nblocks, kernels);
      im.device_bytes += static_cast<std::int64_t>(narrow.base.bytes() + narrow.col16.bytes());
      im.arrays.emplace_back("col_base", std::move(narrow.base));
      im.arrays.emplace_back("col16", std::move(narrow.col16));
      narrow_columns = true;
    }
    im.device_bytes += static_cast<std::int64_t>(blocks.starts.bytes());
    im.arrays.emplace_back("row_blocks", std::move(blocks.starts));
  }
  timings.encode = seconds_since(t0);

  t0 = Clock::now();
  im.source =
      block_family ? compiler::generate_device_block(im.plan, im.profile, a.nrows, a.ncols, a.nnz)
      : ell_family ? compiler::generate_device_ell(im.plan, im.profile, ell_width, coo_entries)
      : dia        ? compiler::generate_device_dia(im.plan, im.profile, dia_offsets)
      : bro        ? runtime::generate_bro_plan(im, a, *bro)
                   : compiler::generate_device_csr(im.plan, im.profile, a, nblocks);
  if (options.transform_source) im.source = options.transform_source(im.source);
  timings.codegen = seconds_since(t0);

  // On the background thread the kernel is obtained last (below); else a kernel in neither
  // cache level compiles in the background while the generic tier multiplies on the caller's
  // arrays, which the row pass has checked (Options::tiered).
  std::optional<runtime::CachedKernel> found;
  if (tiers == nullptr && runtime::tiered(options)) found = cache.find(im.source, device.arch());
  const bool tiered = tiers == nullptr && runtime::tiered(options) && !found;
  if (found) {
    timings.compile += found->seconds + im.load_cached(*found, device, /*own_load=*/false, timings);
  } else if (!tiered && tiers == nullptr) {
    timings.compile += im.load_kernels(cache, device, /*own_load=*/false);
  }

  // The caller's arrays the kernel reads (its values only when they are not coded or dropped;
  // spmvc's own "values" array comes first when they are).
  const bool plain = coding == formats::kValuesPlain;
  const auto vb = static_cast<std::int64_t>(value_bytes(options.precision));
  // (The ell family's, the block formats' and the BRO kernels read only spmvc's arrays.)
  if (from_host) {
    // compile(CsrMatrix)'s copy: the operator's own memory, whatever reads it.
    const runtime::ResidentCsr& r = *im.resident;
    im.device_bytes +=
        static_cast<std::int64_t>(r.row_ptr.bytes() + r.col_idx.bytes() + r.values.bytes());
  } else if (!own_encoding) {
    im.device_bytes += (a.nrows + 1) * 4 + a.nnz * (4 + (plain ? vb : 0));
  }
  im.borrowed = {{"row_ptr", a.row_ptr}, {"col_idx", a.col_idx}, {"values", a.values}};
  im.borrowed_read_bytes = {
      {"row_ptr", (a.nrows + 1) * 4}, {"col_idx", a.nnz * 4}, {"values", a.nnz * vb}};
  if (narrow_columns) {
    im.borrowed.push_back({"col_wide", a.col_idx});
    // Only the wide blocks' share, counted when asked (read_bytes()): the build does not wait
    // for its blocks to be read back.
    im.borrowed_read_bytes.push_back({"col_wide", Operator::Impl::kReadOnWideBlocks});
  }
  if (im.plan.engine == Engine::cusparse) {
    // cuSPARSE multiplies the caller's CSR arrays; the csr kernel (compiled above, or by the
    // tier's thread) serves SpMM and the transposed multiply.
    t0 = Clock::now();
    im.cusparse = std::make_shared<runtime::CusparseEngine>(a.nrows, a.ncols, a.nnz, a.row_ptr,
                                                            a.col_idx, a.values, options.precision,
                                                            im.plan.cusparse_algorithm);
    timings.cusparse_setup = seconds_since(t0);
    timings.engine = "cusparse";
  }
  if (!tiered && tiers == nullptr) im.bind_arrays();
  im.options = options;
  im.device_matrix = a;
  runtime::attach_operations(im, a, options, nblocks);
  runtime::synchronize();

  if (tiers != nullptr) {
    // The operator's description is final; a cuSPARSE engine multiplies from now on, while the
    // csr kernel it keeps for SpMM and the transpose compiles.
    if (im.plan.engine == Engine::cusparse)
      tiers->publish(timings);
    else
      tiers->settle(timings);
    load_in_background(im, cache, device, timings, *abandoned);
    return;
  }
  if (!tiered) return;

  make_tiers(im, timings, a, options.precision, device, start, runtime::Tiers::Scope::kernel);
  // A cuSPARSE engine multiplies at once; the thread compiles the csr kernel it keeps.
  if (im.plan.engine == Engine::cusparse) im.tiers->publish(timings);
  // The thread writes the operator's launches, which apply() reads only after the switch; the
  // Impl outlives the thread (Tiers is its last member).
  Operator::Impl* raw = &im;
  im.tiers->start([raw, &cache, device](CompileTimings& t, const std::atomic<bool>& gone) {
    load_in_background(*raw, cache, device, t, gone);
  });
}

}  // namespace

std::unique_ptr<Operator::Impl> build_from_device_arrays(const DeviceCsr& a, const Options& options,
                                                         const runtime::DeviceInfo& device,
                                                         Clock::time_point start,
                                                         const HostUpload* upload) {
  auto im = std::make_unique<Operator::Impl>();
  im->nrows = a.nrows;
  im->ncols = a.ncols;
  CompileTimings& timings = im->timings;
  timings.build = "device";
  if (upload != nullptr) {
    // Before the tiers copy the timings (Tiers::refresh writes their upload back).
    im->resident = upload->resident;
    timings.upload = upload->seconds;
    timings.build_why = upload->why;
  } else {
    timings.build_why = "compile(DeviceCsr): the matrix is in device memory";
  }
  runtime::KernelCache& cache = runtime::cache_for(runtime::cache_dir_of(options));

  // The build kernels: the library's own (nvcc, build_units.hpp) where they serve this GPU, else
  // a unit compiled through the cache like any other; their load counts as compile time.
  Checked checked;
  checked.kernels = runtime::load_device_csr_kernels(cache, device);
  checked.ell_kernels = runtime::load_device_ell_kernels(cache, device);
  timings.compile = checked.kernels.seconds + checked.ell_kernels.seconds;
  timings.cache_note = checked.kernels.disk_note;
  // Every unit comes from the same place for one device (build_units.hpp's rule).
  timings.build_units = checked.kernels.nvcc && checked.ell_kernels.nvcc ? "nvcc" : "nvrtc";

  // The row pass: InputError here when the arrays do not form a CSR matrix.
  const auto t0 = Clock::now();
  checked.inspection = runtime::inspect_device(a, options.precision, checked.kernels);
  checked.inspect_seconds = seconds_since(t0);

  if (!build_in_background(options, cache)) {
    finish_build(*im, im->timings, a, options, device, std::move(checked), start, nullptr, nullptr);
    return im;
  }
  // Tiered, format auto, nothing cached: the generic tier multiplies on the checked arrays from
  // here on, and the rest of the build runs on the tiers' thread (Tiers::Scope::build).
  make_tiers(*im, timings, a, options.precision, device, start, runtime::Tiers::Scope::build);
  Operator::Impl* raw = im.get();
  auto kept = std::make_shared<Checked>(std::move(checked));
  im->tiers->start([raw, a, options, device, kept, start](CompileTimings& t,
                                                          const std::atomic<bool>& abandoned) {
    finish_build(*raw, t, a, options, device, std::move(*kept), start, raw->tiers.get(),
                 &abandoned);
  });
  return im;
}

}  // namespace spmvc
