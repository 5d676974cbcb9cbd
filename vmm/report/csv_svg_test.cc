#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vmm/report/csv.h"
#include "vmm/report/svg_chart.h"
#include "vmm/report/testing/xml_check.h"

namespace sigvisor {
namespace {

TEST(CsvTest, QuotesOnlyWhatNeedsIt) {
  CsvWriter csv({"variant", "value"});
  csv.AddRow({"accelerated,dr7=always", "1.5"});
  csv.AddRow({"say \"hi\"", "2"});
  csv.AddRow({"plain"});  // padded
  EXPECT_EQ(csv.str(),
            "variant,value\n\"accelerated,dr7=always\",1.5\n\"say \"\"hi\"\"\",2\nplain,\n");
}

TEST(CsvTest, Numbers) {
  EXPECT_EQ(CsvWriter::Number(832.0), "832");
  EXPECT_EQ(CsvWriter::Number(0.25), "0.25");
  EXPECT_EQ(CsvWriter::Number(1.0 / 3.0), "0.333");
  EXPECT_EQ(CsvWriter::Number(std::nan("")), "");
}

TEST(SvgChartTest, IsWellFormedAndNamesEveryBar) {
  std::vector<ChartSection> sections(1);
  sections[0].heading = "study dr7 <seed 000> & more";
  sections[0].note = "it's \"quoted\"";
  ChartPanel panel;
  panel.title = "divzero, trap off";
  panel.axis = "us per op";
  panel.bars.push_back({"baseline", 700, 690, 720, "700.0 us, 1.00x"});
  panel.bars.push_back({"accelerated,dr7=always", 560, 550, 580, "560.0 us", "0.80x"});
  panel.bars.push_back({"empty", 0, 0, 0, "no data"});
  sections[0].panels.push_back(panel);
  const std::string svg = RenderBarChartSvg("sigvisor bench", sections);
  testing::XmlCheck check = testing::CheckXml(svg);
  ASSERT_TRUE(check.ok) << check.error << "\n" << svg;
  EXPECT_EQ(check.root, "svg");
  for (const char* text : {"baseline", "accelerated,dr7=always", "0.80x",
                           "study dr7 <seed 000> & more", "it's \"quoted\""}) {
    EXPECT_NE(check.text.find(text), std::string::npos) << text;
  }
}

TEST(XmlCheckTest, RejectsBrokenDocuments) {
  EXPECT_TRUE(testing::CheckXml("<a x=\"1\"><b/>t &amp; u</a>").ok);
  EXPECT_FALSE(testing::CheckXml("<a><b></a></b>").ok);
  EXPECT_FALSE(testing::CheckXml("<a x=1/>").ok);
  EXPECT_FALSE(testing::CheckXml("<a>&nbsp;</a>").ok);
  EXPECT_FALSE(testing::CheckXml("<a/><b/>").ok);
  EXPECT_FALSE(testing::CheckXml("<a x=\"1\" x=\"2\"/>").ok);
  EXPECT_FALSE(testing::CheckXml("<a>").ok);
}

}  // namespace
}  // namespace sigvisor
