"""Translation of a ``gpu.func`` into a :class:`_Plan`: one Python closure ``f(frame, mask)`` per op,
nested per region, built once per kernel by the handler registered for the op's name.

A handler is ``handler(translator, op) -> closure | None``; modules register theirs with
:func:`handles` beside the semantics they implement (the package imports them all, see
:mod:`kernc.backend.interpreter.launch`).
"""

from __future__ import annotations

from . import affine
from .errors import InterpreterUnsupportedError
from .types import _is_memref, _MemTy, _scalar_ty, _Ty

#: op name -> handler(translator, op) returning the op's closure (or None: nothing to run)
HANDLERS: dict = {}


def handles(*names: str):
    """Register the decorated function as the handler of the ops ``names``."""
    def register(fn):
        for name in names:
            if name in HANDLERS:
                raise RuntimeError(f"two interpreter handlers for {name}")
            HANDLERS[name] = fn
        return fn
    return register


def _uses(o):
    """The values ``o`` reads: its operands and those of the ops in its regions."""
    yield from o.operands
    for region in o.regions:
        for block in region.blocks:
            for child in block.operations:
                yield from _uses(child.operation)


#: ops with no side effect and no region, whose results depend only on their operands
_PURE = ("arith.", "math.", "ub.poison", "vector.broadcast", "vector.splat", "vector.from_elements",
         "vector.extract")


def _memo(f, ins: tuple, outs: tuple, key: int):
    """``f`` computed once per run of the loop around it: while the operand values are the same
    objects as at the last computation (SSA values are never changed in place), the results are
    the ones it gave then. A checked ``index`` op's check is skipped only when every lane passed
    it before. The entries live in ``frame.memo`` and the loop drops them when it finishes."""
    check = getattr(f, "index32_check", None)
    compute = getattr(f, "unchecked", f)

    def g(fr, mask):
        env = fr.env
        hit = fr.memo.get(key)
        if hit is not None and all(env[s] is x for s, x in zip(ins, hit[0])):
            for s, x in zip(outs, hit[1]):
                env[s] = x
            if check is not None and fr.index32 and not hit[2]:
                check(fr, mask)
            return
        compute(fr, mask)
        whole = check(fr, mask) if check is not None and fr.index32 else True
        fr.memo[key] = (tuple(env[s] for s in ins), tuple(env[s] for s in outs), whole)
    return g


def _release(dead: tuple):
    def release(fr, mask):
        env = fr.env
        give = fr.pool.give
        for s in dead:
            v = env[s]
            env[s] = None
            give(v)
    return release


def _run_ops(ops, fr, mask):
    for f in ops:
        f(fr, mask)


class _Plan:
    """The translated form of one kernel (built once, run many times)."""

    def __init__(self):
        self.name = ""
        self.params = []          # per argument: ("scalar", _Ty) or ("buffer", _MemTy, written)
        self.arg_slots = []
        self.wg = []              # (slot, _MemTy, name)
        self.priv = []            # (slot, _MemTy, name)
        self.body = []
        self.nslots = 0
        self.sig_names = None
        self.signature = None
        self.known_block = None
        self.private_bytes_per_lane = 0
        self.wg_bytes_per_block = 0


