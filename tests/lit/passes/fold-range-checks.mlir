// RUN: %kernc opt %s --passes kern-fold-range-checks,canonicalize | FileCheck %s
// kern-fold-range-checks: 0 <= c && c < s is one unsigned compare when s >= 0 is proven, and
// 0 <= c is true when c >= 0 is; nothing changes where another value would see the difference.

// CHECK-LABEL: func.func @pairs
// CHECK-SAME: (%[[C:.*]]: index, %[[D:.*]]: index, %[[S:.*]]: index)
// c may be negative, s = 8: one unsigned compare
// CHECK: %[[A:.*]] = arith.cmpi ult, %[[C]], %c8 : index
// the thread id is never negative: only its upper bound is left
// CHECK: %[[B:.*]] = arith.cmpi slt, %{{.*}}, %[[S]] : index
// an extent of unknown sign keeps both compares
// CHECK: arith.cmpi sge, %[[D]], %c0 : index
// CHECK: arith.cmpi slt, %[[D]], %[[S]] : index
// CHECK: return
func.func @pairs(%c: index, %d: index, %s: index) -> (i1, i1, i1) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %t = "kern.thread_id"() : () -> index
  %lo = arith.cmpi sge, %c, %c0 : index
  %hi = arith.cmpi slt, %c, %c8 : index
  %ok = arith.andi %lo, %hi : i1
  %tlo = arith.cmpi sge, %t, %c0 : index
  %thi = arith.cmpi slt, %t, %s : index
  %tok = arith.andi %tlo, %thi : i1
  %dlo = arith.cmpi sge, %d, %c0 : index
  %dhi = arith.cmpi slt, %d, %s : index
  %dok = arith.andi %dlo, %dhi : i1
  return %ok, %tok, %dok : i1, i1, i1
}

// The upper compare is also returned on its own: for a negative c it must stay true, so the pair
// is left as it is.
// CHECK-LABEL: func.func @shared_compare
// CHECK: arith.cmpi sge, %arg0, %c0 : index
// CHECK: arith.cmpi slt, %arg0, %c8 : index
// CHECK-NOT: ult
// CHECK: return
func.func @shared_compare(%c: index) -> (i1, i1) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %lo = arith.cmpi sge, %c, %c0 : index
  %hi = arith.cmpi slt, %c, %c8 : index
  %ok = arith.andi %lo, %hi : i1
  return %ok, %hi : i1, i1
}

// Safety checks only use facts that hold in every run: a remainder by a divisor that may be 0 is
// unspecified (so `r % s < s` stays), and a product of coordinates may wrap (so `t*k >= 0` and
// `t/d >= 0` stay); a thread id and a loop variable below its bound need no check.
// CHECK-LABEL: func.func @strict
// CHECK: arith.cmpi slt, %{{.*}}, %arg0 : index
// CHECK: arith.cmpi sge, %{{.*}}, %c0 : index
// CHECK: arith.cmpi sge, %{{.*}}, %c0 : index
// CHECK-NOT: arith.cmpi
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %true, %true
func.func @strict(%s: index, %k: index, %d: index) -> (i1, i1, i1, i1, i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = "kern.thread_id"() : () -> index
  %r = arith.remui %t, %s : index
  %rhi = arith.cmpi slt, %r, %s : index
  %p = arith.muli %t, %t : index
  %plo = arith.cmpi sge, %p, %c0 : index
  %q = arith.divui %t, %d : index
  %qlo = arith.cmpi sge, %q, %c0 : index
  %tlo = arith.cmpi sge, %t, %c0 : index
  %ok = scf.for %i = %c0 to %s step %c1 iter_args(%acc = %tlo) -> (i1) {
    %ilo = arith.cmpi sge, %i, %c0 : index
    %ihi = arith.cmpi slt, %i, %s : index
    %both = arith.andi %ilo, %ihi : i1
    %a = arith.andi %acc, %both : i1
    scf.yield %a : i1
  }
  return %rhi, %plo, %qlo, %tlo, %ok : i1, i1, i1, i1, i1
}
