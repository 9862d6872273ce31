#!/usr/bin/env bash
# The runtime SIMD dispatch checks this Linux machine can run (issue #16; the
# design is in csrc/dispatch.h). Called by .ci/run; needs a C compiler (gcc)
# and a Python with numpy for the generator only.
#
#  1. Cross-compile: every csrc/*.c, with the portable dispatcher's per-level
#     copies (x86-64-v4, -v3, baseline) and trampolines, for x86_64-macos,
#     x86_64-windows-gnu and x86_64-linux-musl, and the one baseline compile
#     for aarch64-macos: compile only (-c), zig's clang with the libc headers
#     it bundles, -Wall -Werror. No OpenMP there (zig ships no omp.h): the
#     serial form of every file is what compiles.
#  2. musl at run time: the C core and tools/dispatch_driver.c linked
#     statically for x86_64-linux-musl (no ifunc there) and RUN here at every
#     level (METRICLUST_MAX_SIMD=4, 3, 1): the level it reports must be the one
#     this CPU allows under the cap, and its k-means labels must equal those of
#     the gcc/glibc target_clones build of the same driver.
#  3. gcc, glibc: the same driver built with the portable dispatcher
#     (-DML_DISPATCH_PORTABLE, per-level objects) gives output identical, bit
#     for bit, to the target_clones build at the same level.
#
# Not checked here (only the GitHub wheel workflow can): MSVC itself (the
# /arch:AVX512 /arch:AVX2 copies, __cpuidex/_xgetbv), Apple's linker and
# libomp on macOS, Windows' loader.
#
# ZIG: the zig command (default: python -m ziglang, installed into a
# throwaway venv when missing). PYTHON: the Python for the generator.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PYTHON=${PYTHON:-python3}

if [ -z "${ZIG:-}" ]; then
    if ! "$PYTHON" -m ziglang version >/dev/null 2>&1; then
        "$PYTHON" -m venv "$work/zigvenv"
        "$work/zigvenv/bin/python" -m pip install --quiet ziglang
        ZIG="$work/zigvenv/bin/python -m ziglang"
    else
        ZIG="$PYTHON -m ziglang"
    fi
fi
echo "== zig $($ZIG version)"

hot=(kmeans kmeans1d gram)
headers=(csrc/kmeans.h csrc/kmeans1d.h csrc/gram.h)
"$PYTHON" tools/gen_dispatch.py "$work" 4,3,1 "${headers[@]}"
# -Werror except two warnings of the serial (no-OpenMP) form of kmeans_impl.h
# (a thread count read and not used there), which stay visible as warnings.
flags=(-O2 -std=c99 -fno-math-errno -fno-trapping-math -Wall -Werror -Wno-unknown-pragmas
       -Wno-error=unused-variable -Wno-error=unused-but-set-variable -Icsrc -I"$work")
# [suffix ML_DISPATCH_LEVEL]: no -march, the level is dispatch.h's target
# attribute in that copy (as meson.build builds it with GCC/Clang).
levels=("v4 4" "v3 3" "base 1")

is_hot() { local f; for f in "${hot[@]}"; do [ "$1" = "$f" ] && return 0; done; return 1; }

