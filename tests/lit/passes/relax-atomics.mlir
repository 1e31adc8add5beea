// RUN: %kernc opt %s --passes 'kern-relax-atomics' | FileCheck %s
// kern-relax-atomics: every llvm.atomicrmw inside a gpu.module becomes monotonic with
// syncscope("device") (atom.relaxed.gpu, CUDA's atomicAdd), whatever ordering and scope it had, one
// on workgroup memory (!llvm.ptr<3>) syncscope("block") (atom.relaxed.cta.shared);
// other atomics (llvm.cmpxchg) and atomics outside a gpu.module are left alone.

// CHECK-LABEL: llvm.func @acc
// CHECK-NEXT: llvm.atomicrmw fadd %arg0, %arg2 syncscope("device") monotonic : !llvm.ptr<1>, f32
// CHECK-NEXT: llvm.atomicrmw add %arg1, %arg3 syncscope("block") monotonic : !llvm.ptr<3>, i32
// CHECK-NEXT: llvm.atomicrmw max %arg0, %arg3 syncscope("device") monotonic : !llvm.ptr<1>, i32
// CHECK-NEXT: llvm.cmpxchg %arg1, %arg3, %arg3 acq_rel monotonic : !llvm.ptr<3>, i32
// CHECK-NEXT: llvm.return

// CHECK-LABEL: llvm.func @host
// CHECK-NEXT: llvm.atomicrmw fadd %arg0, %arg1 acq_rel : !llvm.ptr, f32
// CHECK-NEXT: llvm.return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @acc(%p: !llvm.ptr<1>, %q: !llvm.ptr<3>, %v: f32, %i: i32) attributes {gpu.kernel, nvvm.kernel} {
      %0 = llvm.atomicrmw fadd %p, %v acq_rel : !llvm.ptr<1>, f32
      %1 = llvm.atomicrmw add %q, %i seq_cst : !llvm.ptr<3>, i32
      %2 = llvm.atomicrmw max %p, %i syncscope("block") acquire : !llvm.ptr<1>, i32
      %3 = llvm.cmpxchg %q, %i, %i acq_rel monotonic : !llvm.ptr<3>, i32
      llvm.return
    }
  }
  llvm.func @host(%p: !llvm.ptr, %v: f32) {
    %0 = llvm.atomicrmw fadd %p, %v acq_rel : !llvm.ptr, f32
    llvm.return
  }
}
