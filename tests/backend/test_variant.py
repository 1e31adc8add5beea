"""``Variant``: the one value that names a PTX build of a program (index width, alignment, sign of the
``index`` scalars, staging), from the launcher's binding through ``Compilation.ptx``, the compile
cache's keys and the launch policy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import compiled_example
from kernc.backend import binding, cache, cpu, launch_policy
from kernc.backend.variant import ALIGN, Variant
from kernc.compiler import Compilation, CompileOptions


def test_a_variant_is_a_frozen_hashable_value():
    v = Variant(64, aligned=False)
    assert v == Variant(64, False, False, True) and hash(v) == hash(Variant(64, False))
    assert len({Variant(), Variant(32), Variant(32, True, False, True), v}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.index_bits = 32
    assert (Variant().align, v.align) == (ALIGN, 0) == (16, 0)
    assert [Variant().name, v.name, Variant(nonneg_scalars=True, staged=False).name] == [
        "index 32", "index 64, unaligned", "index 32, index scalars >= 0, unstaged"]
    for bad in (16, 0, True, "32"):
        with pytest.raises(ValueError, match="index_bits must be 32 or 64"):
            Variant(bad)


def test_ptx_takes_a_variant_or_its_fields():
    comp = compiled_example("saxpy")._compilation
    assert comp.ptx(variant=Variant()) is comp.ptx()
    assert comp.ptx(variant=Variant(64, aligned=False)) is comp.ptx(64, aligned=False) is comp.ptx(64, False)
    assert comp.ptx(variant=Variant(64, aligned=False)) != comp.ptx(64)
    assert comp.llvm_ir(variant=Variant(64)) is comp.llvm_ir(64)
    assert comp.ir("ptx", variant=Variant(64)) is comp.ir("ptx", 64) is comp.ptx(index_bits=64)
    with pytest.raises(TypeError, match="not both"):
        comp.ptx(64, variant=Variant())
    with pytest.raises(TypeError, match="variant must be"):
        comp.ptx(variant=(32, True, False))
    with pytest.raises(ValueError, match="index_bits must be 32 or 64, got 16"):
        comp.ptx(index_bits=16)


def test_staged_false_is_the_program_compiled_without_the_pass():
    comp = compiled_example("transpose")._compilation
    plain = comp.unstaged()
    assert plain is comp.unstaged() and plain.options == dataclasses.replace(comp.options, coalesce=False)
    assert plain.unstaged() is plain  # it stages nothing itself
    assert comp.ptx(variant=Variant(staged=False)) is plain.ptx() != comp.ptx()
    assert ".shared" in comp.ptx() and ".shared" not in plain.ptx()
    other = Compilation(comp.source, comp.filename, CompileOptions(coalesce=False), use_cache=False)
    assert comp.ptx(variant=Variant(64, staged=False)) == other.ptx(64)
    # a program without tiled kernels: the one PTX either way
    saxpy = compiled_example("saxpy")._compilation
    assert saxpy.unstaged() is saxpy and saxpy.ptx(variant=Variant(staged=False)) is saxpy.ptx()


def test_cache_keys_of_variants():
    comp = compiled_example("transpose")._compilation
    if comp.cache_key is None:
        pytest.skip("compile cache disabled")
    keys = {comp._ptx_cache_key(variant=v) for v in (Variant(), Variant(64), Variant(aligned=False),
                                                      Variant(nonneg_scalars=True))}
    assert len(keys) == 4 and comp._ptx_cache_key() == comp._ptx_cache_key(variant=Variant())
    # staged=False is the key of the unstaged program, which has a gpu key of its own
    assert comp._ptx_cache_key(variant=Variant(staged=False)) == comp.unstaged()._ptx_cache_key() not in keys
    front = comp.cache_key
    assert cache.ptx_key(front, "sm_90", 3, 32) == cache.ptx_key(front, "sm_90", 3, Variant(32))
    assert cache.ptx_key(front, "sm_90", 3, Variant(staged=False)) != cache.ptx_key(front, "sm_90", 3, 32)
    # the general variant's key has the fields it had before there was a Variant (entries on disk stay valid)
    assert cache.ptx_key(front, "sm_90", 3, 64) == cache._digest({
        "kind": "ptx", "front": front, "arch": "sm_90", "opt_level": 3, "index_bits": 64, "align": 16,
        "libdevice": cache.libdevice_id()})


def test_the_target_options_of_a_variant():
    t = CompileOptions(arch="sm_80", opt_level=2).target(Variant(64, aligned=False, nonneg_scalars=True), "lib.bc")
    assert (t.arch, t.opt_level, t.index_bits, t.align, t.nonneg_scalars, t.libdevice) == (
        "sm_80", 2, 64, 0, True, "lib.bc")
    t = CompileOptions(index_bits=64).target()
    assert (t.index_bits, t.align, t.nonneg_scalars) == (64, 16, False)


def test_binding_records_the_variant_a_call_may_run():
    saxpy = compiled_example("saxpy").saxpy
    x, y = np.ones(100, np.float32), np.zeros(100, np.float32)
    bound = binding.bind(saxpy.signature, (2.0, x, y), {}, cpu.is_host_array, "cpu")
    assert bound.variant == Variant(32) and (bound.index_bits, bound.nonneg_scalars, bound.staging_pays) == (
        32, False, True)
    t = compiled_example("transpose").transpose
    skinny = binding.bind(t.signature, (np.zeros((4096, 1), np.float32), np.zeros((1, 4096), np.float32)), {},
                          cpu.is_host_array, "cpu")
    assert skinny.variant == Variant(32, staged=False) and not skinny.staging_pays
    square = binding.bind(t.signature, (np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)), {},
                          cpu.is_host_array, "cpu")
    assert square.variant == Variant(32) and square.grid == 4


def test_the_launch_policy_on_its_own():
    sig = compiled_example("transpose").transpose.signature
    assert sig.tiles == [["R", 32], ["C", 32]]
    assert launch_policy.launch_grid(sig, 33 * 70, {"R": 33, "C": 70}) == (2 * 3, 2 * 3)
    assert launch_policy.launch_grid(sig, 0, {"R": 0, "C": 70}) == (0, 0)
    assert launch_policy.run_staged(sig, 64 * 64, {"R": 64, "C": 64})
    assert not launch_policy.run_staged(sig, 4096, {"R": 4096, "C": 1})
    assert launch_policy.run_staged(sig, 0, {"R": 0, "C": 1})  # nothing to choose for no items
    plain = compiled_example("saxpy").saxpy.signature
    assert launch_policy.launch_grid(plain, 1000, {"n": 1000}) == (4, 0)
    assert launch_policy.run_staged(plain, 1000, {"n": 1000})
