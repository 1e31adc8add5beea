// RUN: %kernc opt %s --passes kern-reduce-iv-divisions,canonicalize,cse | FileCheck %s
// kern-reduce-iv-divisions: i / d, i % d and (i / d) % e of the induction variable i of a step-1 loop
// with loop-invariant d, e become loop-carried counters: the remainder steps and wraps at |d|, the
// quotient steps by sign(d) on a wrap, and the nested pair steps only when the outer one wraps.

// CHECK-LABEL: func.func @counters
// |d| and sign(d) before the loop
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %arg1, %c0
// CHECK: %[[ABS:.*]] = arith.select %[[NEG]], %{{.*}}, %arg1
// CHECK: %[[SIGN:.*]] = arith.select %[[NEG]], %c-1, %c1
// CHECK: scf.for %{{.*}} = %c0 to %arg0 step %c1 iter_args(%[[ACC:.*]] = %c0, %[[Q:.*]] = %c0, %[[R:.*]] = %c0, %[[Q2:.*]] = %c0, %[[R2:.*]] = %c0)
// CHECK-NOT: arith.divsi
// CHECK-NOT: arith.remsi
// CHECK: arith.addi %[[Q]], %[[R]]
// CHECK: %[[STEP:.*]] = arith.addi %[[R]], %c1
// CHECK: %[[WRAP:.*]] = arith.cmpi eq, %[[STEP]], %[[ABS]]
// CHECK: %[[QN:.*]] = arith.addi %[[Q]], %[[SIGN]]
// CHECK: arith.select %[[WRAP]], %[[QN]], %[[Q]]
// CHECK: arith.select %[[WRAP]], %c0, %[[STEP]]
// the nested counter steps only on the outer wrap
// CHECK: %[[STEP2:.*]] = arith.addi %[[R2]], %c1
// CHECK: %[[WRAP2:.*]] = arith.cmpi eq, %[[STEP2]], %{{.*}}
// CHECK: arith.andi %[[WRAP]], %[[WRAP2]]
// CHECK: scf.yield
func.func @counters(%M: index, %d: index, %e: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = scf.for %i = %c0 to %M step %c1 iter_args(%acc = %c0) -> (index) {
    %q = arith.divsi %i, %d : index
    %r = arith.remsi %i, %d : index
    %r2 = arith.remsi %q, %e : index
    %s = arith.addi %q, %r : index
    %s2 = arith.addi %s, %r2 : index
    %s3 = arith.addi %acc, %s2 : index
    scf.yield %s3 : index
  }
  return %z : index
}

// Left alone: a divisor computed in the loop, a step other than 1, a lower bound that may be negative.
// CHECK-LABEL: func.func @not_counters
// CHECK-COUNT-3: arith.divsi
// CHECK: return
func.func @not_counters(%M: index, %d: index, %lo: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = scf.for %i = %c0 to %M step %c1 iter_args(%acc = %c0) -> (index) {
    %dd = arith.addi %d, %i : index
    %q = arith.divsi %i, %dd : index
    scf.yield %q : index
  }
  %b = scf.for %i = %c0 to %M step %c2 iter_args(%acc = %a) -> (index) {
    %q = arith.divsi %i, %d : index
    scf.yield %q : index
  }
  %c = scf.for %i = %lo to %M step %c1 iter_args(%acc = %b) -> (index) {
    %q = arith.divsi %i, %d : index
    scf.yield %q : index
  }
  return %c : index
}
