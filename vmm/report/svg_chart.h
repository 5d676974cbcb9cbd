// A horizontal bar chart as a standalone SVG document: sections (one per study or
// workload), each with panels (one per measured quantity), each with one bar per
// variant: the value (a median), a min-max whisker and a text annotation (e.g. the
// ratio to the first bar). Each panel has its own linear scale from zero, with
// ticks. Text is XML-escaped; the document is well-formed XML.
#ifndef SIGVISOR_VMM_REPORT_SVG_CHART_H_
#define SIGVISOR_VMM_REPORT_SVG_CHART_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sigvisor {

struct ChartBar {
  std::string label;       // left of the bar (a variant's name)
  double value = 0;        // the bar's length
  double low = 0;          // the whisker (min .. max); equal to value for none
  double high = 0;
  std::string annotation;  // right of the plot ("703.6 us, 832 kernel insns")
  std::string on_bar;      // written on the bar, at its end ("0.87x"); may be empty
};

struct ChartPanel {
  std::string title;  // "divzero, trap off"
  std::string axis;   // the unit under the axis: "us per op (median; whiskers min-max)"
  std::vector<ChartBar> bars;
};

struct ChartSection {
  std::string heading;  // "study dr7 (seed 000)"
  std::string note;     // one line under the heading (may be empty)
  std::vector<ChartPanel> panels;
};

std::string RenderBarChartSvg(std::string_view title, std::span<const ChartSection> sections);

// &, <, >, " and ' as entities; other control characters dropped.
std::string XmlEscape(std::string_view text);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_REPORT_SVG_CHART_H_
