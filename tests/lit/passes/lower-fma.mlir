// RUN: %kernc opt %s --passes 'kern-lower-fma,gpu.module(convert-gpu-to-nvvm{index-bitwidth=32},reconcile-unrealized-casts)' | FileCheck %s
// kern-lower-fma: every math.fma becomes llvm.intr.fma of its own type before convert-gpu-to-nvvm
// (which would call libdevice's __nv_fmaf, and for f16 round twice through f32). An f32 fma of
// extended f16 values stays an f32 fma, an f64 fma of extended f32 values an f64 one: the gpu IR's
// types are what the CPU interpreter computes.

// CHECK-NOT: __nv_fma
// CHECK: llvm.func @k(%[[A:[a-z0-9]+]]: f32, %[[D:[a-z0-9]+]]: f64, %[[H:[a-z0-9]+]]: f16,
// CHECK: llvm.intr.fma(%[[A]], %[[A]], %[[A]]) : (f32, f32, f32) -> f32
// CHECK: llvm.intr.fma(%[[D]], %[[D]], %[[D]]) : (f64, f64, f64) -> f64
// CHECK: %[[R:.*]] = llvm.intr.fma(%[[H]], %[[H]], %[[H]]) : (f16, f16, f16) -> f16
// CHECK: llvm.store %[[R]]
// CHECK: %[[X:.*]] = llvm.fpext %[[H]] : f16 to f32
// CHECK: %[[W:.*]] = llvm.intr.fma(%[[X]], %[[X]], %[[X]]) : (f32, f32, f32) -> f32
// CHECK: llvm.fptrunc %[[W]] : f32 to f16
// CHECK: %[[Y:.*]] = llvm.fpext %[[A]] : f32 to f64
// CHECK: %[[V:.*]] = llvm.intr.fma(%[[Y]], %[[Y]], %[[Y]]) : (f64, f64, f64) -> f64
// CHECK: llvm.fptrunc %[[V]] : f64 to f32
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
      %hx = arith.extf %h : f16 to f32
      %u = math.fma %hx, %hx, %hx : f32
      %ut = arith.truncf %u : f32 to f16
      memref.store %ut, %w[%c0] : memref<4xf16>
      %ax = arith.extf %a : f32 to f64
      %v = math.fma %ax, %ax, %ax : f64
      %vt = arith.truncf %v : f64 to f32
      memref.store %vt, %y[%c0] : memref<4xf32>
      gpu.return
    }
  }
}
