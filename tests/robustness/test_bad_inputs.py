"""A self-contained catalogue of bad inputs: each with the exact exit code (CLI) or exception type
(API), the intended message and, for source errors, the ``file:line:col`` location.

- source errors (syntax, types, shapes, accessors, layouts, kernel attributes) through
  ``kernc.cli.main(["compile", FILE])`` in-process: exit 1, ``FILE:LINE:COL: error: MESSAGE``, the
  source line and a caret under the column, no traceback;
- launch arguments through the Python API: ``KerncLaunchError`` naming the parameter (dtype, shape
  symbol mismatch, non-contiguous, missing/extra arguments, scalar out of range, index values past
  the target size, ...);
- command-line misuse: exit 2 (argparse usage errors) and exit 1 for unreadable or wrong files;
- corrupt inputs to ``kernc run`` (``--input x=@file.npy`` truncated, garbage, empty, pickled, ...):
  exit 1 with a message naming the file.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import kernc
from conftest import EXAMPLES
from kernc import KerncLaunchError
from kernc.cli import main

SAXPY = os.path.join(EXAMPLES, "saxpy.kern")
HEAD = ("kernel k(a: f32, b: i32, u: u32, x: f32[n] read, v: f32[n, 3] read, y: f32[n] write, "
        "w: f32[n, 3] add) over n {\n")


def body(stmt: str) -> str:
    """``stmt`` on line 2 (column 5) of a kernel with scalars a b u, reads x v, outputs y w."""
    return HEAD + "    " + stmt + "\n}\n"


def bug(reason: str):  # for the next defect found: a strict xfail until fixed
    return pytest.mark.xfail(strict=True, reason="BUG: " + reason)


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch):
    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")


# ---------------------------------------------------------------------------------------------------
# source errors: (id, source, line, column, message)
SOURCE_CASES = [
    ('syn_missing_semicolon', body('y = x'), 2, 10, "expected ';' after 'x'"),
    ('syn_missing_close_brace', 'kernel k(x: f32[n] read, y: f32[n] write) over n {\n    y = x;\n', 2, 11, "unexpected end of file, expected '}' or a statement"),
    ('syn_bad_character', body('y = x $ 1.0;'), 2, 11, "unexpected character '$', expected ';'"),
    ('syn_missing_over', 'kernel k(x: f32[n] read) { }\n', 1, 26, "unexpected '{', expected 'over'"),
    ('syn_bad_hex', body('let z = 0x;'), 2, 13, "invalid number literal '0x'"),
    ('syn_let_without_name', body('let = 1;'), 2, 9, "unexpected '=', expected a name"),
    ('syn_range_without_end', body('for k in 0.. { }'), 2, 18, "unexpected '{', expected an expression"),
    ('syn_unterminated_comment', 'kernel k(x: f32[n] read) over n {\n    /* never closed\n}\n', 2, 5, "unterminated comment"),
    ('syn_empty_param', 'kernel k(,) over n { }\n', 1, 10, "unexpected ',', expected ')' or a name"),
    ('syn_if_without_block', body('if true y = x;'), 2, 13, "unexpected name 'y', expected '{'"),
    ('syn_else_without_if', body('else { }'), 2, 10, "unexpected '{', expected '='"),
    ('syn_double_operator', body('y = x * * x;'), 2, 13, "unexpected '*', expected an expression"),
    ('syn_unclosed_paren', body('y = (x + 1.0;'), 2, 17, "unexpected ';', expected ')' or ','"),
    ('syn_missing_access_mode', 'kernel k(x: f32[n]) over n { }\n', 1, 19, "unexpected ')', expected an access mode (read, write, add)"),
    ('syn_string_literal', body('let s = "hi";'), 2, 13, 'unexpected character \'"\', expected an expression'),
    ('typ_mix_float_int', body('y = a * b;'), 2, 11, "cannot mix 'f32' and 'i32' in '*': no implicit int/float con"),
    ('typ_mix_signed_unsigned', body('let z = b + u;'), 2, 15, "cannot mix signed 'i32' and unsigned 'u32' in '+'"),
    ('typ_float_literal_as_int', body('let z: i32 = 1.5;'), 2, 18, "type mismatch in the initializer of 'z': a float literal can"),
    ('typ_literal_out_of_range', body('let z: u8 = 300;'), 2, 17, "integer literal 300 is out of range for 'u8' (0..255)"),
    ('typ_negative_unsigned_literal', body('let z: u32 = -1;'), 2, 18, "integer literal -1 is out of range for 'u32' (0..4294967295)"),
    ('typ_condition_not_bool', body('if a { }'), 2, 8, "condition must be 'bool', got 'f32'"),
    ('typ_unknown_name', body('y = xx;'), 2, 9, "unknown name 'xx'; did you mean 'x'?"),
    ('typ_assign_read_buffer', body('x = a;'), 2, 5, "cannot assign to 'x': it is a read buffer"),
    ('typ_read_output', body('let q = y;'), 2, 13, "cannot read output 'y' (declared 'write')"),
    ('typ_assign_param', body('a = 1.0;'), 2, 5, "cannot assign to parameter 'a'"),
    ('typ_sqrt_of_int', body('let z = sqrt(b);'), 2, 18, "'sqrt' needs a float argument, got 'i32'"),
    ('typ_min_arity', body('let z = min(a);'), 2, 13, "'min' takes 2 arguments, got 1"),
    ('typ_not_on_int', body('let z = !b;'), 2, 13, "'!' needs a bool operand, got 'i32'"),
    ('typ_shift_float', body('let z = a << 1;'), 2, 13, "'<<' needs integer operands, got 'f32'"),
    ('typ_bool_arithmetic', body('let z = true + true;'), 2, 18, "arithmetic '+' on bool values"),
    ('typ_redeclaration', body('let z = a; let z = a;'), 2, 20, "redeclaration of 'z'"),
    ('typ_assign_loop_var', body('for i in 0..3 { i = 2; }'), 2, 21, "cannot assign to loop variable 'i'"),
    ('typ_divide_assign_output', body('y /= 2.0;'), 2, 7, "operator '/=' cannot update output 'y'; use '=', '+=' or '-="),
    ('typ_cast_two_args', body('let z = u32(a, a);'), 2, 13, "the conversion 'u32(...)' takes 1 argument, got 2"),
    ('typ_unknown_type', 'kernel k(x: f33[n] read) over n { }\n', 1, 13, "unknown type 'f33'; did you mean 'f32'?"),
    ('typ_unknown_function', body('let z = sqr(a);'), 2, 13, "unknown function 'sqr'; did you mean 'sqrt'?"),
    ('typ_select_condition', body('let z = select(a, a, a);'), 2, 20, "the condition of 'select' must be bool, got 'f32'"),
    ('typ_wrong_output_type', body('y = b;'), 2, 9, "type mismatch in assignment to 'y': expected 'f32', got 'i32"),
    ('typ_type_name_as_value', body('let z = f32;'), 2, 13, "'f32' is a type, not a value"),
    ('shp_vector_length_mismatch', body('let z = v + [1.0, 2.0];'), 2, 15, "vector lengths differ in '+': 3 and 2"),
    ('shp_component_out_of_range', body('let z = v[3];'), 2, 15, 'component index 3 is out of range for a 3-component value'),
    ('shp_index_scalar', body('let z = x[0];'), 2, 13, "cannot index 'x' of scalar type 'f32'"),
    ('shp_three_dims', 'kernel k(x: f32[n, 3, 3] read) over n { }\n', 1, 10, "buffer 'x' has 3 dims; only T[n] and T[n, K] are supported ("),
    ('shp_one_component', 'kernel k(x: f32[n, 1] read) over n { }\n', 1, 20, 'a multi-component element needs at least 2 components, got 1'),
    ('shp_symbolic_components', 'kernel k(x: f32[n, m] read) over n { }\n', 1, 20, 'the last dim of a multi-component buffer must be an integer '),
    ('shp_bool_buffer', 'kernel k(x: bool[n] read) over n { }\n', 1, 13, "buffers of 'bool' are not supported"),
    ('shp_slice_out_of_range', body('let z = v[0:4];'), 2, 13, 'slice [0:4] is out of range for a 3-component value'),
    ('shp_write_vector_to_scalar', body('y = v;'), 2, 9, "type mismatch in assignment to 'y': expected 'f32', got 'f32"),
    ('acc_unknown_accessor', 'kernel k(x: f32[n] read strid(1, 2)) over n { }\n', 1, 25, "unknown accessor 'strid'; did you mean 'strided'?"),
    ('acc_strided_arity', 'kernel k(x: f32[n] read strided(1)) over n { }\n', 1, 25, "accessor 'strided' takes 2 arguments, got 1"),
    ('acc_strided_float_arg', 'kernel k(x: f32[n] read strided(o, 2), o: f32) over n { }\n', 1, 33, "strided arguments must be integers, got 'f32'"),
    ('acc_index_buffer_float', 'kernel k(x: f32[n] read indexed(j), j: f32[n] read) over n { }\n', 1, 33, "the index buffer 'j' of indexed(j) must be a 1-D u8/u16/u32/i8/i16/i32 "),
    ('acc_unknown_index_buffer', 'kernel k(x: f32[n] read indexed(j)) over n { }\n', 1, 33, "unknown index buffer 'j'"),
    ('acc_shared_on_write', 'kernel k(x: f32[n] write shared(i), i: u32[n] read) over n { }\n', 1, 26, "accessor 'shared' is only for 'read' buffers, not 'write'"),
    ('acc_unique_on_add', 'kernel k(x: f32[n] add unique) over n { }\n', 1, 24, "accessor 'unique' is only for 'read' buffers, not 'add'"),
    ('acc_shared_sum_on_read', 'kernel k(x: f32[n] read shared_sum(i), i: u32[n] read) over n { }\n', 1, 25, "accessor 'shared_sum' needs 'add' access, not 'read'"),
    ('acc_default_without_strided', 'kernel k(x: f32[n] read default 0.0) over n { }\n', 1, 33, "'default v' needs a strided read: `strided(off, s) default v"),
    ('acc_pair_bare_name', 'kernel k(u: f32[n1] read pair, y: f32[n] write) over n {\n    y = u;\n}\n', 2, 9, "'u' is read 'pair': use 'u.first' or 'u.second'"),
    ('acc_first_on_sequential', body('let z = x.first;'), 2, 15, "'.first' needs a buffer read with 'pair'; 'x' is read 'seque"),
    ('acc_tuple_to_plain_output', body('y = (a, a);'), 2, 9, "a tuple can only be assigned to a pair output; 'y' is declar"),
    ('acc_atomic_on_read', 'kernel k(x: f32[m] read atomic(i), i: u32[n] read) over n { }\n', 1, 25, "accessor 'atomic' needs 'add' access, not 'read'"),
    ('acc_sum_on_read', 'kernel k(x: f32[n] read sum) over n { }\n', 1, 25, "accessor 'sum' is only for 'write' or 'add' buffers, not 're"),
    ('acc_two_accessors', 'kernel k(x: f32[n] read unique unique) over n { }\n', 1, 25, "only 'pair strided(off, s) default v' combines two accessor "),
    ('lay_unknown_layout', 'kernel k(x: f32[n, 3] read as sao) over n { }\n', 1, 31, "unknown layout 'sao'; did you mean 'soa'?"),
    ('lay_shape_mismatch', 'kernel k(x: f32[n] read as (m):(1)) over n { }\n', 1, 28, "layout (m):(1) does not match the dims [n] of 'x'"),
    ('lay_arg_count', 'layout foo(A) = (A, 3):(3, 1);\nkernel k(x: f32[n, 3] read as foo(n, 3)) over n { }\n', 2, 31, "layout 'foo' takes 1 argument, got 2"),
    ('lay_unknown_name_in_def', 'layout foo = (A, 3):(3, 1);\nkernel k(x: f32[n, 3] read) over n { }\n', 1, 15, "unknown name 'A' in layout 'foo'"),
    ('lay_caspar_single_component', 'kernel k(x: f32[n] read as caspar) over n { }\n', 1, 28, "layout 'caspar' is for multi-component elements (T[n, K])"),
    ('lay_rank_mismatch', 'kernel k(x: f32[n, 3] read as (n):(1)) over n { }\n', 1, 31, "layout (n):(1) does not match the dims [n, 3] of 'x'"),
    ('lay_duplicate_clause', 'kernel k(x: f32[n, 3] read as soa as aos) over n { }\n', 1, 38, "duplicate 'as' clause on buffer 'x'"),
    ('ker_block_not_pow2', '@block(100) kernel k(x: f32[n] read) over n { }\n', 1, 8, 'block size must be a power of two between 32 and 1024, got 1'),
    ('ker_block_too_big', '@block(2048) kernel k(x: f32[n] read) over n { }\n', 1, 8, 'block size must be a power of two between 32 and 1024, got 2'),
    ('ker_unknown_attribute', '@blok(128) kernel k(x: f32[n] read) over n { }\n', 1, 2, "unknown kernel attribute '@blok'; did you mean 'block'?"),
    ('ker_duplicate_param', 'kernel k(x: f32[n] read, x: f32[n] read) over n { }\n', 1, 26, "duplicate parameter 'x'"),
    ('ker_redefinition', 'kernel k(x: f32[n] read) over n { }\nkernel k(x: f32[n] read) over n { }\n', 2, 8, "redefinition of kernel 'k'"),
    ('ker_over_buffer', 'kernel k(x: f32[n] read) over x { }\n', 1, 31, 'the problem size must be a size symbol or an integer scalar '),
    ('ker_over_float', 'kernel k(a: f32, x: f32[n] read) over a { }\n', 1, 39, "the problem size 'a' must be an integer, not 'f32'"),
    ('ker_no_kernel', 'layout r = (4):(1);\n', 1, 1, 't.kern defines no kernel to compile'),
    ('ker_scalar_as_size', 'kernel k(m: index, x: f32[m] read) over m { }\n', 1, 27, "'m' is a scalar parameter, not a size symbol"),
    ('ker_compute_on_int', 'kernel k(x: i32[n] read compute f32) over n { }\n', 1, 33, "'compute f32' needs a float buffer; 'i32' values are compute"),
    ('ker_compute_narrower', 'kernel k(x: f64[n] read compute f32) over n { }\n', 1, 33, "compute type 'f32' is narrower than the storage type 'f64' o"),
    ("syn_keyword_as_let_name", body("let if = 1.0;"), 2, 9, "'if' is a keyword"),
]


@pytest.mark.parametrize("cid,source,line,col,message", SOURCE_CASES, ids=[c[0] for c in SOURCE_CASES])
def test_source_error(tmp_path, capsys, cid, source, line, col, message):
    path = tmp_path / "t.kern"
    path.write_text(source)
    assert main(["compile", str(path), "-o", str(tmp_path / "t.ptx")]) == 1
    err = capsys.readouterr().err
    lines = err.split("\n")
    assert lines[0].startswith(f"{path}:{line}:{col}: error: "), lines[0]
    assert message in lines[0], lines[0]
    assert lines[1] == source.split("\n")[line - 1].expandtabs(1)
    assert lines[2] == " " * (col - 1) + "^"
    assert "Traceback" not in err and not (tmp_path / "t.ptx").exists()


def test_source_catalogue_is_large_and_distinct():
    ids = [c[0] for c in SOURCE_CASES]
    sources = [c[1] for c in SOURCE_CASES]
    assert len(set(ids)) == len(ids) and len(set(sources)) == len(sources)
    assert len(ids) >= 60
    assert len(ids) + len(LAUNCH_CASES) + len(USAGE_CASES) + len(RUN_CASES) + len(RUN_ARG_CASES) >= 140


# ---------------------------------------------------------------------------------------------------
# launch arguments through the API: (id, call, message); every one raises KerncLaunchError
LAUNCH_SRC = """
kernel sax(a: f32, x: f32[n] read, y: f32[n] add) over n { y += a * x; }
kernel ints(c: i8, k: u16, i: index, b: bool, y: f32[m] write) over P {
    y = f32(c) + f32(k) + f32(i) + select(b, 1.0, 0.0);
}
kernel gat(x: f32[m] read indexed(I), I: i32[n] read, y: f32[n] write) over n { y = x; }
kernel sca(v: f32[n] read, J: u32[n] read, y: f32[m] add atomic(J)) over n { y += v; }
kernel soa(v: f32[n, 3] read as soa, w: f32[n, 3] write) over n { w = v; }
kernel pr(u: f32[n1] read pair, y: f32[n] write) over n { y = u.second - u.first; }
kernel bs(v: f32[n] read, y: f32[m] write block_sum) over n { y = v; }
kernel over_scalar(c: i32, y: f32[m] write) over c { y = 1.0; }
"""
f32 = np.float32


def _x(n=4, dt=f32):
    return np.ones(n, dt)


LAUNCH_CASES = [
    ("dtype", lambda m: m.sax(1.0, _x(dt=np.float64), _x()),
     "argument 'x': expected dtype float32 (f32), got float64"),
    ("byte_order", lambda m: m.sax(1.0, _x().astype(">f4"), _x()), "argument 'x': expected dtype float32 (f32), got float32 in non-native byte order"),
    ("size_symbol_mismatch", lambda m: m.sax(1.0, _x(4), _x(5)), "argument 'y': size 'n' is 5 here but 4 from 'x'"),
    ("non_contiguous", lambda m: m.sax(1.0, np.ones((4, 2), f32)[:, 0], _x()), "argument 'x': the array is not C-contiguous"),
    ("wrong_ndim", lambda m: m.sax(1.0, np.ones((2, 2), f32), _x()), "argument 'x': expected a 1-D array of shape (n), got shape (2, 2)"),
    ("not_an_array", lambda m: m.sax(1.0, [1.0] * 4, _x()), "argument 'x': expected a numpy array, got list"),
    ("missing_argument", lambda m: m.sax(1.0, _x()), "kernel 'sax': missing argument 'y'"),
    ("extra_positional", lambda m: m.sax(1.0, _x(), _x(), _x()), "kernel 'sax' takes 3 positional arguments (a, x, y), got 4; size symbols are passed by keyword (n=...)"),
    ("unknown_keyword", lambda m: m.sax(1.0, _x(), _x(), z=1), "kernel 'sax' has no parameter 'z'"),
    ("duplicate_argument", lambda m: m.sax(1.0, _x(), _x(), a=2.0), "kernel 'sax': got multiple values for argument 'a'"),
    ("float_out_of_range", lambda m: m.sax(1e300, _x(), _x()), "argument 'a': 1e+300 is out of range for f32"),
    ("string_scalar", lambda m: m.sax("1", _x(), _x()), "argument 'a': expected a number (f32), got str"),
    ("bool_for_float", lambda m: m.sax(True, _x(), _x()), "argument 'a': expected a number (f32), got bool"),
    ("array_for_scalar", lambda m: m.sax(np.ones(2), _x(), _x()), "argument 'a': expected a scalar f32, got an array"),
    ("unknown_device", lambda m: m.sax(1.0, _x(), _x(), device="tpu"), "unknown device 'tpu'"),
    ("i8_out_of_range", lambda m: m.ints(200, 1, 0, True, _x(), P=4), "argument 'c': 200 is out of range for i8 [-128, 127]"),
    ("u16_negative", lambda m: m.ints(1, -1, 0, True, _x(), P=4), "argument 'k': -1 is out of range for u16 [0, 65535]"),
    ("float_for_int", lambda m: m.ints(1.5, 1, 0, True, _x(), P=4), "argument 'c': expected an integer (i8), got float 1.5"),
    ("index_out_of_range", lambda m: m.ints(1, 1, 2**64, True, _x(), P=4), "argument 'i': 18446744073709551616 is out of range for index"),
    ("int_for_bool", lambda m: m.ints(1, 1, 0, 1, _x(), P=4), "argument 'b': expected bool, got int"),
    ("unbound_size", lambda m: m.ints(1, 1, 0, True, _x()), "kernel 'ints': size 'P' is not bound by any array shape; pass it as P=..."),
    ("negative_size", lambda m: m.ints(1, 1, 0, True, _x(), P=-1), "size 'P' must be a non-negative integer, got -1"),
    ("fractional_size", lambda m: m.ints(1, 1, 0, True, _x(), P=2.5), "size 'P' must be a non-negative integer, got 2.5"),
    ("size_keyword_mismatch", lambda m: m.ints(1, 1, 0, True, _x(), P=4, m=5), "size 'm' given as 5 but 'y' has 4"),
    ("index_past_target", lambda m: m.gat(_x(), np.array([0, 4], np.int32), _x(2)),
     "argument 'I': entry 1 is 4, but 'x' (indexed(I)) has 4 elements"),
    ("negative_index", lambda m: m.gat(_x(), np.array([0, -1], np.int32), _x(2)), "argument 'I': entry 1 is -1"),
    ("index_dtype", lambda m: m.gat(_x(), np.array([0, 1], np.uint32), _x(2)), "argument 'I': expected dtype int32 (i32), got uint32"),
    ("atomic_index_past_target", lambda m: m.sca(_x(3), np.array([0, 1, 9], np.uint32), _x(5)),
     "argument 'J': entry 2 is 9, but 'y' (atomic(J)) has 5 elements"),
    ("soa_shape", lambda m: m.soa(np.ones((4, 3), f32), np.ones((4, 3), f32)), "argument 'v': dimension 0 must be 3, got 4"),
    ("pair_too_short", lambda m: m.pr(_x(4), _x(4)), "argument 'u': accessor 'pair' needs at least 5 elements (n+1), the buffer has 4"),
    ("block_sum_too_short", lambda m: m.bs(_x(600), _x(2)), "argument 'y': block_sum needs one element per block (3 blocks of 256), the buffer has 2"),
    ("negative_problem_scalar", lambda m: m.over_scalar(-3, _x()), "argument 'c': the problem size must be a non-negative integer"),
    ("out_of_bounds_write", lambda m: m.over_scalar(5, _x(4)), None),  # a runtime error, below
]


@pytest.fixture(scope="module")
def launch_mod():
    return kernc.compile(LAUNCH_SRC, filename="launch.kern")


@pytest.mark.parametrize("cid,call,message", [c for c in LAUNCH_CASES if c[2]], ids=[c[0] for c in LAUNCH_CASES if c[2]])
def test_launch_error(launch_mod, cid, call, message):
    with pytest.raises(KerncLaunchError) as info:
        call(launch_mod)
    assert message in str(info.value)


def test_problem_size_past_a_sequential_buffer_is_a_launch_error(launch_mod):
    """Found at launch now (on every device) rather than by the CPU interpreter's store check."""
    y = np.full(4, 3, f32)
    with pytest.raises(KerncLaunchError, match=r"argument 'y': thread t writes element t, so the buffer "
                                               r"needs at least P = 5 elements \(the problem size\), it has 4"):
        launch_mod.over_scalar(5, y)
    assert (y == 3).all()


