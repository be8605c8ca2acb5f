"""agreement_table.py on the committed H100 rounds (no GPU needed):
    python3 -m unittest discover -s scripts/gpu-proof -p 'test_*.py'"""
import io
import os
import sys
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROUNDS = os.path.join(HERE, "..", "..", "docs", "results", "agreement-h100-rounds")
sys.path.insert(0, HERE)
import agreement_table


def rounds(name):
    return os.path.join(ROUNDS, name)


class PrintedRounds(unittest.TestCase):
    def test_a_printed_run_gives_the_rounds_of_its_json(self):
        # run4 has both: its printed lines must give the same verdicts and (to 2 decimals) speedups
        from_json = {r["pair"]: r["runs"] for r in agreement_table.pooled([rounds("run4.json")])}
        from_text = {r["pair"]: r["runs"] for r in agreement_table.pooled([rounds("run4.txt")])}
        self.assertEqual(sorted(from_json), sorted(from_text))
        for pair, runs in from_json.items():
            self.assertEqual(len(runs), len(from_text[pair]))
            for a, b in zip(runs, from_text[pair]):
                self.assertEqual(a["kernelbench"]["correct"], b["kernelbench"]["correct"])
                self.assertEqual(a["kernel_lsp"]["correct"], b["kernel_lsp"]["correct"])
                self.assertAlmostEqual(a["kernelbench"]["speedup"], b["kernelbench"]["speedup"], delta=0.006)
                self.assertAlmostEqual(a["kernel_lsp"]["speedup"], b["kernel_lsp"]["speedup"], delta=0.006)

    def test_the_printed_lines_of_runs_7_to_9_match_their_json(self):
        # run8's time limit stopped it after round 7 of 9: its printed lines and JSON both hold 7
        for run in ("run7", "run8", "run9"):
            from_json = {r["pair"]: r["runs"] for r in agreement_table.pooled([rounds(run + ".json")])}
            from_text = {r["pair"]: r["runs"] for r in agreement_table.pooled([rounds(run + ".txt")])}
            self.assertEqual(sorted(from_json), sorted(from_text), run)
            for pair, runs in from_json.items():
                self.assertEqual(len(runs), len(from_text[pair]), (run, pair))
                for a, b in zip(runs, from_text[pair]):
                    self.assertAlmostEqual(a["kernelbench"]["speedup"], b["kernelbench"]["speedup"], delta=0.006)
                    self.assertAlmostEqual(a["kernel_lsp"]["speedup"], b["kernel_lsp"]["speedup"], delta=0.006)

    def test_incorrect_verdicts_and_reasons_are_read(self):
        recs = {r["pair"]: r for r in agreement_table.pooled([rounds("run3.txt")])}
        sib = recs["relu_sibling.py vs reference.py"]["runs"]
        self.assertTrue(all(r["kernelbench"]["correct"] is False and r["kernel_lsp"]["correct"] is False for r in sib))
        self.assertEqual(sib[0]["kernel_lsp"]["why"], "local-import")
        self.assertIsNone(sib[0]["kernel_lsp"]["speedup"])

    def test_exclude_drops_only_that_files_rounds(self):
        paths = [rounds("run2.json"), rounds("run6.txt")]
        pair = "gru_bidir_persistent.py vs 41_GRUBidirectional.py"
        both = {r["pair"]: r for r in agreement_table.pooled(paths)}
        some = {r["pair"]: r for r in agreement_table.pooled(paths, {("run2.json", "gru_bidir_persistent.py")})}
        self.assertEqual(len(both[pair]["runs"]), 5)
        self.assertEqual(len(some[pair]["runs"]), 2)
        self.assertEqual(len(some["lstm_cn_wavefront.py vs 37_LSTMCn.py"]["runs"]), 3)

    def test_a_file_without_rounds_is_an_error(self):
        path = os.path.join(ROUNDS, "README.md")
        with self.assertRaises(SystemExit) as e:
            agreement_table.records_of_text(path)
        self.assertIn("no 'round N", str(e.exception))

    def test_the_committed_table_is_what_the_readme_command_prints(self):
        out = io.StringIO()
        with redirect_stdout(out):
            agreement_table.main([rounds(f) for f in ("run1.json", "run2.json", "run3.json", "run4.json",
                                                      "run5.txt", "run6.txt", "run7.json", "run8.json",
                                                      "run9.json", "run10.json", "run11.json", "run12.json")]
                                 + ["--exclude", "run1.json:lstm_bidir_persistent.py",
                                    "--exclude", "run2.json:gru_bidir_persistent.py",
                                    "--exclude", "run2.json:gru_bidir_hidden_persistent.py"])
        with open(rounds("table.md")) as f:
            self.assertEqual(out.getvalue(), f.read())


