// RUN: %kernc opt %s --passes 'kern-lower-views' | FileCheck %s
// kern-lower-views: a view access becomes kern.layout_apply (+ kern.swizzle) and a memref access,
// converted between the compute and the storage type; a checked access runs under scf.if of the
// per-mode signed bounds (0 <= c_k, c_k < s_k, and-ed, then with the mask), a load giving its
// default out of bounds; kern.delinearize becomes one divsi per extent but the first, last
// coordinate fastest. Other kern ops (kern.layout_apply, lowered by kern-lower-layouts) stay.

// CHECK-LABEL: func.func @load
// CHECK-NEXT: %[[O:.*]] = "kern.layout_apply"(%arg1, %arg2, %arg3, %arg4) {layout = "(R,C):(C,1)", operandSegmentSizes = array<i32: 2, 2>, syms = ["R", "C"]}
// CHECK-NEXT: %[[V:.*]] = memref.load %arg0[%[[O]]] : memref<?xf32>
// CHECK-NEXT: return %[[V]] : f32
func.func @load(%a: memref<?xf32>, %i: index, %j: index, %r: index, %c: index) -> f32 {
  %v = "kern.view_load"(%a, %i, %j, %r, %c) {layout = "(R,C):(C,1)", operandSegmentSizes = array<i32: 1, 2, 2, 0>, syms = ["R", "C"]} : (memref<?xf32>, index, index, index, index) -> f32
  return %v : f32
}

// f16 storage, f32 compute: extf after the load, truncf before the store.
// CHECK-LABEL: func.func @widen
// CHECK-NEXT: %[[O:.*]] = "kern.layout_apply"(%arg1) {layout = "(64):(1)"
// CHECK-NEXT: %[[H:.*]] = memref.load %arg0[%[[O]]] : memref<?xf16>
// CHECK-NEXT: %[[X:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK-NEXT: %[[T:.*]] = arith.truncf %arg2 : f32 to f16
// CHECK-NEXT: %[[O2:.*]] = "kern.layout_apply"(%arg1) {layout = "(64):(1)"
// CHECK-NEXT: memref.store %[[T]], %arg0[%[[O2]]] : memref<?xf16>
// CHECK-NEXT: return %[[X]] : f32
func.func @widen(%a: memref<?xf16>, %i: index, %v: f32) -> f32 {
  %x = "kern.view_load"(%a, %i) {layout = "(64):(1)", operandSegmentSizes = array<i32: 1, 1, 0, 0>, syms = []} : (memref<?xf16>, index) -> f32
  "kern.view_store"(%a, %i, %v) {layout = "(64):(1)", operandSegmentSizes = array<i32: 1, 1, 0, 0, 1>, syms = []} : (memref<?xf16>, index, f32) -> ()
  return %x : f32
}

// CHECK-LABEL: func.func @checked
// CHECK: %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[A0:.*]] = arith.cmpi sge, %arg1, %[[Z]] : index
// CHECK-NEXT: %[[A1:.*]] = arith.cmpi slt, %arg1, %arg3 : index
// CHECK-NEXT: %[[A:.*]] = arith.andi %[[A0]], %[[A1]] : i1
// CHECK-NEXT: %[[B0:.*]] = arith.cmpi sge, %arg2, %[[Z]] : index
// CHECK-NEXT: %[[B1:.*]] = arith.cmpi slt, %arg2, %arg4 : index
// CHECK-NEXT: %[[AB:.*]] = arith.andi %[[A]], %[[B0]] : i1
// CHECK-NEXT: %[[IN:.*]] = arith.andi %[[AB]], %[[B1]] : i1
// CHECK-NEXT: %[[OK:.*]] = arith.andi %[[IN]], %arg5 : i1
// CHECK-NEXT: %[[X:.*]] = scf.if %[[OK]] -> (f32) {
// CHECK-NEXT: %[[O:.*]] = "kern.layout_apply"(%arg1, %arg2, %arg3, %arg4)
// CHECK-NEXT: %[[L:.*]] = memref.load %arg0[%[[O]]] : memref<?xf32>
// CHECK-NEXT: scf.yield %[[L]] : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[D:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT: scf.yield %[[D]] : f32
// CHECK-NEXT: }
// The store: the same bounds, no mask, no else.
// CHECK-NEXT: %[[Z2:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[SA0:.*]] = arith.cmpi sge, %arg1, %[[Z2]] : index
// CHECK-NEXT: %[[SA1:.*]] = arith.cmpi slt, %arg1, %arg3 : index
// CHECK-NEXT: %[[SA:.*]] = arith.andi %[[SA0]], %[[SA1]] : i1
// CHECK-NEXT: %[[SB0:.*]] = arith.cmpi sge, %arg2, %[[Z2]] : index
// CHECK-NEXT: %[[SB1:.*]] = arith.cmpi slt, %arg2, %arg4 : index
// CHECK-NEXT: %[[SAB:.*]] = arith.andi %[[SA]], %[[SB0]] : i1
// CHECK-NEXT: %[[SIN:.*]] = arith.andi %[[SAB]], %[[SB1]] : i1
// CHECK-NEXT: scf.if %[[SIN]] {
// CHECK-NEXT: %[[SO:.*]] = "kern.layout_apply"(%arg1, %arg2, %arg3, %arg4)
// CHECK-NEXT: memref.store %arg6, %arg0[%[[SO]]] : memref<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[X]] : f32
func.func @checked(%a: memref<?xf32>, %i: index, %j: index, %r: index, %c: index, %m: i1, %v: f32) -> f32 {
  %x = "kern.view_load"(%a, %i, %j, %r, %c, %m) {layout = "(R,C):(C,1)", checked, default = -1.0 : f32, operandSegmentSizes = array<i32: 1, 2, 2, 1>, syms = ["R", "C"]} : (memref<?xf32>, index, index, index, index, i1) -> f32
  "kern.view_store"(%a, %i, %j, %r, %c, %v) {layout = "(R,C):(C,1)", checked, operandSegmentSizes = array<i32: 1, 2, 2, 0, 1>, syms = ["R", "C"]} : (memref<?xf32>, index, index, index, index, f32) -> ()
  return %x : f32
}

