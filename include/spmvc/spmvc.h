/* spmvc's C interface: the stable layer other languages bind to (the Python package binds it
 * with ctypes). Plain C99, opaque handles, every call returns a status.
 *
 *   spmvc_matrix* a = NULL;
 *   spmvc_operator* op = NULL;
 *   if (spmvc_matrix_read("A.mtx.xz", &a) != SPMVC_OK ||
 *       spmvc_compile(a, "{\"precision\": \"f64\"}", &op) != SPMVC_OK)
 *     fprintf(stderr, "%s\n", spmvc_last_error());
 *   spmvc_operator_apply(op, d_x, d_y, 1.0, 0.0, stream);   // device pointers
 *   spmvc_operator_destroy(op);
 *   spmvc_matrix_destroy(a);
 *
 * Errors: a call that fails returns a status other than SPMVC_OK and leaves the library's
 * message (the same text the C++ exception carries) for spmvc_last_error(), per thread, until
 * the next failing call on that thread. Output handles are written only on success.
 *
 * Options are a JSON object, NULL or "" for the defaults. Keys (each optional):
 *   "precision"        "f64" | "f32" | "f32acc64"                     (default "f64")
 *   "format"           "auto" or a format name ("csr", "bro_ell", ...) (default "auto")
 *   "params"           the format's parameters, "name=value,..." as `spmvc plan` labels them
 *                      (needs "format")
 *   "planner"          "model" | "measure"                             (default "model")
 *   "reorder"          "none", "auto" or an ordering ("rcm", "amd", "metis", "d", "dset",
 *                      "bar", "sort")                                  (default "none")
 *   "renumber_columns" bool; "value_coding" bool (default true); "full_inspection" bool
 *   "keep_row_order"   bool: with renumber_columns, the columns move alone and y is written in
 *                      place (Options::keep_row_order)
 *   "plan_order"       bool (default false): a reordered operator takes x and gives y in the
 *                      plan's order (Options::plan_order; spmvc_operator_to_plan_order)
 *   "deterministic"    bool: only plans whose y is bitwise the same run to run (default false)
 *   "mixed_precision"  "off" (default), "f32" (an f64 operator's values stored as fp32) or
 *                      "bf16" (an f32 operator's as bf16), each rounded (Options::mixed_precision)
 *   "mixed_fallback"   bool (default true): with "mixed_precision", keep a full-precision plan
 *                      predicted (or measured) faster; false insists on the rounded values
 *                      (Options::mixed_fallback)
 *   "build"            "host" | "auto" | "device": where spmvc_compile builds a host matrix
 *                      (Options::build; default "auto": on the GPU where the options
 *                      allow)
 *   "tiered"           bool (default: on unless SPMVC_TIERED=0): multiply with the built-in
 *                      generic kernel while the specialised one compiles (Options::tiered)
 *   "disk_cache"       bool (default true); "cache_dir" string; "device" integer
 *   "multiplies"       integer >= 1: the multiplies the caller expects; the planner then picks
 *                      the least one-time cost + multiplies x multiply time (default: unset,
 *                      ranked by multiply time alone)
 *   "cached_kernels"   bool: with "multiplies", charge no NVRTC compile (default false)
 *   "keep_csr"         bool (default false): keep a plain CSR copy on the device for
 *                      spmvc_operator_apply_transpose, and for apply_many on formats without an
 *                      SpMM kernel (compiled from device arrays, the operator always has one)
 * An unknown key or a value of the wrong type is SPMVC_ERROR_INPUT naming it.
 *
 * Text results (JSON documents, reports, source) are returned in a buffer the caller frees with
 * spmvc_string_free. The JSON documents are the profile's and the plan's, as `spmvc inspect
 * --json` and `spmvc plan --json` print them less the formats table and the traffic model.
 */
#ifndef SPMVC_SPMVC_H
#define SPMVC_SPMVC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this interface; a change that breaks callers increments the major number. */
#define SPMVC_C_API_VERSION_MAJOR 1
#define SPMVC_C_API_VERSION_MINOR 2