def test_launch_errors_leave_outputs_untouched(launch_mod):
    y = np.full(4, 3, f32)
    with pytest.raises(KerncLaunchError):
        launch_mod.sax(1e300, _x(), y)
    with pytest.raises(KerncLaunchError):
        launch_mod.gat(_x(), np.array([0, 9, 1, 2], np.int32), y)
    assert (y == 3).all()


# ---------------------------------------------------------------------------------------------------
# command-line misuse: (id, argv, exit code, message in stderr)
USAGE_CASES = [
    ("no_command", [], 2, "the following arguments are required: command"),
    ("unknown_command", ["bogus"], 2, "invalid choice: 'bogus'"),
    ("compile_without_file", ["compile"], 2, "the following arguments are required: file"),
    ("check_without_file", ["check"], 2, "the following arguments are required: file"),
    ("bad_emit", ["compile", SAXPY, "--emit", "sass"], 2, "argument --emit: invalid choice: 'sass'"),
    ("bad_opt_level", ["compile", SAXPY, "--O", "7"], 2, "argument --O: invalid choice: 7"),
    ("opt_level_without_value", ["compile", SAXPY, "--O"], 2, "argument --O: expected one argument"),
    ("bad_index_bits", ["compile", SAXPY, "--index-bits", "16"], 2, "argument --index-bits: invalid choice: 16"),
    ("opt_without_passes", ["opt", "x.mlir"], 2, "the following arguments are required: --passes"),
    ("bad_device", ["run", SAXPY, "--device", "tpu"], 2, "argument --device: invalid choice: 'tpu'"),
    ("unknown_option", ["compile", SAXPY, "--frobnicate"], 2, "unrecognized arguments: --frobnicate"),
    ("layout_text_and_svg", ["layout", "(4):(1)", "--text", "--svg", "a.svg"], 2, "argument --svg: not allowed with argument --text"),
    ("layout_bad_elem_bytes", ["layout", "(4):(1)", "--elem-bytes", "four"], 2, "argument --elem-bytes: invalid int value: 'four'"),
    ("missing_source", ["compile", "/nonexistent/k.kern"], 1, "cannot read '/nonexistent/k.kern': No such file or directory"),
    ("source_is_directory", ["compile", "/"], 1, "cannot read '/': Is a directory"),
    ("check_missing_source", ["check", "/nonexistent/k.kern"], 1, "cannot read '/nonexistent/k.kern': No such file or directory"),
    ("opt_missing_input", ["opt", "/nonexistent/k.mlir", "--passes", "canonicalize"], 1, "No such file or directory"),
    ("unknown_kernel", ["compile", SAXPY, "--kernel", "nope"], 1, "no kernel named 'nope'"),
    # a bad --arch is a bad option value like any other: exit 2 (it was 1, found by a new-user trial)
    ("unknown_arch", ["compile", SAXPY, "--arch", "sm_5"], 2, "argument --arch: unknown GPU architecture 'sm_5'"),
    ("run_unknown_arch", ["run", SAXPY, "--arch", "sm_5"], 2, "argument --arch: unknown GPU architecture 'sm_5'"),
    # the syntax of --size and --input is checked with the options: exit 2 (it was 1, and -1 was
    # "not SYM=INT"; found by a new-user trial)
    ("run_size_not_int", ["run", SAXPY, "--size", "n=abc"], 2, "argument --size: 'n=abc': the size must be a non-negative integer"),
    ("run_size_negative", ["run", SAXPY, "--size", "n=-1"], 2, "argument --size: 'n=-1': the size must be a non-negative integer"),
    ("run_size_no_eq", ["run", SAXPY, "--size", "n"], 2, "argument --size: 'n' is not SYM=INT"),
    ("run_input_no_eq", ["run", SAXPY, "--input", "x"], 2, "argument --input: 'x' is not NAME=VALUE or NAME=@file.npy"),
    ("output_in_missing_dir", ["compile", SAXPY, "-o", "/nonexistent/dir/x.ptx"], 1, "cannot write '/nonexistent/dir/x.ptx'"),
    ("unknown_pass", ["opt", "@KERN", "--passes", "bogus-pass"], 1, "bogus-pass"),
    ("bad_layout_expression", ["layout", "(4,8):(8"], 1, "layout '(4,8):(8'"),
    ("run_kernel_not_found", ["run", SAXPY, "--kernel", "nope"], 1, "no kernel named 'nope'"),
]


