// The compiler's entry points for the layers above it (runtime, cli, tooling, bench): plan,
// predict, encode, the reference products, the ordering decision and the device-array planning
// rules. Part of spmvc_compiler's public include folder (compiler/include/); everything else in
// compiler/ is internal to it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmvc/build.hpp"
#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/options.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc::compiler {

/// Read bandwidth (bytes/s) the time model and the benchmarks assume when none is measured:
/// ../shared/docs/BENCHMARKING.md's figure for the H100 SXM (a streaming read kernel).
inline constexpr double kDefaultReadBandwidth = 3.06e12;

/// The calibration the planner uses for `gpu` (a device name or a model's short name) on `arch`.
struct CalibrationInfo {
  std::string model;          ///< "H100", "H200"; empty when the architecture is uncalibrated
  bool own = false;           ///< `gpu`'s own calibration, not the architecture's reference GPU's
  double read_bandwidth = 0;  ///< the calibrated model's streaming read bandwidth (bytes/s)
};
CalibrationInfo calibration_for(std::string_view arch, std::string_view gpu);
/// The streaming read bandwidth of the calibrated GPU whose driver name is `device_name` (matched
/// whole: an H100 PCIe or H200 NVL has other memory clocks); nothing for any other name.
std::optional<double> calibrated_read_bandwidth(std::string_view device_name);
/// The calibrated GPU models' short names, in the order calibration_for tries them.
std::vector<std::string> calibrated_gpus();

/// Predicted bytes of one multiply, by kind.
struct TrafficBytes {
  double matrix = 0;    ///< the encoded arrays, as the format's Cost counts them
  double x = 0;         ///< x: read once while it stays in L2, plus the gathers that miss
  double y = 0;         ///< y as the Cost counts it (writes; some formats' atomics in L2)
  double y_atomic = 0;  ///< atomic formats: y lines evicted before their updates, read and written
  double total() const { return matrix + x + y + y_atomic; }
  /// One line, for reports.
  std::string describe() const;
};

/// What the planner's time model counts as bytes moved.
enum class CostModel {
  compulsory,  ///< formats::Cost::total(): every array, x and y once (what calibration fitted)
  traffic,     ///< the traffic model (traffic.hpp): also x gathers and y lines that miss L2
};

/// "compulsory" or "traffic"; InputError otherwise.
CostModel parse_cost_model(std::string_view name);
std::string_view to_string(CostModel model);

/// Where a plan's one-time build runs, which decides what it costs.
enum class BuildPath {
  host,    ///< the host pipeline: inspect, encode on the host, upload the encoded arrays
  device,  ///< compile(DeviceCsr): inspect and build the arrays on the GPU, nothing uploaded
};

/// A candidate's predicted one-time cost by stage, in seconds (calibration/<gpu>_build.inc):
/// what building it costs before its first multiply.
struct BuildEstimate {
  double inspect = 0;  ///< the row scan the planner reads (the same for every candidate)
  double encode = 0;   ///< the format's encoder (host), or its arrays built on the GPU (device)
  double upload = 0;   ///< the encoded arrays copied to the GPU (host path)
  double compile = 0;  ///< NVRTC's cold compile of its kernel; 0 when kernels are cached
  double total() const { return inspect + encode + upload + compile; }
  /// One line, for reports.
  std::string describe() const;
};