typedef enum spmvc_status {
  SPMVC_OK = 0,
  SPMVC_ERROR_INPUT = 1,     /**< bad input: matrix, arrays, options, file (InputError) */
  SPMVC_ERROR_NO_DEVICE = 2, /**< no CUDA device or driver (NoDeviceError) */
  SPMVC_ERROR_DEVICE = 3,    /**< a CUDA or driver call failed (DeviceError) */
  SPMVC_ERROR_COMPILE = 4,   /**< NVRTC rejected a generated kernel (CompileError) */
  SPMVC_ERROR_INTERNAL = 5,  /**< a bug in spmvc (InternalError, or any other exception) */
  SPMVC_ERROR_MEMORY = 6     /**< a host allocation failed */
} spmvc_status;

/** A sparse matrix in host memory (CSR, fp64 values), owned by the handle. */
typedef struct spmvc_matrix spmvc_matrix;
/** A compiled y = alpha*A*x + beta*y for one matrix on one device. */
typedef struct spmvc_operator spmvc_operator;

/** How a text result is written. */
typedef enum spmvc_text_kind {
  SPMVC_TEXT_JSON = 0,  /**< a JSON document */
  SPMVC_TEXT_REPORT = 1 /**< the readable report `spmvc inspect` / `spmvc plan` print */
} spmvc_text_kind;

/** The message of the last failed call on this thread ("" when none). Valid until the next
 * failing call on this thread. */
const char* spmvc_last_error(void);
/** The status name ("SPMVC_ERROR_INPUT", ...). */
const char* spmvc_status_name(spmvc_status status);
/** "MAJOR.MINOR.PATCH" of the library. */
const char* spmvc_version(void);
/** Frees a text result. NULL is ignored. */
void spmvc_string_free(char* text);
/** 1 when a CUDA device is usable, 0 otherwise; then *why (if not NULL) receives the reason,
 * freed with spmvc_string_free. */
int spmvc_device_available(char** why);

/** SPMVC_OK when `options_json` is a valid options object (see above), else the status and
 * message any call given it would fail with. */
spmvc_status spmvc_options_check(const char* options_json);

/* ---- host matrices ---- */

/** Copies 0-based CSR arrays: row_ptr has nrows+1 entries ending at nnz, col_idx and values nnz
 * each (values NULL: every value 1). Rows may be unsorted and hold duplicates (summed). */
spmvc_status spmvc_matrix_from_csr(int64_t nrows, int64_t ncols, int64_t nnz,
                                   const int64_t* row_ptr, const int32_t* col_idx,
                                   const double* values, spmvc_matrix** out);
/** Reads a Matrix Market file (.mtx, .mtx.gz, .mtx.xz). */
spmvc_status spmvc_matrix_read(const char* path, spmvc_matrix** out);
/** Generates a matrix from a spec such as "stencil27:n=64" or "rmat:scale=16,ef=8" (`spmvc gen
 * --help` lists them). */
spmvc_status spmvc_matrix_generate(const char* spec, spmvc_matrix** out);
void spmvc_matrix_destroy(spmvc_matrix* matrix);
spmvc_status spmvc_matrix_shape(const spmvc_matrix* matrix, int64_t* nrows, int64_t* ncols,
                                int64_t* nnz);
/** Copies the CSR arrays out: row_ptr nrows+1, col_idx and values nnz entries (any may be NULL). */
spmvc_status spmvc_matrix_arrays(const spmvc_matrix* matrix, int64_t* row_ptr, int32_t* col_idx,
                                 double* values);

/* ---- everything up to the generated source: no GPU needed ---- */

/** What the inspector sees (`spmvc inspect`). */
spmvc_status spmvc_inspect(const spmvc_matrix* matrix, spmvc_text_kind kind, char** text);
/** The plan compile() would choose with these options, every candidate with its reason. */
spmvc_status spmvc_plan(const spmvc_matrix* matrix, const char* options_json, spmvc_text_kind kind,
                        char** text);
