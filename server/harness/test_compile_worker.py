"""The compile worker over its real protocol (a child process, JSON lines), with
real Triton compiling for sm_90 on a machine without a GPU."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

HEADER = "import triton\nimport triton.language as tl\n"

CLEAN = HEADER + """
@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)
"""

SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


def body(lines):
    """A kernel `k(x_ptr, n, BLOCK)` whose body is `lines`, its def on line 5, the body from line 6."""
    return HEADER + "\n@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n" + "".join(
        "    " + l + "\n" for l in lines)


class Worker:
    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "compile_worker.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        self.n = 0

    def ask(self, **req):
        self.n += 1
        req["id"] = self.n
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        assert reply["id"] == self.n, reply
        return reply

    def compile(self, source, kernel="k", signature=None, constexprs=None, **extra):
        return self.ask(type="compile", source=source, filename="/work/user/kernel.py", kernel=kernel,
                        signature=signature or {"x_ptr": "*fp32", "n": "i32"},
                        constexprs=constexprs if constexprs is not None else {"BLOCK": 64},
                        target={"backend": "cuda", "arch": 90, "warp_size": 32}, **extra)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


class CompileWorker(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.w = Worker()

    @classmethod
    def tearDownClass(cls):
        cls.w.close()

    def test_hello_names_the_triton_version_and_no_gpu_here(self):
        import triton

        r = self.w.ask(type="hello")
        self.assertTrue(r["ok"], r)
        self.assertEqual(r["triton"], triton.__version__)
        self.assertIn("capability", r)

    def test_a_clean_kernel_reports_its_resources(self):
        r = self.w.compile(CLEAN, kernel="scale", signature=SIG, constexprs={"BLOCK": 1024}, divisible=["x_ptr", "y_ptr"],
                           options={"num_warps": 4})
        self.assertEqual(r["status"], "compiled", r)
        res = r["resources"]
        self.assertEqual(res["name"], "scale")
        self.assertEqual(res["num_warps"], 4)
        self.assertGreater(res["n_regs"], 0)
        self.assertEqual(res["n_spills"], res["local"] // 4)
        self.assertIsInstance(res["shared"], int)

    def test_spills_in_a_stack_frame_are_unknown_not_zero(self):
        # A 128x256 fp32 accumulator in 4 warps does not fit in registers: ptxas keeps a stack frame,
        # whose spills the cubin does not break down (the driver's figure would be needed).
        src = HEADER + """
@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)
"""
        r = self.w.compile(src, kernel="mm", signature={"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "K": "i32"},
                           constexprs={"BM": 128, "BN": 256, "BK": 64}, options={"num_warps": 4})
        self.assertEqual(r["status"], "compiled", r)
        res = r["resources"]
        self.assertGreater(res["stack"], 0, res)
        self.assertIsNone(res["n_spills"], res)

    def test_break_is_rejected_at_its_line_and_column(self):
        src = body(["offs = tl.arange(0, BLOCK)", "for i in range(3):", "    break",
                    "tl.store(x_ptr + offs, offs, mask=offs < n)"])
        r = self.w.compile(src)
        self.assertEqual(r["status"], "error", r)
        self.assertEqual((r["error"]["line"], r["error"]["column"]), (8, 9), r)
        self.assertIn("Break", r["error"]["message"])
        self.assertEqual(r["error"]["function"], "k")

    def test_a_misspelt_keyword_names_it(self):
        src = body(["offs = tl.arange(0, BLOCK)", "x = tl.load(x_ptr + offs, msk=offs < n)",
                    "tl.store(x_ptr + offs, x)"])
        r = self.w.compile(src)
        self.assertEqual(r["status"], "error", r)
        self.assertEqual(r["error"]["line"], 7, r)
        self.assertIn("msk", r["error"]["message"])

    def test_an_undefined_name_and_a_bare_dtype(self):
        for name in ["undefined_thing", "float32"]:
            src = body(["offs = tl.arange(0, BLOCK)", f"x = tl.load(x_ptr + offs).to({name})",
                        "tl.store(x_ptr + offs, x)"])
            r = self.w.compile(src)
            self.assertEqual(r["status"], "error", r)
            self.assertEqual(r["error"]["line"], 7, r)
            self.assertIn(name, r["error"]["message"])

    def test_a_dot_whose_reduction_dimensions_differ(self):
        src = body(["a = tl.load(x_ptr + tl.arange(0, 32)[:, None] * 16 + tl.arange(0, 16)[None, :])",
                    "b = tl.load(x_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :])",
                    "c = tl.dot(a, b)",
                    "tl.store(x_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :], c)"])
        r = self.w.compile(src)
        self.assertEqual(r["status"], "error", r)
        self.assertEqual(r["error"]["line"], 8, r)

    def test_an_error_in_a_helper_is_placed_in_the_helper(self):
        src = HEADER + """
@triton.jit
def helper(x):
    return x + undefined_helper_name

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, helper(tl.load(x_ptr + offs)))
"""
        r = self.w.compile(src)
        self.assertEqual(r["status"], "error", r)
        self.assertEqual(r["error"]["function"], "helper", r)
        self.assertEqual(r["error"]["line"], 6, r)

    def test_an_error_inside_triton_s_own_jit_functions_is_placed_at_the_user_s_call(self):
        # `tl.max` is a jit function of Triton's standard library: its body's lines are not the file's.
        src = body(["offs = tl.arange(0, BLOCK)", "x = tl.load(x_ptr + offs)", "y = tl.max(x, 0.0)",
                    "tl.store(x_ptr + offs, y)"])
        r = self.w.compile(src)
        self.assertEqual(r["status"], "error", r)
        self.assertEqual((r["error"]["line"], r["error"]["column"], r["error"]["function"]), (8, 9, "k"), r)
        self.assertIn("create_reduce", r["error"]["message"])

    def test_blanked_lines_keep_lines_and_columns_of_the_file(self):
        src = "\n" * 40 + body(["offs = tl.arange(0, BLOCK)", "for i in range(3):", "    break"])
        r = self.w.compile(src)
        self.assertEqual((r["error"]["line"], r["error"]["column"]), (48, 9), r)

    def test_a_bundle_that_does_not_run_is_its_own_status(self):
        r = self.w.compile(HEADER + "X = 1 / 0\n")
        self.assertEqual(r["status"], "bundle-error", r)
        self.assertEqual(r["error"]["line"], 3, r)

    def test_a_missing_kernel_is_a_clear_refusal(self):
        r = self.w.compile(CLEAN, kernel="nope")
        self.assertFalse(r["ok"])
        self.assertIn("nope", r["message"])

    def test_parse_confirms_or_denies_a_syntax_error(self):
        ok = self.w.ask(type="parse", source="def f():\n    return a, *([None] * 5)\nf(*((None,) * 20))\n")
        self.assertEqual(ok["valid"], True, ok)
        bad = self.w.ask(type="parse", source="def f(:\n    pass\n")
        self.assertEqual((bad["valid"], bad["line"]), (False, 1), bad)

    def test_garbage_is_answered_and_the_worker_lives_on(self):
        self.w.proc.stdin.write("not json\n")
        self.w.proc.stdin.flush()
        self.assertFalse(json.loads(self.w.proc.stdout.readline())["ok"])
        self.assertTrue(self.w.ask(type="hello")["ok"])


if __name__ == "__main__":
    unittest.main()
