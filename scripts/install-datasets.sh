#!/usr/bin/env bash
# Installs the real key sets the benchmarks read through `lines:PATH` (not needed by CI or the
# tests). Debian's wamerican-insane word list: about 650,000 English words, one per line, at
# /usr/share/dict/american-english-insane.
#
#   scripts/install-datasets.sh
#   mlpdex-bench hope --dataset lines:/usr/share/dict/american-english-insane --keys 650k
set -euo pipefail
if [ -r /usr/share/dict/american-english-insane ]; then
    echo "word list present: /usr/share/dict/american-english-insane"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq wamerican-insane
echo "installed: /usr/share/dict/american-english-insane ($(wc -l < /usr/share/dict/american-english-insane) words)"
