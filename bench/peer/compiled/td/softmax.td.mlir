// Softmax over the last axis (compiled/run_peer.sh), rank 2 or 3: the reductions (max, sum: linalg.generic with a
// reduction as the last iterator) as td/reduce.td.mlir of ../shared/tools/compiled-peer (rows in tiles of 8 or
// 4 x 1 heads, the reduction split into 64-wide partial accumulators, combined once per row: reassociated); the
// element-wise generics (subtract + exponential, divide) in 1x16 tiles, vectorized.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%module: !transform.any_op {transform.readonly}) {
    %r2 = transform.structured.match ops{["linalg.generic"]}
        attributes {iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<reduction>]} in %module
        : (!transform.any_op) -> !transform.any_op
    %t2, %lo2 = transform.structured.tile_using_for %r2 tile_sizes [8, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %f2, %s2, %c2, %l2 = transform.structured.tile_reduction_using_for %t2 by tile_sizes = [0, 64] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    %r3 = transform.structured.match ops{["linalg.generic"]}
        attributes {iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<reduction>]} in %module
        : (!transform.any_op) -> !transform.any_op
    %t3, %lo3:2 = transform.structured.tile_using_for %r3 tile_sizes [1, 4, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %f3, %s3, %c3, %l3 = transform.structured.tile_reduction_using_for %t3 by tile_sizes = [0, 0, 64] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    %e2 = transform.structured.match ops{["linalg.generic"]}
        attributes {iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>]} in %module
        : (!transform.any_op) -> !transform.any_op
    %te2, %le2:2 = transform.structured.tile_using_for %e2 tile_sizes [1, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %e3 = transform.structured.match ops{["linalg.generic"]}
        attributes {iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>]} in %module
        : (!transform.any_op) -> !transform.any_op
    %te3, %le3:3 = transform.structured.tile_using_for %e3 tile_sizes [1, 1, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    %f = transform.structured.match ops{["func.func"]} in %module : (!transform.any_op) -> !transform.any_op
    %fv = transform.structured.vectorize_children_and_apply_patterns %f : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %fv {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
    } : !transform.any_op
    transform.yield
  }
}
