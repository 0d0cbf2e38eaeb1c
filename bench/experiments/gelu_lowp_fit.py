#!/usr/bin/env python3
"""Fits the polynomial q(a) ~ log2 Phi(-a) that op_gelu_lowp (kernels/common/math.cuh) uses for a
GELU whose tensor is 16-bit, and checks an f32 model of the kernel's evaluation against the exact
GELU.

  python3 bench/experiments/gelu_lowp_fit.py [DEGREE [KNEE LOOSE]]   (default 8 9 0.02)

Needs numpy and mpmath (pip). gelu(x) = relu(x) - a Phi(-a), a = |x| clamped to 13.2, with
Phi(-a) = 2^q(a): one ex2 and DEGREE FFMA. q is a weighted least-squares fit on [0, 13.2] with
Lawson weights toward the minimax absolute error of q (ln 2 times it is the relative error of
Phi(-a), so of the negative tail); the error beyond KNEE is weighted LOOSE times less (values
there are below 1e-18). The f32 coefficients are rounded from the highest down, the rest refit
each time. The f32 model rounds each operation to f32 (an FFMA as two roundings, so a little
pessimistic), stands in exact exp2 for the SFU's ex2 and flushes subnormal results as ex2.ftz
does; GpuRegions.SixteenBitGeluIsAccurateBelowItsRounding measures the real thing.
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 30
degree = int(sys.argv[1]) if len(sys.argv) > 1 else 8
knee = float(sys.argv[2]) if len(sys.argv) > 2 else 9.0
loose = float(sys.argv[3]) if len(sys.argv) > 3 else 0.02
a_max = 13.2  # q(a_max) is about -130.8: ex2.ftz gives 0 there, the exact tail is below 1e-38

A = a_max * (1 - np.cos(np.linspace(0, np.pi, 8001))) / 2
log2_tail = np.array([float(mp.log(0.5 * mp.erfc(mp.mpf(a) / mp.sqrt(2)), 2)) for a in A])
weight = np.where(A <= knee, 1.0, loose)
V = np.stack([A**k for k in range(degree + 1)], 1)
lawson = np.ones_like(A)
for _ in range(150):
    w = lawson * weight
    c, *_ = np.linalg.lstsq(V * w[:, None], log2_tail * w, rcond=None)
    err = V @ c - log2_tail
    lawson = lawson * np.abs(err * weight) ** 0.3 + 1e-30
    lawson /= lawson.mean()
c32 = np.zeros(degree + 1, np.float32)
fixed = np.zeros_like(A)
for k in range(degree, -1, -1):
    w = lawson * weight
    ck, *_ = np.linalg.lstsq(V[:, : k + 1] * w[:, None], (log2_tail - fixed) * w, rcond=None)
    c32[k] = np.float32(ck[k])
    fixed = fixed + float(c32[k]) * A**k
print(f"degree {degree} on [0, {a_max}]: relative error of Phi(-a) "
      f"<= {np.log(2) * np.abs(err[A <= knee]).max():.3g} to a = {knee}, "
      f"{np.log(2) * np.abs(err[A > knee]).max():.3g} beyond (before f32 rounding)")
print("coefficients (a^0 first):", ", ".join(f"{v:.9g}f" for v in c32))

f = np.float32


def gelu_lowp_f32(x):
    x = f(x)
    a = np.minimum(np.abs(x), f(a_max))
    q = np.full_like(a, c32[degree])
    for k in range(degree - 1, -1, -1):
        q = f(f(q * a) + c32[k])
    t = f(np.exp2(q.astype(np.float64)))
    t = np.where(t < 2.0**-126, f(0), t)  # ex2.approx.ftz
    return f(f(x - np.minimum(x, f(0))) - f(a * t))


X = np.linspace(-13.5, 13.5, 20001)
exact = np.array([float(mp.mpf(v) * 0.5 * mp.erfc(-mp.mpf(v) / mp.sqrt(2))) for v in X])
got = gelu_lowp_f32(X).astype(np.float64)
rel = np.abs(got - exact) / np.maximum(np.abs(exact), 1e-300)
ax = np.abs(X)
for lo, hi in [(0, 3), (3, 6), (6, 9), (9, 11), (11, 13.5)]:
    m = (ax >= lo) & (ax < hi) & (np.abs(exact) > 1e-30)
    print(f"f32 model, |x| in [{lo}, {hi}): max relative error {rel[m].max():.3g}")
