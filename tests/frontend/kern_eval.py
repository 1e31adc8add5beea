"""A tiny, slow reference evaluator of the kern IR the frontend emits (test helper only).

It runs a kernel ``func.func`` thread by thread in Python over numpy arrays, so the frontend's
lowering can be checked against the examples' numpy references without a GPU or the backend.
Supports the ops the frontend emits: ``arith``, ``math``, ``scf.if/for/yield``, ``kern.*`` (every
accessor of ``docs/accessor-lowering.md``, with the per-thread meaning of ``accessors.md``: block-wide
sums become per-thread adds, ``shared`` reads go through the ``shared_indices`` tables the evaluator
builds for the hidden table params), ``func.return``. Integers are kept as unsigned canonical Python ints (``0 .. 2**N - 1``), ``index``
values as signed Python ints, floats as numpy scalars of their width.
"""

from __future__ import annotations


import numpy as np

from exact_float import fma_reference
from kernc.dialect.signature import KernelSignature
from kernc.dialect.strided import StridedLayout
from kernc.support.mlir import ir

_NP_FLOAT = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def _kind(t):
    if isinstance(t, ir.IndexType):
        return ("index", 64)
    if isinstance(t, ir.IntegerType):
        return ("int", ir.IntegerType(t).width)
    if isinstance(t, ir.F32Type):
        return ("f32", 32)
    if isinstance(t, ir.F64Type):
        return ("f64", 64)
    if isinstance(t, ir.F16Type):
        return ("f16", 16)
    raise NotImplementedError(str(t))


def _s(v, bits):
    """Signed value of the unsigned canonical ``v``."""
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def _wrap(v, bits):
    return int(v) & ((1 << bits) - 1)


