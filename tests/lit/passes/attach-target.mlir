// RUN: %kernc opt %s --passes 'kern-attach-target' | FileCheck %s
// RUN: %kernc opt %s --passes 'kern-attach-target{chip=sm_80 opt-level=1 libdevice=/opt/nvvm/libdevice.10.bc}' | FileCheck %s --check-prefix=OPTS
// RUN: %kernc opt %s --passes 'kern-attach-target{chip=sm_100a}' | FileCheck %s --check-prefix=SM100
// RUN: %kernc opt %S/Inputs/attach-target-libdevice.mlir --passes 'kern-attach-target{libdevice=/opt/nvvm/libdevice.10.bc}' | FileCheck %s --check-prefix=LINK
// RUN: not %kernc opt %S/Inputs/attach-target-libdevice.mlir --passes 'kern-attach-target' 2>&1 | FileCheck %s --check-prefix=NOLIB
// kern-attach-target: upstream nvvm-attach-target with the chip, the PTX ISA version of the chip
// (passes/targets.py) and the O level; libdevice (the libdevice option) is linked only when the
// module still declares an __nv_* function. This module calls none (llvm.intr.exp is NVPTX's own),
// so it is never linked, even with libdevice given (OPTS). Inputs/attach-target-libdevice.mlir
// calls __nv_expf: linked when libdevice is given (LINK), else an error naming the function and
// how to install libdevice (NOLIB).

// CHECK: gpu.module @kernels [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">] {
// CHECK-NEXT: llvm.func @k(
// OPTS: gpu.module @kernels [#nvvm.target<O = 1, chip = "sm_80", features = "+ptx80">] {
// OPTS-NOT: link
// SM100: gpu.module @kernels [#nvvm.target<O = 3, chip = "sm_100a", features = "+ptx86">] {

// LINK: gpu.module @math [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80", link = ["/opt/nvvm/libdevice.10.bc"]>] {
// LINK-NEXT: llvm.func @__nv_expf(f32) -> f32

// NOLIB: internal compiler error: this kernel calls libdevice math functions (__nv_expf), which need libdevice.10.bc: pip install nvidia-nvvm (or set KERNC_LIBDEVICE)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @k(%p: !llvm.ptr<1>, %x: f32) attributes {gpu.kernel, nvvm.kernel} {
      %0 = llvm.intr.exp(%x) : (f32) -> f32
      llvm.store %0, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
