// RUN: %kernc opt %s --passes 'kern-to-gpu' | FileCheck %s
// RUN: %kernc opt %s --passes 'kern-to-gpu,kern-lower-builtins' | FileCheck %s --check-prefix=IDS
// A kern kernel becomes a gpu.func kernel in gpu.module @kernels: buffers in the global address
// space, the body under the guard scf.if t < P (unsigned, marked kern.guard). kern-lower-builtins
// then computes t = block_id * B + thread_id with B constant and P from the size argument.
// The gpu.func records the item mapping (kern.mapping, docs/gpu-ir.md): linear, item t of thread
// t % 128 of block t / 128, over the problem's one coordinate of extent n.

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @kernels
// CHECK: gpu.func @scale(%[[A:.*]]: f32, %[[Y:.*]]: memref<?xf32, #gpu.address_space<global>>, %[[N:.*]]: index) kernel
// CHECK-SAME: kern.mapping = "{\22block\22:128,\22extents\22:[\22n\22],\22grid_stride\22:false,\22thread_values\22:\22(128,1):(1,0)\22,\22tile\22:null,\22values\22:1}"
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: %[[T:.*]] = "kern.thread_id"()
// CHECK: %[[P:.*]] = "kern.problem_size"()
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[T]], %[[P]] : index
// CHECK: scf.if %[[OK]] {
// CHECK:   "kern.thread_id"()
// CHECK:   memref.store %{{.*}}, %[[Y]]
// CHECK: } {kern.guard}
// CHECK-NEXT: gpu.return
// CHECK-NOT: func.func

// IDS: gpu.func @scale(%{{.*}}: f32, %[[Y:.*]]: memref<?xf32, #gpu.address_space<global>>, %[[N:.*]]: index) kernel
// IDS-DAG: %[[B:.*]] = gpu.block_id x
// IDS-DAG: %[[TID:.*]] = gpu.thread_id x
// IDS-DAG: %[[C128:.*]] = arith.constant 128 : index
// IDS: %[[M:.*]] = arith.muli %[[B]], %[[C128]] : index
// IDS: %[[T:.*]] = arith.addi %[[M]], %[[TID]] : index
// IDS: arith.cmpi ult, %[[T]], %[[N]] : index
// IDS: memref.store %{{.*}}, %[[Y]][%[[T]]]
// IDS-NOT: "kern.
func.func @scale(%a: f32, %y: memref<?xf32>, %n: index) attributes {kern.signature = "{\22attributes\22:[],\22block\22:128,\22name\22:\22scale\22,\22params\22:[{\22access\22:null,\22accessor\22:null,\22components\22:1,\22dims\22:[],\22dtype\22:\22f32\22,\22index_param\22:null,\22kind\22:\22scalar\22,\22layout\22:null,\22name\22:\22a\22,\22storage_shape\22:[]},{\22access\22:\22write\22,\22accessor\22:\22sequential\22,\22components\22:1,\22dims\22:[\22n\22],\22dtype\22:\22f32\22,\22index_param\22:null,\22kind\22:\22buffer\22,\22layout\22:\22(n):(1)\22,\22name\22:\22y\22,\22storage_shape\22:[\22n\22]}],\22problem_size\22:\22n\22,\22sizes\22:[\22n\22]}"} {
  %t = "kern.thread_id"() : () -> index
  %i = arith.index_cast %t : index to i32
  %f = arith.sitofp %i : i32 to f32
  %v = arith.mulf %a, %f : f32
  memref.store %v, %y[%t] : memref<?xf32>
  return
}
