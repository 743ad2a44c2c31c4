#include "scenarios/scenario_loader.hpp"

namespace ragged::scenarios {

namespace shipped {
const std::vector<EmbeddedFile>& embedded_files();  // generated from the .textproto files here
}

const std::vector<EmbeddedFile>& shipped_scenarios() { return shipped::embedded_files(); }

}  // namespace ragged::scenarios
