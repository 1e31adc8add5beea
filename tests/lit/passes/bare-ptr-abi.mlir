// RUN: %kernc opt %s --passes 'kern-bare-ptr-abi{index-bits=32}' | FileCheck %s
// RUN: %kernc opt %s --passes 'kern-bare-ptr-abi{index-bits=32},gpu.module(convert-gpu-to-nvvm{index-bitwidth=32},reconcile-unrealized-casts)' | FileCheck %s --check-prefix=NVVM
// Buffers are passed as one global pointer each (not the 5-field memref descriptor).

// CHECK: gpu.func @k(%{{.*}}: !llvm.ptr<1>, %{{.*}}: index) kernel
// CHECK: llvm.mlir.undef : !llvm.struct<(ptr<1>, ptr<1>, i32, array<1 x i32>, array<1 x i32>)>
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<{{.*}}> to memref<?xf32, #gpu.address_space<global>>

// NVVM: llvm.func @k(%{{.*}}: !llvm.ptr<1>, %{{.*}}: i32)
// NVVM-NOT: unrealized_conversion_cast
// NVVM: llvm.getelementptr {{.*}}%{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
// NVVM: llvm.store
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%y: memref<?xf32, #gpu.address_space<global>>, %n: index) kernel {
      %t = gpu.thread_id x
      %c = arith.constant 1.0 : f32
      memref.store %c, %y[%t] : memref<?xf32, #gpu.address_space<global>>
      gpu.return
    }
  }
}
