"""A job of two processes through the binding (docs/distributed.md): forked processes bootstrap through a
directory store, see global device ids, and only their own devices are addressable."""
import os
import sys
import tempfile
import time
import unittest

import neuronmem as nm
from neuronmem import NeuronMemError, StatusCode

# The provider of the library's own multi-process tests (tests/dist); libfabric reads it when first used.
os.environ.setdefault("FI_PROVIDER", "tcp")
SMALL = dict(num_cores=2, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20)


def run_processes(n, body, limit=150):
    """Runs body(i) in n forked processes; returns their exit codes (a process still running after `limit`
    seconds is killed and reports -9)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            code = 99
            try:
                code = body(i)
            except BaseException as e:  # noqa: BLE001 - reported through the exit code
                print(f"process {i}: {e!r}", file=sys.stderr)
            finally:
                sys.stderr.flush()
                os._exit(code)
        pids.append(pid)
    codes = [None] * n
    deadline = time.monotonic() + limit
    while None in codes:
        for k, pid in enumerate(pids):
            if codes[k] is None:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done == pid:
                    codes[k] = os.waitstatus_to_exitcode(status)
        if None in codes and time.monotonic() > deadline:
            for k, pid in enumerate(pids):
                if codes[k] is None:
                    os.kill(pid, 9)
        time.sleep(0.01)
    return codes


class DistributedTest(unittest.TestCase):
    def test_two_processes_see_global_ids(self):
        with tempfile.TemporaryDirectory() as store:
            def body(i):
                with nm.Client(**SMALL, process_index=i, num_processes=2, store_dir=store,
                               bootstrap_timeout=60) as client:
                    if client.process != (i, 2):
                        return 1
                    ids = [d.describe()["id"] for d in client.devices]
                    if ids != [2 * i, 2 * i + 1]:
                        return 2
                    other = client.describe_device_id(2 * (1 - i))
                    if other["debug_string"] != f"NeuronCore(id={2 * (1 - i)}, process_index={1 - i}, local_id=0)":
                        return 3
                    try:
                        client.lookup_device(2 * (1 - i))
                        return 4
                    except NeuronMemError as e:
                        if e.code != StatusCode.NOT_FOUND or f"belongs to process {1 - i}" not in str(e):
                            return 5
                return 0
            self.assertEqual(run_processes(2, body), [0, 0])

    def test_a_launch_across_two_processes(self):
        # An all_reduce over the job's 4 devices (2 per process): each process launches its own two.
        text = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
        import numpy as np
        with tempfile.TemporaryDirectory() as store:
            def body(i):
                with nm.Client(**SMALL, process_index=i, num_processes=2, store_dir=store,
                               bootstrap_timeout=60) as client:
                    with nm.Executable.compile(client, text, filename="job.mlir", num_replicas=4) as exe:
                        if [exe.logical_ids(d) for d in client.devices] != [(2 * i, 0), (2 * i + 1, 0)]:
                            return 1
                        args = [[nm.Buffer.from_numpy(np.full(4, 2 * i + k + 1, np.float32), d.default_memory)]
                                for k, d in enumerate(client.devices)]
                        results, done, runs = exe.execute_devices(client.devices, args, launch_id=3)
                        for e in done:
                            e.wait()
                        for r in results:
                            if not np.array_equal(r[0].to_numpy(), np.full(4, 1 + 2 + 3 + 4, np.float32)):
                                return 2
                        # The all_reduce folds along the group (docs/distributed.md): each process's first device
                        # takes its other device's operand and the accumulator (process 1) or the result (process
                        # 0) from the other process, 4 floats each; the second device copies the result from it.
                        if [run.stats()["peer_bytes"] for run in runs] != [2 * 16, 16]:
                            return 3
                        # One message each way between the processes (its descriptor and inline part included).
                        t = client.job_traffic
                        if (t["messages_sent"], t["messages_received"], t["messages_dropped"]) != (1, 1, 0):
                            return 4
                        if not 16 <= t["bytes_sent"] <= 8192:
                            return 5
                return 0
            self.assertEqual(run_processes(2, body), [0, 0])

    def test_a_peer_that_never_joins(self):
        # In a forked process too: libfabric is opened only in processes that fork nothing afterwards.
        with tempfile.TemporaryDirectory() as store:
            def body(_):
                try:
                    nm.Client(**SMALL, process_index=0, num_processes=2, store_dir=store, bootstrap_timeout=0.5)
                    return 1
                except NeuronMemError as e:
                    return 0 if e.code == StatusCode.DEADLINE_EXCEEDED and "process(es) 1" in str(e) else 2
            self.assertEqual(run_processes(1, body), [0])
        with self.assertRaises(ValueError):
            nm.Client(**SMALL, num_processes=2)

    def test_one_process_is_as_before(self):
        with nm.Client(**SMALL) as client:
            self.assertEqual(client.process, (0, 1))
            self.assertEqual(client.describe_device_id(1)["debug_string"],
                             "NeuronCore(id=1, process_index=0, local_id=1)")
            with self.assertRaises(NeuronMemError) as cm:
                client.describe_device_id(2)
            self.assertEqual(cm.exception.code, StatusCode.NOT_FOUND)


if __name__ == "__main__":
    unittest.main()
