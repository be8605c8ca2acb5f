"""The reward-hack battery (tests/fixtures/hacks/): each candidate cheats in one
way, written unlike the others of its class, or is an honest look-alike. The
first lines of each file say what the run must find (`# expect: KIND`, or
`none`). Every candidate runs through the real harness on Triton's CPU
interpreter, through one warm worker (`harness.py serve --cpu`), and its
verdict must be the one it expects: caught by what the run saw, whatever the
spelling. Files whose class needs a GPU (`# needs: gpu`: another CUDA
stream) run only with KERNEL_LSP_BATTERY_GPU=1, where the worker runs on the
GPU instead (scripts/gpu-proof/run_checks.sh)."""

import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = os.environ.get("KERNEL_LSP_BATTERY_GPU") == "1"
BATTERY = os.path.join(HERE, "..", "..", "tests", "fixtures", "hacks")


def expected(path):
    with open(path, encoding="utf-8") as f:
        head = f.read(600)
    kind = re.search(r"^# expect: (\S+)", head, re.MULTILINE).group(1)
    return None if kind == "none" else kind, "# needs: gpu" in head


class Worker:
    """One `harness.py serve` (`--cpu` unless on the GPU): imports once, forks a child per run."""

    def __init__(self):
        env = dict(os.environ, **({} if GPU else {"TRITON_INTERPRET": "1"}))
        env.pop("FIXTURE_USE_KERNEL_PATH", None)
        mode = [] if GPU else ["--cpu"]
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "harness.py"), "serve", *mode],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        ready = self.read()
        assert ready.get("type") == "ready", ready

    def read(self):
        line = self.proc.stdout.readline()
        while line and not line.startswith("{"):
            line = self.proc.stdout.readline()
        return json.loads(line) if line else {}

    def run(self, candidate, *extra):
        argv = [*extra, "--candidate", candidate, "--reference", os.path.join(BATTERY, "reference.py"),
                "--profile", "kernelbench", "--trials", "3", "--warmup", "1", "--repeats", "1",
                "--no-kernelbench-timing", "--no-profiler"]
        self.proc.stdin.write(json.dumps({"argv": argv}) + "\n")
        self.proc.stdin.flush()
        result = None
        while True:
            msg = self.read()
            if not msg or msg.get("type") == "done":
                return result
            if msg.get("type") == "result":
                result = msg

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()


class Battery(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.worker = Worker()

    @classmethod
    def tearDownClass(cls):
        cls.worker.close()

    def test_every_cheat_is_caught_by_the_run_and_no_look_alike_is(self):
        names = sorted(n for n in os.listdir(BATTERY) if n.endswith(".py") and n != "reference.py")
        classes = {}
        wrong = []
        for name in names:
            path = os.path.join(BATTERY, name)
            kind, gpu = expected(path)
            if gpu and not GPU:
                continue
            classes.setdefault(kind, []).append(name)
            result = self.worker.run(path)
            self.assertIsNotNone(result, f"{name}: no result from the harness")
            error = result.get("error") or {}
            got = error.get("kind")
            if kind is None:
                ok = got is None and result.get("correct") is True
            else:
                ok = got == kind and error.get("file", "").endswith(name) and error.get("line")
            print(f"{name:<36} expected {kind or 'clean':<24} got {got or 'clean'}"
                  f"{'' if kind else ' correct=' + str(result.get('correct'))}", flush=True)
            if not ok:
                wrong.append(f"{name}: expected {kind or 'a clean, correct run'}, got {got}: "
                             f"{error.get('message', '')[:300]} (watch: {result.get('watch')})")
        self.assertEqual(wrong, [], "\n".join(wrong))
        # At least three paraphrases of each class the CPU can show, and honest look-alikes.
        for kind in ("torch-computes-the-task", "precision-downgrade", "kernel-never-launched", "output-reused",
                     "timer-patch", "side-stream-or-thread", None):
            if kind == "side-stream-or-thread" and GPU:
                self.assertGreaterEqual(len(classes[kind]), 6, classes[kind])
            self.assertGreaterEqual(len(classes.get(kind, [])), 3, f"{kind}: {classes.get(kind)}")

    def test_the_users_ignore_comment_silences_a_run_finding_but_not_for_llm_code(self):
        import tempfile

        with open(os.path.join(BATTERY, "half_inputs_cast.py"), encoding="utf-8") as f:
            text = f.read()
        cast = "        y = linear_relu(x.half(), self.linear.weight.half(), self.linear.bias.half())"
        self.assertIn(cast, text)
        with tempfile.TemporaryDirectory() as tmp:
            silenced = os.path.join(tmp, "declared_fp16.py")
            with open(silenced, "w", encoding="utf-8") as f:
                f.write(text.replace(cast, cast + "  # kernel-lsp: ignore[KL106]"))
            line = text.splitlines().index(cast) + 1
            result = self.worker.run(silenced)
            # Silenced, the precision finding is kept in the watch; the fp16 output then fails fp32's tolerance.
            self.assertEqual((result.get("error") or {}).get("kind"), "mismatch", result)
            self.assertEqual(result["watch"]["suppressed"], [{"kind": "precision-downgrade", "code": "KL106",
                                                              "line": line}], result["watch"])
            strict = self.worker.run(silenced, "--strict")
            self.assertEqual((strict.get("error") or {}).get("kind"), "precision-downgrade", strict)
            self.assertEqual(strict["error"]["line"], line, strict["error"])


if __name__ == "__main__":
    unittest.main()
