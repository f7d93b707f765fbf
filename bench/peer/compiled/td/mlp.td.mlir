// MLP block (compiled/run_peer.sh): linalg.matmul in 8x32 register blocks (k step 1; the C block hoisted out of
// the k loop afterwards, vector.contract as FMA outer products), as ../shared/tools/compiled-peer/td/matmul.td.mlir;
// the element-wise linalg.generic ops (after --linalg-fuse-elementwise-ops: bias + activation, bias + residual)
// in 1x16 tiles, vectorized, as td/elementwise.td.mlir there.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%module: !transform.any_op {transform.readonly}) {
    %fill = transform.structured.match ops{["linalg.fill"]} in %module : (!transform.any_op) -> !transform.any_op
    %tf, %lf:2 = transform.structured.tile_using_for %fill tile_sizes [8, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %mm = transform.structured.match ops{["linalg.matmul"]} in %module : (!transform.any_op) -> !transform.any_op
    %t1, %l1:3 = transform.structured.tile_using_for %mm tile_sizes [8, 32, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    %g = transform.structured.match ops{["linalg.generic"]} in %module : (!transform.any_op) -> !transform.any_op
    %tg, %lg:2 = transform.structured.tile_using_for %g tile_sizes [1, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %f = transform.structured.match ops{["func.func"]} in %module : (!transform.any_op) -> !transform.any_op
    %fv = transform.structured.vectorize_children_and_apply_patterns %f : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %fv {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
    } : !transform.any_op
    transform.yield
  }
}