struct PlanOptions {
  Precision precision = Precision::f64;
  std::string format = "auto";   ///< "auto" or a registered format name
  std::optional<CsrParams> csr;  ///< forces csr parameters
  /// Forces a parameter set of any format (and so the format); csr above is the older spelling.
  std::optional<FormatParams> params;
  /// Architecture whose calibration scales the model's times ("sm_90"; "" for none).
  std::string arch = "sm_90";
  /// The GPU the plan is for: a device name ("NVIDIA H200") or a calibrated model's short name
  /// ("H200"). Its own calibration where there is one, else the architecture's reference GPU's.
  std::string gpu;
  /// Bytes/s for the time model; 0: the calibrated GPU's (kDefaultReadBandwidth uncalibrated).
  double read_bandwidth = 0;
  /// Consider value-coded candidates (formats/values): false keeps one plain Value per nonzero.
  bool value_coding = true;
  /// The bytes candidates are ranked by. Calibration (calibration/<gpu>.inc) was fitted to the
  /// compulsory model and scales both.
  CostModel cost_model = CostModel::compulsory;
  /// Only candidates whose y is bitwise the same run to run (FormatUnit::nondeterminism): the
  /// others are rejected with the reason.
  bool deterministic = false;
  /// Opt-in mixed precision (Options::mixed_precision): the candidates of formats with a value
  /// coding store their values rounded (formats/values: kValuesF32Rounded, kValuesBf16) unless
  /// an exact coding of no more bytes applies (all ones, an 8-bit table, fp32 values exact); a
  /// 16-bit table stays beside the rounded twin. Formats without a value coding have no
  /// mixed-precision candidate.
  MixedPrecision mixed_precision = MixedPrecision::off;
  /// With mixed_precision, format "auto" and no forced parameters (Options::mixed_fallback):
  /// the full-precision candidates (plain values, the formats without a value coding) and
  /// cuSPARSE are ranked beside the mixed-precision ones, and a full-precision plan predicted
  /// faster than all of them is kept (Plan::mixed_fallback). false: mixed-precision candidates
  /// only, cuSPARSE refused.
  bool mixed_fallback = true;
  /// Multiplies the caller expects (Options::multiplies): the planner then ranks by one-time
  /// cost + multiplies x predicted time. Unset: by predicted time alone, today's choice.
  std::optional<std::int64_t> multiplies;
  /// The candidates' kernels are expected in the kernel cache: no compile is charged.
  bool cached_kernels = false;
  /// Where the build runs: its stages cost differently (BuildEstimate).
  BuildPath build_path = BuildPath::host;
  /// BuildPath::device for a host matrix (compile(CsrMatrix)'s GPU build): its CSR is uploaded
  /// first, charged as the build's upload.
  bool uploads_csr = false;
  /// Weigh cuSPARSE's CSR SpMV (Engine::cusparse) against the generated candidates: "never",
  /// "auto" (the plan hands the multiply to it where no candidate is predicted faster) or
  /// "always" (it runs every multiply; for tests and comparisons). Only where the format is
  /// "auto" and no parameters are forced; never with deterministic (ALG1 sums in no fixed
  /// order) or f32acc64 (cuSPARSE accumulates fp32 data in fp32).
  std::string cusparse = "never";
};

/// cuSPARSE CSR SpMV's predicted seconds per multiply for `profile` under `options`' GPU: the
/// plain CSR bytes (offsets, 32-bit columns, values, x, y) at the read bandwidth, times the
/// calibration's "cusparse" factor (fitted on the suite's cuSPARSE ALG1 times).
double predict_cusparse(const Profile& profile, const PlanOptions& options);

/// Where `options.cusparse` allows it ("auto" or "always") and cuSPARSE can run plans made with
/// `options`, weighs cuSPARSE's predicted time (with the csr build's one-time cost, under
/// `plan.multiplies`) against the plan's pick and, where no candidate is predicted faster (or
/// "always"), turns `plan` into a cuSPARSE plan (Plan::engine) on its best plain csr candidate's
/// arrays, `why` set. Returns whether it did. Sets plan.cusparse_seconds whenever it weighs.
/// InputError for "always" where cuSPARSE is refused, and for an unknown `options.cusparse`.
bool offer_cusparse(Plan& plan, const Profile& profile, const PlanOptions& options);

/// Why cuSPARSE cannot multiply plans made with `options` (mixed precision insisted on
/// (mixed_fallback off) or with cusparse "always", f32acc64, 64-bit row offsets), or nullopt
/// when it can. InputError for a `cusparse` option
/// that is not auto, always or never; "never" is the caller's to check.
std::optional<std::string> cusparse_refusal(const Profile& profile, const PlanOptions& options);

/// `plan` (made by make_plan, its candidates ranked) handed to cuSPARSE: engine cusparse on the
/// arrays of its best applicable csr candidate with plain values, predicted at
/// predict_cusparse(); nullopt where it has no such candidate. Refusals are not checked here.
std::optional<Plan> cusparse_plan(const Plan& plan, const Profile& profile,
                                  const PlanOptions& options);

