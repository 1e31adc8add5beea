// RUN: %kernc opt %s --passes 'kern-fold-layouts' | FileCheck %s
// kern-fold-layouts replaces the layout expression of a view op (kern.view_load, kern.view_store,
// kern.in_bounds) by the folded, flattened layout (kernc.layout's algebra: composition right to
// left, coalesce, right_inverse, ...); a layout that is already plain strides (over size symbols
// too), swizzled or not, is left as it is.

// (8,8):(8,1) o (8,8):(1,8): (i, j) -> x = i + 8j -> (x % 8, x / 8) = (i, j) -> 8i + j.
// CHECK-LABEL: func.func @composition
// CHECK: "kern.view_load"(%arg0, %arg1, %arg2) {layout = "(8,8):(8,1)", operandSegmentSizes
// CHECK-NOT: o (8,8)
// CHECK: return
func.func @composition(%a: memref<?xf32>, %i: index, %j: index) -> f32 {
  %v = "kern.view_load"(%a, %i, %j) {layout = "(8,8):(8,1) o (8,8):(1,8)", operandSegmentSizes = array<i32: 1, 2, 0, 0>, syms = []} : (memref<?xf32>, index, index) -> f32
  return %v : f32
}

// Calls of the algebra, on a view_store and an in_bounds.
// CHECK-LABEL: func.func @calls
// CHECK: "kern.view_store"(%arg0, %arg1, %arg2) {layout = "(8):(1)", operandSegmentSizes
// CHECK: "kern.in_bounds"(%arg1, %arg1) {layout = "(2,4):(4,1)", operandSegmentSizes
// CHECK-NOT: coalesce
// CHECK-NOT: right_inverse
// CHECK: return
func.func @calls(%a: memref<?xf32>, %i: index, %v: f32) -> i1 {
  "kern.view_store"(%a, %i, %v) {layout = "coalesce((2,4):(1,2))", operandSegmentSizes = array<i32: 1, 1, 0, 0, 1>, syms = []} : (memref<?xf32>, index, f32) -> ()
  %ok = "kern.in_bounds"(%i, %i) {layout = "right_inverse((4,2):(2,1))", operandSegmentSizes = array<i32: 2, 0>, syms = []} : (index, index) -> i1
  return %ok : i1
}

// A swizzle over a composition: the composition folds, the swizzle stays outside it.
// CHECK-LABEL: func.func @swizzle_of_composition
// CHECK: "kern.view_load"(%arg0, %arg1, %arg2) {layout = "Sw<1,2,3> o (8,8):(8,1)", operandSegmentSizes
// CHECK: return
func.func @swizzle_of_composition(%a: memref<?xf32>, %i: index, %j: index) -> f32 {
  %v = "kern.view_load"(%a, %i, %j) {layout = "Sw<1,2,3> o (8,8):(8,1) o (8,8):(1,8)", operandSegmentSizes = array<i32: 1, 2, 0, 0>, syms = []} : (memref<?xf32>, index, index) -> f32
  return %v : f32
}

// Unchanged: plain strides over size symbols, and a swizzled plain layout in either spelling.
// CHECK-LABEL: func.func @already_plain
// CHECK: "kern.view_load"(%arg0, %arg1, %arg2, %arg3, %arg4) {layout = "(R,C):(C,1)", operandSegmentSizes
// CHECK: "kern.view_load"(%arg0, %arg1, %arg2, %arg3, %arg4) {layout = "(R,C):(1,R)", operandSegmentSizes
// CHECK: "kern.view_load"(%arg0, %arg1, %arg2) {layout = "swizzle<1,2,3> o 0 o (8,8):(8,1)", operandSegmentSizes
// CHECK: return
func.func @already_plain(%a: memref<?xf32>, %i: index, %j: index, %r: index, %c: index) -> (f32, f32, f32) {
  %v = "kern.view_load"(%a, %i, %j, %r, %c) {layout = "(R,C):(C,1)", operandSegmentSizes = array<i32: 1, 2, 2, 0>, syms = ["R", "C"]} : (memref<?xf32>, index, index, index, index) -> f32
  %w = "kern.view_load"(%a, %i, %j, %r, %c) {layout = "(R,C):(1,R)", operandSegmentSizes = array<i32: 1, 2, 2, 0>, syms = ["R", "C"]} : (memref<?xf32>, index, index, index, index) -> f32
  %s = "kern.view_load"(%a, %i, %j) {layout = "swizzle<1,2,3> o 0 o (8,8):(8,1)", operandSegmentSizes = array<i32: 1, 2, 0, 0>, syms = []} : (memref<?xf32>, index, index) -> f32
  return %v, %w, %s : f32, f32, f32
}
