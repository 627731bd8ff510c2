# rmm_fortran.cmake: the Fortran module of rmm-rs (include/rmm.f90, `use rmm`) for CMake projects.
#
# rmm.f90 is shipped as source because .mod files are compiler-specific: this file compiles it
# with the consuming project's own Fortran compiler and flags. It is loaded by rmm-rs's
# CMakeLists.txt (add_subdirectory(rmm-rs)) and by the installed rmmConfig.cmake
# (find_package(rmm)). When the project has enabled Fortran by then, these targets exist at once:
#   rmm::fortran         the module rmm, compiled once (a static library in the project's build),
#                        plus rmm::rmm (librmm.so): link it and `use rmm` works
#   rmm::fortran_static  the same with rmm::rmm_static (librmm.a)
# Otherwise, after enable_language(Fortran), either call
#   rmm_add_fortran_module(<target> [STATIC])
# which creates them if needed and links <target> to rmm::fortran (STATIC: rmm::fortran_static),
# or call rmm_add_fortran_module() with no target, which only creates them.
# Example:
#   project(app LANGUAGES Fortran)
#   find_package(rmm REQUIRED)
#   add_executable(app app.f90)
#   target_link_libraries(app PRIVATE rmm::fortran)
# RMM_FORTRAN_SOURCE names rmm.f90; by hand: gfortran -c "${RMM_FORTRAN_SOURCE}" ...

if(NOT RMM_FORTRAN_SOURCE)
  # In the source tree: include/rmm.f90 next to this folder. (The installed rmmConfig.cmake sets
  # it to the installed copy next to rmm.h before loading this file.)
  get_filename_component(RMM_FORTRAN_SOURCE "${CMAKE_CURRENT_LIST_DIR}/../include/rmm.f90" ABSOLUTE)
endif()
if(NOT EXISTS "${RMM_FORTRAN_SOURCE}")
  message(WARNING "rmm: ${RMM_FORTRAN_SOURCE} does not exist; the Fortran module is not available")
endif()
set_property(GLOBAL PROPERTY RMM_FORTRAN_SOURCE "${RMM_FORTRAN_SOURCE}")

# Creates rmm::fortran and rmm::fortran_static (once per build) in the calling directory.
function(_rmm_fortran_targets)
  if(TARGET rmm_fortran_module)
    return()
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "Fortran" IN_LIST languages)
    message(FATAL_ERROR "rmm: the Fortran module needs Fortran: call enable_language(Fortran) "
                        "(or list Fortran in project()) before rmm_add_fortran_module()")
  endif()
  get_property(source GLOBAL PROPERTY RMM_FORTRAN_SOURCE)
  set(module_dir "${CMAKE_CURRENT_BINARY_DIR}/rmm_fortran_module")
  # The module and its procedures; which librmm is linked is left to the two targets below.
  add_library(rmm_fortran_module STATIC "${source}")
  set_target_properties(rmm_fortran_module PROPERTIES
    Fortran_MODULE_DIRECTORY "${module_dir}"
    POSITION_INDEPENDENT_CODE ON
    LINKER_LANGUAGE Fortran)
  target_include_directories(rmm_fortran_module PUBLIC "$<BUILD_INTERFACE:${module_dir}>")

  add_library(rmm_fortran INTERFACE)
  target_link_libraries(rmm_fortran INTERFACE rmm_fortran_module rmm::rmm)
  add_library(rmm::fortran ALIAS rmm_fortran)
  add_library(rmm_fortran_static INTERFACE)
  target_link_libraries(rmm_fortran_static INTERFACE rmm_fortran_module rmm::rmm_static)
  add_library(rmm::fortran_static ALIAS rmm_fortran_static)
endfunction()

# rmm_add_fortran_module([<target> [STATIC]]): see the top of this file.
function(rmm_add_fortran_module)
  cmake_parse_arguments(ARG "STATIC" "" "" ${ARGN})
  _rmm_fortran_targets()
  if(ARG_UNPARSED_ARGUMENTS)
    list(GET ARG_UNPARSED_ARGUMENTS 0 target)
    if(ARG_STATIC)
      target_link_libraries(${target} PRIVATE rmm::fortran_static)
    else()
      target_link_libraries(${target} PRIVATE rmm::fortran)
    endif()
  endif()
endfunction()

get_property(_rmm_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
if("Fortran" IN_LIST _rmm_languages AND TARGET rmm::rmm AND TARGET rmm::rmm_static)
  _rmm_fortran_targets()
endif()
unset(_rmm_languages)

# For rmm-rs's own CMakeLists.txt (RMM_INSTALL): installs rmm.f90 next to rmm.h and this file
# next to rmmConfig.cmake, and makes the generated rmmConfig.cmake load it.
function(_rmm_fortran_install)
  install(FILES "${RMM_FORTRAN_SOURCE}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  install(FILES "${CMAKE_CURRENT_FUNCTION_LIST_FILE}" DESTINATION "${RMM_INSTALL_CMAKEDIR}")
  # cmake/rmmConfig.cmake.in sets RMM_FORTRAN_SOURCE and includes this file.
endfunction()
