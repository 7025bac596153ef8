#!/usr/bin/env bash
# Runs the cargo-fuzz targets under fuzz/ for a while each, starting from the committed seed
# corpora (fuzz/seeds/<target>/), copied into a scratch directory so the tree stays clean.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 30); the targets default to all of them. Needs a nightly
# toolchain (`cargo +nightly`): without one it prints a note and exits 0. cargo-fuzz is
# installed from crates.io when missing. Builds every target once (`cargo +nightly fuzz build
# -O`), then runs the targets FUZZ_JOBS at a time (default: one per core), one process each.
# Exits non-zero if any target fails (a crash, a divergence from the oracle, a leak or a
# timeout); its reproducer is then in fuzz/artifacts/<target>/ (ignored by git) and the log in
# the scratch directory, whose path is printed. FUZZ_WORK_DIR chooses the scratch directory (default: a fresh temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-30}
if [ $# -gt 0 ]; then shift; fi
case $secs in
    '' | *[!0-9]*)
        echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
        exit 2
        ;;
esac

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz: no nightly toolchain (cargo +nightly); the fuzz targets need one. Skipping."
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

cd fuzz
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

echo "== cargo +nightly fuzz build -O (${#targets[@]} targets)"
build_start=$(date +%s)
cargo +nightly fuzz build -O
echo "built in $(($(date +%s) - build_start)) s"

work=${FUZZ_WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/mlpdex-fuzz.XXXXXX")}
mkdir -p "$work"
# Targets run FUZZ_JOBS at a time (default: one per core), each a single libFuzzer process.
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
echo "== running each target for $secs s, $jobs_max at a time; corpora and logs in $work"

# Runs target $1 and writes "<ok|FAILED> <seconds>" to its status file.
run_one() {
    local t=$1 corpus="$work/corpus/$1" log="$work/$1.log" start status=ok
    mkdir -p "$corpus"
    if [ -d "seeds/$t" ]; then
        cp -R "seeds/$t/." "$corpus/"
    fi
    start=$(date +%s)
    # -timeout: one input running longer than this is a failure (a hang).
    if ! cargo +nightly fuzz run -O "$t" "$corpus" -- \
        -max_total_time="$secs" -timeout=60 -print_final_stats=1 >"$log" 2>&1; then
        status=FAILED
    fi
    echo "$status $(($(date +%s) - start))" >"$work/$t.status"
}

running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$jobs_max" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    run_one "$t" &
    running=$((running + 1))
done
wait

failed=()
for t in "${targets[@]}"; do
    status=FAILED took=?
    if [ -f "$work/$t.status" ]; then
        read -r status took <"$work/$t.status"
    fi
    log="$work/$t.log"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" 2>/dev/null | tail -n 1)
    printf '%-24s %-6s %6s s %10s execs\n' "$t" "$status" "$took" "${execs:-?}"
    if [ "$status" = FAILED ]; then
        failed+=("$t")
        grep -E "panicked|ERROR:|SUMMARY:|Test unit written|assert" "$log" | head -n 20 || true
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failing targets: ${failed[*]} (logs in $work, inputs in fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${secs} s without a failure"
