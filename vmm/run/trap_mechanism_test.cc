#include "vmm/run/trap_mechanism.h"

#include <gtest/gtest.h>

namespace sigvisor {
namespace {

// The names are --trap's values and the documents' (docs/schema): they must not drift.
TEST(TrapMechanismTest, NamesAreTheFlagsAndTheDocuments) {
  EXPECT_EQ(TrapMechanismName(TrapMechanism::kOff), "off");
  EXPECT_EQ(TrapMechanismName(TrapMechanism::kPatch), "patch");
  EXPECT_EQ(TrapMechanismName(TrapMechanism::kHwGd), "hw-gd");
  EXPECT_EQ(TrapMechanismName(TrapMechanism::kPv), "pv");
}

TEST(TrapMechanismTest, EveryNameParsesBackToItsMechanism) {
  for (TrapMechanism mechanism : {TrapMechanism::kOff, TrapMechanism::kPatch,
                                  TrapMechanism::kHwGd, TrapMechanism::kPv}) {
    EXPECT_EQ(ParseTrapMechanism(TrapMechanismName(mechanism)), mechanism);
  }
}

// auto is the CLI's choice, not a mechanism; case and spelling count.
TEST(TrapMechanismTest, OtherNamesAreNone) {
  for (std::string_view name : {"auto", "", "Patch", "hw_gd", "hwgd", "pv ", "none"}) {
    EXPECT_EQ(ParseTrapMechanism(name), std::nullopt) << name;
  }
}

}  // namespace
}  // namespace sigvisor
