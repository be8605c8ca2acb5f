"""CPU tests of the level-1 batch proof's generator and comparison (no torch,
Triton, Ray or KernelBench needed)."""

import ast
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gen_level1_candidates as gen  # noqa: E402
import level1_compare as cmp  # noqa: E402


def fake_tasks(folder):
    for problem, _ in gen.candidates():
        open(os.path.join(folder, f"{problem}_Task.py"), "w").write("class Model: pass\n")


class GeneratorTest(unittest.TestCase):
    def test_writes_64_pairs_in_kernelbench_layout_with_failures_and_cheats(self):
        with tempfile.TemporaryDirectory() as tasks, tempfile.TemporaryDirectory() as out:
            fake_tasks(tasks)
            with contextlib.redirect_stderr(io.StringIO()):
                manifest = gen.main(["--tasks", tasks, "--out", out])
            self.assertGreaterEqual(len(manifest), 64)
            names = sorted(os.listdir(out))
            self.assertIn("manifest.json", names)
            intents = {}
            for m in manifest:
                self.assertRegex(m["id"], r"^level_1_problem_\d+_sample_\d+_kernel\.py$")
                with open(os.path.join(out, m["id"])) as f:
                    text = f.read()
                intents[m["intent"]] = intents.get(m["intent"], 0) + 1
                if m["intent"] == "syntax-error":
                    with self.assertRaises(SyntaxError):
                        ast.parse(text)
                    continue
                tree = ast.parse(text)
                classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
                self.assertEqual(classes, ["ModelNew"], m["id"])
                if m["intent"] == "compile-error":
                    self.assertIn("tl.no_such_function", text)
                if m["intent"] == "cheat-never-launched":
                    self.assertNotIn("kernel[", text.split("class ModelNew")[1])
            correct = intents.pop("correct")
            self.assertGreater(correct, sum(intents.values()))  # mostly correct ones
            self.assertTrue(any(k.startswith("wrong") for k in intents))
            self.assertTrue(any(k.startswith("cheat") for k in intents))
            self.assertIn("compile-error", intents)
            self.assertIn("syntax-error", intents)

    def test_a_missing_task_file_stops_the_generator(self):
        with tempfile.TemporaryDirectory() as tasks, tempfile.TemporaryDirectory() as out:
            with self.assertRaises(SystemExit):
                gen.main(["--tasks", tasks, "--out", out])


def line(pid, correct, kind=None, kb_speedup=None, load=True):
    v = {"pair": {"id": pid}, "correct": correct, "error": {"kind": kind} if kind else None,
         "kernelbench_speedup": kb_speedup}
    if load:
        v["phase_s"] = {"load": 0.1}
    return v


class CompareTest(unittest.TestCase):
    def write(self, folder, name, lines):
        with open(os.path.join(folder, name + ".jsonl"), "w") as f:
            for v in lines:
                f.write(json.dumps(v) + "\n")

    def test_counts_verdict_agreement_fast_p_and_spreads(self):
        with tempfile.TemporaryDirectory() as d:
            two = [line("a", True, kb_speedup=1.2), line("b", False, "mismatch"),
                   line("c", True, "torch-computes-the-task", kb_speedup=1.0), line("d", None, "exception", load=False)]
            one = [line("a", True, kb_speedup=1.3), line("b", False, "mismatch"),
                   line("c", True, "torch-computes-the-task", kb_speedup=1.0), line("d", False, "mismatch")]
            self.write(d, "two_gpus", two)
            self.write(d, "one_gpu", one)
            for name, secs in (("two_gpus", 50.0), ("one_gpu", 100.0)):
                json.dump({"pairs": 4, "seconds": secs, "compiled": 3, "correct": 2, "fast_p": {}, "flagged": 1},
                          open(os.path.join(d, name + ".summary.json"), "w"))
            os.mkdir(os.path.join(d, "singles"))
            json.dump(line("a", True), open(os.path.join(d, "singles", "a.json"), "w"))
            json.dump(line("d", False, "mismatch"), open(os.path.join(d, "singles", "d.json"), "w"))
            kb = lambda s: {"pairs": {
                "a": {"compiled": True, "correctness": True, "runtime": 10.0, "ref_runtime": 10.0 * s},
                "b": {"compiled": True, "correctness": False, "runtime": -1.0},
                "c": {"compiled": True, "correctness": True, "runtime": 10.0, "ref_runtime": 10.0},
                "d": {"compiled": False, "correctness": False}}, "seconds": 9}
            json.dump(kb(1.25), open(os.path.join(d, "kb1.json"), "w"))
            json.dump(kb(1.0), open(os.path.join(d, "kb2.json"), "w"))
            data = cmp.load_dirs([d])
            text = cmp.report(data)
        self.assertIn("Two GPUs over one: **2.00x**", text)
        # A one-GPU run split over two calls: its wall is given, its last summary covers one call.
        split = cmp.report(data, {"one_gpu": 120.0})
        self.assertIn("Two GPUs over one: **2.40x**", split)
        self.assertIn("| one_gpu | 4 | 120.0 s (given) |", split)
        self.assertIn("one_gpu vs two_gpus: **3/4** equal; differ: d", text)
        self.assertIn("two_gpus vs a single `bench` of the pair: **1/2** equal; differ: d", text)
        self.assertIn("two_gpus vs KernelBench kb1: **4/4** equal", text)
        # fast_1: only a (1.25 > 1) in kb1, none in kb2 (1.0 is not faster)
        self.assertIn("| KernelBench kb1 | 3 | 2 | 0.5000 | 0.2500 | 0.0000 | 0.0000 |", text)
        self.assertIn("| KernelBench kb2 | 3 | 2 | 0.5000 | 0.0000 | 0.0000 | 0.0000 |", text)
        self.assertIn("| kernel-lsp two_gpus | 3 | 2 | 0.5000 | 0.2500 | 0.0000 | 0.0000 |", text)
        self.assertIn("2 correct pairs: median 12.5%, max 25.0%", text)

    def test_fast_p_counts_an_untimed_correct_pair_as_not_faster(self):
        fp = cmp.fast_p({"a": None, "b": 3.0}, {"a": True, "b": True}, 4)
        self.assertEqual(fp[0.0], 0.5)
        self.assertEqual(fp[1.0], 0.25)
        self.assertEqual(fp[2.0], 0.25)

    def test_kernelbench_speedup_needs_both_times_and_a_correct_run(self):
        self.assertIsNone(cmp.kb_speedup({"correctness": True, "runtime": 2.0, "ref_runtime": -1.0}))
        self.assertIsNone(cmp.kb_speedup({"correctness": False, "runtime": 2.0, "ref_runtime": 4.0}))
        self.assertEqual(cmp.kb_speedup({"correctness": True, "runtime": 2.0, "ref_runtime": 4.0}), 2.0)


if __name__ == "__main__":
    unittest.main()
