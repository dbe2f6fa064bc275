/* The C interface from C (this file is compiled as C11 against spmvc.h and linked to the shared
 * libspmvc): host matrices, inspect, plan, generate and emit without a GPU, and every class of
 * bad input answered with its status and the library's message. With a GPU, compile and apply on
 * host arrays against the product by hand; without one, compile says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "spmvc/spmvc.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* The call fails with `status` and the message holds `fragment`. */
static void expect_error(spmvc_status got, spmvc_status status, const char* fragment,
                         const char* what) {
  if (got != status) {
    fprintf(stderr, "%s: status %s, expected %s (message: %s)\n", what, spmvc_status_name(got),
            spmvc_status_name(status), spmvc_last_error());
    ++failures;
  } else if (strstr(spmvc_last_error(), fragment) == NULL) {
    fprintf(stderr, "%s: message '%s' lacks '%s'\n", what, spmvc_last_error(), fragment);
    ++failures;
  }
}

/* 3x3: [[4 -1 0] [-1 4 -1] [0 -1 4]] */
static spmvc_matrix* tridiagonal(void) {
  const int64_t row_ptr[] = {0, 2, 5, 7};
  const int32_t col_idx[] = {0, 1, 0, 1, 2, 1, 2};
  const double values[] = {4, -1, -1, 4, -1, -1, 4};
  spmvc_matrix* a = NULL;
  CHECK(spmvc_matrix_from_csr(3, 3, 7, row_ptr, col_idx, values, &a) == SPMVC_OK);
  return a;
}

static void test_host_matrix(void) {
  spmvc_matrix* a = tridiagonal();
  int64_t nrows = 0, ncols = 0, nnz = 0;
  CHECK(spmvc_matrix_shape(a, &nrows, &ncols, &nnz) == SPMVC_OK);
  CHECK(nrows == 3 && ncols == 3 && nnz == 7);
  int64_t row_ptr[4];
  int32_t col_idx[7];
  double values[7];
  CHECK(spmvc_matrix_arrays(a, row_ptr, col_idx, values) == SPMVC_OK);
  CHECK(row_ptr[3] == 7 && col_idx[4] == 2 && values[3] == 4.0);
  spmvc_matrix_destroy(a);

  /* Unsorted rows with a duplicate: sorted, summed. NULL values: every value 1. */
  const int64_t rp[] = {0, 3};
  const int32_t ci[] = {2, 0, 2};
  spmvc_matrix* b = NULL;
  CHECK(spmvc_matrix_from_csr(1, 3, 3, rp, ci, NULL, &b) == SPMVC_OK);
  CHECK(spmvc_matrix_shape(b, NULL, NULL, &nnz) == SPMVC_OK && nnz == 2);
  CHECK(spmvc_matrix_arrays(b, NULL, col_idx, values) == SPMVC_OK);
  CHECK(col_idx[0] == 0 && col_idx[1] == 2 && values[0] == 1.0 && values[1] == 2.0);
  spmvc_matrix_destroy(b);

  spmvc_matrix* g = NULL;
  CHECK(spmvc_matrix_generate("stencil2d:n=16", &g) == SPMVC_OK);
  CHECK(spmvc_matrix_shape(g, &nrows, NULL, &nnz) == SPMVC_OK);
  CHECK(nrows == 256 && nnz == 5 * 256 - 4 * 16);
  spmvc_matrix_destroy(g);
}

