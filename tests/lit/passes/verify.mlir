// RUN: %kernc opt %s --passes 'kern-verify' | FileCheck %s
// RUN: not %kernc opt %S/Inputs/verify-invalid.mlir --passes 'kern-verify' 2>&1 | FileCheck %s --check-prefix=ERR
// kern-verify runs the MLIR verifier (the kern op verifiers and IRDL constraints) and changes
// nothing: a module that verifies comes out as it went in. (A module that does not verify is
// rejected by `kernc opt` when it parses the file, with the op's location; inside `kernc compile`
// the pass is what catches a frontend bug, as an internal compiler error.)

// CHECK-LABEL: func.func @views
// CHECK-NEXT: %[[V:.*]] = "kern.view_load"(%arg0, %arg1, %arg2, %arg3, %arg4) {layout = "(R,C):(C,1)", operandSegmentSizes = array<i32: 1, 2, 2, 0>, syms = ["R", "C"]} : (memref<?xf32>, index, index, index, index) -> f32
// CHECK-NEXT: "kern.view_store"(%arg0, %arg2, %arg1, %arg4, %arg3, %[[V]]) {layout = "(C,R):(R,1)", operandSegmentSizes = array<i32: 1, 2, 2, 0, 1>, syms = ["C", "R"]} : (memref<?xf32>, index, index, index, index, f32) -> ()
// CHECK-NEXT: %[[OK:.*]] = "kern.in_bounds"(%arg1, %arg2, %arg3, %arg4) {layout = "(R,C):(C,1)", operandSegmentSizes = array<i32: 2, 2>, syms = ["R", "C"]} : (index, index, index, index) -> i1
// CHECK-NEXT: return %[[OK]] : i1
func.func @views(%a: memref<?xf32>, %i: index, %j: index, %r: index, %c: index) -> i1 {
  %v = "kern.view_load"(%a, %i, %j, %r, %c) {layout = "(R,C):(C,1)", operandSegmentSizes = array<i32: 1, 2, 2, 0>, syms = ["R", "C"]} : (memref<?xf32>, index, index, index, index) -> f32
  "kern.view_store"(%a, %j, %i, %c, %r, %v) {layout = "(C,R):(R,1)", operandSegmentSizes = array<i32: 1, 2, 2, 0, 1>, syms = ["C", "R"]} : (memref<?xf32>, index, index, index, index, f32) -> ()
  %ok = "kern.in_bounds"(%i, %j, %r, %c) {layout = "(R,C):(C,1)", operandSegmentSizes = array<i32: 2, 2>, syms = ["R", "C"]} : (index, index, index, index) -> i1
  return %ok : i1
}

// CHECK-LABEL: func.func @builtins
// CHECK-NEXT: %[[T:.*]] = "kern.thread_id"() : () -> index
// CHECK-NEXT: %[[D:.*]]:2 = "kern.delinearize"(%[[T]], %arg0, %arg1) {coord_names = ["i", "j"], operandSegmentSizes = array<i32: 1, 2>, resultSegmentSizes = array<i32: 2>} : (index, index, index) -> (index, index)
// CHECK-NEXT: return %[[D]]#0, %[[D]]#1 : index, index
func.func @builtins(%r: index, %c: index) -> (index, index) {
  %t = "kern.thread_id"() : () -> index
  %d:2 = "kern.delinearize"(%t, %r, %c) {coord_names = ["i", "j"], operandSegmentSizes = array<i32: 1, 2>, resultSegmentSizes = array<i32: 2>} : (index, index, index) -> (index, index)
  return %d#0, %d#1 : index, index
}

// ERR: kernc: error: {{.*}}verify-invalid.mlir: cannot parse IR
// ERR: loc("{{.*}}verify-invalid.mlir":5:8): 'kern.view_load' op layout '(R,C):(C,1)' has rank 2, but 1 coordinates are given