@pytest.mark.parametrize("cid,argv,code,message", USAGE_CASES, ids=[c[0] for c in USAGE_CASES])
def test_command_line_misuse(tmp_path, capsys, cid, argv, code, message):
    if "@KERN" in argv:
        kern = tmp_path / "k.mlir"
        assert main(["compile", SAXPY, "--emit", "kern", "-o", str(kern)]) == 0
        argv = [str(kern) if a == "@KERN" else a for a in argv]
    try:
        rc = main(argv)
    except SystemExit as exit_:
        rc = exit_.code
    err = capsys.readouterr().err
    assert rc == code, err
    assert message in err, err
    assert "Traceback" not in err
    if code == 2:
        assert "usage: kernc" in err


def test_usage_error_exit_code_from_the_console_entry_point():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "kernc", "compile", SAXPY, "--emit", "sass"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "invalid choice: 'sass'" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------------------------------
# corrupt inputs to `kernc run`: (id, how to make x.npy, exit code, message); the message names the file
def _good(path):
    np.save(path, np.ones(10, f32))


def _truncated(path):
    _good(path)
    data = path.read_bytes()
    path.write_bytes(data[:-7])


def _truncated_header(path):
    _good(path)
    path.write_bytes(path.read_bytes()[:20])


def _garbage(path):
    path.write_bytes(b"\x00\x01 this is not an npy file " * 3)


