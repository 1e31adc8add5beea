"""The aliasing check of a GPU launch without a GPU (the fake CuPy of ``fake_driver.py``): memory
shared by a buffer the kernel writes and another it accesses is refused by the full binding and by
the prepared fast path alike (``PreparedLaunch`` declines such a call, and the binding it falls back
to raises), and one array for an elementwise ``in_place`` pair launches on both. The CPU semantics
are in ``tests/e2e/test_aliasing.py``, with a ``gpu``-marked test on CuPy."""

from __future__ import annotations

import os

import numpy as np
import pytest

import fake_driver
import kernc
from kernc.backend import binding
from kernc.support.errors import KerncLaunchError

SRC = """
kernel saxpy(a: f32, x: f32[n] read, y: f32[n] add) over n { y += a * x; }
kernel two_out(x: f32[n] read, y: f32[n] write, z: f32[n] add) over n { y = x; z += x; }
"""
TRANSPOSE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "transpose.kern")


def refused(fn, *names):
    with pytest.raises(KerncLaunchError) as err:
        fn()
    for n in names:
        assert f"'{n}'" in str(err.value), str(err.value)


@pytest.fixture
def fake(monkeypatch):
    from kernc.backend import cuda

    packers = {}
    real_launch = cuda.ArgPacker.launch

    def recording_launch(self, function_ptr, *rest):
        packers[function_ptr] = self
        return real_launch(self, function_ptr, *rest)

    monkeypatch.setattr(cuda.ArgPacker, "launch", recording_launch)
    f = fake_driver.install(monkeypatch, lambda fptr: packers[fptr].param_sizes)
    f.binds = []
    real_bind = binding.bind

    def counting_bind(*args, **kwargs):
        f.binds.append(args[0].name)
        return real_bind(*args, **kwargs)

    monkeypatch.setattr(binding, "bind", counting_bind)
    return f


def _fake(host):
    return fake_driver.FakeArray(host)


def test_gpu_binding_refuses_shared_memory(fake):
    k = kernc.compile(SRC).saxpy
    host = np.arange(301, dtype=np.float32)
    a = _fake(host)
    refused(lambda: k(2.0, a[:-1], a[1:]), "x", "y")
    assert fake.launches == []
    k(2.0, a, a)  # one array for the in-place pair: launched
    assert len(fake.launches) == 1
    t = kernc.compile_file(TRANSPOSE).transpose
    sq = _fake(np.zeros((256, 256), np.float32))
    refused(lambda: t(sq, sq), "a", "b")
    assert len(fake.launches) == 1


def test_prepared_fast_path_refuses_shared_memory(fake):
    k = kernc.compile(SRC).saxpy
    x, y = _fake(np.arange(300, dtype=np.float32)), _fake(np.zeros(300, np.float32))
    k(2.0, x, y)
    assert fake.binds == ["saxpy"]
    k(2.0, x, y)  # prepared: not bound again
    assert fake.binds == ["saxpy"] and len(fake.launches) == 2
    # arrays of the same shapes whose memory overlaps: the fast path declines, the binding refuses
    host = np.arange(301, dtype=np.float32)
    a = _fake(host)
    refused(lambda: k(2.0, a[:-1], a[1:]), "x", "y")
    refused(lambda: k(2.0, a[1:], a[:-1]), "x", "y")
    assert fake.binds == ["saxpy"] * 3 and len(fake.launches) == 2
    # one array for both: allowed by the fast path too
    k(2.0, y, y)
    k(2.0, y, y)
    assert len(fake.launches) == 4
    k2 = kernc.compile(SRC).two_out
    z = _fake(np.zeros(300, np.float32))
    k2(x, y, z)
    k2(x, y, z)
    n = len(fake.launches)
    refused(lambda: k2(x, z, z), "y", "z")
    assert len(fake.launches) == n
