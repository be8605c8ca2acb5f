"""The Ray driver's pieces that run without Ray (ray_batch.py imports Ray only in main)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
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


# Stands in for `kernel-lsp bench --batch-serve --serve-socket PATH`: answers each
# line of each connection with its own pid, ends when PATH is removed.
FAKE_SERVER = textwrap.dedent("""
    import json, os, socket, sys
    path = sys.argv[sys.argv.index("--serve-socket") + 1]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen()
    srv.settimeout(0.2)
    while os.path.exists(path):
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        with conn, conn.makefile("rw") as f:
            for line in f:
                f.write(json.dumps({"pid": os.getpid(), "got": json.loads(line)}) + "\\n")
                f.flush()
""")

ASK = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import ray_batch
    sock = ray_batch.connect_server([sys.executable, sys.argv[2]], sys.argv[3], None)
    with sock, sock.makefile("rw") as f:
        f.write(json.dumps({"id": sys.argv[4]}) + "\\n")
        f.flush()
        print(f.readline().strip())
""")


class SharedServerTest(unittest.TestCase):
    def test_ray_worker_processes_of_one_gpu_share_one_server(self):
        here = os.path.dirname(os.path.abspath(__file__))
        tmp = tempfile.mkdtemp(prefix="klsp-ray-test-", dir="/tmp")
        self.addCleanup(shutil.rmtree, tmp, True)
        server = os.path.join(tmp, "server.py")
        with open(server, "w") as f:
            f.write(FAKE_SERVER)
        path = os.path.join(tmp, "run", "gpu-0.sock")
        # Two processes at once, as two Ray workers landing on the same GPU: one server starts.
        procs = [subprocess.Popen([sys.executable, "-c", ASK, here, server, path, f"job{i}"], stdout=subprocess.PIPE,
                                  text=True) for i in range(3)]
        answers = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
        self.assertEqual({a["got"]["id"] for a in answers}, {"job0", "job1", "job2"})
        self.assertEqual(len({a["pid"] for a in answers}), 1, answers)
        # A later task finds the same warm server.
        later = subprocess.run([sys.executable, "-c", ASK, here, server, path, "job3"], capture_output=True,
                               text=True, timeout=60)
        self.assertEqual(json.loads(later.stdout)["pid"], answers[0]["pid"], later.stderr)
        # The run's end (its folder removed) ends the server.
        shutil.rmtree(os.path.dirname(path))
        pid = answers[0]["pid"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
            time.sleep(0.1)
        with open(f"/proc/{pid}/stat") if os.path.exists(f"/proc/{pid}") else open(os.devnull) as st:
            state = st.read().split(" ")[2:3]
        self.assertIn(state, ([], ["Z"]), f"server {pid} still running")

    def test_a_socket_folder_that_is_a_link_or_another_users_is_refused(self):
        tmp = tempfile.mkdtemp(prefix="klsp-ray-test-", dir="/tmp")
        self.addCleanup(shutil.rmtree, tmp, True)
        elsewhere = os.path.join(tmp, "elsewhere")
        os.mkdir(elsewhere, 0o700)
        os.symlink(elsewhere, os.path.join(tmp, "user"))
        with self.assertRaises(RuntimeError) as caught:
            ray_batch.connect_server([sys.executable, "-c", "pass"], os.path.join(tmp, "user", "run", "gpu-0.sock"),
                                     None, start_secs=5)
        self.assertIn("not a folder of this user's own", str(caught.exception))
        # Our own folder left open to others is closed, not refused.
        mine = os.path.join(tmp, "mine")
        os.mkdir(mine)
        os.chmod(mine, 0o777)
        ray_batch.private_folders(os.path.join(mine, "run"))
        self.assertEqual(os.stat(mine).st_mode & 0o777, 0o700)
        self.assertEqual(os.stat(os.path.join(mine, "run")).st_mode & 0o777, 0o700)
        if os.getuid() == 0:  # CI runs as root: a folder another user owns
            theirs = os.path.join(tmp, "theirs")
            os.mkdir(theirs, 0o700)
            os.chown(theirs, 65534, 65534)
            with self.assertRaises(RuntimeError):
                ray_batch.private_folders(os.path.join(theirs, "run"))

    def test_a_server_that_cannot_start_is_a_clear_error(self):
        tmp = tempfile.mkdtemp(prefix="klsp-ray-test-", dir="/tmp")
        self.addCleanup(shutil.rmtree, tmp, True)
        bad = [sys.executable, "-c", "import sys; sys.stderr.write('no such option'); sys.exit(2)"]
        with self.assertRaises(RuntimeError) as caught:
            ray_batch.connect_server(bad, os.path.join(tmp, "user", "run", "gpu-1.sock"), None, start_secs=10)
        self.assertIn("did not start", str(caught.exception))
        self.assertIn("no such option", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
