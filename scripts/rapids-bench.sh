# Sourced by the GPU benchmark scripts: builds a benchmark source against RAPIDS RMM 26.10 from
# its wheels in .whl/ (librmm-cu13, rapids-logger; see docs/src/performance.md).
#
#   rapids_bench SOURCE OUTPUT   extracts the wheels next to OUTPUT and builds SOURCE there;
#                                false (with a message) when the wheels are not in .whl/
rapids_bench() {
  local source=$1 output=$2
  if ! ls .whl/librmm_cu13-*.whl >/dev/null 2>&1; then
    echo "RAPIDS RMM wheels not in .whl/: skipping the RAPIDS comparison"
    return 1
  fi
  local rapids
  rapids="$(dirname "$output")/rapids"
  mkdir -p "$rapids"
  for wheel in .whl/librmm_cu13-*.whl .whl/rapids_logger-*.whl; do
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$rapids"
  done
  nvcc -std=c++20 -O3 -arch="${CUDA_ARCH:-sm_90}" --expt-relaxed-constexpr \
    -I"$rapids/librmm/include/rapids" -I"$rapids/librmm/include" -I"$rapids/rapids_logger/include" \
    "$source" -L"$rapids/librmm/lib64" -L"$rapids/rapids_logger/lib64" -lrmm -lrapids_logger \
    -Xlinker -rpath -Xlinker "$rapids/librmm/lib64" -Xlinker -rpath -Xlinker "$rapids/rapids_logger/lib64" \
    -o "$output"
}
