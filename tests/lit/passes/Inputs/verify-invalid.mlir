// The input of verify.mlir that does not verify: a rank-2 view read with one coordinate.
// (Inputs/ is not run by lit: lit.cfg.py excludes it.)

func.func @bad(%a: memref<?xf32>, %i: index, %r: index, %c: index) -> f32 {
  %v = "kern.view_load"(%a, %i, %r, %c) {layout = "(R,C):(C,1)", operandSegmentSizes = array<i32: 1, 1, 2, 0>, syms = ["R", "C"]} : (memref<?xf32>, index, index, index) -> f32
  return %v : f32
}
