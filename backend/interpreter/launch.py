"""The public entry point: :class:`Interpreter` checks a launch's arguments and runs the kernel's plan
over batches of blocks."""

from __future__ import annotations

import numpy as np

from kernc.support.errors import KerncLaunchError
from kernc.support.mlir import ir

# importing the handler modules registers their ops' handlers (translate.HANDLERS)
from . import async_copy, control, conversions, gpu, memory, numeric, nvgpu, tma, vector, wgmma  # noqa: F401
from .frame import _Buf, _empty_alloc, _Frame, _Pool, _Shadow
from .numeric import _int_const
from .traffic import WARP_SIZE, RunStats
from .translate import _Plan, _run_ops, _Translator
from .types import _MemTy, _Ty

#: Upper bound on the number of lanes (threads) executed together in one batch of blocks.
MAX_LANES_PER_BATCH = 1 << 16


#: Budget for per-batch private + workgroup allocations (bytes); batches shrink to stay below it.
_SCRATCH_BUDGET = 1 << 28


def _describe(v) -> str:
    if isinstance(v, np.ndarray):
        return f"an array of dtype {v.dtype} and shape {v.shape}"
    return f"a {type(v).__name__}"


def _scalar_arg(v, ty: _Ty, name: str):
    if isinstance(v, np.ndarray):
        if v.ndim != 0:
            raise KerncLaunchError(f"argument '{name}': expected a scalar {ty}, got {_describe(v)}")
        v = v[()]
    if ty.kind == "f":
        if isinstance(v, ty.dtype.type):  # e.g. an ml_dtypes.bfloat16 scalar (not an np.floating)
            return v
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise KerncLaunchError(f"argument '{name}': expected a scalar {ty}, got {_describe(v)}")
        return ty.dtype.type(v)
    if isinstance(v, (float, np.floating, complex, np.complexfloating)) or not isinstance(
            v, (int, np.integer, np.bool_)):
        raise KerncLaunchError(f"argument '{name}': expected an integer ({ty}), got {_describe(v)}")
    iv = int(v)
    if ty.bits == 1:
        if iv not in (0, 1):
            raise KerncLaunchError(f"argument '{name}': expected a bool (i1), got {iv}")
        return np.bool_(iv)
    lo = -(1 << (ty.bits - 1))
    hi = (1 << (ty.bits - 1)) - 1 if ty.name == "index" else (1 << ty.bits) - 1
    if not lo <= iv <= hi:
        raise KerncLaunchError(
            f"argument '{name}': {iv} does not fit in {ty} (range {lo}..{hi})")
    return _int_const(iv, ty)


def _buffer_arg(v, mt: _MemTy, written: bool, name: str) -> np.ndarray:
    ty = mt.elem
    if not isinstance(v, np.ndarray):
        raise KerncLaunchError(
            f"argument '{name}': expected a 1-D numpy array of {ty}, got {_describe(v)}")
    if v.ndim != 1:
        raise KerncLaunchError(
            f"argument '{name}': expected a 1-D numpy array of {ty}, got shape {v.shape}")
    if not v.flags.c_contiguous:
        raise KerncLaunchError(f"argument '{name}': the array must be contiguous")
    if ty.kind == "f":
        ok = v.dtype == ty.dtype
    elif ty.bits == 1:
        ok = v.dtype == np.bool_
    else:
        ok = v.dtype.kind in "iu" and v.dtype.itemsize * 8 == ty.bits and v.dtype.isnative
    if not ok:
        want = {"f16": "float16", "f32": "float32", "f64": "float64", "i1": "bool"}.get(
            ty.name, f"int{ty.bits} or uint{ty.bits}")
        raise KerncLaunchError(
            f"argument '{name}': expected an array of {want} ({ty}), got dtype {v.dtype}")
    if mt.dims[0] is not None and v.shape[0] != mt.dims[0]:
        raise KerncLaunchError(
            f"argument '{name}': expected {mt.dims[0]} elements, got {v.shape[0]}")
    if written and not v.flags.writeable:
        raise KerncLaunchError(f"argument '{name}': the kernel writes this buffer but the array is read-only")
    if ty.kind == "i" and ty.bits > 1 and v.dtype != ty.dtype:
        v = v.view(ty.dtype)
    return v


