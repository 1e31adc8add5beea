// RUN: %kernc opt %s --passes 'kern-lower-builtins' | FileCheck %s
// kern-lower-builtins, in each gpu.func with a kern.signature that uses a builtin: at the entry
// block_id = gpu.block_id x, t = block_id * B + gpu.thread_id x with the block size B of the
// signature as a constant, lane_id = gpu.lane_id and P the problem size (the size argument, an
// integer scalar cast to index by its signedness, or the product of the extents of an N-D
// problem); every builtin op is replaced by its value. Functions without a signature (or outside
// a gpu.func) and kernels that use no builtin are left alone.

// CHECK-LABEL: gpu.func @ids
// CHECK-SAME: (%[[Y:.*]]: memref<?xindex, #gpu.address_space<global>>, %[[N:.*]]: index) kernel
// CHECK-NEXT: %[[BID:.*]] = gpu.block_id x
// CHECK-NEXT: %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[B:.*]] = arith.constant 128 : index
// CHECK-NEXT: %[[M:.*]] = arith.muli %[[BID]], %[[B]] : index
// CHECK-NEXT: %[[T:.*]] = arith.addi %[[M]], %[[TID]] : index
// CHECK-NEXT: %[[LANE:.*]] = gpu.lane_id
// CHECK-NEXT: memref.store %[[BID]], %[[Y]][%[[T]]]
// CHECK-NEXT: memref.store %[[B]], %[[Y]][%[[LANE]]]
// CHECK-NEXT: memref.store %[[N]], %[[Y]][%[[N]]]
// CHECK-NEXT: gpu.return

// A u32 problem size is zero-extended, an i32 one sign-extended.
// CHECK-LABEL: gpu.func @unsigned_p
// CHECK: arith.constant 64 : index
// CHECK: %[[P:.*]] = arith.index_castui %arg1 : i32 to index
// CHECK-NEXT: memref.store %[[P]], %arg0[%[[P]]]
// CHECK-LABEL: gpu.func @signed_p
// CHECK: %[[P:.*]] = arith.index_cast %arg1 : i32 to index
// CHECK-NEXT: memref.store %[[P]], %arg0[%[[P]]]

// over (i, j) in (R, C): P = C*R.
// CHECK-LABEL: gpu.func @plane
// CHECK: arith.constant 256 : index
// CHECK: %[[P:.*]] = arith.muli %arg2, %arg1 : index
// CHECK-NEXT: memref.store %[[P]], %arg0[%[[P]]]

