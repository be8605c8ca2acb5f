"""The LLM-candidate agreement script's judging, on hand-made views (no GPU, no kernel-lsp)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_agree_llm as agree  # noqa: E402


def err(severity, line):
    return {"code": "KL901", "severity": severity, "line": line, "message": "m"}


class Compare(unittest.TestCase):
    def test_an_error_on_a_file_the_gpu_ran_is_a_false_error_and_a_warning_is_not(self):
        self.assertEqual(agree.compare("c", {"errors": [err("error", 3)]}, {}, {"verdict": "ran"})[0], "false-error")
        self.assertEqual(agree.compare("c", {"errors": [err("warning", 3)]}, {}, {"verdict": "ran"})[0], "agree")
        self.assertEqual(agree.compare("c", {}, {}, {"verdict": "ran"})[0], "agree")

    def test_a_gpu_compile_error_needs_a_finding_at_its_line(self):
        g = {"verdict": "compile-error", "line": 9}
        self.assertEqual(agree.compare("c", {"errors": [err("warning", 9)]}, {}, g)[0], "agree")
        self.assertEqual(agree.compare("c", {"errors": [err("error", 8)]}, {}, g)[0], "other-line")
        self.assertEqual(agree.compare("c", {}, {}, g)[0], "missed")

    def test_a_run_that_failed_elsewhere_gives_no_compile_verdict(self):
        g = {"verdict": "exception", "line": 40}
        self.assertEqual(agree.compare("c", {}, {}, g)[0], "no-compile-verdict")
        self.assertEqual(agree.compare("c", {"errors": [err("error", 2)]}, {}, g)[0], "runtime-with-error")

    def test_figures_skip_unknown_spills_and_assumed_signatures(self):
        ours = {"k": [{"n_regs": 40, "n_spills": None, "shared": 0}], "a": [{"n_regs": 1, "assumed": ["x"]}]}
        gpu = {"kernels": {"k": [{"n_regs": 40, "n_spills": 7, "shared": 0}], "a": [{"n_regs": 2, "n_spills": 0,
                                                                                  "shared": 0}]}}
        self.assertEqual(agree.figures(ours, gpu), (1, 0))

    def test_only_triton_candidates_with_a_task_are_selected(self):
        with tempfile.TemporaryDirectory() as tmp:
            tasks, coll = os.path.join(tmp, "tasks", "level1"), os.path.join(tmp, "coll", "m", "level1")
            os.makedirs(tasks)
            os.makedirs(coll)
            for name in ["1_A.py", "2_B.py"]:
                open(os.path.join(tasks, name), "w").write("class Model: pass\n")
            open(os.path.join(coll, "1_A.py"), "w").write("@triton.jit\ndef k(): pass\nclass ModelNew: pass\n")
            open(os.path.join(coll, "2_B.py"), "w").write("load_inline(...)\nclass ModelNew: pass\n")
            open(os.path.join(coll, "3_C.py"), "w").write("@triton.jit\ndef k(): pass\nclass ModelNew: pass\n")
            chosen = agree.select([os.path.join(tmp, "coll")], os.path.join(tmp, "tasks"), 0, 0)
            self.assertEqual([c[0] for c in chosen], ["m-L1-1_A"])


if __name__ == "__main__":
    unittest.main()
