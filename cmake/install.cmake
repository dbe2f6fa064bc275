# What `cmake --install BUILD --prefix PREFIX` puts under PREFIX:
#   include/spmvc/       the public C++ headers, spmvc.h (C) and the formats' params/
#   lib/libspmvc.so*     the shared library (kernel templates embedded)
#   bin/spmvc            the command
#   lib/cmake/spmvc/     spmvcConfig.cmake: find_package(spmvc CONFIG REQUIRED) gives spmvc::spmvc
#   lib/libspmvc_distributed.so*, include/spmvc/distributed*.hpp
#                        where MPI was found: the distributed operator, the package's component
#                        `distributed` (spmvc::distributed)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS spmvc_shared EXPORT spmvcTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The command as built: its run paths name only system folders (the CUDA toolkit's, and LLVM's
# with tooling/), and the first of them is a link option CMake's install-time rewrite of the
# run path cannot follow.
install(PROGRAMS $<TARGET_FILE:spmvc> DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/spmvc ${PROJECT_BINARY_DIR}/include/spmvc
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h"
  # The distributed operator (distributed/, MPI) is its own library: its headers go with it.
  PATTERN "distributed*.hpp" EXCLUDE)
if(TARGET spmvc_distributed_shared)
  install(TARGETS spmvc_distributed_shared EXPORT spmvcDistributedTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/include/spmvc/distributed.hpp
    ${PROJECT_SOURCE_DIR}/include/spmvc/distributed_layout.hpp
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/spmvc)
endif()

set(SPMVC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/spmvc)
install(EXPORT spmvcTargets NAMESPACE spmvc:: DESTINATION ${SPMVC_CMAKE_DIR})
if(TARGET spmvc_distributed_shared)
  install(EXPORT spmvcDistributedTargets NAMESPACE spmvc:: DESTINATION ${SPMVC_CMAKE_DIR})
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/spmvcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/spmvcConfig.cmake
  INSTALL_DESTINATION ${SPMVC_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spmvcConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/spmvcConfig.cmake ${PROJECT_BINARY_DIR}/spmvcConfigVersion.cmake
  DESTINATION ${SPMVC_CMAKE_DIR})
