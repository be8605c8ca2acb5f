"""agreement_table.py on the committed H100 rounds (no GPU needed):
    python3 -m unittest discover -s scripts/gpu-proof -p 'test_*.py'"""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROUNDS = os.path.join(HERE, "..", "..", "docs", "results", "agreement-h100-rounds")
sys.path.insert(0, HERE)
import agreement_table
import bias_probe


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

    def test_the_printed_lines_of_runs_7_to_9_and_14_match_their_json(self):
        # run8's time limit stopped it after round 7 of 9: its printed lines and JSON both hold 7
        # run14's time limit stopped it in round 12 of 20: both hold 11
        for run in ("run7", "run8", "run9", "run14"):
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
                                                      "run9.json", "run10.json", "run11.json", "run12.json",
                                                      "run13.json", "run14.json")]
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


BIAS = os.path.join(HERE, "..", "..", "docs", "results", "bias-h100")


def probe_line(mode, rnd, pos, order, speedup):
    """One bias.jsonl process record, as bias_probe.run_mode writes it (detail: agreement.py's own)."""
    if mode == "a":
        detail = {"correct": True, "speedup": speedup, "seconds": 10, "why": ""}
    else:
        detail = {"correct": True, "speedup": speedup, "seconds": 20, "why": "", "message": "", "result": {}}
    return {"mode": mode, "round": rnd, "pos": pos, "order": order, "speedup": speedup, "correct": True,
            "detail": detail, "seconds": 1}


class BiasProbeAsAgreement(unittest.TestCase):
    def test_run13_is_what_the_converter_makes_of_the_probe_records(self):
        made = bias_probe.as_agreement([os.path.join(BIAS, "call1", "bias.jsonl"),
                                        os.path.join(BIAS, "call2", "bias.jsonl")])
        with open(rounds("run13.json")) as f:
            self.assertEqual(json.loads(json.dumps(made, default=str)), json.load(f))
        # 2 + 5 rounds of 39 (call 1's third round stopped before a and b), speedups of modes a and b
        (rec,) = made
        self.assertEqual(rec["pair"], "gru_wavefront.py vs 39_GRU.py")
        self.assertEqual([r["round"] for r in rec["runs"]], list(range(1, 8)))
        self.assertEqual([r["first"] for r in rec["runs"]], ["kb", "kl", "kb", "kl", "kb", "kb", "kb"])
        self.assertAlmostEqual(rec["runs"][1]["kernelbench"]["speedup"], 30.3015, places=3)
        self.assertAlmostEqual(rec["runs"][1]["kernel_lsp"]["speedup"], 26.4615, places=3)
        self.assertEqual(rec["runs"][1]["probe"]["between"], ["c", "d", "e"])

    def test_rounds_pair_a_with_b_and_leave_the_other_modes_and_half_rounds_out(self):
        lines = [{"mode": "meta", "ref": "/x/KernelBench/level3/39_GRU.py", "cand": "/y/gru_wavefront.py"},
                 probe_line("a", 1, 0, ["a", "b", "c"], 10.0), probe_line("b", 1, 1, ["a", "b", "c"], 9.0),
                 probe_line("c", 1, 2, ["a", "b", "c"], 99.0),
                 probe_line("b", 2, 0, ["b", "c", "a"], 12.0), probe_line("c", 2, 1, ["b", "c", "a"], 99.0),
                 probe_line("a", 2, 2, ["b", "c", "a"], 11.0),
                 probe_line("c", 3, 0, ["c", "a", "b"], 99.0), probe_line("a", 3, 1, ["c", "a", "b"], 13.0)]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bias.jsonl")
            with open(path, "w") as f:
                f.write("".join(json.dumps(x) + "\n" for x in lines))
            (rec,) = bias_probe.as_agreement([path])
            table = io.StringIO()
            with redirect_stdout(table):
                out = os.path.join(d, "run.json")
                with open(out, "w") as f:
                    json.dump([rec], f)
                agreement_table.main([out])
        self.assertEqual(rec["pair"], "gru_wavefront.py vs 39_GRU.py")
        runs = rec["runs"]
        self.assertEqual([(r["kernelbench"]["speedup"], r["kernel_lsp"]["speedup"]) for r in runs],
                         [(10.0, 9.0), (11.0, 12.0)])
        self.assertEqual([(r["first"], r["order"]) for r in runs], [("kb", ["kb", "kl"]), ("kl", ["kl", "kb"])])
        self.assertEqual(runs[1]["probe"], {"file": "bias.jsonl", "round": 2, "modes": ["b", "c", "a"],
                                            "between": ["c"]})
        self.assertEqual((rec["kernelbench_median"], rec["kernel_lsp_median"]), (10.5, 10.5))
        self.assertIn("| gru_wavefront.py vs 39_GRU.py | 2 | correct / correct, same | 10.00x / 11.00x | "
                      "9.00x / 12.00x | 10.50x | 10.50x | 1.000 |", table.getvalue())


if __name__ == "__main__":
    unittest.main()
