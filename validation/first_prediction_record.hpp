#pragma once
// Records the first predictions of newly added validation rows (issue 48,
// out-of-sample tracking): `ragged validate --record-first-predictions COMMIT`
// writes `first_prediction { tokens_per_s_per_gpu oom commit date }` (and the
// compared peak memory where the row publishes one) into runs.textproto for
// every simulated row that has none, as the last field of its `runs { }`
// block. Rows that have one keep it: a first prediction is never rewritten.
// The file is edited as text, so its comments and layout stay, and it is
// written through a temporary file renamed into place.

#include <string>
#include <string_view>
#include <vector>

#include "validation/validation_set.hpp"
#include "validation/validation_summary.hpp"

namespace ragged::validation {

// Who made the predictions: the commit of the build (7 to 40 hex digits) and
// the day, YYYY-MM-DD.
struct PredictionStamp {
  std::string commit;
  std::string date;
};

// Throws InputError naming `option` unless `commit` is 7 to 40 hex digits.
void check_commit(const std::string& commit, const std::string& option);
// Today's UTC date, YYYY-MM-DD.
std::string today_utc();

// What was recorded for one row.
struct RecordedPrediction {
  std::string id;
  std::string field;  // the field inserted (without the indentation around it)
};

// `manifest` (runs.textproto's text) with a first_prediction inserted into
// every run of `rows` that was simulated and has none; `recorded` lists them
// in file order. Throws InputError when a row's block cannot be found (the
// text is not the one the rows were read from).
std::string with_first_predictions(std::string_view manifest, const std::vector<RowResult>& rows,
                                   const PredictionStamp& stamp, std::vector<RecordedPrediction>* recorded);

// Edits <set.directory>/runs.textproto as above, checks that the result reads
// back as a validation set holding the new fields, and replaces the file.
std::vector<RecordedPrediction> record_first_predictions(const ValidationSet& set, const std::vector<RowResult>& rows,
                                                         const PredictionStamp& stamp);

}  // namespace ragged::validation