class _Thread:
    def __init__(self, ev, t):
        self.ev = ev
        self.t = t
        self.vals = {}

    def get(self, v):
        return self.vals[v]

    def run_block(self, block, args=()):
        for a, x in zip(block.arguments, args):
            self.vals[a] = x
        for op in block.operations:
            res = self.op(op.operation)
            if isinstance(res, tuple) and res and res[0] == "yield":
                return res[1]
            if res is not None:
                for r, x in zip(op.results, res):
                    self.vals[r] = x
        return []

    def op(self, op):
        name = op.name
        ins = [self.get(v) for v in op.operands]
        rt = op.results[0].type if len(op.results) else None
        if name == "func.return":
            return ("yield", [])
        if name == "scf.yield":
            return ("yield", ins)
        if name == "scf.if":
            region = op.regions[0] if ins[0] else op.regions[1]
            if len(region.blocks) == 0:
                return []
            return self.run_block(region.blocks[0])
        if name == "scf.for":
            lb, ub, step, *carried = ins
            body = op.regions[0].blocks[0]
            i = lb
            while i < ub:
                carried = self.run_block(body, [i] + list(carried))
                i += step
            return list(carried)
        if name.startswith("kern."):
            return self.kern(op, name, ins)
        if name == "arith.constant":
            attr = op.attributes["value"]
            k, bits = _kind(rt)
            if k == "index":
                return [ir.IntegerAttr(attr).value]
            if k == "int":
                return [_wrap(ir.IntegerAttr(attr).value, bits)]
            return [_NP_FLOAT[k](ir.FloatAttr(attr).value)]
        return [self.arith(op, name, ins, rt)]

    def kern(self, op, name, ins):
        ev = self.ev
        kind = name.split(".")[1]
        if kind == "thread_id":
            return [self.t]
        if kind == "block_id":
            return [self.t // ev.sig.block]
        if kind == "block_dim":
            return [ev.sig.block]
        if kind == "lane_id":
            return [(self.t % ev.sig.block) % 32]
        if kind == "problem_size":
            return [ev.P]
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        buf = ev.arrays[ev.memref_name(op.operands[0])]
        args = ins[1:1 + seg[1]]
        accessor = ir.StringAttr(op.attributes["accessor"]).value
        layout = StridedLayout.parse(ir.StringAttr(op.attributes["layout"]).value)
        t, B = self.t, ev.sig.block
        arg_arrays = [ev.arrays.get(ev.memref_name(v)) if isinstance(v.type, ir.MemRefType) else None
                      for v in list(op.operands)[1:1 + seg[1]]]
        default = None
        if accessor == "sequential":
            elems = [t]
        elif accessor in ("strided", "strided_default"):
            elems = [args[0] + t * args[1]]
            default = _default_attr(op) if accessor == "strided_default" else None
        elif accessor == "pair_strided_default":
            elems = [args[0] + t * args[1], args[0] + (t + 1) * args[1]]
            default = _default_attr(op)
        elif accessor in ("indexed", "atomic"):
            elems = [int(arg_arrays[0][t])]
        elif accessor == "shared":  # (unique, target): target packs rank | count << 16
            unique, target = arg_arrays[0], arg_arrays[1]
            elems = [int(unique[(t // B) * B + (int(target[t]) & 0xFFFF)])]
        elif accessor == "shared_sum":  # (unique, perm): the sorted entry of thread t holds its rank
            unique, perm = arg_arrays[0], arg_arrays[1].astype(np.int64)
            base = (t // B) * B
            block = perm[base:base + B]
            rank = int(block[np.flatnonzero((block & 0xFFFF) == t - base)[0]] >> 16)
            elems = [int(unique[base + rank])]
        elif accessor == "unique":
            elems = [0]
        elif accessor == "pair":
            elems = [t, t + 1]
        elif accessor == "block_sum":
            elems = [t // B]
        elif accessor == "sum":
            elems = [0]
        else:
            raise NotImplementedError(accessor)
        n_all = len(op.results) if kind == "read" else seg[3]
        n = n_all // len(elems)
        M = layout.shape[0].evaluate(ev.sizes)
        offs = []
        for e in elems:
            if default is not None and not 0 <= e < M:
                offs += [None] * n
                continue
            for k in range(n):
                o = layout.offset((e, k) if layout.rank == 2 else (e,), ev.sizes)
                if not 0 <= o < buf.size:
                    raise IndexError(f"thread {t}: offset {o} out of bounds of {buf.size}")
                offs.append(o)
        if kind == "read":
            out = []
            for o, r in zip(offs, op.results):
                k, bits = _kind(r.type)
                if o is None:
                    out.append(default)
                    continue
                x = buf[o]
                out.append(_NP_FLOAT[k](x) if k in _NP_FLOAT else _wrap(int(x), bits))
            return out
        values = ins[1 + seg[1] + seg[2]:]
        # block-wide and scatter-add accessors add (their `write` forms are zeroed before the launch)
        adds = kind == "add" or accessor in ("sum", "block_sum", "pair")
        for o, v in zip(offs, values):
            if buf.dtype.kind != "f":
                v = _s(v, buf.dtype.itemsize * 8) if buf.dtype.kind == "i" else v
            with np.errstate(over="ignore"):  # rounding a compute value to a narrower storage type
                if not adds:
                    buf[o] = buf.dtype.type(v)
                else:
                    buf[o] = buf.dtype.type(buf[o] + v) if buf.dtype.kind == "f" else \
                        np.array(int(buf[o]) + int(v)).astype(np.int64).astype(buf.dtype)
        return []

    def arith(self, op, name, ins, rt):
        short = name.split(".", 1)[1]
        if name.startswith("math."):
            x = ins
            f = {
                "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
                "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil, "absf": np.abs,
            }.get(short)
            if f is not None:
                return type(x[0])(f(x[0]))
            if short == "rsqrt":
                return type(x[0])(1.0 / np.sqrt(np.float64(x[0])))
            if short == "fma":  # one rounding of the exact value (Fraction-based, like fma.rn)
                return fma_reference(x[0], x[1], x[2], type(x[0]))
            if short == "absi":
                k, bits = _kind(rt)
                return _wrap(abs(_s(x[0], bits)), bits)
            raise NotImplementedError(name)
        a = ins[0] if ins else None
        b = ins[1] if len(ins) > 1 else None
        fl = {"addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide,
              "remf": np.fmod, "minnumf": np.fmin, "maxnumf": np.fmax}
        if short in fl:
            with np.errstate(all="ignore"):
                return type(a)(fl[short](a, b))
        if short == "negf":
            return type(a)(-a)
        if short == "cmpf":
            p = int(ir.IntegerAttr(op.attributes["predicate"]).value)
            names = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
                     "ult", "ule", "une", "uno", "true"]
            pn = names[p]
            nan = np.isnan(a) or np.isnan(b)
            if pn == "une":
                return int(nan or a != b)
            if nan:
                return 0
            return int({"oeq": a == b, "olt": a < b, "ole": a <= b, "ogt": a > b, "oge": a >= b}[pn])
        if short == "select":
            return ins[1] if ins[0] else ins[2]
        if short == "cmpi":
            p = int(ir.IntegerAttr(op.attributes["predicate"]).value)
            names = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
            pn = names[p]
            k, bits = _kind(op.operands[0].type)
            if k == "index":
                sa, sb, ua, ub = a, b, a % (1 << 64), b % (1 << 64)
            else:
                sa, sb, ua, ub = _s(a, bits), _s(b, bits), a, b
            return int({"eq": ua == ub, "ne": ua != ub, "slt": sa < sb, "sle": sa <= sb,
                        "sgt": sa > sb, "sge": sa >= sb, "ult": ua < ub, "ule": ua <= ub,
                        "ugt": ua > ub, "uge": ua >= ub}[pn])
        # casts
        if short in ("sitofp", "uitofp"):
            k, bits = _kind(op.operands[0].type)
            v = a if k == "index" else (_s(a, bits) if short == "sitofp" else a)
            return _NP_FLOAT[_kind(rt)[0]](v)
        if short in ("fptosi", "fptoui"):
            k, bits = _kind(rt)
            return _wrap(int(np.trunc(np.float64(a))), bits)
        if short in ("extf", "truncf"):
            return _NP_FLOAT[_kind(rt)[0]](a)
        if short in ("index_cast", "index_castui"):
            k, bits = _kind(op.operands[0].type)
            if k == "index":
                return _wrap(a, _kind(rt)[1])
            return _s(a, bits) if short == "index_cast" else a
        if short in ("extsi", "extui", "trunci"):
            k, bits = _kind(op.operands[0].type)
            _, obits = _kind(rt)
            v = _s(a, bits) if short == "extsi" else a
            return _wrap(v, obits)
        # integer binary ops
        k, bits = _kind(rt)
        if k == "index":
            sa, sb = a, b
            wrap = lambda v: v  # noqa: E731
            ua, ub = a, b
        else:
            sa, sb = _s(a, bits), _s(b, bits)
            ua, ub = a, b
            wrap = lambda v: _wrap(v, bits)  # noqa: E731
        if short == "addi":
            return wrap(sa + sb)
        if short == "subi":
            return wrap(sa - sb)
        if short == "muli":
            return wrap(sa * sb)
        if short == "divsi":
            q = abs(sa) // abs(sb)
            return wrap(q if (sa >= 0) == (sb >= 0) else -q)
        if short == "divui":
            return wrap(ua // ub)
        if short == "floordivsi":
            return wrap(sa // sb)
        if short == "remsi":
            r = abs(sa) % abs(sb)
            return wrap(r if sa >= 0 else -r)
        if short == "remui":
            return wrap(ua % ub)
        if short == "andi":
            return wrap(sa & sb)
        if short == "ori":
            return wrap(sa | sb)
        if short == "xori":
            return wrap(sa ^ sb)
        if short == "shli":
            return wrap(sa << ub)
        if short == "shrsi":
            return wrap(sa >> ub)
        if short == "shrui":
            return wrap(ua >> ub)
        if short in ("minsi", "maxsi"):
            return wrap((min if short == "minsi" else max)(sa, sb))
        if short in ("minui", "maxui"):
            return wrap((min if short == "minui" else max)(ua, ub))
        raise NotImplementedError(name)


def shared_indices(index, P: int, B: int) -> dict:
    """The ``shared_indices(I, B)`` tables of ``docs/accessor-lowering.md`` for ``I[0:P]``:
    ``unique``, ``target``, ``perm`` (``ceil(P/B) * B`` entries each; ``target`` packs ``rank | count << 16``,
    ``perm`` each sorted entry as ``thread | rank << 16``) and ``count`` (one per block), all uint32."""
    nb = -(-P // B)
    tables = {f: np.zeros(max(nb * B, 1), np.uint32) for f in ("unique", "target", "perm")}
    tables["count"] = np.zeros(max(nb, 1), np.uint32)
    idx = np.asarray(index).astype(np.uint32)[:P]
    for b in range(nb):
        chunk = idx[b * B:(b + 1) * B]
        distinct = np.unique(chunk)
        tables["unique"][b * B:b * B + len(distinct)] = distinct
        tables["target"][b * B:b * B + len(chunk)] = np.searchsorted(distinct, chunk) | (len(distinct) << 16)
        order = np.argsort(chunk, kind="stable")  # packed with each entry's rank: thread | rank << 16
        tables["perm"][b * B:b * B + len(chunk)] = order | (np.searchsorted(distinct, chunk[order]) << 16)
        tables["count"][b] = len(distinct)
    return tables


class Evaluator:
    """Run kernel ``name`` of ``module`` on ``inputs`` (arrays in storage shape, scalars)."""

    def __init__(self, module, name: str):
        self.func = None
        for op in module.body.operations:
            if ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
                self.func = op
        assert self.func is not None, name
        self.sig = KernelSignature.from_json(
            ir.StringAttr(self.func.operation.attributes["kern.signature"]).value)

    def memref_name(self, value) -> str:
        return self.arg_names[value]

    def run(self, inputs: dict, P: int | None = None, sizes: dict | None = None) -> dict:
        sig = self.sig
        self.arrays = {}
        self.sizes = dict(sizes or {})
        for p in sig.params:
            if p.kind == "buffer":
                arr = np.array(inputs[p.name], copy=True)
                for dim, ext in zip(p.storage_shape, arr.shape):
                    if isinstance(dim, str) and dim.isidentifier():
                        self.sizes.setdefault(dim, ext)
                self.arrays[p.name] = arr.reshape(-1)
        if P is not None:
            self.sizes.setdefault(sig.problem_size, P)
        if sig.problem_size in self.sizes:
            self.P = self.sizes[sig.problem_size]
        else:
            self.P = int(inputs[sig.problem_size])
        for p in sig.params:
            if p.kind == "table":
                tables = shared_indices(self.arrays[p.table_of], self.P, sig.block)
                self.arrays[p.name] = tables[p.table_field]
            elif p.kind == "buffer" and p.access == "write" and p.zero_init:
                self.arrays[p.name][:] = 0
            elif p.kind == "buffer" and p.access == "write" and p.accessor == "block_sum":
                layout = StridedLayout.parse(p.layout)
                for b in range(-(-self.P // sig.block)):
                    for k in range(p.components):
                        self.arrays[p.name][layout.offset((b, k) if layout.rank == 2 else (b,),
                                                          self.sizes)] = 0
        block = self.func.operation.regions[0].blocks[0]
        self.arg_names = {}
        argvals = []
        for p, a in zip(sig.params, block.arguments):
            self.arg_names[a] = p.name
            if p.kind in ("buffer", "table"):
                argvals.append(None)
                continue
            v = inputs[p.name]
            k, bits = _kind(a.type)
            if k == "index":
                argvals.append(int(v))
            elif k == "int":
                argvals.append(_wrap(int(v), bits))
            else:
                argvals.append(_NP_FLOAT[k](v))
        for s, a in zip(sig.sizes, list(block.arguments)[len(sig.params):]):
            argvals.append(int(self.sizes[s]))
        for t in range(self.P):
            th = _Thread(self, t)
            th.run_block(block, argvals)
        out = {}
        for p in sig.params:
            if p.kind == "buffer" and p.access in ("write", "add"):
                out[p.name] = self.arrays[p.name].reshape(np.shape(inputs[p.name]))
        return out


def _default_attr(op):
    """The value of a ``*_default`` read's typed ``default`` attribute."""
    attr = op.attributes["default"]
    if isinstance(attr.type, ir.IntegerType):
        return ir.IntegerAttr(attr).value
    return ir.FloatAttr(attr).value