// A constant extent is compared as a constant.
// CHECK-LABEL: func.func @bounds
// CHECK: arith.cmpi sge, %arg0, %[[Z:.*]] : index
// CHECK-NEXT: arith.cmpi slt, %arg0, %arg2 : index
// CHECK: arith.cmpi sge, %arg1, %[[Z]] : index
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT: arith.cmpi slt, %arg1, %[[C4]] : index
// CHECK-NOT: kern.in_bounds
// CHECK: return
func.func @bounds(%i: index, %j: index, %r: index) -> i1 {
  %ok = "kern.in_bounds"(%i, %j, %r) {layout = "(R,4):(4,1)", operandSegmentSizes = array<i32: 2, 1>, syms = ["R"]} : (index, index, index) -> i1
  return %ok : i1
}

// CHECK-LABEL: func.func @swizzled
// CHECK-NEXT: %[[O:.*]] = "kern.layout_apply"(%arg1, %arg2) {layout = "(8,8):(8,1)"
// CHECK-NEXT: %[[S:.*]] = "kern.swizzle"(%[[O]]) {base = 2 : i32, bits = 1 : i32, shift = 3 : i32} : (index) -> index
// CHECK-NEXT: memref.load %arg0[%[[S]]] : memref<?xf32>
func.func @swizzled(%a: memref<?xf32>, %i: index, %j: index) -> f32 {
  %v = "kern.view_load"(%a, %i, %j) {layout = "Sw<1,2,3> o (8,8):(8,1)", operandSegmentSizes = array<i32: 1, 2, 0, 0>, syms = []} : (memref<?xf32>, index, index) -> f32
  return %v : f32
}

// (a, b, c) of t over (E0, E1, E2): c = t - (t / E2) * E2, b = q - (q / E1) * E1, a = q / E1.
// CHECK-LABEL: func.func @delin
// CHECK-NEXT: %[[Q:.*]] = arith.divsi %arg0, %arg3 : index
// CHECK-NEXT: %[[M:.*]] = arith.muli %[[Q]], %arg3 : index
// CHECK-NEXT: %[[C:.*]] = arith.subi %arg0, %[[M]] : index
// CHECK-NEXT: %[[A:.*]] = arith.divsi %[[Q]], %arg2 : index
// CHECK-NEXT: %[[M2:.*]] = arith.muli %[[A]], %arg2 : index
// CHECK-NEXT: %[[B:.*]] = arith.subi %[[Q]], %[[M2]] : index
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]] : index, index, index
func.func @delin(%t: index, %e0: index, %e1: index, %e2: index) -> (index, index, index) {
  %d:3 = "kern.delinearize"(%t, %e0, %e1, %e2) {coord_names = ["a", "b", "c"], operandSegmentSizes = array<i32: 1, 3>, resultSegmentSizes = array<i32: 3>} : (index, index, index, index) -> (index, index, index)
  return %d#0, %d#1, %d#2 : index, index, index
}

// Unchanged: no view op.
// CHECK-LABEL: func.func @other
// CHECK-NEXT: %[[X:.*]] = "kern.layout_apply"(%arg1, %arg1) {layout = "(n):(2)", operandSegmentSizes = array<i32: 1, 1>, syms = ["n"]} : (index, index) -> index
// CHECK-NEXT: return %[[X]] : index
func.func @other(%a: memref<?xf32>, %o: index) -> index {
  %x = "kern.layout_apply"(%o, %o) {layout = "(n):(2)", syms = ["n"], operandSegmentSizes = array<i32: 1, 1>} : (index, index) -> index
  return %x : index
}
