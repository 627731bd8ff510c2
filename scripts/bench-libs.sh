# Sourced by the GPU benchmark scripts that compare builds of the library: fills the
# associative array `libs` (name -> librmm.a) from DIR's librmm_<name>.a (or .a.gz, to carry
# less), or with stage/lib/librmm.a when no DIR is given.
#
#   declare -A libs=(); bench_libs "${1:-}"
bench_libs() {
  if [ -n "${1:-}" ]; then
    for gz in "$1"/librmm_*.a.gz; do [ -e "$gz" ] && gunzip -kf "$gz"; done
    for lib in "$1"/librmm_*.a; do name=$(basename "$lib" .a); libs[${name#librmm_}]=$lib; done
  else
    libs[stage]=stage/lib/librmm.a
  fi
}
