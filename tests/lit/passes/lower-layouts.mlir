// RUN: %kernc opt %s --passes 'kern-lower-layouts' | FileCheck %s
// A layout's offset is the dot product of the coordinate with its strides; unit strides add the
// coordinate itself and symbolic strides multiply by the size arguments.

// CHECK-LABEL: func.func @soa
func.func @soa(%e: index, %c: index, %n: index) -> index {
  // CHECK: %[[M:.*]] = arith.muli %arg1, %arg2 : index
  // CHECK: %[[R:.*]] = arith.addi %arg0, %[[M]] : index
  // CHECK: return %[[R]]
  %o = "kern.layout_apply"(%e, %c, %n) {layout = "(n,3):(1,n)", syms = ["n"], operandSegmentSizes = array<i32: 2, 1>} : (index, index, index) -> index
  return %o : index
}

// CHECK-LABEL: func.func @aos
func.func @aos(%e: index, %c: index, %n: index) -> index {
  // CHECK: %[[C3:.*]] = arith.constant 3 : index
  // CHECK: %[[M:.*]] = arith.muli %arg0, %[[C3]] : index
  // CHECK: arith.addi %[[M]], %arg1 : index
  %o = "kern.layout_apply"(%e, %c, %n) {layout = "(n,3):(3,1)", syms = ["n"], operandSegmentSizes = array<i32: 2, 1>} : (index, index, index) -> index
  return %o : index
}

// CHECK-LABEL: func.func @poly
func.func @poly(%e: index, %h: index, %w: index) -> index {
  // stride H*W*2: a product of both symbols and the constant
  // CHECK: arith.muli
  // CHECK: arith.muli
  // CHECK-NOT: kern.layout_apply
  %o = "kern.layout_apply"(%e, %h, %w, %h) {layout = "(n):(2*H*W)", syms = ["H", "W", "n"], operandSegmentSizes = array<i32: 1, 3>} : (index, index, index, index) -> index
  return %o : index
}
