// RUN: %kernc opt %s --passes 'gpu.module(convert-gpu-to-nvvm{index-bitwidth=32},reconcile-unrealized-casts),kern-libdevice-to-intrinsics' | FileCheck %s
// kern-libdevice-to-intrinsics: convert-gpu-to-nvvm lowers math.fma to libdevice's __nv_fmaf/__nv_fma (and an
// f16 fma to fptrunc(__nv_fmaf(fpext ...)), rounding twice); they become llvm.intr.fma on the
// operands' own type, and the libdevice declarations go away (no libdevice to link).

// CHECK-NOT: __nv_fma
// CHECK: llvm.func @k(%[[A:[a-z0-9]+]]: f32, %[[D:[a-z0-9]+]]: f64, %[[H:[a-z0-9]+]]: f16,
// CHECK: llvm.intr.fma(%[[A]], %[[A]], %[[A]]) : (f32, f32, f32) -> f32
// CHECK: llvm.intr.fma(%[[D]], %[[D]], %[[D]]) : (f64, f64, f64) -> f64
// CHECK-NOT: llvm.fpext
// CHECK: %[[R:.*]] = llvm.intr.fma(%[[H]], %[[H]], %[[H]]) : (f16, f16, f16) -> f16
// CHECK-NOT: llvm.fptrunc
// CHECK: llvm.store %[[R]]
// CHECK-NOT: __nv_fma
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: f32, %d: f64, %h: f16, %y: memref<4xf32>, %z: memref<4xf64>, %w: memref<4xf16>) kernel {
      %c0 = arith.constant 0 : index
      %r = math.fma %a, %a, %a : f32
      memref.store %r, %y[%c0] : memref<4xf32>
      %s = math.fma %d, %d, %d : f64
      memref.store %s, %z[%c0] : memref<4xf64>
      %t = math.fma %h, %h, %h : f16
      memref.store %t, %w[%c0] : memref<4xf16>
      gpu.return
    }
  }
}
