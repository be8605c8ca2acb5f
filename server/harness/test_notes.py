"""Notes the harness attaches to its figures (no GPU needed):
    python3 -m unittest discover -s server/harness -p 'test_*.py'"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness


class LaunchBoundNote(unittest.TestCase):
    def test_a_reference_mostly_launching_kernels_gets_the_note(self):
        # cuDNN's GRU on an H100: 63.1 ms eager, 8.9 ms replayed as a CUDA graph
        note = harness.launch_bound_note(63.1, 8.9)
        self.assertIn("launch-bound reference (63.1 ms eager, 8.9 ms as a CUDA graph)", note)
        self.assertIn("compare runs by the CUDA-graph speedup", note)

    def test_a_gpu_bound_reference_gets_none(self):
        # a 4096 x 4096 matrix product: the graph saves nothing
        self.assertIsNone(harness.launch_bound_note(2.72, 2.68))
        self.assertIsNone(harness.launch_bound_note(1.9, 1.0))
        self.assertIsNotNone(harness.launch_bound_note(2.0, 1.0))

    def test_no_graph_time_no_note(self):
        self.assertIsNone(harness.launch_bound_note(63.1, None))
        self.assertIsNone(harness.launch_bound_note(63.1, 0.0))


if __name__ == "__main__":
    unittest.main()
