"""Whole runs of the harness on the tanh example (CPU interpreter): it leaves
no temporary copy of a candidate behind (a run outside the sandbox used to
leave /tmp/kernel-lsp-candidate-*/candidate_module.py), and its progress gives
an estimate of the time left."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "tanh_activation")


def run(tmp, trials):
    env = dict(os.environ, TMPDIR=tmp, TRITON_INTERPRET="1")
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "harness.py"), "run", "--cpu",
         "--candidate", os.path.join(EXAMPLE, "candidate_fixed.py"),
         "--reference", os.path.join(EXAMPLE, "reference.py"),
         "--profile", "kernelbench", "--trials", str(trials), "--warmup", "1", "--repeats", "1"],
        env=env, capture_output=True, text=True, timeout=300)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")], out


class Runs(unittest.TestCase):
    def test_a_run_removes_its_copy_of_the_candidate_and_estimates_the_time_left(self):
        with tempfile.TemporaryDirectory() as tmp:
            messages, out = run(tmp, 3)
            results = [m for m in messages if m.get("type") == "result"]
            self.assertTrue(results, out.stdout + out.stderr)
            self.assertIsNone(results[-1].get("error"), results[-1])
            self.assertEqual(os.listdir(tmp), [], "left in TMPDIR after the run")
            trials = [m["message"] for m in messages if m.get("type") == "progress" and "trial" in m["message"]]
            self.assertEqual(len(trials), 3, trials)
            self.assertNotIn("left", trials[0], "no estimate before a trial has run")
            self.assertRegex(trials[2], r"trial 3 of 3 \(seed \d+, about \d+ s a trial, \d+ s left\)")


if __name__ == "__main__":
    unittest.main()
