"""Workgroup memory of a ``gpu.func`` kernel: the buffers the block-wide accessor lowerings and
``kern-coalesce-views`` stage through, and the limit on their size.

Workgroup memory is one buffer per element type and region, sized to the largest user's need and
reused by every user of the kernel (a barrier separates uses: :meth:`KernelContext.begin_staging`);
values are staged a chunk of components at a time so that no accessor needs more than
:data:`STAGING_BUDGET` bytes per chunk (:func:`chunks`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kernc.dialect.signature import KernelSignature
from kernc.support.errors import CompileError, Diagnostic, SourceLocation
from kernc.support.mlir import ir

from . import ir_builder as b

#: Bytes of workgroup memory one staging chunk may use (components are staged in chunks).
STAGING_BUDGET = 16 * 1024
#: Static shared memory a kernel may use without opting in to more (CUDA: 48 KiB). A kernel whose
#: workgroup memory is larger takes it as dynamic workgroup memory (``kern-dynamic-workgroup-memory``),
#: up to its architecture's :func:`optin_limit`.
SHARED_LIMIT = 48 * 1024
#: Workgroup memory one block may use with the opt-in (``cuFuncSetAttribute(...,
#: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)``), by compute capability: the CUDA C++
#: Programming Guide, "Compute Capabilities" table, "Maximum amount of shared memory per thread
#: block" (7.0: 96 KB, 7.2: 96 KB, 7.5: 64 KB, 8.0/8.7: 163 KB, 8.6/8.9: 99 KB, 9.0: 227 KB,
#: 10.x: 227 KB, 12.x: 99 KB; before 7.0: the 48 KB static limit, no opt-in); the device attribute
#: ``cudaDevAttrMaxSharedMemoryPerBlockOptin`` reports it, which the launcher checks
#: (``backend/cuda.py``).
OPTIN_LIMIT = {70: 98304, 72: 98304, 75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376,
               90: 232448, 100: 232448, 101: 232448, 103: 232448, 120: 101376, 121: 101376}
#: Threads per warp.
WARP = 32


def optin_limit(arch: str) -> int:
    """The most workgroup memory (bytes) a block may use on ``arch`` (``"sm_90a"``) with the opt-in:
    :data:`OPTIN_LIMIT` of its compute capability, :data:`SHARED_LIMIT` for those without an
    opt-in (before ``sm_70``). ``ValueError`` for a name that is no SM architecture."""
    m = re.fullmatch(r"sm_(\d+)a?", arch)
    if not m:
        raise ValueError(f"not an SM architecture: {arch!r}")
    return OPTIN_LIMIT.get(int(m.group(1)), SHARED_LIMIT)


def workgroup_limit(arch: str, dynamic: bool = True) -> int:
    """The workgroup memory (bytes) the passes may give a kernel on ``arch``: its opt-in maximum
    (:func:`optin_limit`) with dynamic workgroup memory (``dynamic``, ``CompileOptions.
    dynamic_shared_memory``), else the 48 KiB static limit (:data:`SHARED_LIMIT`)."""
    return optin_limit(arch) if dynamic else SHARED_LIMIT


def source_location(loc) -> "SourceLocation | None":
    """The ``file:line:col`` of an MLIR ``FileLineColLoc`` (``None`` for other locations)."""
    m = re.search(r'loc\("([^"]+)":(\d+):(\d+)', str(loc))
    return SourceLocation(m.group(1), int(m.group(2)), int(m.group(3))) if m else None


def emit_remark(remarks, at, text: str) -> None:
    """Give ``remarks`` (a pass's ``remarks`` option: a callable, or ``None`` when ``--remarks`` is
    off) the line ``file:line:col: remark: text`` at the source location ``at``: an ``ir.Location``,
    or an op's (a pass that rewrites the op takes its location first: an erased op's is freed)."""
    if remarks is not None:
        loc = at if isinstance(at, ir.Location) else at.location
        remarks(f"{source_location(loc) or '<unknown>'}: remark: {text}")


def chunks(ncomp: int, block: int, elem_bytes: int) -> list[range]:
    """The components ``0 .. ncomp - 1`` in runs whose staging by ``block`` threads, ``elem_bytes``
    each, fits :data:`STAGING_BUDGET` (at least one component per run)."""
    per = max(1, min(ncomp, STAGING_BUDGET // (block * elem_bytes)))
    return [range(c, min(c + per, ncomp)) for c in range(0, ncomp, per)]


@dataclass
class KernelContext:
    """Per-``gpu.func`` state: the guard, thread ids, and the shared workgroup buffers."""

    fn: object
    sig: KernelSignature
    guard: object
    block: int
    smem: dict = field(default_factory=dict)       # str(type) -> [block arg, elements, type]
    smem_users: list = field(default_factory=list)  # (accessor description, bytes)
    smem_used: bool = False
    in_range: list = field(default_factory=list)  # the t < P tests of block-wide read stagings

    def workgroup(self, elem: ir.Type, n: int, user: str, region: str = "data", location=None) -> ir.Value:
        """A workgroup buffer of at least ``n`` elements of ``elem``, shared by all accessors that
        ask for the same element type and ``region`` (uses are separated by barriers)."""
        key = (str(elem), region)
        space = ir.Attribute.parse("#gpu.address_space<workgroup>")
        if key not in self.smem:
            entry = self.fn.regions[0].blocks[0]
            arg = entry.add_argument(ir.MemRefType.get([n], elem, memory_space=space), self.fn.location)
            self.smem[key] = [arg, n, elem]
            count = ir.IntegerAttr(self.fn.attributes["workgroup_attributions"]).value if "workgroup_attributions" in self.fn.attributes else 0
            self.fn.attributes["workgroup_attributions"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), count + 1)
        entry_ = self.smem[key]
        if n > entry_[1]:
            entry_[1] = n
            entry_[0].set_type(ir.MemRefType.get([n], elem, memory_space=space))
        self.smem_users.append((user, n * (b.bits(elem) // 8), location or ir.Location.current))
        return entry_[0]

    @property
    def deterministic(self) -> bool:
        return "deterministic" in self.sig.attributes

    def arg(self, name: str) -> ir.Value:
        """The ``gpu.func`` argument of the signature's argument ``name``."""
        return self.fn.regions[0].blocks[0].arguments[self.sig.arg_names.index(name)]

    def param_of(self, value: ir.Value) -> str:
        """The signature name of the ``gpu.func`` argument ``value``."""
        for name, arg in zip(self.sig.arg_names, self.fn.regions[0].blocks[0].arguments):
            if arg == value:
                return name
        raise ValueError("not an argument of the kernel")

    def begin_staging(self) -> None:
        """A barrier before re-using workgroup memory another staging step may still be reading."""
        if self.smem_used:
            b.barrier()
        self.smem_used = True

    def check_limit(self, limit: int = SHARED_LIMIT) -> None:
        """``CompileError`` at the kernel's first shared-memory user when the workgroup buffers
        exceed ``limit`` bytes (:data:`SHARED_LIMIT`, or :func:`workgroup_limit` for a pass whose
        buffers may be dynamic workgroup memory), naming every accessor and its bytes."""
        total = sum(n * (b.bits(t) // 8) for _, n, t in self.smem.values())
        if total > limit:
            users = ", ".join(f"{u} ({n} bytes)" for u, n, _ in self.smem_users)
            raise CompileError(Diagnostic(
                f"kernel '{self.sig.name}' needs {total} bytes of shared memory, more than the "
                f"{limit} bytes a block may use; accessors: {users}",
                source_location(self.smem_users[0][2]),
                hint="use a smaller @block size",
            ))
