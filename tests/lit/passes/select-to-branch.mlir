// RUN: %kernc opt %s --passes 'kern-select-to-branch' | FileCheck %s
// kern-select-to-branch: a scalar select whose operand is computed, for it alone, by ops that include
// a division, square root or transcendental becomes an scf.if computing only the chosen operand;
// cheap operands, shared values and vector conditions are left alone.

// The clamp of examples/particles.kern: max + div move into the then-branch; the constants stay.
// CHECK-LABEL: func.func @clamp
// CHECK-SAME: (%[[S:[a-z0-9]+]]: f32, %[[V:[a-z0-9]+]]: f32)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[TINY:.*]] = arith.constant 1.000000e-30 : f32
// CHECK: %[[C:.*]] = arith.cmpf ogt, %[[S]], %[[V]] : f32
// CHECK-NEXT: %[[R:.*]] = scf.if %[[C]] -> (f32) {
// CHECK-NEXT:   %[[M:.*]] = arith.maxnumf %[[S]], %[[TINY]] : f32
// CHECK-NEXT:   %[[D:.*]] = arith.divf %[[V]], %[[M]] : f32
// CHECK-NEXT:   scf.yield %[[D]] : f32
// CHECK-NEXT: } else {
// CHECK-NEXT:   scf.yield %[[ONE]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]] : f32
func.func @clamp(%s: f32, %vmax: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %tiny = arith.constant 1.0e-30 : f32
  %m = arith.maxnumf %s, %tiny : f32
  %d = arith.divf %vmax, %m : f32
  %c = arith.cmpf ogt, %s, %vmax : f32
  %r = arith.select %c, %d, %one : f32
  return %r : f32
}

// Both operands expensive (a sqrt and an integer division): each moves into its own branch.
// CHECK-LABEL: func.func @both
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK-NEXT:   math.sqrt
// CHECK-NEXT:   scf.yield
// CHECK-NEXT: } else {
// CHECK-NEXT:   arith.divsi
// CHECK-NEXT:   arith.sitofp
// CHECK-NEXT:   scf.yield
// CHECK-NEXT: }
// CHECK-NOT: arith.select
func.func @both(%c: i1, %x: f32, %i: i32, %j: i32) -> f32 {
  %s = math.sqrt %x : f32
  %q = arith.divsi %i, %j : i32
  %f = arith.sitofp %q : i32 to f32
  %r = arith.select %c, %s, %f : f32
  return %r : f32
}

// Cheap operands (a multiply-add) stay a select: no branch for what costs less than the branch.
// CHECK-LABEL: func.func @cheap
// CHECK-NOT: scf.if
// CHECK: arith.select
func.func @cheap(%c: i1, %x: f32, %y: f32) -> f32 {
  %m = arith.mulf %x, %y : f32
  %a = arith.addf %m, %x : f32
  %r = arith.select %c, %a, %x : f32
  return %r : f32
}

// A division whose result is also used elsewhere is needed anyway: it stays, and so does the select.
// Only the exclusive part of a cone moves: the shared division stays before the branch.
// CHECK-LABEL: func.func @shared
// CHECK: %[[D:.*]] = arith.divf
// CHECK-NOT: scf.if
// CHECK: arith.select %{{.*}}, %[[D]]
// CHECK-LABEL: func.func @partly_shared
// CHECK: %[[D:.*]] = arith.divf
// CHECK-NEXT: %[[C:.*]] = arith.cmpf
// CHECK-NEXT: scf.if %[[C]] -> (f32) {
// CHECK-NEXT:   %[[E:.*]] = math.exp %[[D]] : f32
// CHECK-NEXT:   scf.yield %[[E]] : f32
func.func @shared(%c: i1, %x: f32, %y: f32) -> (f32, f32) {
  %d = arith.divf %x, %y : f32
  %r = arith.select %c, %d, %x : f32
  return %r, %d : f32, f32
}
func.func @partly_shared(%x: f32, %y: f32) -> f32 {
  %d = arith.divf %x, %y : f32
  %e = math.exp %d : f32
  %c = arith.cmpf olt, %d, %y : f32
  %r = arith.select %c, %e, %x : f32
  return %r : f32
}

// A per-element (vector) condition cannot branch.
// CHECK-LABEL: func.func @vector_condition
// CHECK-NOT: scf.if
// CHECK: arith.select
func.func @vector_condition(%c: vector<2xi1>, %x: vector<2xf32>, %y: vector<2xf32>) -> vector<2xf32> {
  %d = arith.divf %x, %y : vector<2xf32>
  %r = arith.select %c, %d, %x : vector<2xi1>, vector<2xf32>
  return %r : vector<2xf32>
}
