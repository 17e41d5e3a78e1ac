#ifndef DISTRT_RUNTIME_PS_SPARSE_IDS_H_
#define DISTRT_RUNTIME_PS_SPARSE_IDS_H_

namespace distrt {

// What a sparse push says of its ids. kMayRepeat: the rows of repeated ids
// are summed first and the optimizer applied once per distinct id, which
// takes a hash table pass over the ids. kDistinct: the sender made them
// distinct (PsClient does, before it splits ids by ps task), so each row is
// applied as sent; should an id repeat after all, its rows are applied one
// after another, which is safe but, for optimizers with state, not the
// same as once with their sum.
enum class SparseIds { kMayRepeat, kDistinct };

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_SPARSE_IDS_H_
