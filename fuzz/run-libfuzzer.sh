#!/bin/sh
# The libFuzzer side of the fuzzing harness (see README.md), run by ctest:
#   run-libfuzzer.sh build CMAKE CLANGXX BUILD_DIR   configure and build every target with clang
#   run-libfuzzer.sh run BUILD_DIR NAME SECONDS      fuzz NAME_fuzz for SECONDS from its corpus
# Exit status 77 means skipped (ctest's SKIP_RETURN_CODE): clang++ or
# libFuzzer is missing, which is a property of the machine, not a failure.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

skip() {
  echo "skipped: $1"
  exit 77
}

case "${1:-}" in
build)
  cmake=$2 clang=$3 build=$4
  mkdir -p "$build"
  rm -f "$build/skipped"
  # The reason is kept so that each run step can skip with it too.
  if [ -z "$clang" ] || ! command -v "$clang" >/dev/null 2>&1; then
    echo "no clang++ found (Debian: apt-get install clang libfuzzer-14-dev)" >"$build/skipped"
    skip "$(cat "$build/skipped")"
  fi
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' >"$build/probe.cpp"
  if ! "$clang" -fsanitize=fuzzer,address,undefined "$build/probe.cpp" -o "$build/probe" 2>"$build/probe.log"; then
    echo "$clang cannot link -fsanitize=fuzzer (Debian: apt-get install libfuzzer-<clang version>-dev)" >"$build/skipped"
    skip "$(cat "$build/skipped")"
  fi
  generator=
  if command -v ninja >/dev/null 2>&1; then generator="-G Ninja"; fi
  # shellcheck disable=SC2086 # $generator is empty or two words
  "$cmake" -S "$here/libfuzzer" -B "$build" $generator -DCMAKE_CXX_COMPILER="$clang" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 || {
    cat "$build/configure.log"
    exit 1
  }
  "$cmake" --build "$build" -j "${ATTENDRE_FUZZ_JOBS:-2}"
  ;;
run)
  build=$2 name=$3 seconds=$4
  if [ -f "$build/skipped" ]; then skip "$(cat "$build/skipped")"; fi
  target="$build/${name}_fuzz"
  if [ ! -x "$target" ]; then
    echo "$target is missing: the fuzz_libfuzzer_build test builds it"
    exit 1
  fi
  # New inputs go to the build tree's corpus, which grows from run to run;
  # the committed corpus is only read.
  work="$build/corpus/$name"
  artifacts="$build/artifacts/$name"
  mkdir -p "$work" "$artifacts"
  dict=
  if [ -f "$here/$name.dict" ]; then dict="-dict=$here/$name.dict"; fi
  # shellcheck disable=SC2086 # $dict is empty or one word
  if ! "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" $dict "$work" "$here/corpus/$name"; then
    echo "libFuzzer found an input that fails ${name}_fuzz, saved in $artifacts/;" \
      "fix the bug, then commit the input to fuzz/corpus/$name/"
    exit 1
  fi
  ;;
*)
  echo "usage: $0 build CMAKE CLANGXX BUILD_DIR | run BUILD_DIR NAME SECONDS" >&2
  exit 2
  ;;
esac
