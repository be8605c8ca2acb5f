"""The Ray driver's pieces that run without Ray (ray_batch.py imports Ray only in main)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ray_batch  # noqa: E402


class ServerEnvTest(unittest.TestCase):
    def test_rays_forced_single_thread_does_not_reach_the_run(self):
        # A Ray worker of a task with num_cpus=0 has OMP_NUM_THREADS=1 (Ray sets it); the
        # driver had none: the --batch-serve process gets none, as under the per-host pool.
        env = ray_batch.server_env({"OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "1"}, None)
        self.assertNotIn("OMP_NUM_THREADS", env)
        self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "1")

    def test_the_drivers_own_setting_is_kept(self):
        env = ray_batch.server_env({"OMP_NUM_THREADS": "1"}, "8")
        self.assertEqual(env["OMP_NUM_THREADS"], "8")


if __name__ == "__main__":
    unittest.main()
