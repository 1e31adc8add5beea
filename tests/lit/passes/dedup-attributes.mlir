// RUN: %kernc opt %s --passes 'gpu.module(convert-gpu-to-nvvm{index-bitwidth=32}),kern-dedup-attributes' | FileCheck %s
// RUN: %kernc opt %s --passes 'gpu.module(convert-gpu-to-nvvm{index-bitwidth=32}),kern-dedup-attributes' | %kernc opt - --passes 'kern-dedup-attributes' | FileCheck %s
// RUN: %kernc opt %s --passes 'gpu.module(convert-gpu-to-nvvm{index-bitwidth=32})' | FileCheck %s --check-prefix=UPSTREAM
// kern-dedup-attributes keeps one of each attribute name on every llvm.func: convert-gpu-to-nvvm
// (MLIR 23 as kernc first used it) copied a kernel's gpu.kernel to the llvm.func and then added it
// again, and the printed IR no longer parsed ("duplicate key 'gpu.kernel'"). Text IR cannot hold
// a duplicate key (the parser rejects it), so the case the pass exists for only arises inside one
// compilation; here: every attribute is kept once, in order, and the result parses again (the
// second RUN reads it back). The UPSTREAM prefix checks the attributes convert-gpu-to-nvvm leaves, which the pass
// must keep (with the MLIR installed now, no name twice).

// CHECK-LABEL: llvm.func @k(
// CHECK-SAME: attributes {gpu.kernel, gpu.known_block_size = array<i32: 128, 1, 1>, kern.note = "kept", nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
// CHECK-LABEL: llvm.func @plain(
// CHECK-SAME: attributes {gpu.kernel, nvvm.kernel} {
// CHECK-LABEL: llvm.func @helper(
// CHECK-SAME: ) -> f32 {
// CHECK-NOT: gpu.kernel
// CHECK: llvm.return

// UPSTREAM-LABEL: llvm.func @k(
// UPSTREAM-SAME: attributes {gpu.kernel, gpu.known_block_size = array<i32: 128, 1, 1>, kern.note = "kept", nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
// UPSTREAM-LABEL: llvm.func @plain(
// UPSTREAM-SAME: attributes {gpu.kernel, nvvm.kernel} {
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%y: memref<?xf32, #gpu.address_space<global>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, kern.note = "kept"} {
      %t = gpu.thread_id x
      %c = arith.constant 1.0 : f32
      memref.store %c, %y[%t] : memref<?xf32, #gpu.address_space<global>>
      gpu.return
    }
    gpu.func @plain() kernel {
      gpu.return
    }
    gpu.func @helper(%x: f32) -> f32 {
      gpu.return %x : f32
    }
  }
}
