# The fuzz targets (fuzz/): a CMake project of their own, built here with clang-14 and its
# libFuzzer runtime (Debian clang-14 and libclang-rt-14-dev) into ${PROJECT_BINARY_DIR}/fuzz/bin,
# since the rest of spmvc builds with the default compiler. The ctest `fuzz_smoke` (label fuzz)
# runs each target from the committed seed corpus, about a minute in all; without clang-14 or
# libFuzzer nothing is built and the test reports itself skipped.
option(SPMVC_FUZZ "Build the libFuzzer targets in fuzz/ when clang-14 and libFuzzer are found" ON)

set(SPMVC_FUZZ_BIN ${PROJECT_BINARY_DIR}/fuzz/bin)
set(SPMVC_FUZZ_MISSING "")
if(NOT SPMVC_FUZZ)
  set(SPMVC_FUZZ_MISSING "SPMVC_FUZZ is OFF")
else()
  find_program(SPMVC_FUZZ_CXX NAMES clang++-14)
  find_program(SPMVC_FUZZ_CC NAMES clang-14)
  if(NOT SPMVC_FUZZ_CXX OR NOT SPMVC_FUZZ_CC)
    set(SPMVC_FUZZ_MISSING "clang-14 not found (apt-get install clang-14 libclang-rt-14-dev)")
  else()
    execute_process(COMMAND ${SPMVC_FUZZ_CXX} -print-file-name=libclang_rt.fuzzer-x86_64.a
                    OUTPUT_VARIABLE SPMVC_FUZZ_RT OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${SPMVC_FUZZ_RT}" OR NOT EXISTS "${SPMVC_FUZZ_RT}")
      set(SPMVC_FUZZ_MISSING "clang-14's libFuzzer runtime not found (apt-get install libclang-rt-14-dev)")
    endif()
  endif()
endif()

if(SPMVC_FUZZ_MISSING STREQUAL "")
  include(ExternalProject)
  ExternalProject_Add(spmvc_fuzz
    SOURCE_DIR ${PROJECT_SOURCE_DIR}/fuzz
    BINARY_DIR ${PROJECT_BINARY_DIR}/fuzz
    CMAKE_ARGS -DCMAKE_CXX_COMPILER=${SPMVC_FUZZ_CXX} -DCMAKE_C_COMPILER=${SPMVC_FUZZ_CC}
               -DCMAKE_BUILD_TYPE=RelWithDebInfo
    INSTALL_COMMAND ""
    # The sources live in matrix/ and fuzz/: let the inner build decide what is out of date.
    BUILD_ALWAYS ON
    USES_TERMINAL_BUILD ON)
  message(STATUS "spmvc: fuzz targets with ${SPMVC_FUZZ_CXX} into ${SPMVC_FUZZ_BIN}")
else()
  message(STATUS "spmvc: fuzz targets not built: ${SPMVC_FUZZ_MISSING}")
endif()

if(SPMVC_BUILD_TESTS)
  if(SPMVC_FUZZ_MISSING STREQUAL "")
    add_test(NAME fuzz_smoke COMMAND ${PROJECT_SOURCE_DIR}/fuzz/smoke ${SPMVC_FUZZ_BIN} 60)
  else()
    add_test(NAME fuzz_smoke COMMAND sh -c "echo 'fuzz smoke skipped: ${SPMVC_FUZZ_MISSING}'; exit 77")
  endif()
  set_tests_properties(fuzz_smoke PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
