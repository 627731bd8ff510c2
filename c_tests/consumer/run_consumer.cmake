# Driver of the consumer.* tests (cmake -P). MODE=package installs the rmm build into a fresh
# prefix, then configures, builds and runs c_tests/consumer with find_package(rmm), and checks
# rmm.pc with pkg-config; MODE=subdirectory builds the consumer with add_subdirectory(rmm-rs).
#
# Inputs (-D): MODE, RMM_SOURCE_DIR, RMM_BINARY_DIR, RMM_VERSION, RMM_LIBDIR, RMM_INCLUDEDIR,
# RMM_PREBUILT_DIR, RMM_CARGO_TARGET_DIR, WORK_DIR, GENERATOR, MAKE_PROGRAM, C_COMPILER.
cmake_minimum_required(VERSION 3.18)

function(run)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "consumer test: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "consumer test: failed (${status}): ${shown}")
  endif()
endfunction()

set(consumer_source "${CMAKE_CURRENT_LIST_DIR}")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(configure "${CMAKE_COMMAND}" -S "${consumer_source}" -B "${build}" -G "${GENERATOR}"
              "-DCMAKE_C_COMPILER=${C_COMPILER}" -DCMAKE_BUILD_TYPE=Release)
if(MAKE_PROGRAM)
  list(APPEND configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()

if(MODE STREQUAL "package")
  set(prefix "${WORK_DIR}/prefix")
  run("${CMAKE_COMMAND}" --install "${RMM_BINARY_DIR}" --prefix "${prefix}")
  foreach(file IN ITEMS
      "${RMM_INCLUDEDIR}/rmm.h"
      "${RMM_LIBDIR}/librmm.so"
      "${RMM_LIBDIR}/librmm.a"
      "${RMM_LIBDIR}/cmake/rmm/rmmConfig.cmake"
      "${RMM_LIBDIR}/cmake/rmm/rmmConfigVersion.cmake"
      "${RMM_LIBDIR}/pkgconfig/rmm.pc"
      "${RMM_LIBDIR}/pkgconfig/rmm-static.pc"
      "bin/rmm-replay")
    if(NOT EXISTS "${prefix}/${file}")
      message(FATAL_ERROR "consumer test: the install lacks ${file}")
    endif()
  endforeach()
  # The installed libraries carry no debug info; it lies in <libdir>/.debug (RMM_INSTALL_SPLIT_DEBUG).
  # Cargo builds with debug info, so only a stripped prebuilt folder has none to split.
  find_program(READELF readelf)
  if(READELF AND NOT RMM_PREBUILT_DIR AND NOT EXISTS "${prefix}/${RMM_LIBDIR}/.debug/librmm.so.debug")
    message(FATAL_ERROR "consumer test: the install split no debug info off librmm.so")
  endif()
  if(READELF AND EXISTS "${prefix}/${RMM_LIBDIR}/.debug/librmm.so.debug")
    execute_process(COMMAND "${READELF}" -S "${prefix}/${RMM_LIBDIR}/librmm.so" OUTPUT_VARIABLE sections)
    if(sections MATCHES "\\.debug_info" OR NOT sections MATCHES "\\.gnu_debuglink")
      message(FATAL_ERROR "consumer test: the installed librmm.so keeps its debug info or lacks .gnu_debuglink")
    endif()
    execute_process(COMMAND "${READELF}" -S "${prefix}/${RMM_LIBDIR}/.debug/librmm.so.debug" OUTPUT_VARIABLE sections)
    if(NOT sections MATCHES "\\.debug_info")
      message(FATAL_ERROR "consumer test: .debug/librmm.so.debug holds no debug info")
    endif()
  endif()
  run("${prefix}/bin/rmm-replay" --help)
  run(${configure} -DRMM_CONSUMER_MODE=package "-DCMAKE_PREFIX_PATH=${prefix}"
      "-DRMM_EXPECTED_VERSION=${RMM_VERSION}")
elseif(MODE STREQUAL "subdirectory")
  set(extra "")
  if(RMM_PREBUILT_DIR)
    list(APPEND extra "-DRMM_PREBUILT_DIR=${RMM_PREBUILT_DIR}")
  elseif(RMM_CARGO_TARGET_DIR)
    list(APPEND extra "-DRMM_CARGO_TARGET_DIR=${RMM_CARGO_TARGET_DIR}")
  endif()
  run(${configure} -DRMM_CONSUMER_MODE=subdirectory "-DRMM_SOURCE_DIR=${RMM_SOURCE_DIR}" ${extra})
else()
  message(FATAL_ERROR "consumer test: unknown MODE '${MODE}'")
endif()

run("${CMAKE_COMMAND}" --build "${build}")
run("${build}/consumer_shared")
run("${build}/consumer_static")

# pkg-config: rmm.pc from the installed prefix, used to build and run the same program.
if(MODE STREQUAL "package")
  find_program(PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf)
  if(PKG_CONFIG_EXECUTABLE)
    set(pc_env "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${prefix}/${RMM_LIBDIR}/pkgconfig")
    execute_process(COMMAND ${pc_env} "${PKG_CONFIG_EXECUTABLE}" --modversion rmm
                    OUTPUT_VARIABLE pc_version OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE status)
    if(NOT status EQUAL 0 OR NOT pc_version STREQUAL RMM_VERSION)
      message(FATAL_ERROR "consumer test: pkg-config --modversion rmm gave '${pc_version}' (${status}), expected ${RMM_VERSION}")
    endif()
    # Each route builds the same program with nothing but what pkg-config says, and runs it
    # without LD_LIBRARY_PATH: rmm.pc (shared, its rpath), rmm.pc --static, rmm-static.pc.
    foreach(route IN ITEMS "rmm" "--static;rmm" "rmm-static")
      execute_process(COMMAND ${pc_env} "${PKG_CONFIG_EXECUTABLE}" --cflags --libs ${route}
                      OUTPUT_VARIABLE pc_flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE status)
      if(NOT status EQUAL 0)
        message(FATAL_ERROR "consumer test: pkg-config --cflags --libs ${route} failed")
      endif()
      message(STATUS "consumer test: pkg-config --cflags --libs ${route}: ${pc_flags}")
      separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
      string(REPLACE ";" "" exe_suffix "${route}")
      string(REPLACE "-" "_" exe_suffix "${exe_suffix}")
      set(exe "${WORK_DIR}/consumer_pkgconfig_${exe_suffix}")
      run("${C_COMPILER}" -std=c11 -Wall -Wextra -Werror "${consumer_source}/consumer.c" -o "${exe}" ${pc_flags})
      run("${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${exe}")
    endforeach()
    # rmm-static.pc links no librmm.so.
    find_program(READELF readelf)
    if(READELF)
      execute_process(COMMAND "${READELF}" -d "${WORK_DIR}/consumer_pkgconfig_rmm_static" OUTPUT_VARIABLE dynamic)
      if(dynamic MATCHES "librmm\\.so")
        message(FATAL_ERROR "consumer test: the program built with rmm-static.pc needs librmm.so")
      endif()
    endif()
  else()
    message(STATUS "consumer test: pkg-config not found; rmm.pc not exercised")
  endif()
endif()

message(STATUS "consumer test (${MODE}): passed")
