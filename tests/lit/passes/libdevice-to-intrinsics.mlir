// RUN: %kernc opt %s --passes 'kern-libdevice-to-intrinsics' | FileCheck %s
// libdevice functions with an exact LLVM intrinsic become that intrinsic (no libdevice link needed);
// the others stay calls. Declarations nothing calls any more are dropped.

// CHECK-NOT: llvm.func @__nv_fminf
// CHECK-NOT: llvm.func @__nv_sqrt(
// CHECK: llvm.func @__nv_expf(f32) -> f32
// CHECK-LABEL: llvm.func @k
// CHECK: llvm.intr.minnum(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK: llvm.intr.sqrt(%{{.*}}) : (f64) -> f64
// CHECK: llvm.intr.fabs(%{{.*}}) : (f32) -> f32
// CHECK: llvm.call @__nv_expf(%{{.*}}) : (f32) -> f32
// CHECK-NOT: llvm.call @__nv_f
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @__nv_fminf(f32, f32) -> f32
    llvm.func @__nv_sqrt(f64) -> f64
    llvm.func @__nv_fabsf(f32) -> f32
    llvm.func @__nv_expf(f32) -> f32
    llvm.func @k(%a: f32, %b: f32, %d: f64) -> f32 {
      %0 = llvm.call @__nv_fminf(%a, %b) : (f32, f32) -> f32
      %1 = llvm.call @__nv_sqrt(%d) : (f64) -> f64
      %2 = llvm.call @__nv_fabsf(%0) : (f32) -> f32
      %3 = llvm.call @__nv_expf(%2) : (f32) -> f32
      llvm.return %3 : f32
    }
  }
}
