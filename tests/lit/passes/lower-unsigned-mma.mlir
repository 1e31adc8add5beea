// RUN: %kernc opt %s --passes 'kern-lower-unsigned-mma' | FileCheck %s --check-prefix=GPU
// RUN: %kernc opt %s --passes 'kern-lower-unsigned-mma,gpu.module(convert-gpu-to-nvvm{index-bitwidth=32},convert-nvgpu-to-nvvm,reconcile-unrealized-casts)' | FileCheck %s
// kern-lower-unsigned-mma: an nvgpu.mma.sync marked kern.ptx_type = "u8" (kern-mma-contractions'
// u8 contractions) becomes nvvm.mma.sync with .u8 multiplicands, its fragments packed one row per
// 32-bit register and c0 c1 / c2 c3 in and out; an unmarked one (i8) stays for convert-nvgpu-to-nvvm,
// which writes .s8.

// GPU-LABEL: gpu.func @k
// GPU-NOT: kern.ptx_type
// GPU: %[[R0:.*]] = vector.extract %[[A:.*]][0] : vector<4xi8> from vector<4x4xi8>
// GPU: vector.bitcast %[[R0]] : vector<4xi8> to vector<1xi32>
// GPU: %[[D:.*]] = nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {intOverflowBehavior = #nvvm.mma_int_overflow<satfinite>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<u8>, multiplicandBPtxType = #nvvm.mma_type<u8>, shape = #nvvm.shape<m = 16, n = 8, k = 32>} : (i32, i32, i32) -> !llvm.struct<(i32, i32, i32, i32)>
// GPU: %[[D3:.*]] = llvm.extractvalue %[[D]][3] : !llvm.struct<(i32, i32, i32, i32)>
// GPU: vector.insert %[[D3]], %{{.*}} [1, 1] : i32 into vector<2x2xi32>
// GPU: nvgpu.mma.sync(%{{.*}}) {mmaShape = [16, 8, 32]}

// CHECK-LABEL: llvm.func @k
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<u8>, multiplicandBPtxType = #nvvm.mma_type<u8>
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<s8>, multiplicandBPtxType = #nvvm.mma_type<s8>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: vector<4x4xi8>, %b: vector<2x4xi8>, %c: vector<2x2xi32>, %y: memref<2xvector<2x2xi32>>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %u = nvgpu.mma.sync(%a, %b, %c) {kern.ptx_type = "u8", mmaShape = [16, 8, 32]} : (vector<4x4xi8>, vector<2x4xi8>, vector<2x2xi32>) -> vector<2x2xi32>
      memref.store %u, %y[%c0] : memref<2xvector<2x2xi32>>
      %s = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 32]} : (vector<4x4xi8>, vector<2x4xi8>, vector<2x2xi32>) -> vector<2x2xi32>
      memref.store %s, %y[%c1] : memref<2xvector<2x2xi32>>
      gpu.return
    }
  }
}
