# Driver of consumer.pip (cmake -P): a fresh virtual environment, the rmm build installed into
# it (cmake --install --prefix $VIRTUAL_ENV), the Python module installed with pip from
# python/, and a program that imports rmm_rs outside the repository, finds the environment's
# librmm.so and allocates through it. Then a second environment with only the wheel, which
# ships librmm.so itself (pip install -C bundle-library=...).
#
# Inputs (-D): RMM_SOURCE_DIR, RMM_BINARY_DIR, WORK_DIR, PYTHON.
cmake_minimum_required(VERSION 3.18)

function(run)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "consumer.pip: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "consumer.pip: failed (${status}): ${shown}\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(venv "${WORK_DIR}/venv")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
run("${PYTHON}" -m venv "${venv}")
run("${CMAKE_COMMAND}" --install "${RMM_BINARY_DIR}" --prefix "${venv}")
# pip builds it in isolation, as a user's pip does (the backend needs no package from PyPI).
run("${venv}/bin/python" -m pip install --quiet --no-deps "${RMM_SOURCE_DIR}/python")
file(WRITE "${WORK_DIR}/use_rmm_rs.py" [=[
import os, sys
import rmm_rs
here = os.path.dirname(os.path.abspath(rmm_rs.__file__))
assert "site-packages" in here, here
path = os.path.realpath(rmm_rs.library_path())
expected = os.path.join(here, "librmm.so") if sys.argv[1:] == ["bundled"] else os.path.join(sys.prefix, "lib", "librmm.so")
assert path == os.path.realpath(expected), (path, expected)
ptr = rmm_rs.alloc(1 << 20)
rmm_rs.free(ptr)
print("rmm_rs from", here, "library", path, "ok")
]=])
# Run outside the repository, so that the module cannot find the repository's build.
run("${CMAKE_COMMAND}" -E chdir "${WORK_DIR}" "${CMAKE_COMMAND}" -E env --unset=RMM_RS_LIBRARY
    "${venv}/bin/python" "${WORK_DIR}/use_rmm_rs.py")
message(STATUS "consumer.pip: ${last_output}")

set(bundled "${WORK_DIR}/venv-bundled")
run("${PYTHON}" -m venv "${bundled}")
run("${bundled}/bin/python" -m pip install --quiet --no-deps -C "bundle-library=${venv}/lib/librmm.so"
    "${RMM_SOURCE_DIR}/python")
run("${CMAKE_COMMAND}" -E chdir "${WORK_DIR}" "${CMAKE_COMMAND}" -E env --unset=RMM_RS_LIBRARY
    "${bundled}/bin/python" "${WORK_DIR}/use_rmm_rs.py" bundled)
message(STATUS "consumer.pip (bundled): ${last_output}")
