#include "backend/tensor_pieces.hpp"

#include "common/errors.hpp"

namespace ragged::backend {

int64_t whole_index(const models::TensorSpec& piece, const models::TensorSpec& whole, int tp_rank, int64_t index) {
  switch (piece.tp_cut) {
    case models::TensorCut::kWhole: return index;
    case models::TensorCut::kRows: return tp_rank * piece.numel() + index;
    case models::TensorCut::kColumns: {
      const int64_t columns = piece.row_length();
      return (index / columns) * whole.row_length() + tp_rank * columns + index % columns;
    }
  }
  throw InternalError("whole_index: unknown cut of " + piece.name);
}

std::vector<float> piece_of(const models::TensorSpec& piece, const models::TensorSpec& whole, int tp_rank,
                            const std::vector<float>& values) {
  RAGGED_ASSERT(static_cast<int64_t>(values.size()) == whole.numel(), "piece_of: the whole tensor's values");
  std::vector<float> out(static_cast<size_t>(piece.numel()));
  for (int64_t i = 0; i < piece.numel(); ++i) {
    out[static_cast<size_t>(i)] = values[static_cast<size_t>(whole_index(piece, whole, tp_rank, i))];
  }
  return out;
}

}  // namespace ragged::backend
