#!/usr/bin/env python3
"""Tests of scripts/dram_peers.py: the peers' outputs are read with the right units and
weights, bad files give one clear line, and a pmlab run lands in the table."""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "tests", "data", "dram_peers")
sys.path.insert(0, HERE)
import dram_peers  # noqa: E402


class Peers(unittest.TestCase):
    def test_dramsim3_weights_latency_by_reads_and_sums_bandwidth(self):
        bw, lat = dram_peers.dramsim3(os.path.join(DATA, "dramsim3.json"), 0.5)
        self.assertAlmostEqual(bw, 10.0)
        # (60 x 3000 + 70 x 1000) / 4000 = 62.5 cycles of 0.5 ns
        self.assertAlmostEqual(lat, 31.25)

    def test_ramulator_divides_total_latency_by_served_reads(self):
        bw, lat = dram_peers.ramulator(os.path.join(DATA, "ramulator.txt"), 0.5)
        # 256000 cycles / 4000 served reads (not its avg_read_latency_0 of 40.5) x 0.5 ns
        self.assertAlmostEqual(lat, 32.0)
        # 6000 requests x 64 B over 120000 x 0.5 ns
        self.assertAlmostEqual(bw, 6000 * 64 / 60000.0)

    def test_bad_outputs_are_one_line_errors(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "x.json")
            with open(bad, "w", encoding="utf-8") as f:
                f.write('{"0": {"average_bandwidth": 1}}')
            with self.assertRaises(dram_peers.InputError) as e:
                dram_peers.dramsim3(bad, 1.0)
            self.assertIn("channel 0", str(e.exception))
            with self.assertRaises(dram_peers.InputError):
                dram_peers.ramulator(bad, 1.0)
            err = io.StringIO()
            with redirect_stderr(err):
                rc = dram_peers.main(["--trace", bad, "--dramsim3", bad])
            self.assertEqual(rc, 1)
            self.assertEqual(len(err.getvalue().strip().splitlines()), 1)

    def test_table_puts_pmlab_beside_the_peers(self):
        pmlab = os.path.join(ROOT, "target", "release", "pmlab")
        if not os.path.exists(pmlab):
            self.skipTest("pmlab not built")
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "t.trace")
            with open(trace, "w", encoding="utf-8") as f:
                for i in range(2000):
                    f.write(f"0x{(i * 7919 % 65536) * 64:x} READ {i * 4}\n")
            out = io.StringIO()
            with redirect_stdout(out):
                rc = dram_peers.main(["--trace", trace, "--label", "t", "--pmlab", pmlab,
                                      "--dramsim3", os.path.join(DATA, "dramsim3.json"),
                                      "--ramulator", os.path.join(DATA, "ramulator.txt")])
            self.assertEqual(rc, 0)
            rows = [r for r in out.getvalue().splitlines() if r.startswith("| t |")]
            self.assertEqual([r.split("|")[2].strip() for r in rows],
                             ["DRAMsim3", "Ramulator 2", "pmlab"])
            cells = rows[2].split("|")
            self.assertGreater(float(cells[3]), 0.0)
            self.assertGreaterEqual(float(cells[5]), float(cells[4]))


if __name__ == "__main__":
    unittest.main()
