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
                                                      "run9.json")]
                                 + ["--exclude", "run1.json:lstm_bidir_persistent.py",
                                    "--exclude", "run2.json:gru_bidir_persistent.py",
                                    "--exclude", "run2.json:gru_bidir_hidden_persistent.py"])
        with open(rounds("table.md")) as f:
            self.assertEqual(out.getvalue(), f.read())


if __name__ == "__main__":
    unittest.main()
