"""Executables through the Python binding: compile, query, execute with a pinned_host argument read in place and
an intra-graph move, statistics, the strict placement error, misuse."""
import threading
import unittest

import numpy as np

import neuronmem as nm
from neuronmem import MemoryKind, NeuronMemError, StatusCode

TEXT = """func.func @main(%w: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) {
  %0 = stablehlo.multiply %w, %x : tensor<4xf32>
  %1 = stablehlo.custom_call @MoveToHost(%0) {backend_config = ""} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
"""


class ExecutableTest(unittest.TestCase):
    def test_compile_query_execute_statistics(self):
        with nm.Client(num_cores=2, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            dev = c.devices[1]
            with nm.Executable.compile(c, TEXT, filename="py.mlir") as exe:
                props = exe.properties()
                self.assertEqual((props["num_parameters"], props["num_outputs"], props["num_replicas"],
                                  props["num_explicit_moves"]), (2, 2, 2, 1))
                self.assertEqual([p.memory_kind for p in exe.parameters], [MemoryKind.PINNED_HOST, MemoryKind.DEVICE])
                self.assertEqual([o.memory_kind for o in exe.outputs], [MemoryKind.DEVICE, MemoryKind.PINNED_HOST])
                self.assertEqual(exe.outputs[1].shape, (4,))
                self.assertEqual(exe.parameter_memory(dev, 0).id, 3)
                self.assertEqual(exe.output_memory(dev, 0).id, 2)
                w = nm.Buffer.from_numpy(np.array([1, 2, 3, 4], np.float32), exe.parameter_memory(dev, 0))
                x = nm.Buffer.from_numpy(np.full(4, 2, np.float32), exe.parameter_memory(dev, 1))
                results, done, run = exe.execute(dev, [w, x])
                done.wait()
                np.testing.assert_array_equal(results[1].to_numpy(), [2, 4, 6, 8])
                self.assertEqual(results[1].memory.kind, MemoryKind.PINNED_HOST)
                st = run.stats()
                self.assertEqual((st["explicit_transfers"], st["explicit_bytes"], st["implicit_transfers"]),
                                 (1, 16, 0))
                tc = run.transfers(MemoryKind.DEVICE, MemoryKind.PINNED_HOST)
                self.assertEqual((tc["explicit_transfers"], tc["implicit_transfers"]), (1, 0))
                with self.assertRaises(NeuronMemError) as cm:
                    run.transfers(7, MemoryKind.DEVICE)
                self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
                # Strict placement: the weights in device memory are refused.
                misplaced = nm.Buffer.from_numpy(np.ones(4, np.float32), dev.default_memory)
                with self.assertRaises(NeuronMemError) as cm:
                    exe.execute(dev, [misplaced, x])
                self.assertEqual(cm.exception.code, StatusCode.FAILED_PRECONDITION)
                with self.assertRaises(NeuronMemError) as cm:
                    exe.execute(dev, [x])
                self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
                run.close()
                for b in results + [w, x, misplaced]:
                    b.close()
            with self.assertRaises(NeuronMemError) as cm:
                exe.properties()  # use after close
            self.assertEqual(cm.exception.code, StatusCode.FAILED_PRECONDITION)
            with self.assertRaises(NeuronMemError) as cm:
                nm.Executable.compile(c, "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                                         "  %0 = stablehlo.custom_call @nope(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
                                         "  return %0 : tensor<2xf32>\n}\n", filename="bad.mlir")
            self.assertEqual(cm.exception.code, StatusCode.UNIMPLEMENTED)
            self.assertIn("bad.mlir:", cm.exception.message)

    def test_shape_polymorphic_entry_specializes_per_shape(self):
        # jax.export with a symbolic dimension b: @main over tensor<?x3xf32>, b >= 1 checked, the body in a private
        # function that takes b as a jax.global_constant argument.
        text = """module @jit_f attributes {jax.uses_shape_polymorphism = true} {
  func.func public @main(%arg0: tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<3xf32>) {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
    %c = stablehlo.constant dense<1> : tensor<i64>
    %2 = stablehlo.compare  GE, %1, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.custom_call @shape_assertion(%2, %1) {api_version = 2 : i32, has_side_effect = true,
        error_message = "Expected value >= 1 for dimension variable 'b'. Obtained 'b' = {0}."}
        : (tensor<i1>, tensor<i64>) -> ()
    %3:2 = call @_wrapped_jax_export_main(%1, %arg0)
        : (tensor<i64>, tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<3xf32>)
    return %3#0, %3#1 : tensor<?x3xf32>, tensor<3xf32>
  }
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = "b"},
      %arg1: tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<3xf32>) {
    %0 = stablehlo.tanh %arg1 : tensor<?x3xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%arg1 init: %cst) applies stablehlo.add across dimensions = [0]
        : (tensor<?x3xf32>, tensor<f32>) -> tensor<3xf32>
    return %0, %1 : tensor<?x3xf32>, tensor<3xf32>
  }
}
"""
        with nm.Client(num_cores=1) as c:
            dev = c.devices[0]
            with nm.Executable.compile(c, text, filename="poly.mlir") as exe:
                self.assertEqual(exe.parameters[0].shape, (-1, 3))
                self.assertEqual(exe.properties()["num_specializations"], 0)
                for b in (2, 4, 2):
                    x = np.arange(3 * b, dtype=np.float32).reshape(b, 3) / 10
                    arg = nm.Buffer.from_numpy(x, exe.parameter_memory(dev, 0))
                    results, done, run = exe.execute(dev, [arg])
                    done.wait()
                    np.testing.assert_allclose(results[0].to_numpy(), np.tanh(x), rtol=1e-6)
                    np.testing.assert_allclose(results[1].to_numpy(), x.sum(axis=0), rtol=1e-6)
                    for r in results + [arg]:
                        r.close()
                    run.close()
                self.assertEqual(exe.properties()["num_specializations"], 2)
                empty = nm.Buffer.from_numpy(np.zeros((0, 3), np.float32), exe.parameter_memory(dev, 0))
                with self.assertRaises(NeuronMemError) as cm:
                    results, done, run = exe.execute(dev, [empty])
                    done.wait()
                self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
                self.assertIn("Expected value >= 1 for dimension variable 'b'. Obtained 'b' = 0.", str(cm.exception))
                wrong = nm.Buffer.from_numpy(np.zeros((2, 4), np.float32), exe.parameter_memory(dev, 0))
                with self.assertRaises(NeuronMemError) as cm:
                    exe.execute(dev, [wrong])
                self.assertIn("does not fit its type tensor<?x3xf32>", str(cm.exception))
                empty.close()
                wrong.close()

    def test_compile_a_manifest(self):
        with nm.Client(num_cores=2, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            with nm.Manifest.load_text(TEXT) as m, nm.Executable.from_manifest(c, m) as exe:
                self.assertEqual(len(exe.parameters), 2)

    def test_launch_on_several_devices(self):
        text = """module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""
        with nm.Client(num_cores=2, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            with nm.Executable.compile(c, text, filename="spmd.mlir") as exe:
                props = exe.properties()
                self.assertEqual((props["num_replicas"], props["num_partitions"]), (1, 2))
                self.assertEqual([exe.logical_ids(d) for d in c.devices], [(0, 0), (0, 1)])
                args = [[nm.Buffer.from_numpy(np.full(4, d + 1, np.float32), dev.default_memory)]
                        for d, dev in enumerate(c.devices)]
                gate = c.create_event()
                results, done, runs = exe.execute_devices(c.devices, args, waits=[[gate], []])
                done[1].wait()  # device 1 waits for nothing
                self.assertFalse(done[0].is_ready)
                gate.complete()
                done[0].wait()
                for d in range(2):
                    np.testing.assert_array_equal(results[d][0].to_numpy(), np.full(4, 2 * (d + 1)))
                    self.assertEqual(results[d][0].memory.id, c.devices[d].default_memory.id)
                    st = runs[d].stats()
                    self.assertEqual((st["peer_transfers"], st["peer_bytes"], st["implicit_transfers"]), (0, 0, 0))
                    self.assertEqual(runs[d].transfers(MemoryKind.DEVICE, MemoryKind.DEVICE)["peer_bytes"], 0)
                # A device listed twice: nothing submitted.
                with self.assertRaises(NeuronMemError) as cm:
                    exe.execute_devices([c.devices[0], c.devices[0]], [args[0], args[0]])
                self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
                self.assertIn("listed twice", cm.exception.message)
                for r in runs + done + [gate]:
                    r.close()
                for b in [b for lst in results + args for b in lst]:
                    b.close()
            with nm.Executable.compile(c, text, num_partitions=1, num_replicas=1) as one:
                self.assertEqual(one.properties()["num_partitions"], 1)
                with self.assertRaises(NeuronMemError) as cm:
                    one.logical_ids(c.devices[1])
                self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)

    def test_manual_computation_on_both_cores(self):
        # psum over "x"=2 in a shard_map: each half of f32[4] gets the sum of both; the devices run on both cores.
        text = """module @m {
  sdy.mesh @mesh = <["x"=2]>
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>]
        manual_axes={"x"} (%a: tensor<2xf32>) {
      %s = "stablehlo.all_reduce"(%a) ({
        ^bb0(%x: tensor<f32>, %y: tensor<f32>):
          %t = stablehlo.add %x, %y : tensor<f32>
          stablehlo.return %t : tensor<f32>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
          channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids}
          : (tensor<2xf32>) -> tensor<2xf32>
      sdy.return %s : tensor<2xf32>
    } : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
"""
        with nm.Client(num_cores=2, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            with nm.Executable.compile(c, text, filename="manual.mlir") as exe:
                self.assertEqual(exe.num_manual_devices, 2)
                self.assertEqual(exe.properties()["num_manual_devices"], 2)
                dev = c.devices[0]
                a = nm.Buffer.from_numpy(np.array([1, 2, 30, 40], np.float32), dev.default_memory)
                results, done, run = exe.execute(dev, [a])
                done.wait()
                np.testing.assert_array_equal(results[0].to_numpy(), [31, 42, 31, 42])
                st = run.stats()
                self.assertEqual((st["manual_cores"], st["manual_threads"]), (2, 0))
                for r in results + [done, run, a]:
                    r.close()
            with nm.Executable.compile(c, TEXT) as plain:
                self.assertEqual(plain.num_manual_devices, 0)

    def test_host_transfers_through_callbacks(self):
        text = """func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>,
      is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  %r:2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 6, type = 3>,
      is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %y = stablehlo.add %x, %r#0 : tensor<2xf32>
  return %y : tensor<2xf32>
}
"""
        sent = {}

        def on_send(t):
            sent[t.device] = t.tensors[0].copy()
            self.assertFalse(t.tensors[0].flags.writeable)
            if t.device == 1:
                raise NeuronMemError(StatusCode.DATA_LOSS, "the host is gone")

        def on_recv(t):
            t.tensors[0][:] = 100 * (t.device + 1)

        with nm.Client(num_cores=2, device_bytes_per_core=2 << 20, pinned_host_bytes=32 << 20) as c:
            with nm.Executable.compile(c, text, filename="host.mlir") as exe:
                args = [[nm.Buffer.from_numpy(np.array([d + 1, d + 2], np.float32), dev.default_memory)]
                        for d, dev in enumerate(c.devices)]
                results, done, runs = exe.execute_devices(c.devices, args, send_callbacks={5: on_send},
                                                          recv_callbacks={6: on_recv})
                # Callbacks of an event run in the order they were registered: once ours ran on both events,
                # the binding's release of the host callbacks (registered by execute_devices) has run too.
                after = threading.Semaphore(0)
                for ev in done:
                    ev.on_ready(lambda _err: after.release())
                done[0].wait()
                np.testing.assert_array_equal(results[0][0].to_numpy(), [101, 102])
                with self.assertRaises(NeuronMemError) as cm:
                    done[1].wait()
                self.assertEqual(cm.exception.code, StatusCode.DATA_LOSS)
                self.assertIn("the send callback of channel 5: the host is gone", cm.exception.message)
                np.testing.assert_array_equal(sent[0], [1, 2])
                np.testing.assert_array_equal(sent[1], [2, 3])
                # A missing callback: refused at execute, naming the channel.
                with self.assertRaises(NeuronMemError) as cm:
                    exe.execute_devices(c.devices, args, send_callbacks={5: on_send})
                self.assertEqual(cm.exception.code, StatusCode.INVALID_ARGUMENT)
                self.assertIn("channel 6 has no recv callback", cm.exception.message)
                for _ in done:
                    after.acquire()
                self.assertFalse(nm._host_callbacks)  # released once the launch finished
                for r in runs + done:
                    r.close()
                for b in [b for lst in results + args for b in lst]:
                    b.close()


if __name__ == "__main__":
    unittest.main()
