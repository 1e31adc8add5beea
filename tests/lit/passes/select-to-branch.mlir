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

// A long chain (70 ops) that is also returned feeds an exclusive division: only the division moves.
// CHECK-LABEL: func.func @long_shared_chain
// CHECK: %69 = arith.addf %68, %arg2 : f32
// CHECK-NEXT: %70 = scf.if %arg0 -> (f32) {
// CHECK-NEXT:   %71 = arith.divf %69, %arg2 : f32
func.func @long_shared_chain(%c: i1, %x: f32, %y: f32) -> (f32, f32) {
  %a0 = arith.addf %x, %y : f32
  %a1 = arith.addf %a0, %y : f32
  %a2 = arith.addf %a1, %y : f32
  %a3 = arith.addf %a2, %y : f32
  %a4 = arith.addf %a3, %y : f32
  %a5 = arith.addf %a4, %y : f32
  %a6 = arith.addf %a5, %y : f32
  %a7 = arith.addf %a6, %y : f32
  %a8 = arith.addf %a7, %y : f32
  %a9 = arith.addf %a8, %y : f32
  %a10 = arith.addf %a9, %y : f32
  %a11 = arith.addf %a10, %y : f32
  %a12 = arith.addf %a11, %y : f32
  %a13 = arith.addf %a12, %y : f32
  %a14 = arith.addf %a13, %y : f32
  %a15 = arith.addf %a14, %y : f32
  %a16 = arith.addf %a15, %y : f32
  %a17 = arith.addf %a16, %y : f32
  %a18 = arith.addf %a17, %y : f32
  %a19 = arith.addf %a18, %y : f32
  %a20 = arith.addf %a19, %y : f32
  %a21 = arith.addf %a20, %y : f32
  %a22 = arith.addf %a21, %y : f32
  %a23 = arith.addf %a22, %y : f32
  %a24 = arith.addf %a23, %y : f32
  %a25 = arith.addf %a24, %y : f32
  %a26 = arith.addf %a25, %y : f32
  %a27 = arith.addf %a26, %y : f32
  %a28 = arith.addf %a27, %y : f32
  %a29 = arith.addf %a28, %y : f32
  %a30 = arith.addf %a29, %y : f32
  %a31 = arith.addf %a30, %y : f32
  %a32 = arith.addf %a31, %y : f32
  %a33 = arith.addf %a32, %y : f32
  %a34 = arith.addf %a33, %y : f32
  %a35 = arith.addf %a34, %y : f32
  %a36 = arith.addf %a35, %y : f32
  %a37 = arith.addf %a36, %y : f32
  %a38 = arith.addf %a37, %y : f32
  %a39 = arith.addf %a38, %y : f32
  %a40 = arith.addf %a39, %y : f32
  %a41 = arith.addf %a40, %y : f32
  %a42 = arith.addf %a41, %y : f32
  %a43 = arith.addf %a42, %y : f32
  %a44 = arith.addf %a43, %y : f32
  %a45 = arith.addf %a44, %y : f32
  %a46 = arith.addf %a45, %y : f32
  %a47 = arith.addf %a46, %y : f32
  %a48 = arith.addf %a47, %y : f32
  %a49 = arith.addf %a48, %y : f32
  %a50 = arith.addf %a49, %y : f32
  %a51 = arith.addf %a50, %y : f32
  %a52 = arith.addf %a51, %y : f32
  %a53 = arith.addf %a52, %y : f32
  %a54 = arith.addf %a53, %y : f32
  %a55 = arith.addf %a54, %y : f32
  %a56 = arith.addf %a55, %y : f32
  %a57 = arith.addf %a56, %y : f32
  %a58 = arith.addf %a57, %y : f32
  %a59 = arith.addf %a58, %y : f32
  %a60 = arith.addf %a59, %y : f32
  %a61 = arith.addf %a60, %y : f32
  %a62 = arith.addf %a61, %y : f32
  %a63 = arith.addf %a62, %y : f32
  %a64 = arith.addf %a63, %y : f32
  %a65 = arith.addf %a64, %y : f32
  %a66 = arith.addf %a65, %y : f32
  %a67 = arith.addf %a66, %y : f32
  %a68 = arith.addf %a67, %y : f32
  %a69 = arith.addf %a68, %y : f32
  %d = arith.divf %a69, %y : f32
  %r = arith.select %c, %d, %y : f32
  return %r, %a69 : f32, f32
}

