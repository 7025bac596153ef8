#!/usr/bin/env bash
# Runs the integration tests of the structures that free memory while other threads may
# still hold addresses (PI's unlinks after a rebuild) under AddressSanitizer, so a
# use-after-free is reported where it happens instead of as a later crash or a silent wrong
# answer. Miri covers the unit tests of the unsafe cores; these tests are too long for it.
#
#   scripts/asan.sh              # the selection below
#   scripts/asan.sh --test NAME  # other integration tests (cargo test arguments)
#
# Needs a nightly toolchain (-Zsanitizer): without one it prints a note and exits 0. Uses its
# own target directory (target/asan). Measured: about 3 minutes on 2 cores, most of it the
# first build.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "asan skipped: no nightly toolchain"
    exit 0
fi
target=$(rustc -vV | sed -n 's/^host: //p')
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
    args=(--test pi --test pi_bytes)
fi
RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" CARGO_TARGET_DIR=target/asan \
    cargo +nightly test -p mlpdex --locked --target "$target" "${args[@]}"
