// RUN: %kernc opt %s --passes 'gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{index-bitwidth=32},reconcile-unrealized-casts)' | FileCheck %s
// convert-gpu-to-nvvm (the compiler's upstream pipeline, passes/convert_gpu_to_nvvm.py): gpu.func
// -> llvm.func (memref descriptors; the bare-pointer ABI is kern-bare-ptr-abi's), scf -> cf. Each
// workgroup attribution of a kernel g becomes llvm.mlir.global @__wg_g$_<n> in address space 3:
// kernc renames g to g$ around the upstream conversion (whose names are __wg_<function>_<n>) and
// back after, so a kernel named __wg_g_0 beside g no longer collides with g's global (upstream:
// "redefinition of symbol"). A kernel without workgroup memory keeps its name and gets no global.

// CHECK: gpu.module @kernels {
// CHECK-NEXT: llvm.mlir.global internal @__wg_g$_0() {addr_space = 3 : i32} : !llvm.array<64 x f32>
// CHECK-NEXT: llvm.func @g(%arg0: !llvm.ptr<1>, %arg1: !llvm.ptr<1>, %arg2: i32, %arg3: i32, %arg4: i32) attributes {gpu.kernel, gpu.known_block_size = array<i32: 64, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 64, 1, 1>} {
// CHECK: %[[G:.*]] = llvm.mlir.addressof @__wg_g$_0 : !llvm.ptr<3>
// CHECK: nvvm.read.ptx.sreg.tid.x range <i32, 0, 64> : i32
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: llvm.return

// Two attributions: two globals, numbered in order.
// CHECK: llvm.mlir.global internal @__wg_h$_0() {addr_space = 3 : i32} : !llvm.array<32 x f32>
// CHECK-NEXT: llvm.mlir.global internal @__wg_h$_1() {addr_space = 3 : i32} : !llvm.array<16 x i32>
// CHECK-NEXT: llvm.func @h(%arg0: !llvm.ptr<1>, %arg1: !llvm.ptr<1>, %arg2: i32, %arg3: i32, %arg4: i32) attributes {gpu.kernel, nvvm.kernel} {
// CHECK: llvm.mlir.addressof @__wg_h$_0 : !llvm.ptr<3>
// CHECK: llvm.mlir.addressof @__wg_h$_1 : !llvm.ptr<3>
// CHECK: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// CHECK-NEXT: llvm.return

// No workgroup memory: the name as it was, no global; the scf.if is now branches.
// CHECK-NOT: llvm.mlir.global
// CHECK: llvm.func @__wg_g_0(%arg0: !llvm.ptr<1>, %arg1: !llvm.ptr<1>, %arg2: i32, %arg3: i32, %arg4: i32, %arg5: i1) attributes {gpu.kernel, nvvm.kernel} {
// CHECK: llvm.cond_br %arg5, ^bb1, ^bb2
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<1>
// CHECK-NOT: llvm.mlir.global
// CHECK-NOT: gpu.func
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @g(%y: memref<?xf32, #gpu.address_space<global>>) workgroup(%tile : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %t = gpu.thread_id x
      %v = memref.load %y[%t] : memref<?xf32, #gpu.address_space<global>>
      memref.store %v, %tile[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
    gpu.func @h(%y: memref<?xf32, #gpu.address_space<global>>) workgroup(%a : memref<32xf32, #gpu.address_space<workgroup>>, %b : memref<16xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %y[%t] : memref<?xf32, #gpu.address_space<global>>
      memref.store %v, %a[%t] : memref<32xf32, #gpu.address_space<workgroup>>
      %c = arith.constant 1 : i32
      memref.store %c, %b[%t] : memref<16xi32, #gpu.address_space<workgroup>>
      gpu.return
    }
    gpu.func @__wg_g_0(%y: memref<?xf32, #gpu.address_space<global>>, %p: i1) kernel {
      %t = gpu.thread_id x
      scf.if %p {
        %c = arith.constant 1.0 : f32
        memref.store %c, %y[%t] : memref<?xf32, #gpu.address_space<global>>
      }
      gpu.return
    }
  }
}
