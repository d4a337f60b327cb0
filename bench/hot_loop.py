#!/usr/bin/env python3
"""Where a client's CPU went during a pull, from a `perf record` of it: the share of samples
per shared object, and, for a stripped binary (Debian's Go builds have no symbols perf
reads), the hottest 8 KiB window of its own code with the instructions that name what the
loop is: `sha256rnds2` (SHA-256 on the CPU's SHA extensions) or `rorx` (SHA-256 in general
registers, several times slower per byte). Used by bench/models-oci.sh's PROFILE=1.

    hot_loop.py PERF_DATA BINARY   (BINARY "-": the shares per shared object only)
"""
import collections
import subprocess
import sys

WINDOW = 8192


def samples(perf_data, sort):
    """`perf report` rows as (percent, key) for one sort key, children folded in."""
    out = subprocess.run(
        ["perf", "report", "-i", perf_data, "--no-children", "--sort", sort, "-g", "none",
         "--stdio"],
        capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split()
        if not fields or line.startswith("#") or not fields[0].endswith("%"):
            continue
        rows.append((float(fields[0].rstrip("%")), fields[-1]))
    return rows


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: hot_loop.py PERF_DATA BINARY")
    perf_data, binary = sys.argv[1:]
    for share, dso in samples(perf_data, "dso")[:5]:
        print(f"  {share:5.1f}%  {dso}")
    if binary == "-":
        return
    # A stripped binary's samples are bare addresses (relative to its first load segment,
    # 0x400000 for a Go executable): sum them by window.
    windows = collections.Counter()
    for share, sym in samples(perf_data, "sym"):
        try:
            addr = int(sym, 16)
        except ValueError:
            continue
        windows[addr // WINDOW] += share
    if not windows:
        print("  no bare addresses: the binary has symbols, read `perf report` itself")
        return
    window, share = windows.most_common(1)[0]
    start = 0x400000 + window * WINDOW
    asm = subprocess.run(
        ["objdump", "-d", f"--start-address={start:#x}",
         f"--stop-address={start + WINDOW:#x}", binary],
        capture_output=True, text=True, check=True).stdout
    # objdump's last tab-separated column is "mnemonic operands".
    words = collections.Counter(line.split("\t")[-1].split(" ")[0] for line in asm.splitlines())
    whole = subprocess.run(["objdump", "-d", binary], capture_output=True, text=True,
                           check=True).stdout.count("sha256rnds2")
    print(f"  {share:5.1f}% of all samples in {binary}'s hottest 8 KiB "
          f"({start:#x}): {words['rorx']} rorx, {words['sha256rnds2']} sha256rnds2; "
          f"sha256rnds2 anywhere in the binary: {whole}")


if __name__ == "__main__":
    main()
