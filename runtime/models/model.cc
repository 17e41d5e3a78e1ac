#include "runtime/models/model.h"

namespace distrt {

int64_t ModelVariable::row_width() const {
  return kind == Kind::kHashEmbedding ? hash_spec.dim : RowWidth(spec);
}

}  // namespace distrt
