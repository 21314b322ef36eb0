// Every property of all_properties() as one GoogleTest, with deterministic parameters
// (default_params: KVSIM_PROP_CASES, KVSIM_PROP_SEED and RC_PARAMS adjust them).
#include <gtest/gtest.h>

#include <iostream>

#include "properties/harness.h"

namespace kv::props {
namespace {

class Property : public ::testing::TestWithParam<std::size_t> {};

TEST_P(Property, Holds) {
  const PropertyDef& def = all_properties()[GetParam()];
  const PropertyParams params = default_params(def.name, def.base_cases);
  const PropertyResult r = check_property(def.name, def.property, params);
  std::cout << def.name << ": " << r.cases_run << " cases (seed " << params.seed << ")\n";
  EXPECT_TRUE(r.passed) << "property " << def.name << " fails (seed " << params.seed << "):\n" << r.report;
}

std::string test_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string name = all_properties()[info.param].name;
  for (char& c : name) {
    if (c == '/' || c == '-') c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(All, Property, ::testing::Range<std::size_t>(0, all_properties().size()), test_name);

}  // namespace
}  // namespace kv::props
