#include "vmm/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

constexpr double kWidth = 960;
constexpr double kMargin = 16;
constexpr double kLabelWidth = 230;  // variant names
constexpr double kPlotLeft = kMargin + kLabelWidth;
constexpr double kPlotWidth = 400;
constexpr double kAnnotationLeft = kPlotLeft + kPlotWidth + 12;
constexpr double kBarHeight = 18;
constexpr double kBarGap = 8;
constexpr const char* kReferenceFill = "#7f9fc6";
constexpr const char* kOtherFill = "#e8a25b";
constexpr double kCharWidthEm = 0.65;
constexpr double kTitlePx = 16, kHeadingPx = 14, kNotePx = 12;

// A round step for about four ticks over [0, max].
double TickStep(double max) {
  if (!(max > 0)) return 1;
  const double rough = max / 4;
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  for (double factor : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (factor * magnitude >= rough) return factor * magnitude;
  }
  return 10 * magnitude;
}

std::string TickLabel(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e12) return absl::StrFormat("%.0f", value);
  return absl::StrFormat("%g", value);
}

bool Finite(double v) { return std::isfinite(v); }

// `text` in lines that fit `width` pixels at `font_px`, broken between words (a word
// longer than a line gets a line of its own). The width of a character is estimated
// generously (bold sans-serif averages about 0.6 em; 0.65 here), because SVG text that does not
// fit is clipped at the document's edge: the end of a bench chart's title, where it
// says INCOMPLETE, is the part that must not go.
std::vector<std::string> WrapToWidth(std::string_view text, double font_px, double width) {
  const size_t max_chars =
      std::max<size_t>(1, static_cast<size_t>(width / (kCharWidthEm * font_px)));
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > max_chars) {
      lines.push_back(std::move(line));
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    start = end + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(std::move(line));
  return lines;
}

}  // namespace

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') break;
        out += c;
    }
  }
  return out;
}

std::string RenderBarChartSvg(std::string_view title, std::span<const ChartSection> sections) {
  std::string body = absl::StrFormat("<title>%s</title>\n", XmlEscape(title));
  const double text_width = kWidth - 2 * kMargin;
  double y = kMargin;
  for (const std::string& line : WrapToWidth(title, kTitlePx, text_width)) {
    y += kTitlePx + 4;
    absl::StrAppendFormat(&body,
                          "<text x=\"%.0f\" y=\"%.0f\" font-size=\"%.0f\" font-weight=\"bold\">%s</text>\n",
                          kMargin, y, kTitlePx, XmlEscape(line));
  }
  y += 12;
  for (const ChartSection& section : sections) {
    y += 6;
    for (const std::string& line : WrapToWidth(section.heading, kHeadingPx, text_width)) {
      y += kHeadingPx + 6;
      absl::StrAppendFormat(&body,
                            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"%.0f\" font-weight=\"bold\">%s</text>\n",
                            kMargin, y, kHeadingPx, XmlEscape(line));
    }
    if (!section.note.empty()) {
      for (const std::string& line : WrapToWidth(section.note, kNotePx, text_width)) {
        y += kNotePx + 4;
        absl::StrAppendFormat(&body, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#444\">%s</text>\n",
                              kMargin, y, XmlEscape(line));
      }
    }
    for (const ChartPanel& panel : section.panels) {
      y += 24;
      absl::StrAppendFormat(&body, "<g>\n<text x=\"%.0f\" y=\"%.0f\" font-weight=\"bold\">%s</text>\n",
                            kMargin, y, XmlEscape(panel.title));
      y += 8;
      double max = 0;
      for (const ChartBar& bar : panel.bars) {
        for (double v : {bar.value, bar.high}) {
          if (Finite(v)) max = std::max(max, v);
        }
      }
      const double step = TickStep(max);
      const double scale_max = std::max(step, std::ceil(max / step) * step);
      auto x_of = [&](double v) {
        if (!Finite(v) || v < 0) v = 0;
        return kPlotLeft + kPlotWidth * std::min(v, scale_max) / scale_max;
      };
      const double plot_top = y;
      for (size_t i = 0; i < panel.bars.size(); ++i) {
        const ChartBar& bar = panel.bars[i];
        const double top = y + kBarGap / 2;
        const double mid = top + kBarHeight / 2;
        absl::StrAppendFormat(&body,
                              "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" "
                              "dominant-baseline=\"middle\">%s</text>\n",
                              kPlotLeft - 8, mid, XmlEscape(bar.label));
        absl::StrAppendFormat(&body,
                              "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                              "fill=\"%s\"><title>%s</title></rect>\n",
                              kPlotLeft, top, x_of(bar.value) - kPlotLeft, kBarHeight,
                              i == 0 ? kReferenceFill : kOtherFill,
                              XmlEscape(bar.label + ": " + bar.annotation));
        if (!bar.on_bar.empty()) {
          // At the bar's start, where no whisker reaches, when it fits in the bar up to
          // the whisker's low end; else after the bar and its whisker.
          const double text_width = 7.5 * static_cast<double>(bar.on_bar.size()) + 10;
          const double room = std::min(x_of(bar.value), Finite(bar.low) ? x_of(bar.low) : 1e9) - kPlotLeft;
          const bool inside = room > text_width;
          const double after = std::max(x_of(bar.value), Finite(bar.high) ? x_of(bar.high) : 0.0) + 6;
          absl::StrAppendFormat(&body,
                                "<text x=\"%.1f\" y=\"%.1f\" dominant-baseline=\"middle\" "
                                "font-weight=\"bold\" fill=\"%s\">%s</text>\n",
                                inside ? kPlotLeft + 5 : after, mid, inside ? "white" : "#222",
                                XmlEscape(bar.on_bar));
        }
        if (Finite(bar.low) && Finite(bar.high) && bar.high > bar.low) {
          const double x1 = x_of(bar.low), x2 = x_of(bar.high);
          absl::StrAppendFormat(&body,
                                "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fV%.1f\" "
                                "stroke=\"#222\" stroke-width=\"1.5\" fill=\"none\"/>\n",
                                x1, mid - 5, mid + 5, x1, mid, x2, x2, mid - 5, mid + 5);
        }
        absl::StrAppendFormat(&body,
                              "<text x=\"%.0f\" y=\"%.1f\" dominant-baseline=\"middle\">%s</text>\n",
                              kAnnotationLeft, mid, XmlEscape(bar.annotation));
        y += kBarHeight + kBarGap;
      }
      // The axis, its ticks and the unit.
      absl::StrAppendFormat(&body,
                            "<path d=\"M%.1f %.1fV%.1fH%.1f\" stroke=\"#888\" fill=\"none\"/>\n",
                            kPlotLeft, plot_top, y, kPlotLeft + kPlotWidth);
      for (double tick = 0; tick <= scale_max * (1 + 1e-9); tick += step) {
        const double x = x_of(tick);
        absl::StrAppendFormat(&body,
                              "<path d=\"M%.1f %.1fV%.1f\" stroke=\"#888\"/>\n"
                              "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                              "font-size=\"10\" fill=\"#444\">%s</text>\n",
                              x, y, y + 4, x, y + 14, TickLabel(tick));
      }
      y += 28;
      absl::StrAppendFormat(&body,
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\" "
                            "fill=\"#444\">%s</text>\n</g>\n",
                            kPlotLeft + kPlotWidth / 2, y, XmlEscape(panel.axis));
    }
  }
  const double height = y + kMargin + 8;
  std::string out = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, height, kWidth, height);
  out += body;
  out += "</svg>\n";
  return out;
}

}  // namespace sigvisor
