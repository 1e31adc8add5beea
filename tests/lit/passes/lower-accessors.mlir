// RUN: %kernc opt %s --passes 'kern-lower-accessors' | FileCheck %s
// Each accessor computes its element index e (sequential: t; strided: off + t*s; indexed: I[t]
// zero-extended) and one kern.layout_apply + memref access per component.

// CHECK-LABEL: func.func @seq
func.func @seq(%x: memref<?xf32>, %y: memref<?xf32>, %n: index) {
  // CHECK: %[[T:.*]] = "kern.thread_id"()
  // CHECK: %[[O:.*]] = "kern.layout_apply"(%[[T]], %arg2) {layout = "(n):(1)"
  // CHECK: memref.load %arg0[%[[O]]] : memref<?xf32>
  %v = "kern.read"(%x, %n) {accessor = "sequential", layout = "(n):(1)", syms = ["n"], operandSegmentSizes = array<i32: 1, 0, 1>} : (memref<?xf32>, index) -> f32
  // add = load, addf, store at the same offset
  // CHECK: %[[O2:.*]] = "kern.layout_apply"
  // CHECK: %[[OLD:.*]] = memref.load %arg1[%[[O2]]]
  // CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
  // CHECK: memref.store %[[SUM]], %arg1[%[[O2]]]
  "kern.add"(%y, %n, %v) {accessor = "sequential", layout = "(n):(1)", syms = ["n"], operandSegmentSizes = array<i32: 1, 0, 1, 1>} : (memref<?xf32>, index, f32) -> ()
  // CHECK-NOT: kern.read
  // CHECK-NOT: kern.add
  return
}

// CHECK-LABEL: func.func @strided
func.func @strided(%x: memref<?xf32>, %off: index, %s: index, %n: index) -> f32 {
  // CHECK: %[[T:.*]] = "kern.thread_id"()
  // CHECK: %[[M:.*]] = arith.muli %[[T]], %arg2 : index
  // CHECK: %[[E:.*]] = arith.addi %arg1, %[[M]] : index
  // CHECK: "kern.layout_apply"(%[[E]], %arg3)
  %v = "kern.read"(%x, %off, %s, %n) {accessor = "strided", layout = "(n):(1)", syms = ["n"], operandSegmentSizes = array<i32: 1, 2, 1>} : (memref<?xf32>, index, index, index) -> f32
  return %v : f32
}

// CHECK-LABEL: func.func @indexed_soa
func.func @indexed_soa(%x: memref<?xf32>, %i: memref<?xi32>, %v: index) -> (f32, f32, f32) {
  // CHECK: %[[T:.*]] = "kern.thread_id"()
  // CHECK: %[[RAW:.*]] = memref.load %arg1[%[[T]]] : memref<?xi32>
  // CHECK: %[[E:.*]] = arith.index_castui %[[RAW]] : i32 to index
  // CHECK-COUNT-3: "kern.layout_apply"(%[[E]], %{{.*}}, %arg2) {layout = "(V,3):(1,V)"
  %r:3 = "kern.read"(%x, %i, %v) {accessor = "indexed", layout = "(V,3):(1,V)", syms = ["V"], operandSegmentSizes = array<i32: 1, 1, 1>} : (memref<?xf32>, memref<?xi32>, index) -> (f32, f32, f32)
  return %r#0, %r#1, %r#2 : f32, f32, f32
}
