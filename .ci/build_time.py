#!/usr/bin/env python3
"""Compiler time of a build, from its .ninja_log, against the budget kept in the repository.

    python3 .ci/build_time.py BUILD_DIR [--budget FILE] [--top N]

Prints the N (default 10) slowest objects of BUILD_DIR's last build, the compiler time of
each part (the library, tests, docs examples, benchmarks) and fails (exit 1) when the
library's total passes the budget of FILE (default: .ci/build-budget.json beside this
script). A .ninja_log keeps every build of the folder: the last line of each output counts.

The figures are the seconds each job ran with ninja's default parallelism on the CI machine
(2 cores, 4 jobs), so they include the sharing of the cores; a cache hit (ccache) counts
as the little time it took. To re-measure the budget, build a fresh folder without ccache
and read the library's total:

    CCACHE_DISABLE=1 BUILD_DIR=build-cold ./build.sh test && python3 .ci/build_time.py build-cold

then set library_seconds in the budget file to that total plus the margin the file states.
"""
import argparse
import json
import os
import sys


def last_entries(log_path):
    """{output: seconds} of the newest line of each output in a ninja log (format v5)."""
    entries = {}
    with open(log_path, encoding="utf-8") as f:
        header = f.readline()
        if not header.startswith("# ninja log v"):
            raise ValueError(f"{log_path}: not a ninja log (first line {header.strip()!r})")
        for n, line in enumerate(f, start=2):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                raise ValueError(f"{log_path}:{n}: expected start, end, mtime, output; got {line.strip()!r}")
            start, end, output = int(parts[0]), int(parts[1]), parts[3]
            if end < start:
                raise ValueError(f"{log_path}:{n}: the job ends before it starts")
            entries[output] = (end - start) / 1000.0
    return entries


def part_of(output):
    """Which part of the build an output belongs to."""
    if output.startswith("libmixt.so.p/") or output.startswith("libmixt.a.p/"):
        return "library"
    if output.startswith("distributed/"):
        return "library"
    for part in ("tests", "docs", "bench"):
        if output.startswith(part + "/"):
            return part
    return "other"


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir")
    ap.add_argument("--budget", default=os.path.join(here, "build-budget.json"))
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args(argv)
    try:
        entries = last_entries(os.path.join(args.build_dir, ".ninja_log"))
        with open(args.budget, encoding="utf-8") as f:
            budget = float(json.load(f)["library_seconds"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"build_time: {e}", file=sys.stderr)
        return 2
    objects = {k: v for k, v in entries.items() if k.endswith(".o")}
    print(f"The {min(args.top, len(objects))} slowest objects of {args.build_dir}:")
    for out, secs in sorted(objects.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {secs:8.1f} s  {out}")
    totals = {}
    for out, secs in objects.items():
        totals[part_of(out)] = totals.get(part_of(out), 0.0) + secs
    print("Compiler time by part: " + ", ".join(f"{p} {t:.0f} s" for p, t in sorted(totals.items())))
    library = totals.get("library", 0.0)
    if library > budget:
        print(f"FAIL: the library's compiler time {library:.0f} s is over the budget of {budget:.0f} s "
              f"({args.budget}); see this script's help for how to re-measure it")
        return 1
    print(f"OK: the library's compiler time {library:.0f} s is within the budget of {budget:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
