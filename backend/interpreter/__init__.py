"""The CPU reference interpreter: a vectorised SIMT executor, in numpy, of kernc's gpu-level IR.

It executes the ``gpu.func`` kernels of a module in the form described in ``docs/gpu-ir.md``
(``gpu``, ``arith``, ``math``, ``scf`` and ``memref`` ops on 1-D flat buffers, workgroup memory as
``gpu.func`` workgroup attributions) with the semantics the same IR has on an NVIDIA GPU once lowered
through NVVM:

- **Lanes.** All threads of a *batch* of consecutive blocks are the lanes of numpy arrays of shape
  ``(nblocks_in_batch * block,)``; lane ``l`` of a batch starting at block ``b0`` is thread
  ``l % block`` of block ``b0 + l // block``. Batches hold at most ``MAX_LANES_PER_BATCH`` (``2**16``)
  lanes, fewer when the kernel has large private or workgroup arrays, so memory stays bounded for any
  grid (and the arrays stay cache-sized, which measured fastest). Every SSA value
  is such an array, or a numpy scalar when it is uniform over the batch (constants, scalar arguments,
  values computed only from those).
- **Control flow** runs in lockstep under a boolean lane mask: ``scf.if`` runs its regions under
  ``mask & cond`` and ``mask & ~cond`` and merges the yielded values with ``np.where``; ``scf.for``
  with lane-varying bounds and ``scf.while`` iterate until no lane is active, each lane keeping its own
  induction variable and iteration arguments. Pure ops compute on every lane (inactive lanes hold
  values nobody reads); only memory ops, atomics, shuffles and barriers consult the mask.
- **Integers** are signless: values of ``iN`` are stored in the signed numpy type of that width
  (``i1`` as ``bool``, ``index`` as ``int64``) and every op that cares about signedness (``divui``,
  ``cmpi ult``, ``shrui``, ``extui``, ``uitofp``, ...) computes on the unsigned view. Arithmetic wraps
  modulo ``2**N``; ``divsi``/``remsi`` truncate toward zero (C semantics). Operations whose result is
  undefined on the GPU (division by zero, shift amounts ``>= N``, out-of-range ``fptosi``) produce a
  value (0, or a saturated conversion as ``cvt.rzi`` does) and never raise.
- **Floats** are computed in the operand's precision (``f32`` ops on ``float32`` arrays, ``f16`` on
  ``float16``, ``bf16`` on ``ml_dtypes.bfloat16``, which rounds to nearest even like PTX ``cvt.rn``).
  Fast-math flags are ignored. ``math.fma`` is rounded once, like PTX ``fma.rn``
  (:mod:`kernc.backend.exact_fma`).
- **Memory.** Global buffers are the caller's numpy arrays, read and written in place. Every active
  lane's index is bounds-checked; a fault raises :class:`~kernc.errors.KerncRuntimeError` naming the
  buffer, the global thread id and the index. Workgroup attributions are allocated per block,
  ``memref.alloca`` and private attributions per thread, both bounds-checked the same way. When
  several lanes store to one address in one step the highest lane wins; atomics are serialised in lane
  order so the old values they return form one consistent sequence. A missing ``gpu.barrier`` is a
  reported race: two threads of a block touching one workgroup address between two barriers, one
  of them storing, raise ``KerncRuntimeError`` at the second access naming both ops' locations
  (:func:`.memory._track`). Every op that reads or writes workgroup memory goes through it:
  ``memref.load``/``store``, ``vector.load``/``store`` (each element as the lane's),
  ``nvgpu.ldmatrix`` (a row as loaded by the whole warp), ``nvvm.wgmma.mma_async`` operands (as
  loaded by the whole warpgroup), ``cp.async`` issue and retirement (:mod:`.async_copy`), TMA
  destinations (:mod:`.tma`); each also checks the ``cp.async`` copies in flight. A ``cp.async``
  whose source is stored to before its wait, or whose addresses are not aligned to its size, is a
  ``KerncRuntimeError`` too.
- **Statistics** (:class:`RunStats`): global load/store *requests* and 32-byte *sectors* per warp
  request, atomics, shared-memory requests and *bank conflicts* -- the CPU-measurable proxy for
  coalescing quality.

The public API is :class:`Interpreter` (translate a module once, run its kernels many times) and
:class:`RunStats`. Each ``gpu.func`` is translated on its first run into a plan of Python closures
over numpy (one per op, nested per region) that is cached on the :class:`Interpreter`; running a
kernel never walks the MLIR bindings objects again.

What keeps a run fast (each measured; docs/performance.md): a value is released after its last use
and its array goes to a pool the next ops write into (a batch touches few fresh pages); a memory op
whose lanes address a strided run of memory -- the index affine in the block and thread ids with
the block term ``B`` times the thread term (:mod:`.affine`) -- is one slice, not a gather, and
needs no race check; a bounds guard ``t < n`` of such an index whose answer is the same for every
lane of a batch is decided from the batch's first lane (a uniform ``i1``, so its ``scf.if`` runs
under the batch's mask unchanged); a mostly active mask gathers with every lane; pure ops that a
loop does not change are computed once per loop; the traffic counters sort short rows (one per
warp) rather than hashing; shuffles with a uniform offset reuse their source lanes.
``Interpreter.run(..., collect_stats=False)`` (``kernel(..., stats=False)``) skips the counters.

The package, one job per module (imports point down this list only):

- :mod:`.launch`: :class:`Interpreter` -- argument checks, batches of blocks, the run loop;
- :mod:`.translate`: the handler registry (op name -> handler) and the translation of a
  ``gpu.func`` into a :class:`~.translate._Plan` of closures;
- the handlers, each module registering its ops beside their semantics: :mod:`.numeric` (integer
  and float arithmetic, comparisons, constants, ``index`` width checks), :mod:`.conversions` (casts),
  :mod:`.memory` (loads, stores, allocas; bounds and race checks), :mod:`.vector` (16-byte vector
  accesses), :mod:`.gpu` (ids, barriers, shuffles, atomics), :mod:`.nvgpu` (``ldmatrix`` and
  ``mma.sync`` with the PTX ISA's fragment layouts), :mod:`.wgmma` (Hopper's ``nvvm.wgmma.*``:
  matrix descriptors, swizzles, the m64nN accumulator fragment (f32 or s32), pending groups and their errors;
  the LLVM structs that carry the accumulators), :mod:`.async_copy` (``cp.async``,
  its groups and waits: a copy in flight read is a reported race), :mod:`.control` (``scf``);
- :mod:`.traffic`: :class:`RunStats` and the request, sector and bank-conflict counts;
- :mod:`.affine` (which ``index`` values are affine in the ids), :mod:`.frame` (the state of one
  batch, the memref values, the pool of lane arrays), :mod:`.types` (IR types as numpy dtypes),
  :mod:`.errors`.
"""

from __future__ import annotations

from .errors import InterpreterUnsupportedError
from .launch import MAX_LANES_PER_BATCH, Interpreter
from .traffic import BANK_BYTES, SECTOR_BYTES, SHARED_BANKS, WARP_SIZE, RunStats, _count  # noqa: F401

__all__ = ["Interpreter", "RunStats", "InterpreterUnsupportedError", "MAX_LANES_PER_BATCH", "WARP_SIZE"]