/// One parameter set's predicted bytes and time under both cost models.
struct Prediction {
  double compulsory_bytes = 0;
  double compulsory_seconds = 0;
  TrafficBytes traffic;
  double traffic_seconds = 0;
  double time_factor = 1;  ///< the calibration factor both times include (calibration.hpp)
  BuildEstimate build;     ///< the one-time cost of building it (build_path, cached_kernels)
  double bytes(CostModel m) const {
    return m == CostModel::traffic ? traffic.total() : compulsory_bytes;
  }
  double seconds(CostModel m) const {
    return m == CostModel::traffic ? traffic_seconds : compulsory_seconds;
  }
};

/// What make_plan predicts for `params` (of any format, applicable to the matrix) with
/// `options`' precision, bandwidth and architecture.
Prediction predict(const Profile& profile, const FormatParams& params, const PlanOptions& options);

/// make_plan's candidates before it ranks them: every (or the forced) format's proposals, each
/// applicable one predicted; for a named format none of whose candidates applies, its fastest
/// representable one made applicable, and the planner's objection to it in `objection`.
/// InputError for forced parameters that cannot implement the matrix; none for a format without
/// an applicable candidate (pick_candidate refuses those).
struct PlanCandidates {
  std::vector<Candidate> candidates;
  std::string objection;
};
PlanCandidates plan_candidates(const Profile& profile, const PlanOptions& options);

/// Ranks every applicable candidate of every (or the forced) format and picks the fastest.
/// A forced format (options.format) whose candidates were all rejected for not paying
/// (Candidate::representable) still gets its fastest one, the objection in Plan::why
/// ("forced: ..."). InputError when a forced format or parameter set cannot implement the matrix.
Plan make_plan(const Profile& profile, const PlanOptions& options);

/// Ranks `candidates` (applicable first, by predicted time, then by bytes; ties keep their order)
/// and makes the fastest the plan at `precision`, every candidate kept beside it; `why` is left
/// to the caller. InputError listing each candidate's reason when none is applicable.
/// With `multiplies`, by one-time cost + multiplies x predicted time instead
/// (Candidate::total_seconds).
Plan pick_candidate(std::vector<Candidate> candidates, Precision precision,
                    std::optional<std::int64_t> multiplies = std::nullopt);

/// Whether a candidate of `params` planned with mixed precision asked for is a mixed-precision
/// one: its values coded (rounded, or an exact coding of no more bytes), not plain
/// full-precision values.
bool is_mixed_candidate(const FormatParams& params);

/// Whether full-precision plans are weighed beside the mixed-precision ones: mixed precision
/// asked for, not insisted on (PlanOptions::mixed_fallback), and the format and parameters left
/// to the planner.
bool weighs_full_precision(const PlanOptions& options);

/// The rounding a plan of `params` run by `engine` brings under `options.mixed_precision`
/// (formats::value_rounding for its coding), or nullopt for a full-precision plan: mixed
/// precision off, plain values, or the cuSPARSE engine.
std::optional<ValueRounding> plan_rounding(const Profile& profile, const PlanOptions& options,
                                           const FormatParams& params, Engine engine);

/// How the plan stores its values: a formats::ValueCoding (spmvc/params/values.hpp); plain for a
/// format that has no coding.
int value_coding(const Plan& plan);

/// The planner's options for a caller's Options and build target (the pipeline's, spmvc/build.hpp).
PlanOptions plan_options(const Options& options, const BuildTarget& target);

/// What compile(DeviceCsr) cannot do whatever the arrays hold (planner/device_plan.cpp): measure
/// mode, reordering, full inspection, formats with no GPU build (all but csr, csr_stream, ell,
/// sell, hyb, bro_ell, bro_coo, bro_hyb, bcsr, bellpack and dia). InputError naming the option;
/// nothing when the options apply.
void check_device_options(const Options& options);
/// The Options field check_device_options refuses and why.
struct OptionRefusal {
  std::string field, why;
};
/// check_device_options without the throw: the first option it refuses, nullopt when none.
std::optional<OptionRefusal> device_options_refusal(const Options& options);

/// The plan for a CSR matrix in device memory (`a`'s sizes and pointer alignments are read,
/// never its arrays): the planner's csr and csr_stream candidates that run on the caller's arrays
/// as they are (a csr candidate whose vector loads cannot is tried with single loads), and its
/// ell, sell and hyb candidates, whose arrays the GPU builds (sell's sorting windows up to
/// codegen::kDeviceSortWindow rows), and BRO candidates, encoded on the GPU (bro_ell and
/// bro_hyb refused when `profile` lacks the column inspection: compiler::has_bro_columns), each
/// with any exact value coding (8- and 16-bit tables, fp32 storage), the fastest predicted.
/// `profile` is the GPU inspection's. `uploads_csr`: `a` is compile(CsrMatrix)'s upload, whose cost
/// the candidates' one-time cost includes (PlanOptions::uploads_csr).
Plan plan_device_csr(const DeviceCsr& a, const Profile& profile, const Options& options,
                     const BuildTarget& target, bool uploads_csr = false);