static void test_pipeline_without_gpu(const char* scratch) {
  spmvc_matrix* a = NULL;
  CHECK(spmvc_matrix_generate("stencil27:n=12", &a) == SPMVC_OK);
  char* text = NULL;
  CHECK(spmvc_inspect(a, SPMVC_TEXT_JSON, &text) == SPMVC_OK);
  CHECK(text != NULL && strstr(text, "\"nrows\": 1728") != NULL);
  spmvc_string_free(text);
  CHECK(spmvc_inspect(a, SPMVC_TEXT_REPORT, &text) == SPMVC_OK);
  CHECK(strstr(text, "1,728 x 1,728") != NULL);
  spmvc_string_free(text);

  /* A forced format and parameters reach the plan and the generated kernel's name. */
  const char* options = "{\"precision\": \"f32\", \"format\": \"csr\", \"params\": \"T=8\"}";
  CHECK(spmvc_plan(a, options, SPMVC_TEXT_JSON, &text) == SPMVC_OK);
  CHECK(strstr(text, "\"format\": \"csr\"") != NULL && strstr(text, "\"f32\"") != NULL);
  spmvc_string_free(text);
  /* The multiply count reaches the planner: the plan ranks by one-time cost + 1000 multiplies
   * and says so; without it the plan has none. */
  CHECK(spmvc_plan(a, "{\"multiplies\": 1000, \"cached_kernels\": true}", SPMVC_TEXT_JSON, &text) ==
        SPMVC_OK);
  CHECK(strstr(text, "\"multiplies\": 1000") != NULL);
  CHECK(strstr(text, "one-time cost + 1000 x multiply time") != NULL);
  spmvc_string_free(text);
  CHECK(spmvc_plan(a, NULL, SPMVC_TEXT_JSON, &text) == SPMVC_OK);
  CHECK(strstr(text, "\"multiplies\": null") != NULL);
  spmvc_string_free(text);
  /* Mixed precision reaches the planner: the plan states the values' rounding and its bound. */
  spmvc_matrix* varied = NULL;
  CHECK(spmvc_matrix_generate("stencil27:n=12,contrast=100", &varied) == SPMVC_OK);
  CHECK(spmvc_plan(varied, "{\"precision\": \"f32\", \"mixed_precision\": \"bf16\"}",
                   SPMVC_TEXT_JSON, &text) == SPMVC_OK);
  CHECK(strstr(text, "\"mixed_precision\": {") != NULL);
  CHECK(strstr(text, "\"mode\": \"bf16\"") != NULL && strstr(text, "\"y_error_bound\"") != NULL);
  spmvc_string_free(text);
  spmvc_matrix_destroy(varied);
  /* A Kronecker graph in fp32: the model predicts cuSPARSE faster than every mixed-precision
   * candidate, so the full-precision plan is kept and the JSON says so; "mixed_fallback": false
   * insists. */
  spmvc_matrix* graph = NULL;
  CHECK(spmvc_matrix_generate("rmat:scale=19,ef=8", &graph) == SPMVC_OK);
  CHECK(spmvc_plan(graph, "{\"precision\": \"f32\", \"mixed_precision\": \"bf16\"}",
                   SPMVC_TEXT_JSON, &text) == SPMVC_OK);
  CHECK(strstr(text, "\"mixed_fallback\": {") != NULL);
  CHECK(strstr(text, "\"mixed_precision\": {") == NULL);
  spmvc_string_free(text);
  CHECK(spmvc_plan(graph,
                   "{\"precision\": \"f32\", \"mixed_precision\": \"bf16\", "
                   "\"mixed_fallback\": false}",
                   SPMVC_TEXT_JSON, &text) == SPMVC_OK);
  CHECK(strstr(text, "\"mixed_fallback\"") == NULL);
  CHECK(strstr(text, "\"mixed_precision\": {") != NULL);
  spmvc_string_free(text);
  spmvc_matrix_destroy(graph);
  char* source = NULL;
  char* name = NULL;
  CHECK(spmvc_generate(a, options, &source, &name) == SPMVC_OK);
  CHECK(strncmp(name, "spmv_csr_t8", 11) == 0 && strstr(name, "f32") != NULL);
  CHECK(strstr(source, name) != NULL);
  spmvc_string_free(source);
  spmvc_string_free(name);

  char dir[4096];
  snprintf(dir, sizeof dir, "%s/emit", scratch);
  CHECK(spmvc_emit(a, NULL, dir, &text) == SPMVC_OK);
  CHECK(strstr(text, "harness.cu") != NULL);
  spmvc_string_free(text);
  char harness[4200];
  snprintf(harness, sizeof harness, "%s/harness.cu", dir);
  struct stat st;
  CHECK(stat(harness, &st) == 0 && st.st_size > 0);
  spmvc_matrix_destroy(a);
}

