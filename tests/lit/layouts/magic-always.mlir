// RUN: %kernc opt %s --passes 'kern-lower-divisions{magic=always}' | FileCheck %s
// RUN: %kernc opt %s --passes 'kern-lower-divisions' | FileCheck %s --check-prefix=AUTO
// magic=always rewrites even a lone division by a uniform value (t / N of a 2-D `over`); the
// default (auto) keeps one hardware division there, where the set-up would not pay off.

// CHECK-LABEL: func.func @delinearize
// CHECK: arith.index_cast %arg0 : index to i64
// CHECK: arith.trunci
// CHECK: %[[T:.*]] = "kern.thread_id"
// CHECK: scf.if %{{.*}} -> (index) {
// CHECK: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.shrui
// CHECK: } else {
// CHECK: arith.divsi %[[T]], %arg0 : index
// AUTO-LABEL: func.func @delinearize
// AUTO-NOT: : i64
// AUTO: arith.divsi %{{.*}}, %arg0 : index
func.func @delinearize(%n: index) -> index {
  %t = "kern.thread_id"() : () -> index
  %q = arith.divsi %t, %n : index
  return %q : index
}