/// plan_device_csr in two parts, so that the host plans while the GPU inspects:
/// propose_row_formats() weighs the formats whose models read only what the row pass (and the
/// value count and block pass) put in the Profile, and can run while BRO's column pass is on the
/// GPU; finish() weighs the BRO formats on the Profile that pass completed (delta_bits,
/// first_col_bits, slice_longest), refuses what the caller's arrays cannot run, ranks every
/// candidate and weighs cuSPARSE. plan_device_csr is the two in turn, and the plan is the same
/// (tests/unit/test_device_bro_host.cpp). `a` and `options` must outlive the object.
class DevicePlanning {
 public:
  DevicePlanning(const DeviceCsr& a, const Options& options, const BuildTarget& target,
                 bool uploads_csr = false);
  /// csr, csr_stream, ell, sell, hyb, bcsr and bellpack (those the options ask for), on
  /// `profile` as the row pass left it.
  void propose_row_formats(const Profile& profile);
  /// bro_ell, bro_coo and bro_hyb (those the options ask for) on the completed `profile`, then
  /// the pick. Runs propose_row_formats first if it has not run. Once only.
  Plan finish(const Profile& profile);

 private:
  void propose(const Profile& profile, bool column_formats);

  const DeviceCsr& a_;
  const Options& options_;
  /// The planner's options for every part: the device build path, cuSPARSE weighed last.
  PlanOptions po_;
  std::string cusparse_;  ///< Options::cusparse, for finish()'s weighing
  bool rows_done_ = false;
  /// Each device format's candidates, in the order plan_device_csr lists them.
  std::vector<std::vector<Candidate>> proposed_;
};

/// The unit for a device-array plan of csr or csr_stream (over the caller's arrays): csr's kernel
/// needs only the sizes, csr_stream's the number of row blocks the GPU cut (ell, sell and hyb:
/// generate_device_ell, spmvc/compiler/device_ell.hpp).
KernelSource generate_device_csr(const Plan& plan, const Profile& profile, const DeviceCsr& a,
                                 std::int64_t row_blocks);

/// Encodes `a` for the plan's format and parameters.
Encoded encode(const CsrMatrix& a, const Plan& plan);

/// The reference product over the encoded arrays (fp64 accumulation).
void reference_spmv(const Plan& plan, const Encoded& encoded, std::span<const double> x,
                    std::span<double> y, double alpha = 1.0, double beta = 0.0);

/// The relative error (relative_error) a kernel's y may have against the fp64 host reference:
/// fp64 rounds only in another summation order; fp32 stores and multiplies in fp32.
inline double result_tolerance(Precision p) { return p == Precision::f64 ? 1e-12 : 1e-5; }

/// ||y - ref|| / ||ref|| (||y - ref|| when ref is zero); infinity when y holds a NaN, so an
/// unwritten (NaN-poisoned) output never passes a tolerance check.
double relative_error(std::span<const double> y, std::span<const double> ref);

/// y's error against the fp64 reference `ref` = A x, as mixed precision is judged: the largest
/// componentwise error max_i |y_i - ref_i| / (|A||x|)_i (what Plan::rounding bounds; infinite
/// where a row with (|A||x|)_i = 0 differs or y holds a NaN) and the normwise relative_error.
struct MixedError {
  double componentwise = 0;
  double normwise = 0;
};
MixedError mixed_error(const CsrMatrix& a, std::span<const double> x, std::span<const double> y,
                       std::span<const double> ref);
/// The largest MixedError::componentwise a plan with Plan::rounding may show against the fp64
/// reference: its bound plus the reference's own rounding (result_tolerance without rounding).
double mixed_error_tolerance(const Plan& plan);

