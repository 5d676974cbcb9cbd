#include "vmm/report/svg_chart.h"

#include <algorithm>
#include <cmath>

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
  std::string body;
  double y = kMargin + 18;
  absl::StrAppendFormat(&body,
                        "<text x=\"%.0f\" y=\"%.0f\" font-size=\"16\" font-weight=\"bold\">%s</text>\n",
                        kMargin, y, XmlEscape(title));
  y += 14;
  for (const ChartSection& section : sections) {
    y += 26;
    absl::StrAppendFormat(&body,
                          "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" font-weight=\"bold\">%s</text>\n",
                          kMargin, y, XmlEscape(section.heading));
    if (!section.note.empty()) {
      y += 16;
      absl::StrAppendFormat(&body, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#444\">%s</text>\n", kMargin,
                            y, XmlEscape(section.note));
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
