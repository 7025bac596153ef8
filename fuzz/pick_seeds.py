#!/usr/bin/env python3
"""Picks a small seed corpus out of a large working corpus.

    python3 pick_seeds.py BINARY CORPUS_DIR SEEDS_DIR [COUNT]

Runs the fuzz target BINARY (fuzz/target/<triple>/release/<target>) in libFuzzer's merge mode
over CORPUS_DIR to learn which coverage features each input reaches, then copies into
SEEDS_DIR the COUNT inputs (default 40) chosen greedily: each pick is the input adding the
most features not yet covered (ties: the smaller file). The seeds committed under
fuzz/seeds/ were picked this way from five-minute runs.
"""

import os
import shutil
import subprocess
import sys
import tempfile


def features(binary, corpus):
    """Maps each corpus file to the set of features libFuzzer reports for it."""
    with tempfile.TemporaryDirectory() as tmp:
        control = os.path.join(tmp, "control")
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        subprocess.run(
            [binary, "-merge=1", f"-merge_control_file={control}", out, corpus],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with open(control) as f:
            lines = f.read().split("\n")
    # Control file: the number of files, the number of files in the first directory, the
    # file names, then STARTED/FT/COV records per file index.
    n = int(lines[0])
    names = lines[2 : 2 + n]
    feats = {}
    for line in lines[2 + n :]:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "FT":
            feats[names[int(parts[1])]] = set(parts[2:])
    return feats


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    binary, corpus, seeds = sys.argv[1:4]
    count = int(sys.argv[4]) if len(sys.argv) == 5 else 40
    feats = features(binary, corpus)
    covered = set()
    picked = []
    while len(picked) < count and feats:
        best = max(
            feats,
            key=lambda p: (len(feats[p] - covered), -os.path.getsize(p)),
        )
        if not feats[best] - covered:
            break
        covered |= feats.pop(best)
        picked.append(best)
    os.makedirs(seeds, exist_ok=True)
    for p in picked:
        shutil.copy(p, os.path.join(seeds, os.path.basename(p)))
    total = sum(os.path.getsize(p) for p in picked)
    print(f"{len(picked)} seeds, {total} bytes, {len(covered)} features")


if __name__ == "__main__":
    main()
