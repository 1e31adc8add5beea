// RUN: %kernc opt %s --passes 'kern-contract-fma' | FileCheck %s
// kern-contract-fma (kernc compile --fmad): a single-use mulf feeding an addf/subf in the same block
// becomes math.fma (without fast-math flags); anything else is left alone.

// CHECK-LABEL: func.func @add_forms
// CHECK-SAME: (%[[A:[a-z0-9]+]]: f32, %[[B:[a-z0-9]+]]: f32, %[[C:[a-z0-9]+]]: f32)
// CHECK-NOT: arith.mulf
// CHECK: %[[R0:.*]] = math.fma %[[A]], %[[B]], %[[C]] : f32
// CHECK: %[[R1:.*]] = math.fma %[[B]], %[[C]], %[[A]] : f32
// CHECK: %[[NC:.*]] = arith.negf %[[C]] : f32
// CHECK: %[[R2:.*]] = math.fma %[[A]], %[[C]], %[[NC]] : f32
// CHECK: %[[NB:.*]] = arith.negf %[[B]] : f32
// CHECK: %[[R3:.*]] = math.fma %[[NB]], %[[A]], %[[C]] : f32
// CHECK-NOT: arith.addf
// CHECK-NOT: arith.subf
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
func.func @add_forms(%a: f32, %b: f32, %c: f32) -> (f32, f32, f32, f32) {
  %m0 = arith.mulf %a, %b : f32
  %r0 = arith.addf %m0, %c : f32
  %m1 = arith.mulf %b, %c : f32
  %r1 = arith.addf %a, %m1 : f32
  %m2 = arith.mulf %a, %c : f32
  %r2 = arith.subf %m2, %c : f32
  %m3 = arith.mulf %b, %a : f32
  %r3 = arith.subf %c, %m3 : f32
  return %r0, %r1, %r2, %r3 : f32, f32, f32, f32
}

// Both operands products: the left one is contracted.
// CHECK-LABEL: func.func @two_products
// CHECK: %[[M:.*]] = arith.mulf %arg2, %arg3 : f64
// CHECK: math.fma %arg0, %arg1, %[[M]] : f64
func.func @two_products(%a: f64, %b: f64, %c: f64, %d: f64) -> f64 {
  %m0 = arith.mulf %a, %b : f64
  %m1 = arith.mulf %c, %d : f64
  %r = arith.addf %m0, %m1 : f64
  return %r : f64
}

// f16, bf16 and vectors; fast-math flags are not carried over.
// CHECK-LABEL: func.func @types
// CHECK: math.fma %arg0, %arg0, %arg1 : f16
// CHECK: math.fma %arg2, %arg2, %arg3 : bf16
// CHECK: math.fma %arg4, %arg4, %arg5 : vector<4xf32>
// CHECK-NOT: fastmath
// CHECK: return
func.func @types(%h: f16, %g: f16, %b: bf16, %c: bf16, %v: vector<4xf32>, %w: vector<4xf32>) -> (f16, bf16, vector<4xf32>) {
  %m0 = arith.mulf %h, %h : f16
  %r0 = arith.addf %m0, %g : f16
  %m1 = arith.mulf %b, %b fastmath<contract> : bf16
  %r1 = arith.addf %m1, %c fastmath<contract> : bf16
  %m2 = arith.mulf %v, %v : vector<4xf32>
  %r2 = arith.addf %m2, %w : vector<4xf32>
  return %r0, %r1, %r2 : f16, bf16, vector<4xf32>
}

// Not contracted: a product with a second use, a product from another block, integers.
// CHECK-LABEL: func.func @not_contracted
// CHECK-NOT: math.fma
// CHECK: %[[M:.*]] = arith.mulf %arg0, %arg1 : f32
// CHECK: arith.addf %[[M]], %arg2 : f32
// CHECK: arith.subf %[[M]], %arg1 : f32
// CHECK: %[[P:.*]] = arith.mulf %arg0, %arg2 : f32
// CHECK: scf.if
// CHECK: arith.addf %[[P]], %arg1 : f32
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK-NOT: math.fma
// CHECK: return
func.func @not_contracted(%a: f32, %b: f32, %c: f32, %p: i1, %i: i32) -> (f32, f32, f32, i32) {
  %m = arith.mulf %a, %b : f32
  %r0 = arith.addf %m, %c : f32
  %r1 = arith.subf %m, %b : f32
  %q = arith.mulf %a, %c : f32
  %r2 = scf.if %p -> f32 {
    %s = arith.addf %q, %b : f32
    scf.yield %s : f32
  } else {
    scf.yield %a : f32
  }
  %k = arith.muli %i, %i : i32
  %r3 = arith.addi %k, %i : i32
  return %r0, %r1, %r2, %r3 : f32, f32, f32, i32
}
