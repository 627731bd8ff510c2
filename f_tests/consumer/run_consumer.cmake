# Driver of the fortran.consumer.* tests (cmake -P). MODE=package installs the rmm build into a
# fresh prefix, builds and runs f_tests/consumer with find_package(rmm), then compiles the
# installed rmm.f90 and the same program by hand with the Fortran compiler (as the README shows);
# MODE=subdirectory builds the consumer with add_subdirectory(rmm-rs).
#
# Inputs (-D): MODE, RMM_SOURCE_DIR, RMM_BINARY_DIR, RMM_VERSION, RMM_LIBDIR, RMM_INCLUDEDIR,
# RMM_PREBUILT_DIR, RMM_CARGO_TARGET_DIR, WORK_DIR, GENERATOR, MAKE_PROGRAM, C_COMPILER,
# Fortran_COMPILER.
cmake_minimum_required(VERSION 3.18)

function(run)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "fortran consumer test: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "fortran consumer test: failed (${status}): ${shown}")
  endif()
endfunction()

set(consumer_source "${CMAKE_CURRENT_LIST_DIR}")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(configure "${CMAKE_COMMAND}" -S "${consumer_source}" -B "${build}" -G "${GENERATOR}"
              "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_Fortran_COMPILER=${Fortran_COMPILER}"
              -DCMAKE_BUILD_TYPE=Release)
if(MAKE_PROGRAM)
  list(APPEND configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()

if(MODE STREQUAL "package")
  set(prefix "${WORK_DIR}/prefix")
  run("${CMAKE_COMMAND}" --install "${RMM_BINARY_DIR}" --prefix "${prefix}")
  foreach(file IN ITEMS
      "${RMM_INCLUDEDIR}/rmm.h"
      "${RMM_INCLUDEDIR}/rmm.f90"
      "${RMM_LIBDIR}/cmake/rmm/rmmConfig.cmake"
      "${RMM_LIBDIR}/cmake/rmm/rmm_fortran.cmake")
    if(NOT EXISTS "${prefix}/${file}")
      message(FATAL_ERROR "fortran consumer test: the install lacks ${file}")
    endif()
  endforeach()
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
  message(FATAL_ERROR "fortran consumer test: unknown MODE '${MODE}'")
endif()

run("${CMAKE_COMMAND}" --build "${build}")
run("${build}/consumer_fortran")
run("${build}/consumer_fortran_static")
run("${build}/consumer_late")

# By hand: the installed rmm.f90 compiled with the program, linked to the installed librmm.so.
if(MODE STREQUAL "package")
  set(by_hand "${WORK_DIR}/by-hand")
  file(MAKE_DIRECTORY "${by_hand}")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E chdir "${by_hand}"
      "${Fortran_COMPILER}" "${prefix}/${RMM_INCLUDEDIR}/rmm.f90" "${consumer_source}/consumer.f90"
      -o consumer_by_hand "-L${prefix}/${RMM_LIBDIR}" -lrmm "-Wl,-rpath,${prefix}/${RMM_LIBDIR}"
    RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "fortran consumer test: building by hand with ${Fortran_COMPILER} failed")
  endif()
  run("${by_hand}/consumer_by_hand")
endif()

message(STATUS "fortran consumer test (${MODE}): passed")