class _Translator:
    def __init__(self, func_op):
        self.fop = func_op
        self.slots = {}
        self.nslots = 0
        self.written = set()      # slots of memrefs stored/atomically updated
        self.nalloca = 0
        self.private_bytes = 0
        self.lin: dict[int, tuple] = {}   # slot -> (cb, ct): affine in the ids (see .affine)
        self.const: dict[int, int] = {}   # slot -> value of an integer constant
        self.periodic: set[int] = set()   # slots whose value is a function of the thread id alone
        self.depth: dict[int, int] = {}   # slot -> loops around the op its value changes in
        self.loops: list[list] = []       # per enclosing loop being translated: its memo keys
        self.nmemo = 0

    # -- SSA slots
    def define(self, value) -> int:
        s = self.nslots
        self.nslots += 1
        self.slots[value] = s
        self.depth[s] = len(self.loops)
        return s

    # -- loops: a pure op in a loop body whose operands are all defined outside the loop computes
    # the same value in every iteration; its closure is memoised (see _memo)
    def enter_loop(self) -> None:
        """Called by a loop's handler before it defines its body's arguments."""
        self.loops.append([])

    def exit_loop(self) -> tuple:
        """Called after the loop's regions are translated: the memo keys of its invariant ops, which
        the loop's closure drops from the frame when it finishes."""
        return tuple(self.loops.pop())

    def use(self, value) -> int:
        try:
            return self.slots[value]
        except KeyError:
            raise InterpreterUnsupportedError(f"value used before definition: {value}") from None

    def unsupported(self, o, what=None):
        raise InterpreterUnsupportedError(
            f"the CPU interpreter does not support {what or repr(o.name)} (at {o.location})")

    def ty(self, t, o=None) -> _Ty:
        s = str(t)
        if s.startswith(("vector<", "tensor<")):
            raise InterpreterUnsupportedError(
                f"the CPU interpreter does not support vector/tensor values ({s})"
                + (f" (at {o.location})" if o is not None else ""))
        return _scalar_ty(s)

    # -- blocks
    def block(self, block):
        """Translate a block: its ops (without terminator) and the terminator's operand slots.

        After the last use of a value defined in the block (by an op, or a block argument), the
        plan releases it (``env[slot] = None``), so a batch keeps only its live values: numpy then
        reuses the memory just freed, still in cache, where holding every value of the batch until
        its end made each op write fresh pages (measured 3-10x slower per op at 2^16 lanes).
        """
        entries = []
        term = None
        for opv in block.operations:
            o = opv.operation
            if o.name in ("scf.yield", "scf.condition", "gpu.return", "func.return"):
                term = o
                break
            f = self.op(o)
            affine.note_pure(self, o)
            entries.append((self._invariant(f, o), o))
        tslots = [self.use(v) for v in term.operands] if term is not None else []
        return self._with_releases(block, entries, tslots), tslots

    def _invariant(self, f, o):
        """``f``, memoised when ``o`` is a pure op whose operands are all defined outside the
        innermost loop being translated (its results then count as defined there too)."""
        if f is None or not self.loops or not o.name.startswith(_PURE) or len(o.regions):
            return f
        ins = [self.slots[v] for v in o.operands]
        level = max((self.depth[s] for s in ins), default=0)
        if level >= len(self.loops):
            return f
        outs = [self.slots[v] for v in o.results]
        for s in outs:
            self.depth[s] = level
        key = self.nmemo
        self.nmemo += 1
        self.loops[-1].append(key)
        return _memo(f, tuple(ins), tuple(outs), key)

    def _with_releases(self, block, entries, live_out) -> list:
        """The closures of ``entries`` (``(closure or None, op)``), each followed by the release of
        the block's values whose last use it is (uses inside an op's regions count as the op's)."""
        slots = self.slots
        local = {slots[a] for a in block.arguments if a in slots}
        last: dict[int, int] = {}
        for i, (_, o) in enumerate(entries):
            for v in _uses(o):
                s = slots.get(v)
                if s is not None:
                    last[s] = i
            for r in o.results:
                s = slots.get(r)
                if s is not None:
                    local.add(s)
                    last.setdefault(s, i)  # never used: released at once
        dead: dict[int, list] = {}
        for s, i in last.items():
            if s in local and s not in live_out:
                dead.setdefault(i, []).append(s)
        ops = []
        for i, (f, _) in enumerate(entries):
            if f is not None:
                ops.append(f)
            if i in dead:
                ops.append(_release(tuple(dead[i])))
        return ops

    def op(self, o):
        h = HANDLERS.get(o.name)
        if h is None:
            self.unsupported(o)
        return h(self, o)

    def function(self) -> _Plan:
        fo = self.fop
        plan = _Plan()
        plan.name = fo.attributes["sym_name"].value
        ftype = fo.attributes["function_type"].value
        inputs = list(ftype.inputs)
        region = fo.regions[0]
        if len(region.blocks) != 1:
            raise InterpreterUnsupportedError(
                f"the CPU interpreter needs kernel '{plan.name}' as a single block (structured control "
                f"flow), found {len(region.blocks)} blocks")
        entry = region.blocks[0]
        args = list(entry.arguments)
        nargs = len(inputs)
        attrs = fo.attributes
        nwg = int(attrs["workgroup_attributions"].value) if "workgroup_attributions" in attrs else 0
        plan.arg_slots = [self.define(a) for a in args[:nargs]]
        for a in args[:nargs]:
            if _is_memref(a.type):
                mt = _MemTy(a.type)
                if len(mt.dims) != 1:
                    raise InterpreterUnsupportedError(
                        f"kernel '{plan.name}': buffer arguments must be 1-D memrefs, got {a.type}")
                plan.params.append(["buffer", mt, False])
            elif str(a.type) == "!llvm.ptr":  # a tensor map (tma.py: a TensorMap description)
                plan.params.append(["tensor_map"])
                self.lin[self.slots[a]] = (0, 0)
            else:
                plan.params.append(["scalar", self.ty(a.type)])
                self.lin[self.slots[a]] = (0, 0)  # a scalar argument is uniform
        for k, a in enumerate(args[nargs:nargs + nwg]):
            mt = _MemTy(a.type)
            if any(d is None for d in mt.dims):
                raise InterpreterUnsupportedError("workgroup attributions need static shapes")
            plan.wg.append((self.define(a), mt, f"workgroup{k}"))
            plan.wg_bytes_per_block += mt.size * mt.elem.dtype.itemsize
        for k, a in enumerate(args[nargs + nwg:]):
            mt = _MemTy(a.type)
            if any(d is None for d in mt.dims):
                raise InterpreterUnsupportedError("private attributions need static shapes")
            plan.priv.append((self.define(a), mt, f"private{k}"))
            self.private_bytes += mt.size * mt.elem.dtype.itemsize
        plan.body, _ = self.block(entry)
        for p, s in zip(plan.params, plan.arg_slots):
            if p[0] == "buffer":
                p[2] = s in self.written
        plan.nslots = self.nslots
        plan.private_bytes_per_lane = self.private_bytes
        if "known_block_size" in attrs:
            try:
                plan.known_block = [int(x) for x in attrs["known_block_size"]]
            except Exception:  # noqa: BLE001 -- an attribute form we do not know: do not enforce
                plan.known_block = None
        if "kern.signature" in attrs:
            try:
                from kernc.dialect.signature import KernelSignature

                sig = KernelSignature.from_json(attrs["kern.signature"].value)
                plan.signature = sig
                names = sig.arg_names
                if len(names) == nargs:
                    plan.sig_names = names
            except Exception:  # noqa: BLE001 -- a malformed signature only costs the names
                plan.signature = None
        return plan