// Unchanged: no builtin used (nothing inserted), no signature, not a gpu.func.
// CHECK-LABEL: gpu.func @no_builtins
// CHECK-NEXT: memref.store %arg1, %arg0[%arg1]
// CHECK-NEXT: gpu.return
// CHECK-LABEL: gpu.func @no_signature
// CHECK-NOT: gpu.block_id
// CHECK: %[[T:.*]] = "kern.thread_id"() : () -> index
// CHECK-NEXT: memref.store %[[T]], %arg0[%[[T]]]
// CHECK-LABEL: func.func @host
// CHECK-NOT: gpu.block_id
// CHECK: %[[T:.*]] = "kern.thread_id"() : () -> index
// CHECK-NEXT: memref.store %[[T]], %arg0[%[[T]]]
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @ids(%y: memref<?xindex, #gpu.address_space<global>>, %n: index) kernel attributes {kern.signature = "{\22block\22:128,\22name\22:\22ids\22,\22params\22:[{\22name\22:\22y\22,\22kind\22:\22buffer\22,\22dtype\22:\22i64\22,\22access\22:\22write\22,\22accessor\22:\22sequential\22,\22dims\22:[\22n\22],\22layout\22:\22(n):(1)\22,\22storage_shape\22:[\22n\22]}],\22problem_size\22:\22n\22,\22sizes\22:[\22n\22]}", known_block_size = array<i32: 128, 1, 1>} {
      %t = "kern.thread_id"() : () -> index
      %b = "kern.block_id"() : () -> index
      %d = "kern.block_dim"() : () -> index
      %l = "kern.lane_id"() : () -> index
      %p = "kern.problem_size"() : () -> index
      memref.store %b, %y[%t] : memref<?xindex, #gpu.address_space<global>>
      memref.store %d, %y[%l] : memref<?xindex, #gpu.address_space<global>>
      memref.store %p, %y[%p] : memref<?xindex, #gpu.address_space<global>>
      gpu.return
    }
    gpu.func @unsigned_p(%y: memref<?xindex, #gpu.address_space<global>>, %m: i32, %n: index) kernel attributes {kern.signature = "{\22block\22:64,\22name\22:\22unsigned_p\22,\22params\22:[{\22name\22:\22y\22,\22kind\22:\22buffer\22,\22dtype\22:\22i64\22,\22access\22:\22write\22,\22accessor\22:\22sequential\22,\22dims\22:[\22n\22],\22layout\22:\22(n):(1)\22,\22storage_shape\22:[\22n\22]},{\22name\22:\22m\22,\22kind\22:\22scalar\22,\22dtype\22:\22u32\22}],\22problem_size\22:\22m\22,\22sizes\22:[\22n\22]}", known_block_size = array<i32: 64, 1, 1>} {
      %p = "kern.problem_size"() : () -> index
      memref.store %p, %y[%p] : memref<?xindex, #gpu.address_space<global>>
      gpu.return
    }
    gpu.func @signed_p(%y: memref<?xindex, #gpu.address_space<global>>, %m: i32, %n: index) kernel attributes {kern.signature = "{\22block\22:64,\22name\22:\22signed_p\22,\22params\22:[{\22name\22:\22y\22,\22kind\22:\22buffer\22,\22dtype\22:\22i64\22,\22access\22:\22write\22,\22accessor\22:\22sequential\22,\22dims\22:[\22n\22],\22layout\22:\22(n):(1)\22,\22storage_shape\22:[\22n\22]},{\22name\22:\22m\22,\22kind\22:\22scalar\22,\22dtype\22:\22i32\22}],\22problem_size\22:\22m\22,\22sizes\22:[\22n\22]}", known_block_size = array<i32: 64, 1, 1>} {
      %p = "kern.problem_size"() : () -> index
      memref.store %p, %y[%p] : memref<?xindex, #gpu.address_space<global>>
      gpu.return
    }
    gpu.func @plane(%y: memref<?xindex, #gpu.address_space<global>>, %r: index, %c: index) kernel attributes {kern.signature = "{\22block\22:256,\22name\22:\22plane\22,\22params\22:[{\22name\22:\22y\22,\22kind\22:\22buffer\22,\22dtype\22:\22i64\22,\22access\22:\22write\22,\22accessor\22:\22sequential\22,\22dims\22:[\22n\22],\22layout\22:\22(n):(1)\22,\22storage_shape\22:[\22n\22]}],\22problem_size\22:\22C*R\22,\22sizes\22:[\22R\22,\22C\22]}", known_block_size = array<i32: 256, 1, 1>} {
      %p = "kern.problem_size"() : () -> index
      memref.store %p, %y[%p] : memref<?xindex, #gpu.address_space<global>>
      gpu.return
    }
    gpu.func @no_builtins(%y: memref<?xindex, #gpu.address_space<global>>, %n: index) kernel attributes {kern.signature = "{\22block\22:128,\22name\22:\22no_builtins\22,\22params\22:[{\22name\22:\22y\22,\22kind\22:\22buffer\22,\22dtype\22:\22i64\22,\22access\22:\22write\22,\22accessor\22:\22sequential\22,\22dims\22:[\22n\22],\22layout\22:\22(n):(1)\22,\22storage_shape\22:[\22n\22]}],\22problem_size\22:\22n\22,\22sizes\22:[\22n\22]}", known_block_size = array<i32: 128, 1, 1>} {
      memref.store %n, %y[%n] : memref<?xindex, #gpu.address_space<global>>
      gpu.return
    }
    gpu.func @no_signature(%y: memref<?xindex, #gpu.address_space<global>>) kernel {
      %t = "kern.thread_id"() : () -> index
      memref.store %t, %y[%t] : memref<?xindex, #gpu.address_space<global>>
      gpu.return
    }
  }
  func.func @host(%y: memref<?xindex>) {
    %t = "kern.thread_id"() : () -> index
    memref.store %t, %y[%t] : memref<?xindex>
    return
  }
}