static void test_bad_input(void) {
  spmvc_matrix* a = tridiagonal();
  spmvc_matrix* out = NULL;
  char* text = NULL;
  expect_error(spmvc_plan(a, "{\"precison\": \"f32\"}", SPMVC_TEXT_JSON, &text), SPMVC_ERROR_INPUT,
               "unknown key \"precison\"", "misspelt option");
  CHECK(spmvc_options_check("{\"precision\": \"f32\", \"planner\": \"measure\"}") == SPMVC_OK);
  CHECK(spmvc_options_check(NULL) == SPMVC_OK);
  expect_error(spmvc_options_check("[1, 2]"), SPMVC_ERROR_INPUT, "must be a JSON object",
               "options not an object");
  expect_error(spmvc_plan(a, "{\"precision\": \"f16\"}", SPMVC_TEXT_JSON, &text), SPMVC_ERROR_INPUT,
               "f16", "unknown precision");
  expect_error(spmvc_plan(a, "{\"value_coding\": 1}", SPMVC_TEXT_JSON, &text), SPMVC_ERROR_INPUT,
               "\"value_coding\" must be true or false", "option of the wrong type");
  expect_error(spmvc_plan(a, "{\"mixed_precision\": \"fp8\"}", SPMVC_TEXT_JSON, &text),
               SPMVC_ERROR_INPUT, "unknown mixed precision 'fp8'", "unknown mixed precision");
  expect_error(spmvc_plan(a, "{\"mixed_precision\": \"bf16\"}", SPMVC_TEXT_JSON, &text),
               SPMVC_ERROR_INPUT, "this operator is f64", "bf16 storage of an fp64 operator");
  expect_error(spmvc_plan(a, "{\"mixed_fallback\": \"no\"}", SPMVC_TEXT_JSON, &text),
               SPMVC_ERROR_INPUT, "\"mixed_fallback\" must be true or false",
               "mixed_fallback of the wrong type");
  expect_error(spmvc_plan(a, "{\"deterministic\": \"yes\"}", SPMVC_TEXT_JSON, &text),
               SPMVC_ERROR_INPUT, "\"deterministic\" must be true or false",
               "deterministic of the wrong type");
  expect_error(
      spmvc_plan(a, "{\"deterministic\": true, \"format\": \"bro_coo\"}", SPMVC_TEXT_JSON, &text),
      SPMVC_ERROR_INPUT, "deterministic mode: each interval",
      "a format with atomics under deterministic mode");
  CHECK(spmvc_plan(a, "{\"deterministic\": true}", SPMVC_TEXT_REPORT, &text) == SPMVC_OK);
  CHECK(text != NULL && strstr(text, "rejected: deterministic mode") != NULL);
  spmvc_string_free(text);
  text = NULL;
  int replanned = -1;
  expect_error(spmvc_operator_update_values(NULL, NULL, 0, &replanned, NULL), SPMVC_ERROR_INPUT,
               "op", "update_values without an operator");
  CHECK(replanned == -1);
  expect_error(spmvc_plan(a, "{precision: f32", SPMVC_TEXT_JSON, &text), SPMVC_ERROR_INPUT,
               "not valid JSON", "malformed options");
  expect_error(spmvc_plan(a, "{\"params\": \"T=4\"}", SPMVC_TEXT_JSON, &text), SPMVC_ERROR_INPUT,
               "needs \"format\"", "params without a format");
  expect_error(spmvc_plan(a, "{\"format\": \"jad\"}", SPMVC_TEXT_JSON, &text), SPMVC_ERROR_INPUT,
               "jad", "unknown format");
  expect_error(spmvc_plan(a, NULL, (spmvc_text_kind)7, &text), SPMVC_ERROR_INPUT, "kind must be",
               "unknown text kind");
  expect_error(spmvc_plan(a, "{\"multiplies\": 0}", SPMVC_TEXT_JSON, &text), SPMVC_ERROR_INPUT,
               "\"multiplies\" must be a positive integer, got 0", "zero multiplies");
  expect_error(spmvc_options_check("{\"multiplies\": \"many\"}"), SPMVC_ERROR_INPUT,
               "\"multiplies\" must be a positive integer", "multiplies not a number");
  expect_error(spmvc_options_check("{\"cached_kernels\": 1}"), SPMVC_ERROR_INPUT,
               "\"cached_kernels\" must be true or false", "cached_kernels not a bool");
  CHECK(text == NULL);

  const int64_t row_ptr[] = {0, 2, 5, 7};
  const int32_t bad_col[] = {0, 1, 0, 3, 2, 1, 2};
  expect_error(spmvc_matrix_from_csr(3, 3, 7, row_ptr, bad_col, NULL, &out), SPMVC_ERROR_INPUT,
               "col_idx", "column out of range");
  const int64_t bad_ptr[] = {0, 2, 1, 7};
  const int32_t col_idx[] = {0, 1, 0, 1, 2, 1, 2};
  expect_error(spmvc_matrix_from_csr(3, 3, 7, bad_ptr, col_idx, NULL, &out), SPMVC_ERROR_INPUT,
               "row_ptr", "decreasing row_ptr");
  expect_error(spmvc_matrix_from_csr(3, 3, 7, NULL, col_idx, NULL, &out), SPMVC_ERROR_INPUT,
               "row_ptr is NULL", "NULL array");
  expect_error(spmvc_matrix_read("/nonexistent/A.mtx", &out), SPMVC_ERROR_INPUT,
               "/nonexistent/A.mtx", "missing file");
  expect_error(spmvc_matrix_generate("stencil27:n=0", &out), SPMVC_ERROR_INPUT, "stencil27:n=0",
               "bad generator spec");
  CHECK(out == NULL);
  expect_error(spmvc_inspect(NULL, SPMVC_TEXT_JSON, &text), SPMVC_ERROR_INPUT, "matrix is NULL",
               "NULL handle");
  /* A success leaves the last message alone; the status name is spelled out. */
  CHECK(spmvc_inspect(a, SPMVC_TEXT_JSON, &text) == SPMVC_OK);
  spmvc_string_free(text);
  CHECK(strstr(spmvc_last_error(), "matrix is NULL") != NULL);
  CHECK(strcmp(spmvc_status_name(SPMVC_ERROR_NO_DEVICE), "SPMVC_ERROR_NO_DEVICE") == 0);
  CHECK(spmvc_options_check("{\"keep_csr\": true}") == SPMVC_OK);
  expect_error(spmvc_options_check("{\"keep_csr\": 1}"), SPMVC_ERROR_INPUT,
               "\"keep_csr\" must be true or false", "keep_csr of the wrong type");
  double xs[6] = {0}, ys[6] = {0};
  expect_error(spmvc_operator_apply_many_host(NULL, xs, ys, 2, SPMVC_LAYOUT_COL_MAJOR, 1.0, 0.0),
               SPMVC_ERROR_INPUT, "op is NULL", "apply_many without an operator");
  expect_error(spmvc_operator_apply_transpose(NULL, xs, ys, 1.0, 0.0, NULL), SPMVC_ERROR_INPUT,
               "op is NULL", "apply_transpose without an operator");
  CHECK(spmvc_options_check("{\"reorder\": \"rcm\", \"plan_order\": true}") == SPMVC_OK);
  expect_error(spmvc_options_check("{\"plan_order\": \"yes\"}"), SPMVC_ERROR_INPUT,
               "\"plan_order\" must be true or false", "plan_order of the wrong type");
  int plan_order = -1;
  expect_error(spmvc_operator_plan_order(NULL, &plan_order), SPMVC_ERROR_INPUT, "op is NULL",
               "plan_order without an operator");
  CHECK(plan_order == -1);
  expect_error(spmvc_operator_to_plan_order(NULL, xs, ys, SPMVC_AXIS_COLUMNS, NULL),
               SPMVC_ERROR_INPUT, "op is NULL", "to_plan_order without an operator");
  spmvc_matrix_destroy(a);
}

