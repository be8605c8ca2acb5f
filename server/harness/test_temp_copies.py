"""The harness leaves no temporary copy of a candidate behind (a run outside
the sandbox used to leave /tmp/kernel-lsp-candidate-*/candidate_module.py)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "tanh_activation")


class TempCopies(unittest.TestCase):
    def test_a_run_removes_its_copy_of_the_candidate(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, TMPDIR=tmp, TRITON_INTERPRET="1")
            out = subprocess.run(
                [sys.executable, os.path.join(HERE, "harness.py"), "run", "--cpu",
                 "--candidate", os.path.join(EXAMPLE, "candidate_fixed.py"),
                 "--reference", os.path.join(EXAMPLE, "reference.py"),
                 "--profile", "kernelbench", "--trials", "1", "--warmup", "1", "--repeats", "1"],
                env=env, capture_output=True, text=True, timeout=300)
            results = [json.loads(l) for l in out.stdout.splitlines() if '"type": "result"' in l]
            self.assertTrue(results, out.stdout + out.stderr)
            self.assertIsNone(results[-1].get("error"), results[-1])
            self.assertEqual(os.listdir(tmp), [], "left in TMPDIR after the run")


if __name__ == "__main__":
    unittest.main()