def twice_round(rnd, kb, again, kl, order=("kb", "kb2", "kl")):
    return {"round": rnd, "first": order[0], "order": list(order),
            "kernelbench": {"correct": True, "speedup": kb, "seconds": 10},
            "kernelbench_again": {"correct": True, "speedup": again, "seconds": 10},
            "kernel_lsp": {"correct": True, "speedup": kl, "seconds": 20, "why": ""}}


class KernelBenchAgainstItself(unittest.TestCase):
    def test_resampling_a_constant_figure_always_agrees_and_a_wide_one_rarely(self):
        self.assertEqual(agreement_table.self_agreement([2.0, 2.0, 2.0]), 1.0)
        self.assertLess(agreement_table.self_agreement([1.0, 2.0, 4.0, 8.0, 16.0]), 0.5)
        # seeded: the same rounds give the same share
        rounds = [29.4, 31.5, 26.2, 34.3, 28.6]
        self.assertEqual(agreement_table.self_agreement(rounds), agreement_table.self_agreement(rounds))

    def test_kb_twice_rounds_get_their_own_table(self):
        import json
        import tempfile
        recs = [{"pair": "a.py vs ref.py", "runs": [twice_round(1, 10.0, 10.4, 9.0),
                                                    twice_round(2, 12.0, 11.0, 12.5, ("kl", "kb", "kb2")),
                                                    twice_round(3, 11.0, 12.0, 11.2, ("kb2", "kl", "kb"))]}]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agreement.json")
            with open(path, "w") as f:
                json.dump(recs, f)
            out = io.StringIO()
            with redirect_stdout(out):
                agreement_table.main([path])
        text = out.getvalue()
        # medians: KB 11.0, again 11.0, kernel-lsp 11.2
        self.assertIn("| a.py vs ref.py | 3 | 10.00x / 12.00x / 11.00x | 10.40x / 11.00x / 12.00x | "
                      "9.00x / 12.50x / 11.20x | 11.00x | 11.00x | 11.20x | 1.000 | 1.018 | 1.018 |", text)
        self.assertIn("KernelBench's two evaluations within 5% of each other: 1 of 1 timed pairs; "
                      "kernel-lsp within 5% of both: 1 of 1", text)

    def test_printed_again_lines_are_read(self):
        import tempfile
        lines = ("round 1 a.py vs ref.py: KB correct 10.00x (9 s) · kernel-lsp correct 9.50x (20 s)  \n"
                 "again round 1 a.py vs ref.py: KB correct 10.60x (8 s) order kb-kb2-kl\n"
                 "round 2 a.py vs ref.py: KB correct 11.00x (9 s) · kernel-lsp correct 10.50x (21 s)  \n"
                 "again round 2 a.py vs ref.py: KB correct 11.20x (8 s) order kl-kb-kb2\n")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agreement.txt")
            with open(path, "w") as f:
                f.write(lines)
            runs = agreement_table.records_of_text(path)[0]["runs"]
        self.assertEqual([r["kernelbench_again"]["speedup"] for r in runs], [10.6, 11.2])
        self.assertEqual(runs[1]["order"], ["kl", "kb", "kb2"])
        self.assertEqual(runs[1]["first"], "kl")


if __name__ == "__main__":
    unittest.main()