// An exclusive cone of more than 64 ops (MAX_CONE) stays a select.
// CHECK-LABEL: func.func @huge_cone
// CHECK-NOT: scf.if
// CHECK: arith.select
func.func @huge_cone(%c: i1, %x: f32, %y: f32) -> f32 {
  %a0 = arith.addf %x, %y : f32
  %a1 = arith.addf %a0, %y : f32
  %a2 = arith.addf %a1, %y : f32
  %a3 = arith.addf %a2, %y : f32
  %a4 = arith.addf %a3, %y : f32
  %a5 = arith.addf %a4, %y : f32
  %a6 = arith.addf %a5, %y : f32
  %a7 = arith.addf %a6, %y : f32
  %a8 = arith.addf %a7, %y : f32
  %a9 = arith.addf %a8, %y : f32
  %a10 = arith.addf %a9, %y : f32
  %a11 = arith.addf %a10, %y : f32
  %a12 = arith.addf %a11, %y : f32
  %a13 = arith.addf %a12, %y : f32
  %a14 = arith.addf %a13, %y : f32
  %a15 = arith.addf %a14, %y : f32
  %a16 = arith.addf %a15, %y : f32
  %a17 = arith.addf %a16, %y : f32
  %a18 = arith.addf %a17, %y : f32
  %a19 = arith.addf %a18, %y : f32
  %a20 = arith.addf %a19, %y : f32
  %a21 = arith.addf %a20, %y : f32
  %a22 = arith.addf %a21, %y : f32
  %a23 = arith.addf %a22, %y : f32
  %a24 = arith.addf %a23, %y : f32
  %a25 = arith.addf %a24, %y : f32
  %a26 = arith.addf %a25, %y : f32
  %a27 = arith.addf %a26, %y : f32
  %a28 = arith.addf %a27, %y : f32
  %a29 = arith.addf %a28, %y : f32
  %a30 = arith.addf %a29, %y : f32
  %a31 = arith.addf %a30, %y : f32
  %a32 = arith.addf %a31, %y : f32
  %a33 = arith.addf %a32, %y : f32
  %a34 = arith.addf %a33, %y : f32
  %a35 = arith.addf %a34, %y : f32
  %a36 = arith.addf %a35, %y : f32
  %a37 = arith.addf %a36, %y : f32
  %a38 = arith.addf %a37, %y : f32
  %a39 = arith.addf %a38, %y : f32
  %a40 = arith.addf %a39, %y : f32
  %a41 = arith.addf %a40, %y : f32
  %a42 = arith.addf %a41, %y : f32
  %a43 = arith.addf %a42, %y : f32
  %a44 = arith.addf %a43, %y : f32
  %a45 = arith.addf %a44, %y : f32
  %a46 = arith.addf %a45, %y : f32
  %a47 = arith.addf %a46, %y : f32
  %a48 = arith.addf %a47, %y : f32
  %a49 = arith.addf %a48, %y : f32
  %a50 = arith.addf %a49, %y : f32
  %a51 = arith.addf %a50, %y : f32
  %a52 = arith.addf %a51, %y : f32
  %a53 = arith.addf %a52, %y : f32
  %a54 = arith.addf %a53, %y : f32
  %a55 = arith.addf %a54, %y : f32
  %a56 = arith.addf %a55, %y : f32
  %a57 = arith.addf %a56, %y : f32
  %a58 = arith.addf %a57, %y : f32
  %a59 = arith.addf %a58, %y : f32
  %a60 = arith.addf %a59, %y : f32
  %a61 = arith.addf %a60, %y : f32
  %a62 = arith.addf %a61, %y : f32
  %a63 = arith.addf %a62, %y : f32
  %a64 = arith.addf %a63, %y : f32
  %a65 = arith.addf %a64, %y : f32
  %a66 = arith.addf %a65, %y : f32
  %a67 = arith.addf %a66, %y : f32
  %a68 = arith.addf %a67, %y : f32
  %a69 = arith.addf %a68, %y : f32
  %d = arith.divf %a69, %y : f32
  %r = arith.select %c, %d, %y : f32
  return %r : f32
}

// A diamond-shaped cone moves in an order where every op follows the ops it uses.
// CHECK-LABEL: func.func @diamond
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK-NEXT:   %[[A:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-DAG:    %[[B:.*]] = arith.addf %[[A]], %{{.*}} : f32
// CHECK-DAG:    %[[C:.*]] = arith.mulf %[[A]], %{{.*}} : f32
// CHECK:        %[[D:.*]] = arith.divf %[[B]], %[[C]] : f32
// CHECK-NEXT:   scf.yield %[[D]] : f32
func.func @diamond(%c: i1, %x: f32, %y: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %a = arith.mulf %x, %y : f32
  %b = arith.addf %a, %one : f32
  %cc = arith.mulf %a, %two : f32
  %d = arith.divf %b, %cc : f32
  %r = arith.select %c, %d, %one : f32
  return %r : f32
}

// Nested selects: the outer branch takes the inner select with its division, which then branches
// inside it (as C's a ? (b ? x / y : 1) : 2), so the division runs only where both choose it.
// CHECK-LABEL: func.func @nested
// CHECK: %[[R:.*]] = scf.if %arg0 -> (f32) {
// CHECK-NEXT:   %[[IN:.*]] = scf.if %arg1 -> (f32) {
// CHECK-NEXT:     %[[D:.*]] = arith.divf %arg2, %arg3 : f32
// CHECK-NEXT:     scf.yield %[[D]] : f32
// CHECK-NEXT:   } else {
// CHECK-NEXT:     scf.yield %{{.*}} : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   scf.yield %[[IN]] : f32
// CHECK-NEXT: } else {
// CHECK-NOT: arith.select
func.func @nested(%a: i1, %b: i1, %x: f32, %y: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %d = arith.divf %x, %y : f32
  %in = arith.select %b, %d, %one : f32
  %r = arith.select %a, %in, %two : f32
  return %r : f32
}