# build CC OUTDIR MODE [extra flags...]: objects of every csrc/*.c into OUTDIR.
# MODE portable: per-level copies of the hot files + trampolines; plain: one compile.
build() {
    local cc=$1 out=$2 mode=$3; shift 3
    mkdir -p "$out"
    local src name lv sfx num
    if [[ "$cc" == *ziglang* || "$cc" == zig* ]]; then
        # kmeans_cv_impl.h asks for full unrolls; a Clang that cannot honour
        # one (as before the loops' trip counts were made constants) warns,
        # left visible, rather than failing the build.
        set -- "$@" -Wno-error=pass-failed
    fi
    for src in ${SOURCES:-csrc/*.c}; do
        name=$(basename "$src" .c)
        if [ "$mode" = portable ] && is_hot "$name"; then
            for lv in "${levels[@]}"; do
                read -r sfx num <<<"$lv"
                $cc "${flags[@]}" "$@" -DML_DISPATCH_PORTABLE \
                    -DML_DISPATCH_LEVEL="$num" -include "$work/dispatch_names_$sfx.h" \
                    -c "$src" -o "$out/${name}_$sfx.o"
            done
        elif [ "$mode" = portable ]; then
            $cc "${flags[@]}" "$@" -DML_DISPATCH_PORTABLE -c "$src" -o "$out/$name.o"
        else
            $cc "${flags[@]}" "$@" -c "$src" -o "$out/$name.o"
        fi
    done
    if [ "$mode" = portable ]; then
        local table
        for table in "$work"/dispatch_table_*.c; do
            $cc "${flags[@]}" "$@" -DML_DISPATCH_PORTABLE -c "$table" \
                -o "$out/$(basename "$table" .c).o"
        done
    fi
}

echo "== cross-compile (compile only, -Wall -Werror)"
# The four targets in parallel; each one's compiler output goes to its log,
# shown in full when it fails, as a count of distinct warnings when it passes.
pids=()
for target in x86_64-macos x86_64-windows-gnu x86_64-linux-musl aarch64-macos; do
    mode=portable
    [ "${target%%-*}" = aarch64 ] && mode=plain
    build "$ZIG cc -target $target" "$work/$target" "$mode" >"$work/$target.log" 2>&1 &
    pids+=("$!")
done
i=0
for target in x86_64-macos x86_64-windows-gnu x86_64-linux-musl aarch64-macos; do
    if ! wait "${pids[$i]}"; then
        cat "$work/$target.log"
        echo "FAIL: $target does not compile"
        exit 1
    fi
    i=$((i + 1))
    echo "   $target: $(ls "$work/$target" | wc -l) objects," \
         "$(grep -o 'warning: .*' "$work/$target.log" | sort -u | wc -l) distinct warnings"
done
grep -ho '^csrc/[^ ]*: warning: .*' "$work"/*.log | sort | uniq -c | sed 's/^/     /' || true

echo "== x86_64-linux-musl, static, run here"
musl="$work/x86_64-linux-musl"
rm -f "$musl/libcore.a"
$ZIG ar rcs "$musl/libcore.a" "$musl"/*.o
$ZIG cc -target x86_64-linux-musl -static -O2 -Icsrc tools/dispatch_driver.c \
    "$musl/libcore.a" -o "$work/driver-musl"
file "$work/driver-musl" 2>/dev/null | sed 's/^/   /' || true

echo "== gcc, glibc: target_clones and portable builds of the driver"
# The driver needs the hot files, the interrupt flag and the dispatcher only.
export SOURCES="csrc/kmeans.c csrc/kmeans1d.c csrc/gram.c csrc/interrupt.c csrc/dispatch.c"
build gcc "$work/gcc-clones" plain 2>"$work/gcc-clones.log" &
pid_c=$!
build gcc "$work/gcc-portable" portable 2>"$work/gcc-portable.log" || { cat "$work/gcc-portable.log"; exit 1; }
wait "$pid_c" || { cat "$work/gcc-clones.log"; exit 1; }
unset SOURCES
for b in clones portable; do
    ar rcs "$work/gcc-$b/libcore.a" "$work/gcc-$b"/*.o
    gcc -O2 -Icsrc tools/dispatch_driver.c "$work/gcc-$b/libcore.a" -lm -o "$work/driver-$b"
done
"$work/driver-clones" >"$work/clones.out" 2>"$work/clones.err"
best=$(head -1 "$work/clones.out" | cut -d' ' -f2)
echo "   the clones build runs level $best on this CPU"

labels() { grep '^lloyd\|^pruned' "$1" | sed 's/ centers=.*//'; }
status=0
# The lanes kernels' two vector widths on the AVX-512 level (dispatch.h,
# ml_wide_vectors): the same bits in the clones build, the same labels in
# musl's.
for wide in 0 1; do
    METRICLUST_WIDE_VECTORS=$wide "$work/driver-clones" >"$work/clones-wide$wide.out" \
        2>"$work/clones-wide$wide.err"
    METRICLUST_WIDE_VECTORS=$wide "$work/driver-musl" >"$work/musl-wide$wide.out" 2>/dev/null
    if ! diff "$work/clones.out" "$work/clones-wide$wide.out" >/dev/null ||
       ! diff <(labels "$work/clones.out") <(labels "$work/musl-wide$wide.out") >/dev/null; then
        echo "FAIL: METRICLUST_WIDE_VECTORS=$wide changes the results"
        diff "$work/clones.out" "$work/clones-wide$wide.out" || true
        status=1
    fi
    echo "   METRICLUST_WIDE_VECTORS=$wide ($(cat "$work/clones-wide$wide.err")):" \
         "every output as the probe's choice ($(cat "$work/clones.err"))"
done
for cap in 4 3 1; do
    want=$(( best < cap ? best : cap ))
    [ "$want" = 2 ] && want=1
    METRICLUST_MAX_SIMD=$cap "$work/driver-musl" >"$work/musl-$cap.out" 2>/dev/null
    METRICLUST_MAX_SIMD=$cap "$work/driver-portable" >"$work/portable-$cap.out" 2>/dev/null
    got=$(head -1 "$work/musl-$cap.out" | cut -d' ' -f2)
    got_p=$(head -1 "$work/portable-$cap.out" | cut -d' ' -f2)
    if [ "$got" != "$want" ] || [ "$got_p" != "$want" ]; then
        echo "FAIL: METRICLUST_MAX_SIMD=$cap: musl level $got, gcc portable $got_p, expected $want"
        status=1
    fi
    if ! diff <(labels "$work/clones.out") <(labels "$work/musl-$cap.out") >/dev/null; then
        echo "FAIL: musl level $got: k-means labels differ from the clones build"
        diff <(labels "$work/clones.out") <(labels "$work/musl-$cap.out") || true
        status=1
    fi
    echo "   cap $cap: musl (clang) level $got, gcc portable level $got_p, labels as the clones build"
done
if ! diff "$work/clones.out" "$work/portable-$best.out" >/dev/null; then
    echo "FAIL: gcc portable at level $best differs from gcc clones:"
    diff "$work/clones.out" "$work/portable-$best.out" || true
    status=1
else
    echo "   gcc portable level $best == gcc clones, every output bit for bit"
fi
[ "$status" = 0 ] && echo "== dispatch checks passed"
exit "$status"
