#!/usr/bin/env python3
"""Fits the rational R(a) ~ Phi(-a) exp(a^2 / 2) that op_gelu (kernels/common/math.cuh) uses,
and checks an f32 model of the kernel's evaluation against the exact GELU.

  python3 bench/experiments/gelu_fit.py [M N]   (numerator / denominator degree, default 4 5)

Needs numpy and mpmath (pip). The fit is a linearised least-squares iteration (each step divides
the residual by the last denominator) with Lawson weights toward the minimax relative error on
[0, 13], Chebyshev-spaced points. The f32 model rounds each operation to f32 and stands in exact
exp2 and reciprocal for the SFU's approximations, so the GPU can differ by an ulp or so
(GpuRegions.GeluIsAccurateElementByElement measures the real thing).
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40
m, n = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (4, 5)
a_max = 13.0
A = a_max * (1 - np.cos(np.linspace(0, np.pi, 12001))) / 2
R_exact = np.array([float(0.5 * mp.erfc(mp.mpf(a) / mp.sqrt(2)) * mp.exp(mp.mpf(a) ** 2 / 2)) for a in A])

P_cols = np.stack([A**k for k in range(m + 1)], 1)
Q_cols = np.stack([A**k for k in range(1, n + 1)], 1)
q_last, lawson = np.ones_like(A), np.ones_like(A)
for _ in range(60):
    w = lawson / (R_exact * q_last)
    x, *_ = np.linalg.lstsq(np.concatenate([P_cols, -R_exact[:, None] * Q_cols], 1) * w[:, None], R_exact * w, rcond=None)
    p, q = x[: m + 1], x[m + 1 :]
    Q = 1 + Q_cols @ q
    rel = (P_cols @ p) / Q / R_exact - 1
    q_last = Q
    lawson = lawson * np.abs(rel) ** 0.3
    lawson /= lawson.mean()
print(f"({m}, {n}) rational on [0, {a_max}]: max relative error {np.abs(rel).max():.3g}")
p32, q32 = p.astype(np.float32), q.astype(np.float32)
print("numerator (a^0 first):  ", ", ".join(f"{v:.9g}f" for v in p32))
print("denominator (a^1 first):", ", ".join(f"{v:.9g}f" for v in q32))
aa = np.linspace(0, 20, 10001)
print(f"on [0, 20]: min Q {1 + sum(q[k - 1] * aa**k for k in range(1, n + 1)).min():.3g}, "
      f"min P {sum(p[k] * aa**k for k in range(m + 1)).min():.3g} (both must stay positive)")

f = np.float32


def gelu_f32(x):
    x = f(x)
    a = np.minimum(np.abs(x), f(20))
    P = f(p32[m])
    for k in range(m - 1, -1, -1):
        P = f(P * a + p32[k])
    Q = f(q32[n - 1])
    for k in range(n - 2, -1, -1):
        Q = f(Q * a + q32[k])
    Q = f(Q * a + f(1))
    e = f(np.exp2(f(f(a * f(-0.7213475204444817)) * a).astype(np.float64)))
    tail = f(f(P * f(1 / np.float64(Q))) * e)
    return f(x * np.where(x >= 0, f(f(1) - tail), tail))


xs = np.linspace(-12, 12, 24001).astype(np.float32)
got = gelu_f32(xs).astype(np.float64)
want = np.array([float(mp.mpf(float(v)) * 0.5 * mp.erfc(-mp.mpf(float(v)) / mp.sqrt(2))) for v in xs])
ok = np.abs(want) > 1e-30
rel = np.where(ok, np.abs(got / np.where(ok, want, 1) - 1), 0)
for lim in (3, 6, 9, 12):
    sel = np.abs(xs) <= lim
    print(f"f32 model, |x| <= {lim}: max relative error {rel[sel].max():.3g}")
