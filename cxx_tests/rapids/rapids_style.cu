// cxx_tests/rapids/rapids_style.cpp built with nvcc: the same program, with its Thrust part.
#include "rapids_style.cpp"
