#!/usr/bin/env bash
# Build metriclust with AddressSanitizer + UndefinedBehaviorSanitizer and run
# the tests against that build.
#
#   tools/sanitize.sh                 # the CI subset (a few minutes)
#   tools/sanitize.sh --full          # the whole suite
#   tools/sanitize.sh tests/test_x.py # any pytest arguments
#
# The build goes to build/asan and a separate virtual environment (.venv-asan,
# or $SANITIZE_VENV); the normal editable install is left alone. CPython is
# not built with ASan, so its runtime is LD_PRELOADed; leak detection is off
# (CPython keeps memory alive on purpose at exit); the first UBSan report halts
# the run with a non-zero exit status.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv=${SANITIZE_VENV:-$root/.venv-asan}
build=$root/build/asan
cc=${CC:-gcc}

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv --system-site-packages "$venv"
fi
# shellcheck disable=SC1091
source "$venv/bin/activate"
python -m pip install --quiet "meson-python>=0.16" "meson>=1.4" ninja "Cython>=3.0.8" \
    "numpy>=2.0" "scipy>=1.11" "threadpoolctl>=3.1" "pytest>=7" "hypothesis>=6" \
    "scikit-learn>=1.6"
python -m pip install --quiet --no-deps --no-build-isolation --force-reinstall \
    -Cbuild-dir="$build" \
    -Csetup-args=-Db_sanitize=address,undefined \
    -Csetup-args=-Db_lundef=false \
    -Csetup-args=-Dbuildtype=debugoptimized \
    "$root"

asan_rt=$("$cc" -print-file-name=libasan.so)
if [ ! -e "$asan_rt" ]; then
    echo "sanitize.sh: no ASan runtime for $cc ($asan_rt)" >&2
    exit 2
fi

if [ "${1:-}" = "--full" ]; then
    shift
    set -- tests "$@"
elif [ $# -eq 0 ]; then
    # The CI subset: every C kernel and bridge is reached by these (the
    # hostile sweep drives the raw bridges; the property suite every public
    # entry point; the kernel tests the float32/float64 and threaded paths).
    set -- tests/test_core.py tests/test_kernels.py tests/test_robustness.py \
        tests/test_reliability.py tests/test_properties.py tests/test_kmeans1d.py \
        tests/test_kmeans_q16.py
fi

cd "$root"
# The sanitized build is what the tests must import, not a source tree.
python -c "import metriclust, sys; assert 'site-packages' in metriclust.__file__, metriclust.__file__"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export METRICLUST_HYPOTHESIS_PROFILE=${METRICLUST_HYPOTHESIS_PROFILE:-ci}
LD_PRELOAD="$asan_rt" python -m pytest -q -p no:cacheprovider "$@"
echo "sanitize.sh: clean (ASan + UBSan) on: $*"