/** The generated translation unit compile() would build; *kernel_name (if not NULL) receives
 * its entry point. Both freed with spmvc_string_free. */
spmvc_status spmvc_generate(const spmvc_matrix* matrix, const char* options_json, char** source,
                            char** kernel_name);
/** `spmvc emit`: writes the kernel, its templates, the encoded matrix and an nvcc harness into
 * `dir` (created if needed); *files_json (if not NULL) receives {"kernel": ..., "files": [...]}. */
spmvc_status spmvc_emit(const spmvc_matrix* matrix, const char* options_json, const char* dir,
                        char** files_json);

/* ---- operators: need a GPU ---- */

/** Gets ready what the process's first spmvc_compile on the options' device would otherwise get
 * inside its own time: the CUDA context, the pinned staging and host threads that upload a host
 * matrix, and the GPU build's kernels (spmvc::warm_up). Blocking (hundreds of milliseconds where
 * it creates the context): call it on a thread of your own while the matrix is read. Never
 * required. */
spmvc_status spmvc_warm_up(const char* options_json);

/** Inspects, plans, generates, JIT-compiles and uploads a host matrix. */
spmvc_status spmvc_compile(const spmvc_matrix* matrix, const char* options_json,
                           spmvc_operator** out);
/** Builds from CSR arrays already in device memory, on the GPU and without copying them:
 * int32 row_ptr (nrows+1) and col_idx (nnz); values (nnz) double for "f64", float otherwise.
 * The operator may read these arrays in every multiply: they must outlive it unchanged. Plans
 * are csr, csr_stream, ell, sell, hyb, bro_ell, bro_coo, bro_hyb, bcsr, bellpack and dia, no
 * reordering, model planner (other options are SPMVC_ERROR_INPUT). */
spmvc_status spmvc_compile_device_csr(int64_t nrows, int64_t ncols, int64_t nnz,
                                      const int32_t* row_ptr, const int32_t* col_idx,
                                      const void* values, const char* options_json,
                                      spmvc_operator** out);
void spmvc_operator_destroy(spmvc_operator* op);
spmvc_status spmvc_operator_shape(const spmvc_operator* op, int64_t* nrows, int64_t* ncols);
/** y = alpha*A*x + beta*y on device memory, asynchronous on `stream` (a cudaStream_t; NULL the
 * default stream). x has ncols and y nrows elements of the plan's value type: double for f64,
 * float for f32 and f32acc64 (the plan's "precision"). With beta 0, y is not read. */
spmvc_status spmvc_operator_apply(const spmvc_operator* op, const void* x, void* y, double alpha,
                                  double beta, void* stream);
/** The same on host fp64 arrays: copies in, multiplies, copies out, synchronises. */
spmvc_status spmvc_operator_apply_host(const spmvc_operator* op, const double* x, double* y,
                                       double alpha, double beta);
/** New values for the same pattern: `nnz` fp64 values on the host, in the CSR order of the
 * matrix the operator was compiled from (Operator::update_values). Rewritten on the GPU with no
 * recompile where they fit the plan's value coding; otherwise the operator is planned and built
 * again. *replanned (may be NULL) is set to 1 then, else 0; *why (may be NULL; free with
 * spmvc_string_free) to what did not fit, "" when nothing. Synchronous. A wrong nnz is
 * SPMVC_ERROR_INPUT. */
spmvc_status spmvc_operator_update_values(spmvc_operator* op, const double* values, int64_t nnz,
                                          int* replanned, char** why);
/** The same from device memory: the matrix's nnz values of the plan's value type (double for
 * f64, float otherwise). An operator built from device arrays then reads them in place. */
spmvc_status spmvc_operator_update_values_device(spmvc_operator* op, const void* values,
                                                 int* replanned, char** why);
/** How a block of k vectors is stored: row-major puts element (i, j) at i*k + j, column-major
 * at j*n + i (n = ncols for X, nrows for Y). */
