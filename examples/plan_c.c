/* What spmvc sees in a matrix and what it would run, through the C interface:
 *
 *   plan_c A.mtx[.gz|.xz] [OPTIONS_JSON]      e.g. plan_c A.mtx '{"precision": "f32"}'
 *
 * Prints the inspector's report, the plan with every candidate, and the generated kernel's name.
 * No GPU needed. Exit code 1 with the library's message on bad input. */
#include <spmvc/spmvc.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: plan_c A.mtx [OPTIONS_JSON]\n");
    return 1;
  }
  const char* options = argc > 2 ? argv[2] : NULL;
  spmvc_matrix* a = NULL;
  char* report = NULL;
  char* plan = NULL;
  char* source = NULL;
  char* kernel = NULL;
  int status = 1;
  if (spmvc_matrix_read(argv[1], &a) == SPMVC_OK &&
      spmvc_inspect(a, SPMVC_TEXT_REPORT, &report) == SPMVC_OK &&
      spmvc_plan(a, options, SPMVC_TEXT_REPORT, &plan) == SPMVC_OK &&
      spmvc_generate(a, options, &source, &kernel) == SPMVC_OK) {
    printf("%s\n%s\nkernel: %s (spmvc %s)\n", report, plan, kernel, spmvc_version());
    status = 0;
  } else {
    fprintf(stderr, "plan_c: %s\n", spmvc_last_error());
  }
  spmvc_string_free(report);
  spmvc_string_free(plan);
  spmvc_string_free(source);
  spmvc_string_free(kernel);
  spmvc_matrix_destroy(a);
  return status;
}
