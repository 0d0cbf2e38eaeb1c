"""Shared fixtures of the CPU tests: the repository's paths and independent numpy helpers."""

import math
import os

import numpy as np
import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def repo():
    return REPO


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def bf16_round(x):
    """Round-to-nearest-even to bfloat16, written with integer bit operations on float32 (the
    inputs are float32 values, so there is no double rounding)."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def rel_l2(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))
