// The input of attach-target.mlir that still calls libdevice (__nv_expf).
module attributes {gpu.container_module} {
  gpu.module @math {
    llvm.func @__nv_expf(f32) -> f32
    llvm.func @e(%p: !llvm.ptr<1>, %x: f32) attributes {gpu.kernel, nvvm.kernel} {
      %0 = llvm.call @__nv_expf(%x) : (f32) -> f32
      llvm.store %0, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
