// RUN: %kernc opt %s --passes 'kern-to-gpu' | FileCheck %s
// A kern kernel becomes a gpu.func kernel in gpu.module @kernels: buffers in the global address
// space, t = block_id * B + thread_id with B constant, the body under scf.if t < P (unsigned), and the
// thread builtins replaced.

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @kernels
// CHECK: gpu.func @scale(%[[A:.*]]: f32, %[[Y:.*]]: memref<?xf32, #gpu.address_space<global>>, %[[N:.*]]: index) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-DAG: %[[B:.*]] = gpu.block_id x
// CHECK-DAG: %[[TID:.*]] = gpu.thread_id x
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[M:.*]] = arith.muli %[[B]], %[[C128]] : index
// CHECK: %[[T:.*]] = arith.addi %[[M]], %[[TID]] : index
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[T]], %[[N]] : index
// CHECK: scf.if %[[OK]] {
// CHECK:   arith.index_cast %[[T]]
// CHECK:   memref.store %{{.*}}, %[[Y]][%[[T]]]
// CHECK: }
// CHECK-NEXT: gpu.return
// CHECK-NOT: kern.
// CHECK-NOT: func.func
func.func @scale(%a: f32, %y: memref<?xf32>, %n: index) attributes {kern.signature = "{\22attributes\22:[],\22block\22:128,\22name\22:\22scale\22,\22params\22:[{\22access\22:null,\22accessor\22:null,\22components\22:1,\22dims\22:[],\22dtype\22:\22f32\22,\22index_param\22:null,\22kind\22:\22scalar\22,\22layout\22:null,\22name\22:\22a\22,\22storage_shape\22:[]},{\22access\22:\22write\22,\22accessor\22:\22sequential\22,\22components\22:1,\22dims\22:[\22n\22],\22dtype\22:\22f32\22,\22index_param\22:null,\22kind\22:\22buffer\22,\22layout\22:\22(n):(1)\22,\22name\22:\22y\22,\22storage_shape\22:[\22n\22]}],\22problem_size\22:\22n\22,\22sizes\22:[\22n\22]}"} {
  %t = "kern.thread_id"() : () -> index
  %i = arith.index_cast %t : index to i32
  %f = arith.sitofp %i : i32 to f32
  %v = arith.mulf %a, %f : f32
  memref.store %v, %y[%t] : memref<?xf32>
  return
}
