// RUN: %kernc opt %s --passes 'gpu-module-to-binary{format=isa}' | FileCheck %s
// RUN: not %kernc opt %S/Inputs/gpu-module-to-binary-no-target.mlir --passes 'gpu-module-to-binary{format=isa}' 2>&1 | FileCheck %s --check-prefix=NOTARGET
// gpu-module-to-binary{format=isa} (passes/gpu_module_to_binary.py): each gpu.module of NVVM IR
// with its #nvvm.target becomes a gpu.binary holding the PTX text, made in process by LLVM's NVPTX
// backend with kernc's flags: --nvptx-short-ptr gives 32-bit shared-memory addresses (%r
// registers, the offset folded into the address), as nvcc does. A gpu.module without a target is
// an error at its location (NOTARGET).

// CHECK: gpu.binary @kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {
// CHECK-SAME: assembly = "
// CHECK-SAME: .version 8.0\0A.target sm_90\0A.address_size 64\0A
// CHECK-SAME: .visible .entry k(\0A\09.param .u64 .ptr .global .align 1 k_param_0\0A)
// CHECK-SAME: .shared .align 4 .b8 tile[256];
// CHECK-SAME: mov.b32 \09%r{{[0-9]+}}, tile;
// CHECK-SAME: st.shared.b32 \09[%r{{[0-9]+}}], %r{{[0-9]+}};
// CHECK-SAME: bar.sync \090;
// CHECK-SAME: ld.shared.b32 \09%r{{[0-9]+}}, [%r{{[0-9]+}}+252];
// CHECK-SAME: st.global.b32 \09[%rd{{[0-9]+}}], %r{{[0-9]+}};
// CHECK-NOT: gpu.module
// CHECK-NOT: llvm.func

// NOTARGET: kernc: error: {{.*}}gpu-module-to-binary-no-target.mlir: pass 'gpu-module-to-binary{format=isa}' failed
// NOTARGET: loc("{{.*}}gpu-module-to-binary-no-target.mlir":3:3): the module has no target attributes
module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">] {
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