def _tensor_map_arg(v, name: str, kernel: str):
    """A tensor-map parameter: a :class:`~kernc.backend.tensor_map.TensorMap` over a numpy array,
    checked against the driver's limits as the GPU launcher checks it (its array's address)."""
    from kernc.backend.tensor_map import Im2colTensorMap, TensorMap, check, check_im2col

    if not isinstance(v, (TensorMap, Im2colTensorMap)) or not isinstance(v.array, np.ndarray):
        raise KerncLaunchError(f"argument '{name}': expected a TensorMap or Im2colTensorMap description "
                               f"over a numpy array (kernc.backend.tensor_map), got {_describe(v)}")
    if np.dtype(v.array.dtype).itemsize != v.elem_bytes:
        raise KerncLaunchError(f"argument '{name}': the tensor map's {v.dtype} elements are not the "
                               f"array's {v.array.dtype}")
    (check_im2col if isinstance(v, Im2colTensorMap) else check)(v, v.array.ctypes.data, name, kernel)
    return v


class Interpreter:
    """Executes the ``gpu.func`` kernels of a gpu-level IR module on the CPU.

    ``module`` is an ``ir.Module`` (its context is used) or the module's text (parsed in a new
    ``ir.Context``). Kernels are translated on their first :meth:`run` and the plan is cached.

    ``uninitialized`` selects the contents of fresh workgroup and private memory: ``"zero"`` (the
    default) or ``"poison"`` (NaN for floats, ``0xA5`` bytes for integers) to expose reads of memory
    nobody wrote.

    Raises ``ValueError`` for a module text that does not parse.
    """

    def __init__(self, module: "ir.Module | str", *, uninitialized: str = "zero"):
        if isinstance(module, str):
            text = module
            self._ctx = ir.Context()
            try:
                with self._ctx:
                    module = ir.Module.parse(text)
            except Exception as first:  # MLIRError
                # gpu IR holds only upstream dialects; allow others (e.g. stray kern attributes) only
                # when the strict parse fails
                self._ctx = ir.Context()
                self._ctx.allow_unregistered_dialects = True
                try:
                    with self._ctx:
                        module = ir.Module.parse(text)
                except Exception:
                    raise ValueError(f"could not parse the gpu IR module: {first}") from first
        else:
            self._ctx = module.context
        if uninitialized not in ("zero", "poison"):
            raise ValueError("uninitialized must be 'zero' or 'poison'")
        self._uninit = uninitialized
        self._module = module
        self._funcs = {}
        self._plans: dict[str, _Plan] = {}
        self._lane_cache: dict[tuple, tuple] = {}
        self._pool = _Pool()
        self._collect_funcs(module.operation)

    def _collect_funcs(self, op):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    c = child.operation
                    if c.name == "gpu.func":
                        if "kernel" in c.attributes:
                            self._funcs[c.attributes["sym_name"].value] = c
                    elif c.name in ("gpu.module", "builtin.module"):
                        self._collect_funcs(c)

    def kernel_names(self) -> list[str]:
        """Names of the module's ``gpu.func ... kernel`` functions, in module order."""
        return list(self._funcs)

    def _plan(self, kernel: str) -> _Plan:
        plan = self._plans.get(kernel)
        if plan is None:
            if kernel not in self._funcs:
                raise KerncLaunchError(
                    f"no kernel named '{kernel}' (kernels: {', '.join(self._funcs) or 'none'})")
            with self._ctx:
                plan = _Translator(self._funcs[kernel]).function()
            self._plans[kernel] = plan
        return plan

    def signature(self, kernel: str):
        """The kernel's :class:`kernc.dialect.signature.KernelSignature`, or ``None`` if it has none."""
        return self._plan(kernel).signature

    def arg_names(self, kernel: str) -> list[str]:
        """The kernel's argument names (from ``kern.signature``, else ``arg0``, ``arg1``, ...)."""
        plan = self._plan(kernel)
        return list(plan.sig_names or [f"arg{i}" for i in range(len(plan.params))])

    def run(self, kernel: str, grid: int, block: int, args: list, *, arg_names: list[str] | None = None,
            collect_stats: bool = True, index_bits: int = 64, progress=None,
            dynamic_shared_bytes: int | None = None) -> RunStats:
        """Run ``kernel`` over ``grid`` blocks of ``block`` threads; return its :class:`RunStats`.

        ``args`` follow the ``gpu.func`` argument order: Python numbers or numpy scalars for scalar
        params (``index`` args are Python ints), 1-D C-contiguous numpy arrays for buffers -- read
        and written in place. A buffer's dtype must match the memref element type exactly for
        floats (``float16``/``float32``/``float64``; ``bf16`` is unsupported); ``iN`` buffers accept
        ``intN`` or ``uintN`` arrays, ``i1`` buffers ``bool`` arrays. ``arg_names`` name the
        arguments in messages (default: the ``kern.signature`` names, else ``arg<i>``).

        Raises :class:`~kernc.errors.KerncLaunchError` for an unknown kernel, a wrong argument count,
        type, dtype, shape or read-only buffer, or a bad grid/block (``block`` must be 1..1024 and
        match a ``known_block_size`` attribute); :class:`~kernc.errors.KerncRuntimeError` for a fault
        while the kernel runs (out-of-bounds access, barrier in divergent control flow);
        :class:`InterpreterUnsupportedError` when the kernel uses IR the interpreter lacks.
        With ``collect_stats=False`` the memory counters stay 0 (faster). ``index_bits``: the
        ``index`` width the GPU would use for this launch (``binding.BoundLaunch.index_bits``); with
        32, an ``index`` add, subtract, multiply, shift or conversion whose result leaves int32 is a
        ``KerncRuntimeError`` (the 32-bit PTX would wrap it), though the interpreter computes
        ``index`` values in 64 bits either way. ``progress``: called as ``progress(blocks_done,
        grid)`` after each batch of blocks (``backend/progress.py`` draws a bar from it).
        ``dynamic_shared_bytes``: the bytes of dynamic workgroup memory per block
        (``gpu.dynamic_shared_memory``; CUDA's ``sharedMemBytes``); ``None``: the kernel signature's
        ``dynamic_shared_bytes`` (0 without a signature). ``KerncLaunchError`` for a negative count.
        """
        plan = self._plan(kernel)
        n = len(plan.params)
        names = list(arg_names) if arg_names is not None else list(plan.sig_names or [])
        names += [f"arg{i}" for i in range(len(names), n)]
        if not isinstance(args, (list, tuple)):
            raise KerncLaunchError(f"kernel '{kernel}': args must be a list, got {type(args).__name__}")
        if len(args) != n:
            raise KerncLaunchError(
                f"kernel '{kernel}' takes {n} argument{'s' if n != 1 else ''} ({', '.join(names[:n])}), "
                f"got {len(args)}")
        for what, v in (("grid", grid), ("block", block)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise KerncLaunchError(f"kernel '{kernel}': {what} must be an int, got {v!r}")
        grid, block = int(grid), int(block)
        if grid < 0:
            raise KerncLaunchError(f"kernel '{kernel}': grid must be >= 0, got {grid}")
        if not 1 <= block <= 1024:
            raise KerncLaunchError(f"kernel '{kernel}': block must be in 1..1024, got {block}")
        if plan.known_block and plan.known_block[0] != block:
            raise KerncLaunchError(
                f"kernel '{kernel}' was compiled for blocks of {plan.known_block[0]} threads "
                f"(known_block_size), launched with {block}")
        values = []
        for p, v, name in zip(plan.params, args, names):
            if p[0] == "scalar":
                values.append(_scalar_arg(v, p[1], name))
            elif p[0] == "tensor_map":
                values.append(_tensor_map_arg(v, name, kernel))
            else:
                values.append(_buffer_arg(v, p[1], p[2], name))

        if dynamic_shared_bytes is None:
            dynamic_shared_bytes = plan.signature.dynamic_shared_bytes if plan.signature is not None else 0
        if isinstance(dynamic_shared_bytes, bool) or not isinstance(dynamic_shared_bytes, (int, np.integer)) \
                or dynamic_shared_bytes < 0:
            raise KerncLaunchError(f"kernel '{kernel}': dynamic_shared_bytes must be an int >= 0, "
                                   f"got {dynamic_shared_bytes!r}")
        dynamic_shared_bytes = int(dynamic_shared_bytes)
        stats = RunStats(threads=grid * block, blocks=grid)
        if grid == 0:
            return stats
        per_block = block * max(plan.private_bytes_per_lane, 1) + plan.wg_bytes_per_block + dynamic_shared_bytes
        nb_max = max(1, min(MAX_LANES_PER_BATCH // block, _SCRATCH_BUDGET // max(per_block, 1)))
        pool = self._pool  # lane arrays and scratch memory, reused by every batch and run
        with np.errstate(all="ignore"):
            b0 = 0
            while b0 < grid:
                nb = min(nb_max, grid - b0)
                fr = self._frame(plan, nb, block, b0, grid, stats, collect_stats, pool)
                fr.index32 = index_bits == 32
                fr.dynamic_bytes = dynamic_shared_bytes
                env = fr.env
                for s, v, p, name in zip(plan.arg_slots, values, plan.params, names):
                    env[s] = _Buf(name, "global", v, (v.shape[0],)) if p[0] == "buffer" else v
                fr.shadows = []
                for s, mt, name in plan.wg:
                    size = mt.size
                    env[s] = _Buf(name, "workgroup", _empty_alloc(nb * size, mt.elem.dtype, self._uninit, pool),
                                  mt.dims, base=fr.blk * size)
                    env[s].shadow = _Shadow(nb, size)  # the race check between barriers (memory.py)
                    fr.shadows.append(env[s])
                for s, mt, name in plan.priv:
                    size = mt.size
                    env[s] = _Buf(name, "private", _empty_alloc(fr.L * size, mt.elem.dtype, self._uninit, pool),
                                  mt.dims, base=fr.lane * size)
                _run_ops(plan.body, fr, fr.full)
                for s, _, _ in plan.wg + plan.priv:  # their memory serves the next batch
                    buf, env[s] = env[s], None
                    pool.give(buf)
                b0 += nb
                if progress is not None:
                    progress(b0, grid)
        return stats

    def _frame(self, plan, nb, B, b0, grid, stats, collect, pool) -> _Frame:
        key = (nb, B)
        cached = self._lane_cache.get(key)
        if cached is None:
            L = nb * B
            lane = np.arange(L, dtype=np.int64)
            blk = lane // B
            tid = lane - blk * B
            wpb = -(-B // WARP_SIZE)
            warp = blk * wpb + (tid >> 5)
            full = np.ones(L, dtype=np.bool_)
            cached = (lane, blk, tid, tid & (WARP_SIZE - 1), warp, full, nb * wpb, {})
            for a in cached[:6]:
                a.flags.writeable = False  # shared by every run: SSA values are never mutated
            if len(self._lane_cache) > 8:
                self._lane_cache.clear()
            self._lane_cache[key] = cached
        fr = _Frame()
        fr.lane, fr.blk, fr.tid, fr.lane_in_warp, fr.warp, fr.full, fr.nwarps, fr.tables = cached
        fr.L = nb * B
        fr.B = B
        fr.nb = nb
        fr.first_block = b0
        fr.grid = grid
        fr.bid = fr.blk + np.int64(b0)
        fr.env = [None] * plan.nslots
        fr.stats = stats
        fr.collect = collect
        fr.uninit = self._uninit
        fr.memo = {}
        fr.pool = pool
        fr.shadows = []
        fr.copies = None  # cp.async in flight (.async_copy), made on the first copy
        fr.dynamic_bytes = 0
        return fr
