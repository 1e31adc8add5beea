// Hand-written kern IR for tests/lit/passes/map-groups.kern: a kern.group_reduce under an
// scf.if (some items of a group would not reach it), which kern-map-groups refuses.
module {
  func.func @k(%arg0: memref<?xf32>, %arg1: memref<?xf32>, %arg2: index, %arg3: index) attributes {kern.signature = "{\22attributes\22:[],\22block\22:256,\22extra\22:[],\22in_place\22:[[\22x\22,\22y\22]],\22index_bound\22:[[\22c\22,0,1,1],[\22z\22,64,\22N\22],[\22mul\22,64,1,0],[\22mul\22,64,0,1],[\22c\22,0,0,0],[\22add\22,64,4,3],[\22z\22,64,\22R\22],[\22mul\22,64,6,5],[\22add\22,64,4,7],[\22add\22,64,8,2],[\22L\22,64],[\22max\22,64,6,1,10,9]],\22name\22:\22k\22,\22params\22:[{\22access\22:\22view\22,\22accessor\22:\22view\22,\22components\22:1,\22compute\22:null,\22dims\22:[\22R\22,\22N\22],\22dtype\22:\22f32\22,\22index_param\22:null,\22kind\22:\22buffer\22,\22layout\22:\22(R,N):(N,1)\22,\22min_elements\22:null,\22name\22:\22x\22,\22scratch_size\22:null,\22storage_shape\22:[\22R\22,\22N\22],\22table_field\22:null,\22table_of\22:null,\22zero_init\22:false},{\22access\22:\22view\22,\22accessor\22:\22view\22,\22components\22:1,\22compute\22:null,\22dims\22:[\22R\22,\22N\22],\22dtype\22:\22f32\22,\22index_param\22:null,\22kind\22:\22buffer\22,\22layout\22:\22(R,N):(N,1)\22,\22min_elements\22:null,\22name\22:\22y\22,\22scratch_size\22:null,\22storage_shape\22:[\22R\22,\22N\22],\22table_field\22:null,\22table_of\22:null,\22zero_init\22:false}],\22problem_size\22:\22N*R\22,\22reads\22:[\22x\22],\22sizes\22:[\22R\22,\22N\22],\22writes\22:[\22y\22]}"} {
    %0 = "kern.thread_id"() : () -> index
    %1:2 = "kern.delinearize"(%0, %arg2, %arg3) {coord_names = ["r", "j"], operandSegmentSizes = array<i32: 1, 2>, resultSegmentSizes = array<i32: 2>} : (index, index, index) -> (index, index)
    %2 = "kern.view_load"(%arg0, %1#0, %1#1, %arg2, %arg3) {layout = "(R,N):(N,1)", operandSegmentSizes = array<i32: 1, 2, 2, 0>, syms = ["R", "N"]} : (memref<?xf32>, index, index, index, index) -> f32
    %c = arith.constant 0.0 : f32
    %p = arith.cmpf ogt, %2, %c : f32
    %3 = scf.if %p -> (f32) {
      %s = "kern.group_reduce"(%2) {axes = [1], kind = "addf"} : (f32) -> f32
      scf.yield %s : f32
    } else {
      scf.yield %2 : f32
    }
    "kern.view_store"(%arg1, %1#0, %1#1, %arg2, %arg3, %3) {layout = "(R,N):(N,1)", operandSegmentSizes = array<i32: 1, 2, 2, 0, 1>, syms = ["R", "N"]} : (memref<?xf32>, index, index, index, index, f32) -> ()
    return
  }
}
