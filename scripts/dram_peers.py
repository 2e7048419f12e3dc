#!/usr/bin/env python3
"""Puts pmlab beside DRAMsim3 and Ramulator 2 on the same memory trace.

Reads what the peers wrote after replaying a trace (DRAMsim3's final JSON stats, Ramulator 2's
stdout), runs `pmlab sim` on the same trace with the memory clock, and prints one Markdown
table: saturated bandwidth and mean read latency per simulator, latency both from acceptance
into the controller's queue (what DRAMsim3 and Ramulator count) and, for pmlab, from issue.

    scripts/dram_peers.py --trace requests.trace --label "1 rank" \\
        --dramsim3 dramsim3_out/dramsim3.json --ramulator ramulator_stdout.txt \\
        [--set device.ranks=2] [--outstanding 4096] [--pmlab target/release/pmlab]

Several `--label` cases can be given by running it once per case with `--no-header` after the
first. The peers' runs are the user's: DRAMsim3 (`dramsim3main DDR4_8Gb_x8_2400.ini -c CYCLES
-t TRACE -o DIR`) reads the trace's cycle column on the memory clock; Ramulator 2's
LoadStoreTrace front end has no time column and offers one request per memory cycle.

How each figure is derived (units from the peers' code):
* DRAMsim3: `average_read_latency` (memory cycles, from `AddTransaction` to the read's return)
  weighted by `num_reads_done` over the channels; bandwidth is the sum of the channels'
  `average_bandwidth` (GB/s, completed requests x 64 B over `num_cycles` x tCK).
* Ramulator 2: `read_latency_N` (total memory cycles from `arrive` to `depart`) over
  `num_read_reqs_served_N` where the build reports it, else over `total_num_read_requests`
  (its `avg_read_latency_N` counts refused retries too); bandwidth is (read + write requests)
  x 64 B over `memory_system_cycles` x tCK.
* pmlab: `replay.read_latency_accepted_ns_mean` and `replay.read_latency_ns_mean`,
  `replay.bandwidth_gbps`.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

LINE_BYTES = 64


class InputError(Exception):
    """A peer output that cannot be read: one line saying what and where."""


def dramsim3(path, tck_ns):
    """(bandwidth GB/s, mean read latency ns) from DRAMsim3's final JSON stats."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not DRAMsim3's JSON stats ({e})") from e
    if not isinstance(doc, dict) or not doc:
        raise InputError(f"{path}: expected an object keyed by channel")
    reads = 0
    weighted = 0.0
    bandwidth = 0.0
    for ch, s in sorted(doc.items()):
        try:
            n = int(s["num_reads_done"])
            weighted += float(s["average_read_latency"]) * n
            bandwidth += float(s["average_bandwidth"])
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{path}: channel {ch}: missing or bad {e}") from e
        reads += n
    if reads == 0:
        raise InputError(f"{path}: no reads done")
    return bandwidth, weighted / reads * tck_ns


def ramulator(path, tck_ns):
    """(bandwidth GB/s, mean read latency ns) from Ramulator 2's stdout (YAML stats)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: {e}") from e

    def stat(name):
        return [float(v) for v in re.findall(rf"^\s*{name}:\s*([0-9.eE+-]+)\s*$", text, re.M)]

    cycles = stat("memory_system_cycles")
    total_reads = stat("total_num_read_requests")
    total_writes = stat("total_num_write_requests")
    latency = stat(r"read_latency_\d+")
    served = stat(r"num_read_reqs_served_\d+")
    if not cycles or not total_reads or not latency:
        raise InputError(
            f"{path}: not Ramulator 2's stats (need memory_system_cycles, "
            "total_num_read_requests and read_latency_N)"
        )
    reads = sum(served) if served else total_reads[0]
    if reads == 0 or cycles[0] == 0:
        raise InputError(f"{path}: no reads or no cycles")
    requests = total_reads[0] + (total_writes[0] if total_writes else 0.0)
    bandwidth = requests * LINE_BYTES / (cycles[0] * tck_ns)
    return bandwidth, sum(latency) / reads * tck_ns


def pmlab(binary, trace, config, sets, outstanding):
    """(bandwidth, read latency from acceptance, from issue) of a `pmlab sim` run."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "sim.json")
        cmd = [binary, "sim", "--config", config, "--trace", trace, "--trace-clock", "memory",
               "--set", f"replay.max_outstanding={outstanding}", "--json", out]
        for s in sets:
            cmd += ["--set", s]
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise InputError(f"pmlab sim failed: {run.stderr.strip()}")
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
    values = doc["stats"]["values"]
    return (values["replay.bandwidth_gbps"], values["replay.read_latency_accepted_ns_mean"],
            values["replay.read_latency_ns_mean"])


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trace", required=True, help="the memory trace all three replayed")
    p.add_argument("--label", default="", help="name of this case in the table")
    p.add_argument("--dramsim3", help="DRAMsim3's final JSON stats (OUTDIR/dramsim3.json)")
    p.add_argument("--ramulator", help="Ramulator 2's stdout")
    p.add_argument("--config", default="ddr4-2400", help="pmlab preset or config file")
    p.add_argument("--set", action="append", default=[], dest="sets",
                   help="pmlab config override, e.g. device.ranks=2 (repeatable)")
    p.add_argument("--outstanding", type=int, default=4096,
                   help="pmlab requests in flight per trace thread (the peers' trace front "
                        "ends keep no window: the largest pmlab allows)")
    p.add_argument("--tck-ns", type=float, default=0.8333,
                   help="memory clock period the peers' cycle counts are in")
    p.add_argument("--pmlab", default=os.path.join("target", "release", "pmlab"))
    p.add_argument("--no-header", action="store_true")
    a = p.parse_args(argv)
    rows = []
    try:
        if a.dramsim3:
            bw, lat = dramsim3(a.dramsim3, a.tck_ns)
            rows.append(("DRAMsim3", bw, lat, None))
        if a.ramulator:
            bw, lat = ramulator(a.ramulator, a.tck_ns)
            rows.append(("Ramulator 2", bw, lat, None))
        bw, lat, issue = pmlab(a.pmlab, a.trace, a.config, a.sets, a.outstanding)
        rows.append(("pmlab", bw, lat, issue))
    except InputError as e:
        print(f"dram_peers: {e}", file=sys.stderr)
        return 1
    if not a.no_header:
        print("| case | simulator | bandwidth (GB/s) | read latency from acceptance (ns) "
              "| read latency from issue (ns) |")
        print("|---|---|---|---|---|")
    for name, bw, lat, issue in rows:
        print(f"| {a.label} | {name} | {bw:.2f} | {lat:.1f} | "
              f"{'' if issue is None else f'{issue:.1f}'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
