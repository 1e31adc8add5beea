"""Loading PTX into the CUDA driver and launching kernels through CuPy.

CuPy is imported lazily (``import kernc`` never loads the CUDA runtime). Arrays may be CuPy arrays,
any object with ``__cuda_array_interface__`` (Numba, PyTorch CUDA tensors, ...) or a DLPack CUDA
tensor; they are viewed, never copied, so kernels update them in place. Launches go through CuPy's
binding of the driver's ``cuLaunchKernel`` with a ``kernelParams`` array laid out once per kernel
signature and index width (:class:`ArgPacker`): each scalar in the exact PTX parameter type's bytes
(binding made it an exact numpy scalar), ``index`` arguments and size symbols as int32 or int64 to
match the index bitwidth the PTX was generated with, buffers as device addresses. A repeated call
that binds as the last one did skips the binding (:class:`PreparedLaunch`).
"""

from __future__ import annotations

import dataclasses
import functools
import struct
import sys
import threading
from collections import OrderedDict

import numpy as np

from kernc.support.errors import KerncLaunchError

from .binding import BoundLaunch, _index_input, _scalar, alias_plan
from .dtypes import numpy_dtype
from .variant import ALIGN, Variant


@functools.lru_cache(maxsize=1)
def cupy():
    """The ``cupy`` module, or ``KerncLaunchError`` if it cannot be imported."""
    try:
        import cupy as cp
    except Exception as err:  # pragma: no cover - depends on the environment
        raise KerncLaunchError(f"running on the GPU needs CuPy (pip install cupy-cuda13x): {err}") from err
    return cp


def available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        cp = cupy()
        return bool(cp.cuda.is_available())
    except Exception:
        return False