/// The planner's ordering decision for Options.reorder = "auto" (planner/ordering_choice.cpp).
struct OrderingChoice {
  std::optional<Ordering> ordering;  ///< empty: keep the matrix's order
  bool renumber_columns = false;
  /// The format the ordering is chosen for ("" any): the planner then plans that format and
  /// keeps the order against cuSPARSE (the hub rule, whose gain the cost model has no term for).
  std::string format;
  std::string why;
};
/// format_free: the caller left the format to the planner (format "auto", nothing forced,
/// cuSPARSE not asked for), so a rule that comes with its format may apply; multiplies: how many
/// the caller expects (Options::multiplies), where a rule's host cost would not be repaid by
/// fewer; hub_format: the format the hub rule orders for ("" leaves the rule out;
/// hub_order_format); plan_order: the caller keeps x and y in the plan's order
/// (Options::plan_order), so an ordering costs no traffic per multiply: the hub rule holds for a
/// larger x and fewer multiplies, and RCM is taken wherever a warp's rows touch at least 12
/// lines of x and RCM cuts that by 1.15x (no minimum row length, no scatter per nonzero). In
/// either order, fewer than 9,500 multiplies expected get no RCM: its host time was not repaid
/// sooner on the H200; nor does a hub graph whose gathers of x mostly miss L1, where RCM-ordered
/// kernels measured slower than cuSPARSE. split_rows: the target GPU takes csr_stream's split
/// rows (split_rows_measured); in the caller's order, where they pay on the matrix as it stands,
/// RCM must save more lines of x a row to be taken.
OrderingChoice choose_ordering(const CsrMatrix& a, Precision precision, bool format_free = false,
                               std::optional<std::int64_t> multiplies = std::nullopt,
                               std::string_view hub_format = "hyb", bool plan_order = false,
                               bool split_rows = false);
/// Whether csr_stream's split rows were measured to pay on GPU `gpu` (a device name or model) of
/// `arch`: its calibration carries their factor (GpuCalibration::stream_split above 0).
bool split_rows_measured(std::string_view arch, std::string_view gpu);
/// The format the hub rule orders for: csr_warp where the calibration of `gpu` (a device name or
/// model) of `arch` has a row for it, but in the plan's order (plan_order), where hyb is; a
/// caller who asks for bitwise-reproducible sums gets csr_warp in either order (hyb adds with
/// atomics), or "" (no hub rule) where it has no row. Without that row, hyb.
std::string_view hub_order_format(std::string_view arch, std::string_view gpu, Precision precision,
                                  bool deterministic, bool plan_order = false);
/// Whether x (ncols values) is small enough for choose_ordering's hub rule: 32 MiB, the largest
/// measured (Kronecker scale 22 in fp64 on the H200), where grouping the hubs was faster than
/// cuSPARSE.
bool hub_order_x_fits(std::int64_t ncols, Precision precision);
/// Whether grouping the hubs cuts the modelled share of x's gathers that miss L1
/// (x_gather_miss_share) from `before` to `after` by enough for choose_ordering's hub rule: 15%.
bool hub_order_cuts_enough(double before, double after);

/// Every registered format's name, in the registry's order.
std::vector<std::string> format_names();
/// The registered name `name` stands for; InputError listing the known names otherwise.
std::string canonical_format_name(std::string_view name);
/// Bytes of encoded matrix the plan's cost model counts per nonzero (arrays read once).
double matrix_bytes_per_nonzero(const Profile& profile, const Plan& plan);

/// One format's encoding of a matrix with the parameters the planner picks for it.
struct FormatSize {
  std::string format;
  bool applicable = false;
  std::string reason;            ///< why not, when not applicable (the planner's reasons)
  std::string params;            ///< describe() of the parameters
  std::int64_t bytes = 0;        ///< every encoded array
  std::int64_t index_bytes = 0;  ///< every array but the values
  double predicted_seconds = 0;
  std::string paper_measure;  ///< BRO's eta or CCI's saving, for the formats that define one
};
/// Every format's encoding of `a` side by side; `progress` (optional) is called with each
/// format's name before it is encoded.
std::vector<FormatSize> format_sizes(const CsrMatrix& a, const Profile& profile,
                                     Precision precision,
                                     const std::function<void(std::string_view)>& progress = {});

/// Plain CSR product on the host, accumulated in fp64: the oracle for every format.
void csr_reference_spmv(const CsrMatrix& a, std::span<const double> x, std::span<double> y,
                        double alpha = 1.0, double beta = 0.0);

}  // namespace spmvc::compiler
