// The C interface (include/spmvc/spmvc.h) over the C++ library: handles own C++ objects, every
// exception becomes a status and a per-thread message, text results are malloc'd copies.
#include "spmvc/spmvc.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "spmvc/build.hpp"
#include "spmvc/compiler/build_choice.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/emit.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"

struct spmvc_matrix {
  spmvc::CsrMatrix csr;
};

struct spmvc_operator {
  spmvc::Operator op;
};

namespace {

thread_local std::string last_error;

spmvc_status fail(spmvc_status status, const std::string& message) {
  last_error = message;
  return status;
}

// Runs `body`, mapping each exception of spmvc/error.hpp to its status. Derived classes first.
template <class Body>
spmvc_status guarded(Body&& body) {
  try {
    body();
    return SPMVC_OK;
  } catch (const spmvc::InputError& e) {
    return fail(SPMVC_ERROR_INPUT, e.what());
  } catch (const spmvc::NoDeviceError& e) {
    return fail(SPMVC_ERROR_NO_DEVICE, e.what());
  } catch (const spmvc::DeviceError& e) {
    return fail(SPMVC_ERROR_DEVICE, e.what());
  } catch (const spmvc::CompileError& e) {
    return fail(SPMVC_ERROR_COMPILE, e.what());
  } catch (const std::bad_alloc&) {
    return fail(SPMVC_ERROR_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(SPMVC_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(SPMVC_ERROR_INTERNAL, "unknown exception");
  }
}

// A required pointer argument that is NULL is the caller's error, named by its parameter.
void require(const void* pointer, const char* function, const char* parameter) {
  if (pointer == nullptr) throw spmvc::InputError(function, 0, std::string(parameter) + " is NULL");
}

char* copy_text(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// Text outputs are written only once every one of them is made, so a failure leaks nothing.
void set_text(char** out, const std::string& text) {
  if (out != nullptr) *out = copy_text(text);
}

const char* kOptionsSource = "options";

spmvc::Options parse_options(const char* text) {
  spmvc::Options o;
  if (text == nullptr || *text == '\0') return o;
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    throw spmvc::InputError(kOptionsSource, 0, std::string("not valid JSON: ") + text);
  if (!doc.is_object())
    throw spmvc::InputError(kOptionsSource, 0, "must be a JSON object, got " + doc.dump());
  auto str = [&](const std::string& key, const nlohmann::json& v) {
    if (!v.is_string())
      throw spmvc::InputError(kOptionsSource, 0,
                              "\"" + key + "\" must be a string, got " + v.dump());
    return v.get<std::string>();
  };
  auto boolean = [&](const std::string& key, const nlohmann::json& v) {
    if (!v.is_boolean())
      throw spmvc::InputError(kOptionsSource, 0,
                              "\"" + key + "\" must be true or false, got " + v.dump());
    return v.get<bool>();
  };
  std::string params;
  for (const auto& [key, value] : doc.items()) {
    if (key == "precision") {
      o.precision = spmvc::parse_precision(str(key, value));
    } else if (key == "format") {
      o.format = str(key, value);
    } else if (key == "params") {
      params = str(key, value);
    } else if (key == "planner") {
      const std::string mode = str(key, value);
      if (mode == "model") {
        o.planner = spmvc::PlannerMode::model;
      } else if (mode == "measure") {
        o.planner = spmvc::PlannerMode::measure;
      } else {
        throw spmvc::InputError(
            kOptionsSource, 0,
            "\"planner\" must be \"model\" or \"measure\", got \"" + mode + "\"");
      }
    } else if (key == "reorder") {
      o.reorder = str(key, value);
    } else if (key == "renumber_columns") {
      o.renumber_columns = boolean(key, value);
    } else if (key == "keep_row_order") {
      o.keep_row_order = boolean(key, value);
    } else if (key == "plan_order") {
      o.plan_order = boolean(key, value);
    } else if (key == "value_coding") {
      o.value_coding = boolean(key, value);
    } else if (key == "deterministic") {
      o.deterministic = boolean(key, value);
    } else if (key == "mixed_precision") {
      o.mixed_precision = spmvc::parse_mixed_precision(str(key, value));
    } else if (key == "mixed_fallback") {
      o.mixed_fallback = boolean(key, value);
    } else if (key == "build") {
      o.build = spmvc::compiler::parse_build_mode(str(key, value));
    } else if (key == "tiered") {
      o.tiered = boolean(key, value);
    } else if (key == "keep_csr") {
      o.keep_csr = boolean(key, value);
    } else if (key == "full_inspection") {
      o.full_inspection = boolean(key, value);
    } else if (key == "disk_cache") {
      o.disk_cache = boolean(key, value);
    } else if (key == "cache_dir") {
      o.cache_dir = str(key, value);
    } else if (key == "device") {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 0)
        throw spmvc::InputError(kOptionsSource, 0,
                                "\"device\" must be a non-negative integer, got " + value.dump());
      o.device = value.get<int>();
    } else if (key == "multiplies") {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 1)
        throw spmvc::InputError(kOptionsSource, 0,
                                "\"multiplies\" must be a positive integer, got " + value.dump());
      o.multiplies = value.get<std::int64_t>();
    } else if (key == "cached_kernels") {
      o.cached_kernels = boolean(key, value);
    } else {
      throw spmvc::InputError(
          kOptionsSource, 0,
          "unknown key \"" + key +
              "\" (known: precision, format, params, planner, reorder, renumber_columns, "
              "keep_row_order, plan_order, "
              "value_coding, deterministic, mixed_precision, mixed_fallback, build, tiered, "
              "full_inspection, "
              "disk_cache, "
              "cache_dir, "
              "device, multiplies, cached_kernels, keep_csr)");
    }
  }
  if (!params.empty()) {
    if (o.format == "auto")
      throw spmvc::InputError(kOptionsSource, 0,
                              "\"params\" needs \"format\" to name the format it is for");
    spmvc::FormatParams p = spmvc::default_params(o.format);
    spmvc::set_params(p, params);
    o.params = p;
  }
  return o;
}

std::string plan_text(const spmvc::Plan& plan, spmvc_text_kind kind) {
  return kind == SPMVC_TEXT_REPORT ? spmvc::to_report(plan) : spmvc::to_json(plan);
}

void check_kind(spmvc_text_kind kind, const char* function) {
  if (kind != SPMVC_TEXT_JSON && kind != SPMVC_TEXT_REPORT)
    throw spmvc::InputError(function, 0,
                            "kind must be SPMVC_TEXT_JSON (0) or SPMVC_TEXT_REPORT (1), got " +
                                std::to_string(static_cast<int>(kind)));
}

spmvc::DenseLayout layout_of(spmvc_layout layout, const char* fn) {
  if (layout == SPMVC_LAYOUT_ROW_MAJOR) return spmvc::DenseLayout::row_major;
  if (layout == SPMVC_LAYOUT_COL_MAJOR) return spmvc::DenseLayout::col_major;
  throw spmvc::InputError(fn, 0,
                          "layout " + std::to_string(static_cast<int>(layout)) +
                              " is neither SPMVC_LAYOUT_ROW_MAJOR nor SPMVC_LAYOUT_COL_MAJOR");
}

// Elements of X and Y for k vectors (k checked here, so the sizes cannot overflow).
std::pair<std::size_t, std::size_t> block_sizes(const spmvc::Operator& op, int k, const char* fn) {
  if (k < 1 || k > spmvc::kMaxDenseColumns)
    throw spmvc::InputError(fn, 0, "k = " + std::to_string(k) + " vectors: apply_many takes 1..64");
  const auto ku = static_cast<std::size_t>(k);
  return {static_cast<std::size_t>(op.ncols()) * ku, static_cast<std::size_t>(op.nrows()) * ku};
}

}  // namespace

extern "C" {

const char* spmvc_last_error(void) { return last_error.c_str(); }

const char* spmvc_status_name(spmvc_status status) {
  switch (status) {
    case SPMVC_OK:
      return "SPMVC_OK";
    case SPMVC_ERROR_INPUT:
      return "SPMVC_ERROR_INPUT";
    case SPMVC_ERROR_NO_DEVICE:
      return "SPMVC_ERROR_NO_DEVICE";
    case SPMVC_ERROR_DEVICE:
      return "SPMVC_ERROR_DEVICE";
    case SPMVC_ERROR_COMPILE:
      return "SPMVC_ERROR_COMPILE";
    case SPMVC_ERROR_INTERNAL:
      return "SPMVC_ERROR_INTERNAL";
    case SPMVC_ERROR_MEMORY:
      return "SPMVC_ERROR_MEMORY";
  }
  return "SPMVC_ERROR_UNKNOWN";
}

const char* spmvc_version(void) { return SPMVC_VERSION; }

void spmvc_string_free(char* text) { std::free(text); }

int spmvc_device_available(char** why) {
  std::string reason;
  const bool available = spmvc::device_available(&reason);
  if (!available && why != nullptr) {
    try {
      *why = copy_text(reason);
    } catch (...) {
      *why = nullptr;
    }
  }
  return available ? 1 : 0;
}

spmvc_status spmvc_options_check(const char* options_json) {
  return guarded([&] { (void)parse_options(options_json); });
}

spmvc_status spmvc_matrix_from_csr(int64_t nrows, int64_t ncols, int64_t nnz,
                                   const int64_t* row_ptr, const int32_t* col_idx,
                                   const double* values, spmvc_matrix** out) {
  return guarded([&] {
    const char* fn = "spmvc_matrix_from_csr";
    require(out, fn, "out");
    require(row_ptr, fn, "row_ptr");
    if (nnz > 0) require(col_idx, fn, "col_idx");
    if (nrows < 0 || ncols < 0 || nnz < 0)
      throw spmvc::InputError(fn, 0,
                              "sizes must be non-negative, got nrows " + std::to_string(nrows) +
                                  ", ncols " + std::to_string(ncols) + ", nnz " +
                                  std::to_string(nnz));
    const auto n = static_cast<std::size_t>(nnz);
    std::vector<double> ones;
    if (values == nullptr) ones.assign(n, 1.0);
    auto m = std::make_unique<spmvc_matrix>();
    m->csr = spmvc::csr_from_arrays(
        nrows, ncols, std::span<const std::int64_t>(row_ptr, static_cast<std::size_t>(nrows) + 1),
        std::span<const std::int32_t>(col_idx, n),
        std::span<const double>(values != nullptr ? values : ones.data(), n));
    *out = m.release();
  });
}

spmvc_status spmvc_matrix_read(const char* path, spmvc_matrix** out) {
  return guarded([&] {
    require(out, "spmvc_matrix_read", "out");
    require(path, "spmvc_matrix_read", "path");
    auto m = std::make_unique<spmvc_matrix>();
    m->csr = spmvc::read_matrix_market(path);
    *out = m.release();
  });
}

spmvc_status spmvc_matrix_generate(const char* spec, spmvc_matrix** out) {
  return guarded([&] {
    require(out, "spmvc_matrix_generate", "out");
    require(spec, "spmvc_matrix_generate", "spec");
    auto m = std::make_unique<spmvc_matrix>();
    m->csr = spmvc::gen::from_spec(spec);
    *out = m.release();
  });
}

void spmvc_matrix_destroy(spmvc_matrix* matrix) { delete matrix; }

spmvc_status spmvc_matrix_shape(const spmvc_matrix* matrix, int64_t* nrows, int64_t* ncols,
                                int64_t* nnz) {
  return guarded([&] {
    require(matrix, "spmvc_matrix_shape", "matrix");
    if (nrows != nullptr) *nrows = matrix->csr.nrows;
    if (ncols != nullptr) *ncols = matrix->csr.ncols;
    if (nnz != nullptr) *nnz = matrix->csr.nnz();
  });
}

spmvc_status spmvc_matrix_arrays(const spmvc_matrix* matrix, int64_t* row_ptr, int32_t* col_idx,
                                 double* values) {
  return guarded([&] {
    require(matrix, "spmvc_matrix_arrays", "matrix");
    const spmvc::CsrMatrix& a = matrix->csr;
    if (row_ptr != nullptr) std::copy(a.row_ptr.begin(), a.row_ptr.end(), row_ptr);
    if (col_idx != nullptr) std::copy(a.col_idx.begin(), a.col_idx.end(), col_idx);
    if (values != nullptr) std::copy(a.values.begin(), a.values.end(), values);
  });
}

spmvc_status spmvc_inspect(const spmvc_matrix* matrix, spmvc_text_kind kind, char** text) {
  return guarded([&] {
    require(matrix, "spmvc_inspect", "matrix");
    require(text, "spmvc_inspect", "text");
    check_kind(kind, "spmvc_inspect");
    const spmvc::Profile profile = spmvc::inspect(matrix->csr);
    set_text(text, kind == SPMVC_TEXT_REPORT ? spmvc::to_report(profile) : spmvc::to_json(profile));
  });
}

spmvc_status spmvc_plan(const spmvc_matrix* matrix, const char* options_json, spmvc_text_kind kind,
                        char** text) {
  return guarded([&] {
    require(matrix, "spmvc_plan", "matrix");
    require(text, "spmvc_plan", "text");
    check_kind(kind, "spmvc_plan");
    spmvc::BuildTarget target;
    target.until = spmvc::BuildStage::plan;
    const spmvc::Build b = spmvc::build(matrix->csr, parse_options(options_json), target);
    set_text(text, plan_text(b.plan, kind));
  });
}

spmvc_status spmvc_generate(const spmvc_matrix* matrix, const char* options_json, char** source,
                            char** kernel_name) {
  return guarded([&] {
    require(matrix, "spmvc_generate", "matrix");
    require(source, "spmvc_generate", "source");
    const spmvc::Build b = spmvc::build(matrix->csr, parse_options(options_json));
    char* s = copy_text(b.source.source);
    if (kernel_name != nullptr) {
      try {
        *kernel_name = copy_text(b.source.kernel_name);
      } catch (...) {
        std::free(s);
        throw;
      }
    }
    *source = s;
  });
}

spmvc_status spmvc_emit(const spmvc_matrix* matrix, const char* options_json, const char* dir,
                        char** files_json) {
  return guarded([&] {
    require(matrix, "spmvc_emit", "matrix");
    require(dir, "spmvc_emit", "dir");
    const spmvc::CsrMatrix& a = matrix->csr;
    const spmvc::Build b = spmvc::build(a, parse_options(options_json));
    // The harness checks the kernel against the host reference on the test vector, in the
    // caller's order (a reordered unit writes y there through its row map).
    const std::vector<double> x = spmvc::codegen::test_vector(a.ncols, b.plan.precision);
    std::vector<double> y(static_cast<std::size_t>(a.nrows));
    spmvc::compiler::csr_reference_spmv(a, x, y);
    const auto written = spmvc::codegen::emit(b.plan, b.encoded, b.source, y, dir);
    nlohmann::ordered_json doc;
    doc["kernel"] = b.source.kernel_name;
    doc["files"] = nlohmann::ordered_json::array();
    for (const auto& p : written) doc["files"].push_back(p.string());
    set_text(files_json, doc.dump(2));
  });
}

spmvc_status spmvc_warm_up(const char* options_json) {
  return guarded([&] { spmvc::warm_up(parse_options(options_json)); });
}

spmvc_status spmvc_compile(const spmvc_matrix* matrix, const char* options_json,
                           spmvc_operator** out) {
  return guarded([&] {
    require(matrix, "spmvc_compile", "matrix");
    require(out, "spmvc_compile", "out");
    auto op = std::make_unique<spmvc_operator>(
        spmvc_operator{spmvc::compile(matrix->csr, parse_options(options_json))});
    *out = op.release();
  });
}

spmvc_status spmvc_compile_device_csr(int64_t nrows, int64_t ncols, int64_t nnz,
                                      const int32_t* row_ptr, const int32_t* col_idx,
                                      const void* values, const char* options_json,
                                      spmvc_operator** out) {
  return guarded([&] {
    const char* fn = "spmvc_compile_device_csr";
    require(out, fn, "out");
    require(row_ptr, fn, "row_ptr");
    if (nnz > 0) {
      require(col_idx, fn, "col_idx");
      require(values, fn, "values");
    }
    const spmvc::DeviceCsr d{nrows, ncols, nnz, row_ptr, col_idx, values};
    auto op = std::make_unique<spmvc_operator>(
        spmvc_operator{spmvc::compile(d, parse_options(options_json))});
    *out = op.release();
  });
}

void spmvc_operator_destroy(spmvc_operator* op) { delete op; }

spmvc_status spmvc_operator_shape(const spmvc_operator* op, int64_t* nrows, int64_t* ncols) {
  return guarded([&] {
    require(op, "spmvc_operator_shape", "op");
    if (nrows != nullptr) *nrows = op->op.nrows();
    if (ncols != nullptr) *ncols = op->op.ncols();
  });
}

spmvc_status spmvc_operator_apply(const spmvc_operator* op, const void* x, void* y, double alpha,
                                  double beta, void* stream) {
  return guarded([&] {
    require(op, "spmvc_operator_apply", "op");
    if (op->op.ncols() > 0) require(x, "spmvc_operator_apply", "x");
    if (op->op.nrows() > 0) require(y, "spmvc_operator_apply", "y");
    op->op.apply(x, y, alpha, beta, stream);
  });
}

spmvc_status spmvc_operator_apply_host(const spmvc_operator* op, const double* x, double* y,
                                       double alpha, double beta) {
  return guarded([&] {
    require(op, "spmvc_operator_apply_host", "op");
    if (op->op.ncols() > 0) require(x, "spmvc_operator_apply_host", "x");
    if (op->op.nrows() > 0) require(y, "spmvc_operator_apply_host", "y");
    op->op.apply_host(std::span<const double>(x, static_cast<std::size_t>(op->op.ncols())),
                      std::span<double>(y, static_cast<std::size_t>(op->op.nrows())), alpha, beta);
  });
}

namespace {

void report_update(const spmvc::ValueUpdate& u, int* replanned, char** why) {
  if (replanned != nullptr) *replanned = u.replanned ? 1 : 0;
  if (why != nullptr) set_text(why, u.why);
}

}  // namespace

spmvc_status spmvc_operator_update_values(spmvc_operator* op, const double* values, int64_t nnz,
                                          int* replanned, char** why) {
  return guarded([&] {
    require(op, "spmvc_operator_update_values", "op");
    if (nnz > 0) require(values, "spmvc_operator_update_values", "values");
    if (nnz < 0)
      throw spmvc::InputError("spmvc_operator_update_values", 0,
                              "nnz is negative: " + std::to_string(nnz));
    report_update(
        op->op.update_values(std::span<const double>(values, static_cast<std::size_t>(nnz))),
        replanned, why);
  });
}

spmvc_status spmvc_operator_update_values_device(spmvc_operator* op, const void* values,
                                                 int* replanned, char** why) {
  return guarded([&] {
    require(op, "spmvc_operator_update_values_device", "op");
    report_update(op->op.update_values(values), replanned, why);
  });
}

spmvc_status spmvc_operator_apply_many(const spmvc_operator* op, const void* x, void* y, int k,
                                       spmvc_layout layout, double alpha, double beta,
                                       void* stream) {
  return guarded([&] {
    const char* fn = "spmvc_operator_apply_many";
    require(op, fn, "op");
    const auto [nx, ny] = block_sizes(op->op, k, fn);
    if (nx > 0) require(x, fn, "x");
    if (ny > 0) require(y, fn, "y");
    op->op.apply_many(x, y, k, layout_of(layout, fn), alpha, beta, stream);
  });
}

spmvc_status spmvc_operator_apply_many_host(const spmvc_operator* op, const double* x, double* y,
                                            int k, spmvc_layout layout, double alpha, double beta) {
  return guarded([&] {
    const char* fn = "spmvc_operator_apply_many_host";
    require(op, fn, "op");
    const auto [nx, ny] = block_sizes(op->op, k, fn);
    if (nx > 0) require(x, fn, "x");
    if (ny > 0) require(y, fn, "y");
    op->op.apply_many_host(std::span<const double>(x, nx), std::span<double>(y, ny), k,
                           layout_of(layout, fn), alpha, beta);
  });
}

spmvc_status spmvc_operator_apply_transpose(const spmvc_operator* op, const void* x, void* y,
                                            double alpha, double beta, void* stream) {
  return guarded([&] {
    const char* fn = "spmvc_operator_apply_transpose";
    require(op, fn, "op");
    if (op->op.nrows() > 0) require(x, fn, "x");
    if (op->op.ncols() > 0) require(y, fn, "y");
    op->op.apply_transpose(x, y, alpha, beta, stream);
  });
}

spmvc_status spmvc_operator_apply_transpose_host(const spmvc_operator* op, const double* x,
                                                 double* y, double alpha, double beta) {
  return guarded([&] {
    const char* fn = "spmvc_operator_apply_transpose_host";
    require(op, fn, "op");
    if (op->op.nrows() > 0) require(x, fn, "x");
    if (op->op.ncols() > 0) require(y, fn, "y");
    op->op.apply_transpose_host(
        std::span<const double>(x, static_cast<std::size_t>(op->op.nrows())),
        std::span<double>(y, static_cast<std::size_t>(op->op.ncols())), alpha, beta);
  });
}

namespace {

spmvc::PlanAxis axis_of(spmvc_axis axis, const char* fn) {
  if (axis == SPMVC_AXIS_ROWS) return spmvc::PlanAxis::rows;
  if (axis == SPMVC_AXIS_COLUMNS) return spmvc::PlanAxis::columns;
  throw spmvc::InputError(fn, 0,
                          "axis " + std::to_string(static_cast<int>(axis)) +
                              " is neither SPMVC_AXIS_ROWS nor SPMVC_AXIS_COLUMNS");
}

}  // namespace

spmvc_status spmvc_operator_plan_order(const spmvc_operator* op, int* plan_order) {
  return guarded([&] {
    require(op, "spmvc_operator_plan_order", "op");
    require(plan_order, "spmvc_operator_plan_order", "plan_order");
    *plan_order = op->op.plan_order() ? 1 : 0;
  });
}

spmvc_status spmvc_operator_plan_map(const spmvc_operator* op, spmvc_axis axis, const int32_t** map,
                                     int64_t* length) {
  return guarded([&] {
    const char* fn = "spmvc_operator_plan_map";
    require(op, fn, "op");
    require(map, fn, "map");
    require(length, fn, "length");
    const std::span<const std::int32_t> m =
        axis_of(axis, fn) == spmvc::PlanAxis::rows ? op->op.plan_rows() : op->op.plan_columns();
    *map = m.empty() ? nullptr : m.data();
    *length = static_cast<int64_t>(m.size());
  });
}

spmvc_status spmvc_operator_to_plan_order(const spmvc_operator* op, const void* v, void* v_plan,
                                          spmvc_axis axis, void* stream) {
  return guarded([&] {
    const char* fn = "spmvc_operator_to_plan_order";
    require(op, fn, "op");
    op->op.to_plan_order(v, v_plan, axis_of(axis, fn), stream);
  });
}

spmvc_status spmvc_operator_from_plan_order(const spmvc_operator* op, const void* v_plan, void* v,
                                            spmvc_axis axis, void* stream) {
  return guarded([&] {
    const char* fn = "spmvc_operator_from_plan_order";
    require(op, fn, "op");
    op->op.from_plan_order(v_plan, v, axis_of(axis, fn), stream);
  });
}

spmvc_status spmvc_operator_plan(const spmvc_operator* op, spmvc_text_kind kind, char** text) {
  return guarded([&] {
    require(op, "spmvc_operator_plan", "op");
    require(text, "spmvc_operator_plan", "text");
    check_kind(kind, "spmvc_operator_plan");
    set_text(text, plan_text(op->op.plan(), kind));
  });
}

spmvc_status spmvc_operator_source(const spmvc_operator* op, char** source, char** kernel_name) {
  return guarded([&] {
    require(op, "spmvc_operator_source", "op");
    require(source, "spmvc_operator_source", "source");
    const spmvc::KernelSource& k = op->op.source();
    char* s = copy_text(k.source);
    if (kernel_name != nullptr) {
      try {
        *kernel_name = copy_text(k.kernel_name);
      } catch (...) {
        std::free(s);
        throw;
      }
    }
    *source = s;
  });
}

spmvc_status spmvc_operator_timings(const spmvc_operator* op, char** json) {
  return guarded([&] {
    require(op, "spmvc_operator_timings", "op");
    require(json, "spmvc_operator_timings", "json");
    const spmvc::CompileTimings& t = op->op.timings();
    nlohmann::ordered_json doc;
    doc["seconds"] = {{"reorder", t.reorder}, {"inspect", t.inspect}, {"plan", t.plan},
                      {"encode", t.encode},   {"codegen", t.codegen}, {"compile", t.compile},
                      {"upload", t.upload},   {"measure", t.measure}};
    doc["kernel_name"] = op->op.source().kernel_name;
    doc["kernel_origin"] = t.kernel_origin;
    doc["cache_note"] = t.cache_note;
    doc["registers"] = t.registers;
    doc["spill_bytes"] = t.spill_bytes;
    doc["early_launches"] = t.early_launches;
    doc["device_bytes"] = op->op.device_bytes();
    doc["read_bytes"] = op->op.read_bytes();
    doc["compile_log"] = t.compile_log;
    doc["tiers"] = {{"tier", t.tier},
                    {"generic_applies", t.generic_applies},
                    {"generic_setup", t.generic_setup},
                    {"specialised_ready", t.specialised_ready},
                    {"switched", t.switched},
                    {"tier_error", t.tier_error}};
    set_text(json, doc.dump(2));
  });
}

}  // extern "C"
