// Every numeric field of scenario.proto has a documented range, and a value
// outside it is refused at the field's line with the range in the message.

#include <set>
#include <string>

#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include "scenario_test_util.hpp"
#include "scenarios/field_ranges.hpp"

namespace ragged::scenarios {
namespace {

namespace pb = google::protobuf;
using testing::minimal_scenario;
using testing::parse_error;

void collect_numeric_fields(const pb::Descriptor* type, std::set<std::string>& seen, std::set<std::string>& missing) {
  if (!seen.insert(type->full_name()).second) return;
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* field = type->field(i);
    using Cpp = pb::FieldDescriptor::CppType;
    switch (field->cpp_type()) {
      case Cpp::CPPTYPE_MESSAGE: collect_numeric_fields(field->message_type(), seen, missing); break;
      case Cpp::CPPTYPE_INT32:
      case Cpp::CPPTYPE_INT64:
      case Cpp::CPPTYPE_DOUBLE:
      case Cpp::CPPTYPE_FLOAT:
        if (!field_range(type->name(), field->name())) missing.insert(type->name() + "." + field->name());
        break;
      default: break;
    }
  }
}

TEST(FieldRanges, EveryNumericFieldHasARange) {
  std::set<std::string> seen, missing;
  collect_numeric_fields(Scenario::descriptor(), seen, missing);
  EXPECT_TRUE(missing.empty()) << "fields without a range in scenarios/field_ranges.cpp: " << *missing.begin();
}

TEST(FieldRanges, EveryRangeNamesARealField) {
  for (const FieldRange& range : field_ranges()) {
    const std::string key(range.field);
    const size_t dot = key.find('.');
    const pb::Descriptor* type = pb::DescriptorPool::generated_pool()->FindMessageTypeByName("ragged.scenarios." + key.substr(0, dot));
    ASSERT_NE(type, nullptr) << key;
    EXPECT_NE(type->FindFieldByName(key.substr(dot + 1)), nullptr) << key;
    EXPECT_LE(range.min, range.max) << key;
    EXPECT_FALSE(range.why.empty()) << key;
  }
}

TEST(FieldRanges, OutOfRangeValueIsRefusedAtItsLine) {
  std::string text = minimal_scenario();
  text.replace(text.find("  strategy: FSDP2\n"), 18, "  strategy: FSDP2\n  optimizer { muon { momentum: 1.5 } }\n");
  EXPECT_EQ(parse_error(text), "test.textproto:9:22: training.optimizer.muon.momentum: momentum is 1.5; it must be a "
                               "number from 0 up to (not including) 1 (a moving-average decay)");
}

TEST(FieldRanges, UnknownEnumNumberIsRefused) {
  std::string text = minimal_scenario();
  text.replace(text.find("strategy: FSDP2"), 15, "strategy: 42");
  EXPECT_EQ(parse_error(text), "test.textproto:8:3: training.strategy: strategy is 42; use RAGGED, VESCALE_PAPER, FSDP1, "
                               "FSDP2, ZERO3, MEGATRON, DDP or MEGATRON_DDP");
}

TEST(FieldRanges, DefaultsDerivedFromABadClusterAddNoProblems) {
  std::string text = minimal_scenario();
  text.replace(text.find("nodes: 2"), 8, "nodes: 0");
  const std::string error = parse_error(text);
  EXPECT_NE(error.find("cluster.nodes: nodes is 0"), std::string::npos) << error;
  EXPECT_EQ(error.find("more problem"), std::string::npos) << error;
}

}  // namespace
}  // namespace ragged::scenarios
