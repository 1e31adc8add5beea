// RUN: %kernc opt %s --passes 'kern-lower-divisions' | FileCheck %s
// RUN: %kernc opt %s --passes 'kern-lower-divisions{magic=always}' | FileCheck %s --check-prefix=MAGIC
// RUN: %kernc opt %s --passes 'kern-lower-divisions{magic=never}' | FileCheck %s --check-prefix=NEVER
// kern-lower-divisions on index divisions: a constant power-of-two divisor 2^k becomes shifts and
// masks, exact for negative dividends (divsi adds the bias 2^k-1 when n < 0, remsi = n - (q << k));
// a signed division of operands proven >= 0 (the thread id by a constant) is made unsigned first.
// A uniform runtime divisor gets the Granlund-Montgomery magic numbers when it pays (default
// magic=auto: not for one lone division; magic=always: every one, with the original division
// kept for the cases the method does not cover), see tests/lit/layouts/magic*.kern for the
// arithmetic. Other constants (left to LLVM), zero, per-thread divisors and non-index integers stay.

// CHECK-LABEL: func.func @pow2
// CHECK: %[[K:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[A:.*]] = arith.shrui %arg0, %[[K]] : index
// CHECK-NEXT: %[[M:.*]] = arith.constant 7 : index
// CHECK-NEXT: %[[B:.*]] = arith.andi %arg0, %[[M]] : index
// divsi: (n + (n < 0 ? 7 : 0)) >> 3
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %arg0, %{{.*}} : index
// CHECK: %[[BIAS:.*]] = arith.select %[[NEG]], %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[NB:.*]] = arith.addi %arg0, %[[BIAS]] : index
// CHECK: %[[C:.*]] = arith.shrsi %[[NB]], %{{.*}} : index
// remsi: n - (q << 3)
// CHECK: %[[Q:.*]] = arith.shrsi %{{.*}}, %{{.*}} : index
// CHECK: %[[QS:.*]] = arith.shli %[[Q]], %{{.*}} : index
// CHECK-NEXT: %[[D:.*]] = arith.subi %arg0, %[[QS]] : index
// floordivsi: an arithmetic shift
// CHECK: %[[E:.*]] = arith.shrsi %arg0, %{{.*}} : index
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]]
// CHECK-NOT: arith.div
// CHECK-NOT: arith.rem
func.func @pow2(%n: index, %m: index) -> (index, index, index, index, index) {
  %c8 = arith.constant 8 : index
  %a = arith.divui %n, %c8 : index
  %b = arith.remui %n, %c8 : index
  %c = arith.divsi %n, %c8 : index
  %d = arith.remsi %n, %c8 : index
  %e = arith.floordivsi %n, %c8 : index
  return %a, %b, %c, %d, %e : index, index, index, index, index
}

// CHECK-LABEL: func.func @nonneg
// CHECK: %[[T:.*]] = "kern.thread_id"()
// CHECK: %[[Q:.*]] = arith.shrui %[[T]], %{{.*}} : index
// CHECK: %[[R:.*]] = arith.andi %[[T]], %{{.*}} : index
// CHECK-NEXT: return %[[Q]], %[[R]]
func.func @nonneg(%n: index) -> (index, index) {
  %t = "kern.thread_id"() : () -> index
  %c8 = arith.constant 8 : index
  %q = arith.divsi %t, %c8 : index
  %r = arith.remsi %t, %c8 : index
  return %q, %r : index, index
}

// CHECK-LABEL: func.func @uniform
// CHECK-NEXT: %[[T:.*]] = "kern.thread_id"()
// CHECK-NEXT: %[[Q:.*]] = arith.divsi %[[T]], %arg0 : index
// CHECK-NEXT: return %[[Q]]
// MAGIC-LABEL: func.func @uniform
// MAGIC: arith.index_cast %arg0 : index to i64
// MAGIC: %[[T:.*]] = "kern.thread_id"()
// MAGIC: scf.if %{{.*}} -> (index) {
// MAGIC: arith.muli %{{.*}}, %{{.*}} : i64
// MAGIC: } else {
// MAGIC-NEXT: %[[D:.*]] = arith.divsi %[[T]], %arg0 : index
// MAGIC-NEXT: scf.yield %[[D]] : index
// NEVER-LABEL: func.func @uniform
// NEVER-NEXT: %[[T:.*]] = "kern.thread_id"()
// NEVER-NEXT: %[[Q:.*]] = arith.divsi %[[T]], %arg0 : index
// NEVER-NEXT: return %[[Q]]
func.func @uniform(%n: index) -> index {
  %t = "kern.thread_id"() : () -> index
  %q = arith.divsi %t, %n : index
  return %q : index
}

// CHECK-LABEL: func.func @unchanged
// CHECK-NEXT: %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT: arith.divui %arg0, %[[C6]] : index
// CHECK-NEXT: arith.remsi %arg0, %arg1 : index
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: arith.divui %arg0, %[[C0]] : index
// CHECK-NEXT: %[[C8:.*]] = arith.constant 8 : i32
// CHECK-NEXT: arith.divui %arg2, %[[C8]] : i32
// CHECK-NEXT: return
func.func @unchanged(%n: index, %m: index, %k: i32) -> (index, index, index, i32) {
  %c6 = arith.constant 6 : index
  %a = arith.divui %n, %c6 : index
  %b = arith.remsi %n, %m : index
  %c0 = arith.constant 0 : index
  %z = arith.divui %n, %c0 : index
  %c8 = arith.constant 8 : i32
  %i = arith.divui %k, %c8 : i32
  return %a, %b, %z, %i : index, index, index, i32
}
