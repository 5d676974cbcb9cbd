#include <gtest/gtest.h>

#include <cmath>
#include <string>
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

// The bold 16px texts of `svg` (the title's lines), in order.
std::vector<std::string> TitleLines(const std::string& svg) {
  std::vector<std::string> lines;
  const std::string open = "font-size=\"16\" font-weight=\"bold\">";
  for (size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at)) {
    at += open.size();
    lines.push_back(svg.substr(at, svg.find("</text>", at) - at));
  }
  return lines;
}

TEST(SvgChartTest, ALongTitleWrapsInsteadOfBeingClippedAtTheEdge) {
  // As `sigvisor bench --svg` titles an interrupted run of a large matrix: the end is
  // what says the result is incomplete.
  const std::string title =
      "sigvisor bench: 6 workloads x 10 variants x 2 trap mechanisms x 20 repetitions = 2400 runs "
      "of 100000 ops (INCOMPLETE)";
  const std::string svg = RenderBarChartSvg(title, {});
  ASSERT_TRUE(testing::CheckXml(svg).ok) << svg;
  const std::vector<std::string> lines = TitleLines(svg);
  ASSERT_FALSE(lines.empty()) << svg;
  std::string joined;
  for (const std::string& line : lines) {
    // 10 px a character is wider than bold 16px sans-serif's average: what fits at
    // that width fits on the page, 16 px margins either side of 960.
    EXPECT_LE(line.size() * 10.0, 960.0 - 2 * 16) << line;
    joined += (joined.empty() ? "" : " ") + line;
  }
  EXPECT_EQ(joined, title);  // nothing lost, INCOMPLETE included
  EXPECT_EQ(lines.back().substr(lines.back().size() - 12), "(INCOMPLETE)");
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
