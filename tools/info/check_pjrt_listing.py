#!/usr/bin/env python3
"""Runs neuronmem-info through the C API and through the PJRT plugin (--pjrt) and checks that both list the
same platform and the same devices with the same memories, and that the plugin lists the memory-descriptions
extension.

usage: check_pjrt_listing.py NEURONMEM_INFO PLUGIN"""
import subprocess
import sys


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    platform = [l for l in lines if l.startswith("platform:")]
    devices = lines[lines.index("devices:"):]
    return out, platform, devices


def main(argv):
    info, plugin = argv[1], argv[2]
    args = ["--cores", "2", "--device-mib", "8", "--pinned-mib", "32", "--no-stats"]
    c_out, c_platform, c_devices = run([info] + args)
    p_out, p_platform, p_devices = run([info, "--pjrt", plugin] + args)
    errors = []
    if c_platform != p_platform or c_platform != ["platform: neuron"]:
        errors.append(f"platform: C API {c_platform}, PJRT {p_platform}")
    if c_devices != p_devices:
        errors.append("devices differ:\n--- C API\n" + "\n".join(c_devices) + "\n--- PJRT\n" + "\n".join(p_devices))
    if "memory_descriptions" not in p_out.split("extensions:")[1].split("devices:")[0]:
        errors.append("the plugin lists no memory_descriptions extension")
    print(p_out)
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
