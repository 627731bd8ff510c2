# Runs a Fortran test program that must stop with an error (cmake -P). Inputs (-D):
#   PROGRAM  the executable; ARG its argument
#   EXPECT   a regular expression its standard error must match
#   EXIT     "zero" when the program must instead end normally (EXPECT then matches stdout)
execute_process(COMMAND "${PROGRAM}" ${ARG}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "exit status: ${status}\nstdout:\n${out}\nstderr:\n${err}")
if(EXIT STREQUAL "zero")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} ${ARG} exited with ${status}, expected 0")
  endif()
  set(text "${out}")
else()
  if(status EQUAL 0 OR status EQUAL 3 OR NOT status MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${PROGRAM} ${ARG} did not stop with an error (exit status ${status})")
  endif()
  set(text "${err}")
endif()
if(NOT text MATCHES "${EXPECT}")
  message(FATAL_ERROR "${PROGRAM} ${ARG}: the output does not match \"${EXPECT}\"")
endif()