def _empty(path):
    path.write_bytes(b"")


def _pickled(path):
    np.save(path, np.array([1, "a"], dtype=object), allow_pickle=True)


def _bad_dtype_header(path):
    _good(path)
    path.write_bytes(path.read_bytes().replace(b"'<f4'", b"'<q9'"))


def _bad_shape_header(path):
    _good(path)
    path.write_bytes(path.read_bytes().replace(b"(10,)", b"(1x,)"))


def _npz(path):
    with open(path, "wb") as f:
        np.savez(f, x=np.ones(10, f32))


def _directory(path):
    path.mkdir()


def _wrong_dtype(path):
    np.save(path, np.ones(10, np.float64))


def _two_d(path):
    np.save(path, np.ones((2, 5), f32))


RUN_CASES = [
    ("truncated_data", _truncated, 1, "cannot read '{x}'"),
    ("truncated_header", _truncated_header, 1, "cannot read '{x}'"),
    ("garbage", _garbage, 1, "cannot read '{x}'"),
    ("pickled_object_array", _pickled, 1, "cannot read '{x}'"),
    ("bad_dtype_in_header", _bad_dtype_header, 1, "cannot read '{x}'"),
    ("bad_shape_in_header", _bad_shape_header, 1, "cannot read '{x}'"),
    ("directory", _directory, 1, "cannot read '{x}'"),
    ("missing_file", lambda path: None, 1, "cannot read '{x}'"),
    ("wrong_dtype", _wrong_dtype, 1, "argument 'x': expected dtype float32 (f32), got float64"),
    pytest.param("empty_file", _empty, 1, "cannot read '{x}'", id="empty_file"),
    pytest.param("npz_archive", _npz, 1, "{x}", id="npz_archive"),
    pytest.param("two_d_for_1d_buffer", _two_d, 1, "argument 'x'", id="two_d_for_1d_buffer"),
]


