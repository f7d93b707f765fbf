"""The ctypes declarations against the installed C header: every struct's size, published size and field
offsets (bindings/layout/layout_dump.c compiled with the system compiler), and every public function bound."""
import os
import re
import subprocess
import tempfile
import unittest

from neuronmem import _capi as C

from . import support

STRUCTS = {
    "neuronmem_string_t": C.String, "neuronmem_extension_base_t": C.ExtensionBase,
    "neuronmem_client_options_t": C.ClientOptions, "neuronmem_device_description_t": C.DeviceDescription,
    "neuronmem_memory_description_t": C.MemoryDescription, "neuronmem_memory_stats_t": C.MemoryStats,
    "neuronmem_job_traffic_t": C.JobTraffic,
    "neuronmem_event_list_t": C.EventList, "neuronmem_buffer_from_host_args_t": C.BufferFromHostArgs,
    "neuronmem_buffer_allocate_args_t": C.BufferAllocateArgs, "neuronmem_buffer_copy_args_t": C.BufferCopyArgs,
    "neuronmem_buffer_read_args_t": C.BufferReadArgs, "neuronmem_buffer_write_args_t": C.BufferWriteArgs,
    "neuronmem_buffer_chunk_args_t": C.BufferChunkArgs, "neuronmem_buffer_load_file_args_t": C.BufferLoadFileArgs,
    "neuronmem_manifest_options_t": C.ManifestOptions, "neuronmem_manifest_counts_t": C.ManifestCounts,
    "neuronmem_manifest_value_t": C.ManifestValue, "neuronmem_manifest_move_t": C.ManifestMove,
    "neuronmem_manifest_kernel_t": C.ManifestKernel, "neuronmem_manifest_channel_t": C.ManifestChannel,
    "neuronmem_manifest_composite_t": C.ManifestComposite,
    "neuronmem_manifest_upload_args_t": C.ManifestUploadArgs, "neuronmem_compile_options_t": C.CompileOptions,
    "neuronmem_executable_properties_t": C.ExecutableProperties,
    "neuronmem_executable_value_t": C.ExecutableValue, "neuronmem_execute_args_t": C.ExecuteArgs,
    "neuronmem_execute_devices_args_t": C.ExecuteDevicesArgs, "neuronmem_host_transfer_t": C.HostTransfer,
    "neuronmem_host_callback_t": C.HostCallback,
    "neuronmem_execution_stats_t": C.ExecutionStats, "neuronmem_transfer_counts_t": C.TransferCounts,
    "neuronmem_kernel_tensor_t": C.KernelTensor, "neuronmem_kernel_call_t": C.KernelCall,
    "neuronmem_kernel_registration_t": C.KernelRegistration,
}


class LayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as tmp:
            exe = os.path.join(tmp, "layout_dump")
            cc = os.environ.get("CC", "cc")
            subprocess.run([cc, "-std=c17", "-Wall", "-Werror", support.LAYOUT_DUMP, "-o", exe] + support.cflags(),
                           check=True)
            cls.lines = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.splitlines()

    def test_every_struct_and_field_matches_the_header(self):
        seen = set()
        for line in self.lines:
            name, field, offset, size = line.split()
            struct = STRUCTS[name]
            seen.add(name)
            if field == "-":
                self.assertEqual(ctypes_sizeof(struct), int(size), name)
                if struct in C.STRUCT_SIZES:
                    self.assertEqual(C.STRUCT_SIZES[struct], int(offset), name + " published size")
            else:
                self.assertEqual(getattr(struct, field).offset, int(offset), f"{name}.{field}")
                self.assertEqual(getattr(struct, field).size, int(size), f"{name}.{field}")
        self.assertEqual(seen, set(STRUCTS))
        for name, struct in STRUCTS.items():  # no field the header lacks
            fields = {ln.split()[1] for ln in self.lines if ln.split()[0] == name} - {"-"}
            self.assertEqual(fields, {f for f, _ in struct._fields_}, name)

    def test_every_public_function_is_bound(self):
        inc = os.path.join(support.include_dir(), "neuronmem")
        declared = set()
        for header in C.COVERED_HEADERS:  # a header added later is bound (and listed there) in its own change
            with open(os.path.join(inc, header)) as f:
                text = f.read()
            declared |= set(re.findall(r"NEURONMEM_API[^;(]*?\b(neuronmem_\w+)\s*\(", text))
        self.assertGreater(len(declared), 60)
        self.assertEqual(declared - C.BOUND_FUNCTIONS, set(), "public functions without a binding")
        self.assertEqual(C.BOUND_FUNCTIONS - declared, set(), "bindings of functions the header lacks")


def ctypes_sizeof(struct):
    import ctypes
    return ctypes.sizeof(struct)


if __name__ == "__main__":
    unittest.main()
