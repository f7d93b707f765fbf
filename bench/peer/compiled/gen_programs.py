#!/usr/bin/env python3
"""The programs issue 28 adds to the compiled peer's table (../shared/tools/compiled-peer/gen_programs.py writes
the first four): an MLP block with the activations JAX lowers (gelu, tanh approximation; silu, logistic) and a
softmax over the last axis (f32[1024x1024] and the decode step's attention scores, f32[64x4x256]), in the forms
jax.nn.gelu(approximate=True), jax.nn.silu and jax.nn.softmax lower to (scalar constants as splats of the full
shape, x**3 as two multiplies, the max/subtract/exp/sum/divide pattern). Inputs are @main arguments.

usage: gen_programs.py [OUT_DIR]   (default: ../programs, the copies bench_peer reads; run_peer.sh lowers them)
"""
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs")
os.makedirs(out, exist_ok=True)


def t(*dims):
    return "tensor<" + "x".join(str(d) for d in dims) + "xf32>"


def write(name, lines):
    with open(os.path.join(out, name + ".mlir"), "w") as f:
        f.write("\n".join(lines) + "\n")


def mlp(name, m, k, n, act):
    """y = act(x . W1 + b1) . W2 + b2 + x, x f32[m x k], W1 [k x n], W2 [n x k]."""
    X, H, W1, W2 = t(m, k), t(m, n), t(k, n), t(n, k)
    L = [f"func.func @main(%x: {X}, %w1: {W1}, %b1: {t(n)}, %w2: {W2}, %b2: {t(k)}) -> {X} {{",
         f"  %h0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : ({X}, {W1}) -> {H}",
         f"  %bb1 = stablehlo.broadcast_in_dim %b1, dims = [1] : ({t(n)}) -> {H}",
         f"  %h = stablehlo.add %h0, %bb1 : {H}"]
    if act == "gelu":  # x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
        L += [f"  %c0 = stablehlo.constant dense<4.471500e-02> : {H}",
              f"  %c1 = stablehlo.constant dense<0.797884583> : {H}",
              f"  %c2 = stablehlo.constant dense<1.000000e+00> : {H}",
              f"  %c3 = stablehlo.constant dense<5.000000e-01> : {H}",
              f"  %x2 = stablehlo.multiply %h, %h : {H}",
              f"  %x3 = stablehlo.multiply %x2, %h : {H}",
              f"  %g0 = stablehlo.multiply %c0, %x3 : {H}",
              f"  %g1 = stablehlo.add %h, %g0 : {H}",
              f"  %g2 = stablehlo.multiply %c1, %g1 : {H}",
              f"  %g3 = stablehlo.tanh %g2 : {H}",
              f"  %g4 = stablehlo.add %c2, %g3 : {H}",
              f"  %g5 = stablehlo.multiply %c3, %g4 : {H}",
              f"  %a = stablehlo.multiply %h, %g5 : {H}"]
    elif act == "silu":  # x * logistic(x)
        L += [f"  %s = stablehlo.logistic %h : {H}",
              f"  %a = stablehlo.multiply %h, %s : {H}"]
    else:
        raise ValueError(act)
    L += [f"  %y0 = stablehlo.dot_general %a, %w2, contracting_dims = [1] x [0] : ({H}, {W2}) -> {X}",
          f"  %bb2 = stablehlo.broadcast_in_dim %b2, dims = [1] : ({t(k)}) -> {X}",
          f"  %y1 = stablehlo.add %y0, %bb2 : {X}",
          f"  %y = stablehlo.add %y1, %x : {X}",
          f"  return %y : {X}",
          "}"]
    write(name, L)


def softmax(name, dims):
    """jax.nn.softmax over the last axis."""
    T, R = t(*dims), t(*dims[:-1])
    last = len(dims) - 1
    keep = ", ".join(str(i) for i in range(last))
    write(name, [
        f"func.func @main(%x: {T}) -> {T} {{",
        "  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>",
        "  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>",
        f"  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [{last}]"
        f" : ({T}, tensor<f32>) -> {R}",
        f"  %mb = stablehlo.broadcast_in_dim %m, dims = [{keep}] : ({R}) -> {T}",
        f"  %d = stablehlo.subtract %x, %mb : {T}",
        f"  %e = stablehlo.exponential %d : {T}",
        f"  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [{last}]"
        f" : ({T}, tensor<f32>) -> {R}",
        f"  %sb = stablehlo.broadcast_in_dim %s, dims = [{keep}] : ({R}) -> {T}",
        f"  %y = stablehlo.divide %e, %sb : {T}",
        f"  return %y : {T}",
        "}"])


mlp("mlp_gelu_64x1024x4096", 64, 1024, 4096, "gelu")
mlp("mlp_silu_64x1024x4096", 64, 1024, 4096, "silu")
softmax("softmax_1024x1024", [1024, 1024])
softmax("softmax_64x4x256", [64, 4, 256])