static void test_compile(void) {
  spmvc_matrix* a = tridiagonal();
  spmvc_operator* op = NULL;
  char* why = NULL;
  if (!spmvc_device_available(&why)) {
    expect_error(spmvc_compile(a, NULL, &op), SPMVC_ERROR_NO_DEVICE, why, "compile without GPU");
    CHECK(op == NULL);
    expect_error(spmvc_warm_up(NULL), SPMVC_ERROR_NO_DEVICE, why, "warm-up without GPU");
    expect_error(spmvc_warm_up("{\"precision\": \"f16\"}"), SPMVC_ERROR_INPUT, "precision",
                 "warm-up with a bad option");
    spmvc_string_free(why);
  } else {
    CHECK(spmvc_warm_up("{\"precision\": \"f32\"}") == SPMVC_OK);
    CHECK(spmvc_compile(a, "{\"disk_cache\": false}", &op) == SPMVC_OK);
    const double x[] = {1, 2, 3};
    double y[] = {1, 1, 1};
    CHECK(spmvc_operator_apply_host(op, x, y, 2.0, 1.0) == SPMVC_OK);
    /* A x = (2, 4, 10); y = 2 A x + y */
    CHECK(y[0] == 5.0 && y[1] == 9.0 && y[2] == 21.0);
    /* New values, twice the old: y = 2 (2 A) x + y */
    const double doubled[] = {8, -2, -2, 8, -2, -2, 8};
    int replanned = -1;
    char* note = NULL;
    CHECK(spmvc_operator_update_values(op, doubled, 7, &replanned, &note) == SPMVC_OK);
    CHECK(replanned == 0 && note != NULL && note[0] == '\0');
    spmvc_string_free(note);
    CHECK(spmvc_operator_apply_host(op, x, y, 2.0, 1.0) == SPMVC_OK);
    CHECK(y[0] == 13.0 && y[1] == 25.0 && y[2] == 61.0);
    expect_error(spmvc_operator_update_values(op, doubled, 6, NULL, NULL), SPMVC_ERROR_INPUT,
                 "6 values given; the matrix has 7 nonzeros", "update_values with a wrong count");
    char* json = NULL;
    CHECK(spmvc_operator_timings(op, &json) == SPMVC_OK && strstr(json, "kernel_origin") != NULL);
    spmvc_string_free(json);
    spmvc_operator_destroy(op);

    /* Two vectors at once, (1, 2, 3) and (1, 0, 0): A X = [(2, 4, 10), (4, -1, 0)]. */
    CHECK(spmvc_compile(a, "{\"disk_cache\": false, \"keep_csr\": true}", &op) == SPMVC_OK);
    const double x_col[] = {1, 2, 3, 1, 0, 0}, x_row[] = {1, 1, 2, 0, 3, 0};
    double y_col[6], y_row[6];
    CHECK(spmvc_operator_apply_many_host(op, x_col, y_col, 2, SPMVC_LAYOUT_COL_MAJOR, 1.0, 0.0) ==
          SPMVC_OK);
    CHECK(y_col[0] == 2 && y_col[1] == 4 && y_col[2] == 10 && y_col[3] == 4 && y_col[4] == -1 &&
          y_col[5] == 0);
    CHECK(spmvc_operator_apply_many_host(op, x_row, y_row, 2, SPMVC_LAYOUT_ROW_MAJOR, 1.0, 0.0) ==
          SPMVC_OK);
    CHECK(y_row[0] == 2 && y_row[1] == 4 && y_row[2] == 4 && y_row[3] == -1 && y_row[4] == 10 &&
          y_row[5] == 0);
    expect_error(spmvc_operator_apply_many_host(op, x_col, y_col, 2, (spmvc_layout)5, 1.0, 0.0),
                 SPMVC_ERROR_INPUT, "neither SPMVC_LAYOUT_ROW_MAJOR", "unknown layout");
    /* A is symmetric: A^T x = A x. */
    double yt[] = {1, 1, 1};
    CHECK(spmvc_operator_apply_transpose_host(op, x, yt, 2.0, 1.0) == SPMVC_OK);
    CHECK(yt[0] == 5.0 && yt[1] == 9.0 && yt[2] == 21.0);
    spmvc_operator_destroy(op);

    /* The plan's order (RCM, columns renumbered): A x from x permuted by the column map is the
     * caller's A x permuted by the row map. */
    CHECK(spmvc_compile(a,
                        "{\"disk_cache\": false, \"reorder\": \"rcm\", \"renumber_columns\": "
                        "true, \"plan_order\": true}",
                        &op) == SPMVC_OK);
    int ordered = -1;
    CHECK(spmvc_operator_plan_order(op, &ordered) == SPMVC_OK && ordered == 1);
    const int32_t* rows = NULL;
    const int32_t* cols = NULL;
    int64_t nr = -1, nc = -1;
    CHECK(spmvc_operator_plan_map(op, SPMVC_AXIS_ROWS, &rows, &nr) == SPMVC_OK && nr == 3);
    CHECK(spmvc_operator_plan_map(op, SPMVC_AXIS_COLUMNS, &cols, &nc) == SPMVC_OK && nc == 3);
    if (rows != NULL && cols != NULL && nr == 3 && nc == 3) {
      const double ax[] = {2, 4, 10};
      double xp[3], yp[3] = {0, 0, 0};
      for (int i = 0; i < 3; ++i) xp[i] = x[cols[i]];
      CHECK(spmvc_operator_apply_host(op, xp, yp, 1.0, 0.0) == SPMVC_OK);
      for (int i = 0; i < 3; ++i) CHECK(yp[i] == ax[rows[i]]);
    }
    expect_error(spmvc_operator_plan_map(op, (spmvc_axis)7, &rows, &nr), SPMVC_ERROR_INPUT,
                 "neither SPMVC_AXIS_ROWS", "unknown axis");
    expect_error(spmvc_operator_to_plan_order(op, x, y, SPMVC_AXIS_COLUMNS, NULL),
                 SPMVC_ERROR_INPUT, "device memory", "to_plan_order on host arrays");
    spmvc_operator_destroy(op);
  }
  spmvc_matrix_destroy(a);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_capi SCRATCH_DIR\n");
    return 2;
  }
  test_host_matrix();
  test_pipeline_without_gpu(argv[1]);
  test_bad_input();
  test_compile();
  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("C interface: all checks passed\n");
  return 0;
}
