// RUN: %kernc opt %s --passes kern-fold-divisions | FileCheck %s
// kern-fold-divisions replaces a division or remainder of x = a*d + b by a (resp. b) when the IR
// proves 0 <= b < d and a >= 0, and leaves every other division alone.

// (r*C + c) / C = r and % C = c for loop variables r in [0, R), c in [0, C); C*r (operands swapped)
// and a remainder by the loop bound itself fold too.
// CHECK-LABEL: func.func @loop_variables
// CHECK-NOT: arith.divsi
// CHECK-NOT: arith.remsi
// CHECK: scf.for %[[R:.*]] = %c0 to %arg0
// CHECK: scf.for %[[C:.*]] = %c0 to %arg1
// CHECK: %[[S:.*]] = arith.addi %[[R]], %[[C]] : index
// CHECK: arith.addi %[[S]], %[[C]] : index
func.func @loop_variables(%R: index, %C: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = scf.for %r = %c0 to %R step %c1 iter_args(%acc = %c0) -> (index) {
    %y = scf.for %c = %c0 to %C step %c1 iter_args(%acc2 = %acc) -> (index) {
      %m = arith.muli %C, %r : index
      %kk = arith.addi %m, %c : index
      %q = arith.divsi %kk, %C : index
      %rem = arith.remsi %kk, %C : index
      %again = arith.remui %c, %C : index
      %s1 = arith.addi %q, %rem : index
      %s2 = arith.addi %s1, %again : index
      %s3 = arith.addi %acc2, %s2 : index
      scf.yield %s3 : index
    }
    scf.yield %y : index
  }
  return %z : index
}

// A constant multiple with a constant below the divisor: (t*8 + 5) / 8 = t, % 8 = 5, 5 / 8 = 0.
// CHECK-LABEL: func.func @constants
// CHECK-NOT: arith.divui
// CHECK-NOT: arith.remui
// CHECK: %[[T:.*]] = "kern.thread_id"
// CHECK: return %[[T]], %c5, %c0
func.func @constants() -> (index, index, index) {
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %t = "kern.thread_id"() : () -> index
  %m = arith.muli %t, %c8 : index
  %x = arith.addi %m, %c5 : index
  %q = arith.divui %x, %c8 : index
  %r = arith.remui %x, %c8 : index
  %z = arith.divui %c5, %c8 : index
  return %q, %r, %z : index, index, index
}

// Not folded: the low part's bound is another value (c < C, divisor D); the high part may be
// negative (a function argument with no size fact); the loop starts below 0; its step is not a
// positive constant; the dividend is a product of values neither of which is the divisor.
// CHECK-LABEL: func.func @not_proven
// CHECK-COUNT-5: arith.divsi
// CHECK: return
func.func @not_proven(%C: index, %D: index, %a: index, %st: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cm1 = arith.constant -1 : index
  %z = scf.for %c = %c0 to %C step %c1 iter_args(%acc = %c0) -> (index) {
    %t = "kern.thread_id"() : () -> index
    %m1 = arith.muli %t, %D : index
    %x1 = arith.addi %m1, %c : index
    %q1 = arith.divsi %x1, %D : index
    %m2 = arith.muli %a, %C : index
    %x2 = arith.addi %m2, %c : index
    %q2 = arith.divsi %x2, %C : index
    %s = arith.addi %q1, %q2 : index
    scf.yield %s : index
  }
  %w = scf.for %c = %cm1 to %C step %c1 iter_args(%acc = %z) -> (index) {
    %t = "kern.thread_id"() : () -> index
    %m = arith.muli %t, %C : index
    %x = arith.addi %m, %c : index
    %q = arith.divsi %x, %C : index
    %s = arith.addi %acc, %q : index
    scf.yield %s : index
  }
  %v = scf.for %c = %c0 to %C step %st iter_args(%acc = %w) -> (index) {
    %t = "kern.thread_id"() : () -> index
    %m = arith.muli %t, %C : index
    %x = arith.addi %m, %c : index
    %q = arith.divsi %x, %C : index
    %p = arith.muli %t, %a : index
    %q2 = arith.divsi %p, %C : index
    %s = arith.addi %acc, %q : index
    %s2 = arith.addi %s, %q2 : index
    scf.yield %s2 : index
  }
  return %v : index
}
