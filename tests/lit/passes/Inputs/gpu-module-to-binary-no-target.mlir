// The input of gpu-module-to-binary.mlir without a #nvvm.target: no PTX can be made for it.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.mlir.global internal @tile() {addr_space = 3 : i32} : !llvm.array<64 x f32>
    llvm.func @k(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %q = llvm.getelementptr %p[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %v = llvm.load %q : !llvm.ptr<1> -> f32
      %s = llvm.mlir.addressof @tile : !llvm.ptr<3>
      %e = llvm.getelementptr %s[0, %t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<64 x f32>
      llvm.store %v, %e : f32, !llvm.ptr<3>
      nvvm.barrier
      %c = llvm.mlir.constant(63 : i32) : i32
      %u = llvm.sub %c, %t : i32
      %f = llvm.getelementptr %s[0, %u] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<64 x f32>
      %w = llvm.load %f : !llvm.ptr<3> -> f32
      llvm.store %w, %q : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