RUN_CASES = [c if hasattr(c, "marks") else pytest.param(*c, id=c[0]) for c in RUN_CASES]


@pytest.mark.parametrize("cid,make,code,message", RUN_CASES)
def test_corrupt_run_input(tmp_path, capsys, cid, make, code, message):
    x = tmp_path / "x.npy"
    make(x)
    out = tmp_path / "out"
    rc = main(["run", SAXPY, "--input", "a=2", "--input", f"x=@{x}", "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert rc == code, err
    assert message.format(x=x) in err, err
    assert "Traceback" not in err and "internal compiler error" not in err
    assert not (out / "y.npy").exists()


RUN_ARG_CASES = [
    ("buffer_given_a_value", ["--input", "a=2", "--input", "x=3.0"], "--input x: 'x' is a buffer; pass it as x=@file.npy"),
    ("scalar_given_an_array", ["--input", "a=@{good}", "--input", "x=@{good}"], "argument 'a': expected a scalar f32, got an array"),
    ("unknown_size_symbol", ["--input", "a=1", "--input", "x=@{good}", "--size", "m=3"], "kernel 'saxpy' has no size symbol 'm'"),
    ("size_contradicts_shape", ["--input", "a=1", "--input", "x=@{good}", "--size", "n=11"], "--size n=11 disagrees with --input x, whose shape (10,) gives n = 10"),
    ("bool_for_float", ["--input", "a=true", "--input", "x=@{good}"], "argument 'a': expected a number (f32), got bool"),
    ("not_a_number", ["--input", "a=abc", "--input", "x=@{good}"], "'abc' is neither a number nor true/false"),
    ("missing_input", ["--input", "a=1"], "missing --input x=..."),
    ("unknown_parameter", ["--input", "b=1", "--input", "x=@{good}"], "kernel 'saxpy' has no parameter 'b'"),
]


@pytest.mark.parametrize("cid,args,message", RUN_ARG_CASES, ids=[c[0] for c in RUN_ARG_CASES])
def test_bad_run_arguments(tmp_path, capsys, cid, args, message):
    good = tmp_path / "good.npy"
    _good(good)
    args = [a.format(good=good) for a in args]
    assert main(["run", SAXPY, *args, "--output-dir", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert message in err, err
    assert "Traceback" not in err


def test_a_size_symbol_passed_positionally_names_the_keyword():
    """A size no array binds (``o: f32[1] write sum ... over n``) passed positionally said only
    "takes 1 arguments (o), got 2", not how to pass ``n`` (found by a new-user trial)."""
    import kernc

    mod = kernc.compile("kernel wsum(o: f32[1] write sum) over n { o = 1.0; }")
    o = np.zeros(1, np.float32)
    with pytest.raises(KerncLaunchError) as info:
        mod.wsum(o, 2049)
    assert str(info.value) == ("kernel 'wsum' takes 1 positional argument (o), got 2; "
                               "size symbols are passed by keyword (n=...)")
    mod.wsum(o, n=2049)
    assert o[0] == 2049.0