def is_cuda_array(x) -> bool:
    """Whether ``x`` is an array in CUDA device memory that kernc can launch on."""
    cp = sys.modules.get("cupy")  # CuPy arrays first: their __cuda_array_interface__ is built per access
    if cp is not None and isinstance(x, getattr(cp, "ndarray", ())):
        return True
    if hasattr(x, "__cuda_array_interface__"):
        return True
    dev = getattr(x, "__dlpack_device__", None)
    if dev is not None:
        try:
            return int(dev()[0]) in (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged
        except Exception:
            return False
    return False


def as_cupy(x):
    """View a CUDA array as a CuPy array without copying."""
    cp = cupy()
    if isinstance(x, cp.ndarray):
        return x
    if hasattr(x, "__cuda_array_interface__"):
        return cp.asarray(x)
    return cp.from_dlpack(x)


def all_aligned(bound: BoundLaunch, align: int = ALIGN) -> bool:
    """Whether every device buffer of the launch starts at a multiple of ``align`` bytes (then the
    PTX that assumes it -- and may use 16-byte vector accesses -- is safe to launch)."""
    cp = cupy()
    return all(int(a.data.ptr) % align == 0 for a in bound.args if isinstance(a, cp.ndarray))


def launch_variant(bound: BoundLaunch) -> Variant:
    """The :class:`~kernc.backend.variant.Variant` a GPU launch of ``bound`` runs: the one binding
    chose (index width, sign of the ``index`` scalars, staging) with ``aligned`` as the device
    addresses of its buffers allow (:func:`all_aligned`)."""
    return dataclasses.replace(bound.variant, aligned=all_aligned(bound))


def check_same_device(bound: BoundLaunch, current: int) -> None:
    """Every array of ``bound`` must live on the current CUDA device (``current``: its id);
    ``KerncLaunchError`` names the first that does not."""
    for name, a in bound.arrays.items():
        dev = getattr(getattr(a, "device", None), "id", current)
        if dev != current:
            raise KerncLaunchError(
                f"argument '{name}': the array is on CUDA device {dev}, but the current device is {current}"
            )


class CudaModule:
    """A PTX module loaded into the current CUDA context; ``function(name)`` returns a kernel."""

    def __init__(self, ptx: str):
        cp = cupy()
        self._module = cp.cuda.function.Module()
        self._module.load(ptx.encode())
        self._functions: dict = {}

    def function(self, name: str, dynamic_shared_bytes: int = 0):
        """The CuPy kernel function ``name`` of this module (looked up once), opted in to
        ``dynamic_shared_bytes`` of dynamic workgroup memory (:func:`opt_in`; the kernel signature's
        ``dynamic_shared_bytes``) when that is over 48 KiB. ``KerncLaunchError`` if the device
        cannot give that many."""
        fn = self._functions.get(name)
        if fn is None:
            fn = self._module.get_function(name)
            if dynamic_shared_bytes > STATIC_SHARED_LIMIT:
                cp = cupy()
                rt = cp.cuda.runtime  # (cudaDevAttrMaxSharedMemoryPerBlockOptin: 97, CUDA Runtime API)
                optin = rt.getDeviceAttribute(getattr(rt, "cudaDevAttrMaxSharedMemoryPerBlockOptin", 97),
                                              rt.getDevice())
                opt_in(fn, name, dynamic_shared_bytes, optin)
            self._functions[name] = fn
        return fn


#: Bytes of workgroup memory a kernel may use without opting in (CUDA C++ Programming Guide, "Shared
#: Memory": 48 KiB; ``passes/workgroup.py``'s ``SHARED_LIMIT``, which the compiler sizes by).
STATIC_SHARED_LIMIT = 48 * 1024


def opt_in(fn, name: str, nbytes: int, device_max: int) -> None:
    """Let CuPy function ``fn`` (kernel ``name``) launch with ``nbytes`` of dynamic workgroup memory:
    ``fn.max_dynamic_shared_size_bytes = nbytes`` (``cuFuncSetAttribute(f,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)``, CUDA Driver API, "Execution Control";
    needed past 48 KiB). ``device_max``: the device's ``cudaDevAttrMaxSharedMemoryPerBlockOptin``
    (bytes); ``KerncLaunchError`` when ``nbytes`` exceeds it (a kernel compiled for a larger GPU)."""
    if nbytes > device_max:
        raise KerncLaunchError(
            f"kernel '{name}' needs {nbytes} bytes of dynamic workgroup memory, but this device lets a block "
            f"opt in to at most {device_max} (cudaDevAttrMaxSharedMemoryPerBlockOptin); compile it for this "
            "device's --arch, or with --no-dynamic-shared-memory (48 KiB at most)")
    fn.max_dynamic_shared_size_bytes = nbytes


#: Loaded modules shared by every kernc Module of the process, keyed by (PTX text, device).
MODULE_CACHE_SIZE = 64
_modules: OrderedDict = OrderedDict()
_modules_lock = threading.Lock()


def load_module(ptx: str) -> CudaModule:
    """The :class:`CudaModule` of ``ptx`` on the current device, loaded once per process (the
    ``MODULE_CACHE_SIZE`` most recently used stay loaded; callers keep their own reference)."""
    key = (ptx, cupy().cuda.runtime.getDevice())
    with _modules_lock:
        mod = _modules.get(key)
        if mod is not None:
            _modules.move_to_end(key)
            return mod
    mod = CudaModule(ptx)
    with _modules_lock:
        mod = _modules.setdefault(key, mod)
        _modules.move_to_end(key)
        while len(_modules) > MODULE_CACHE_SIZE:
            _modules.popitem(last=False)
    return mod


#: ``struct`` codes of the kernel parameters that are not pointers, by language dtype (standard sizes,
#: little-endian like every CUDA device). ``bf16`` goes as its raw 16 bits.
_SCALAR_CODES = {
    "bool": "?", "i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
    "i64": "q", "u64": "Q", "f16": "e", "bf16": "H", "f32": "f", "f64": "d",
}


class ArgPacker:
    """The launch arguments of one kernel signature at one index width, laid out once.

    The CUDA driver takes a kernel's arguments as ``kernelParams``: an array of pointers, one per
    parameter, each to the parameter's value in host memory (``cuLaunchKernel``, CUDA Driver API
    reference, "Execution Control"). The packer allocates that array and one naturally aligned slot
    per parameter of the kernel ABI (:attr:`KernelSignature.arg_names`) once: 8 bytes for a buffer
    (its device address), the PTX type's size for a scalar; ``index`` params and size symbols are
    ``int32`` or ``int64`` to match the index width the PTX was generated with. A launch then
    writes every value with one ``struct.pack_into`` and hands the same ``kernelParams`` address to
    the driver (:meth:`launch`); nothing is converted or allocated per call.

    Calling the packer on a :class:`BoundLaunch`'s ``args`` returns the same values as numpy
    scalars (``index`` params and size symbols as ``int32``/``int64``, everything else as is), the
    tuple a CuPy ``Function`` call takes.
    """

    __slots__ = ("index_bits", "index_positions", "pointer_positions", "param_sizes", "_itype", "shared_bytes",
                 "_bf16_positions", "_float_slots", "_struct", "_values", "_bytes", "_slots", "params_address",
                 "_lock")

    def __init__(self, signature, index_bits: int):
        self.index_bits = index_bits
        #: bytes of dynamic workgroup memory per block (``cuLaunchKernel``'s ``sharedMemBytes``: the
        #: signature's ``dynamic_shared_bytes``, 0 for a kernel with static workgroup memory only)
        self.shared_bytes = int(signature.dynamic_shared_bytes)
        self._itype = np.int32 if index_bits == 32 else np.int64
        sizes = set(signature.sizes)
        params = [None if name in sizes else signature.param(name) for name in signature.arg_names]
        index = [p is None or (p.kind == "scalar" and p.dtype == "index") for p in params]
        #: ABI positions of the ``index`` params and size symbols (int32 or int64)
        self.index_positions = tuple(i for i, x in enumerate(index) if x)
        #: ABI positions of the arrays (buffers, tables, scratch): passed as their device address
        self.pointer_positions = tuple(i for i, p in enumerate(params) if p is not None and p.kind != "scalar")
        self._bf16_positions = tuple(i for i, p in enumerate(params)
                                     if p is not None and p.kind == "scalar" and p.dtype == "bf16")
        codes = ["Q" if i in self.pointer_positions else ("i" if index_bits == 32 else "q") if index[i]
                 else _SCALAR_CODES[p.dtype] for i, p in enumerate(params)]
        #: bytes of each parameter, in ABI order
        self.param_sizes = tuple(struct.calcsize("<" + c) for c in codes)
        fmt, offsets, offset = "<", [], 0
        for code, size in zip(codes, self.param_sizes):
            pad = -offset % size  # each slot at a multiple of its size
            fmt += "x" * pad + code
            offset += pad
            offsets.append(offset)
            offset += size
        self._struct = struct.Struct(fmt)
        self._values = np.zeros(max(1, -(-offset // 8)), np.uint64)  # the slots, 8-byte aligned
        self._bytes = self._values.view(np.uint8)
        #: (position, offset, size) of the f32/f16 slots: ``struct`` converts through a double, which
        #: keeps every number but not a NaN's payload bits (a NaN's raw bytes are copied instead)
        self._float_slots = tuple((i, offsets[i], self.param_sizes[i]) for i, c in enumerate(codes) if c in "fe")
        base = self._values.ctypes.data
        self._slots = np.array([base + o for o in offsets] or [0], np.uint64)  # kernelParams
        self.params_address = int(self._slots.ctypes.data)
        self._lock = threading.Lock()  # the slots are shared: one launch at a time writes them

    def __call__(self, args) -> tuple:
        if not self.index_positions:
            return tuple(args)
        packed = list(args)
        itype, n = self._itype, len(packed)
        for i in self.index_positions:
            if i < n:
                packed[i] = itype(packed[i])
        return tuple(packed)

    def launch(self, function_ptr: int, grid: int, block: int, args, stream_ptr: int) -> None:
        """Launch the kernel ``function_ptr`` (a ``CUfunction``) as ``grid`` x ``block`` threads on
        the stream ``stream_ptr`` with ``args`` in ABI order: CUDA arrays (CuPy) for buffers, and
        for scalars numbers of their parameter's type (a :class:`BoundLaunch`'s ``args``).
        ``cupy.cuda.driver.CUDADriverError`` if the driver refuses the launch."""
        values = list(args)
        for i in self.pointer_positions:
            values[i] = values[i].data.ptr
        self.launch_values(function_ptr, grid, block, values, stream_ptr)

    def launch_values(self, function_ptr: int, grid: int, block: int, values: list, stream_ptr: int) -> None:
        """:meth:`launch` with the arrays of ``values`` already replaced by their device addresses
        (``values`` is modified)."""
        for i in self._bf16_positions:
            values[i] = int(np.asarray(values[i]).view(np.uint16))
        with self._lock:
            self._struct.pack_into(self._values, 0, *values)
            for i, offset, size in self._float_slots:
                v = values[i]
                if v != v:  # NaN
                    self._bytes[offset:offset + size] = np.frombuffer(np.asarray(v).tobytes(), np.uint8)
            _driver().launchKernel(function_ptr, grid, 1, 1, block, 1, 1, self.shared_bytes, stream_ptr,
                                   self.params_address, 0)


def _driver():
    """``cupy.cuda.driver`` (looked up once per process)."""
    global _DRIVER
    if _DRIVER is None:
        _DRIVER = cupy().cuda.driver
    return _DRIVER


_DRIVER = None


def launch(module: CudaModule, bound: BoundLaunch, packer: ArgPacker | None = None) -> None:
    """Launch ``bound`` (grid x block threads) from ``module`` on CuPy's current stream; nothing is
    launched when ``P == 0`` (``zero_init`` outputs are still zero-filled). ``packer``: the
    kernel's :class:`ArgPacker` for ``bound.index_bits`` (built here when not given)."""
    for name in bound.zero_init:
        bound.arrays[name].fill(bound.fill_value(name))
    if bound.grid == 0:
        return
    if packer is None or packer.index_bits != bound.index_bits:
        packer = ArgPacker(bound.signature, bound.index_bits)
    fn = module.function(bound.signature.name, bound.signature.dynamic_shared_bytes)
    packer.launch(fn.ptr, bound.grid, bound.block, bound.args, cupy().cuda.get_current_stream().ptr)


class PreparedLaunch:
    """A GPU launch bound once, launched again for calls whose arguments bind the same way.

    :func:`kernc.backend.binding.bind` validates a call and works out the grid, the sizes, the index
    width and which PTX variant to run; for the next call with CuPy arrays of the same shapes,
    strides, dtypes and device (and 16-byte alignment, if the PTX assumes it), no memory shared
    by a written buffer and another one the kernel accesses (except one array for an
    ``in_place`` pair: :func:`kernc.backend.binding.check_aliasing`), the same values of
    the scalars that decide the launch (an integer problem size; the range and sign of ``index``
    scalars) and the same current device, all of that is the same. :meth:`__call__` checks exactly
    those conditions and launches with the kernel's :class:`ArgPacker`, or returns ``False`` and
    launches nothing (the caller binds the call in full, which also reports any error). Other
    scalars are converted per call by binding's own rules. Kernels that read ``shared_indices``
    tables (built from the index values) or are ``@checked`` (their index values are checked per
    call) are never prepared: :func:`prepare` returns ``None`` for them.
    """

    __slots__ = ("packer", "function_ptr", "device", "grid", "block", "problem_size", "sizes", "_cp", "_nargs",
                 "_buffers", "_scalars", "_int_scalars", "_bounded", "_align_mask", "_zero_init", "_scratch",
                 "_sizes_tail", "_ndarray", "_get_device", "_current_stream", "_module", "_alias")

    def __init__(self, packer: ArgPacker, function_ptr: int, bound: BoundLaunch, device: int, variant: Variant,
                 module: CudaModule | None = None):
        sig = bound.signature
        cp = cupy()
        self.packer, self.function_ptr, self.device, self._cp = packer, function_ptr, device, cp
        self._module = module  # keeps the loaded module (and so function_ptr) alive
        # (looked up once: a launch is a few microseconds, an attribute chain a fraction of one)
        self._ndarray, self._get_device = cp.ndarray, cp.cuda.runtime.getDevice
        self._current_stream = cp.cuda.get_current_stream
        # (no reference to the call's arrays is kept: they may be freed once the call returns)
        self.grid, self.block, self.problem_size = bound.grid, bound.block, bound.problem_size
        self.sizes = dict(bound.sizes)
        self._nargs = len(sig.params)
        self._align_mask = ALIGN - 1 if variant.aligned else 0
        #: (position, low, high) of the integer scalars that decide the launch: an integer problem
        #: size (the grid follows from it: low <= v < high admits its value alone) and ``index``
        #: scalars (their range decides the index width, their sign the PTX variant)
        self._int_scalars = []
        self._buffers, self._scalars = [], []
        lim = 2 ** (variant.index_bits - 1)
        low, high = -lim, lim
        # a 32-bit launch holds only for integer scalars below index_scalar_bound in magnitude
        # (binding.index_products_overflow): past it the full binding picks 64-bit indices
        limit = bound.index_scalar_bound
        if limit is not None:
            low, high = max(low, 1 - limit), min(high, limit)
        #: (position, low, high) of the other scalars that reach index arithmetic (``index(s)``,
        #: ``strided(s, 1)``, ...: ``KernelSignature.index_inputs``) when
        #: limited: checked before conversion
        self._bounded = []
        for k, p in enumerate(sig.params):
            if p.kind == "buffer":
                a = bound.arrays[p.name]
                self._buffers.append((k, tuple(a.shape), tuple(a.strides), a.dtype))
            elif p.name == sig.problem_size:
                self._int_scalars.append((k, int(bound.problem_size), int(bound.problem_size) + 1))
            elif p.dtype == "index":
                self._int_scalars.append((k, 0 if variant.nonneg_scalars else low, high))
            else:
                self._scalars.append((k, p, numpy_dtype(p.dtype).type))
                if limit is not None and _index_input(sig, p):
                    self._bounded.append((k, low, high))
        self._zero_init = [(k, bound.fill_value(p.name)) for k, p in enumerate(sig.params)
                           if p.kind == "buffer" and p.zero_init]
        #: (position, position, bytes, bytes, one array allowed) of the pairs of buffers whose memory
        #: may not overlap (binding.check_aliasing; the shapes are fixed, so are their extents): a
        #: call that overlaps them is bound in full, which raises the error
        accessed, in_place = alias_plan(sig)
        position = {p.name: k for k, p in enumerate(sig.params)}
        nbytes = {p.name: bound.arrays[p.name].size * bound.arrays[p.name].dtype.itemsize
                  for p in sig.params if p.kind == "buffer"}
        self._alias = [(position[a], position[b], nbytes[a], nbytes[b],
                        frozenset((a, b)) in in_place and nbytes[a] == nbytes[b])
                       for i, (a, wa) in enumerate(accessed) for b, wb in accessed[i + 1:]
                       if (wa or wb) and nbytes[a] and nbytes[b]]
        self._scratch = [(int(a.size), numpy_dtype(p.dtype))
                         for p, a in zip(sig.extra, bound.args[len(sig.params) + len(sig.sizes):])]
        self._sizes_tail = list(bound.args[len(sig.params):len(sig.params) + len(sig.sizes)])

    def __call__(self, args: tuple) -> bool:
        """Launch for the positional ``args`` if they bind as the prepared call did; ``False``
        (nothing launched) otherwise. ``KerncLaunchError`` for a scalar binding rejects."""
        if len(args) != self._nargs or self._get_device() != self.device:
            return False
        values = list(args)
        ndarray = self._ndarray
        for k, shape, strides, dtype in self._buffers:
            a = args[k]
            if type(a) is not ndarray or a.shape != shape or a.strides != strides or (
                    a.dtype is not dtype and a.dtype != dtype):
                return False
            mem = a.data
            ptr = mem.ptr
            if mem.device_id != self.device or ptr & self._align_mask:
                return False
            values[k] = ptr
        for i, j, ni, nj, same_ok in self._alias:
            pi, pj = values[i], values[j]
            if pi < pj + nj and pj < pi + ni and not (same_ok and pi == pj):
                return False
        for k, low, high in self._int_scalars:
            v = args[k]
            if type(v) is not int and not isinstance(v, np.integer) or not low <= v < high:
                return False
            values[k] = int(v)
        for k, low, high in self._bounded:
            v = args[k]
            if isinstance(v, (int, float, np.integer, np.floating)) and not low <= v < high:
                return False  # (NaN fails too): bound in full
        for k, p, exact in self._scalars:
            v = args[k]
            if type(v) is exact:  # already the parameter's numpy type: binding passes it as is
                continue
            if not isinstance(v, (float, int, np.generic)):  # e.g. a 0-d CUDA array: bound in full
                return False
            values[k] = _scalar(p, v)
        for k, value in self._zero_init:
            args[k].fill(value)
        values += self._sizes_tail
        scratch = None
        if self._scratch:  # held until the launch is queued (the pool then reuses it in stream order)
            scratch = [self._cp.zeros(n, dtype) for n, dtype in self._scratch]
            values += [a.data.ptr for a in scratch]
        self.packer.launch_values(self.function_ptr, self.grid, self.block, values, self._current_stream().ptr)
        return True


def prepare(module: CudaModule, bound: BoundLaunch, packer: ArgPacker, device: int,
            variant: Variant) -> PreparedLaunch | None:
    """A :class:`PreparedLaunch` of the call ``bound`` just launched as ``variant``
    (:func:`launch_variant`) from ``module``, or ``None`` when calls like it must be bound in full
    each time (``shared_indices`` tables, ``@checked``, ``P == 0``, buffers that are not CuPy
    arrays)."""
    sig = bound.signature
    if bound.grid == 0 or "checked" in sig.attributes or any(p.kind in ("table", "tensor_map") for p in sig.params + sig.extra):
        return None
    if any(type(a) is not cupy().ndarray for a in bound.arrays.values()):
        return None
    return PreparedLaunch(packer, module.function(sig.name, sig.dynamic_shared_bytes).ptr, bound, device, variant, module)