typedef enum spmvc_layout { SPMVC_LAYOUT_ROW_MAJOR = 0, SPMVC_LAYOUT_COL_MAJOR = 1 } spmvc_layout;
/** Y = alpha*A*X + beta*Y for k vectors (1..64) at once on device memory: X is ncols x k and Y
 * nrows x k in `layout`, of the plan's value type. The first call for a (k, layout) compiles its
 * kernel (Operator::apply_many in spmvc.hpp says which formats run it on their own encoding). */
spmvc_status spmvc_operator_apply_many(const spmvc_operator* op, const void* x, void* y, int k,
                                       spmvc_layout layout, double alpha, double beta,
                                       void* stream);
/** The same on host fp64 arrays of ncols*k and nrows*k elements. */
spmvc_status spmvc_operator_apply_many_host(const spmvc_operator* op, const double* x, double* y,
                                            int k, spmvc_layout layout, double alpha, double beta);
/** y = alpha*A^T*x + beta*y on device memory: x has nrows and y ncols elements. The first call
 * builds A^T on the GPU and compiles it; it needs the plain CSR ("keep_csr", or an operator
 * compiled from device arrays), else SPMVC_ERROR_INPUT says so. */
spmvc_status spmvc_operator_apply_transpose(const spmvc_operator* op, const void* x, void* y,
                                            double alpha, double beta, void* stream);
/** The same on host fp64 arrays. */
spmvc_status spmvc_operator_apply_transpose_host(const spmvc_operator* op, const double* x,
                                                 double* y, double alpha, double beta);

/** Which side of the matrix a vector belongs to: x has ncols elements, y nrows. */
typedef enum spmvc_axis { SPMVC_AXIS_ROWS = 0, SPMVC_AXIS_COLUMNS = 1 } spmvc_axis;
/** *plan_order = 1 when apply() takes x and gives y in the plan's order: compiled with
 * "plan_order": true and the matrix reordered ("reorder"). The multiply then skips the gather of
 * x into that order and the row map's writes of y; the caller permutes its vectors once, with
 * spmvc_operator_to_plan_order / from_plan_order or the maps of spmvc_operator_plan_map. */
spmvc_status spmvc_operator_plan_order(const spmvc_operator* op, int* plan_order);
/** The order apply() uses on `axis`: the plan's element i is the caller's (*map)[i], for
 * *length elements; *map NULL and *length 0 where it is the caller's order. The array belongs
 * to the operator and lives as long as it does. */
spmvc_status spmvc_operator_plan_map(const spmvc_operator* op, spmvc_axis axis, const int32_t** map,
                                     int64_t* length);
/** Permutes a device vector on `axis` from the caller's order into apply()'s (v_plan[i] =
 * v[map[i]]), asynchronous on `stream`; a copy where the orders agree. v and v_plan must not
 * overlap; elements of the plan's value type. */
spmvc_status spmvc_operator_to_plan_order(const spmvc_operator* op, const void* v, void* v_plan,
                                          spmvc_axis axis, void* stream);
/** The inverse: v[map[i]] = v_plan[i]. */
spmvc_status spmvc_operator_from_plan_order(const spmvc_operator* op, const void* v_plan, void* v,
                                            spmvc_axis axis, void* stream);

/** The operator's plan (as spmvc_plan). */
spmvc_status spmvc_operator_plan(const spmvc_operator* op, spmvc_text_kind kind, char** text);
/** The translation unit that was compiled; *kernel_name as in spmvc_generate. */
spmvc_status spmvc_operator_source(const spmvc_operator* op, char** source, char** kernel_name);
/** One-time costs in seconds by step, where the kernel came from ("nvrtc", "memory", "disk"),
 * registers, spilled bytes, device bytes of the encoded matrix ("device_bytes") and what a
 * multiply reads of them ("read_bytes"), and NVRTC's log, as JSON. */
spmvc_status spmvc_operator_timings(const spmvc_operator* op, char** json);

#ifdef __cplusplus
}
#endif

#endif /* SPMVC_SPMVC_H */
