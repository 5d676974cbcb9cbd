#include "vmm/report/csv.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace sigvisor {

CsvWriter::CsvWriter(std::vector<std::string> header) : columns_(header.size()) {
  Append(header);
}

void CsvWriter::AddRow(std::vector<std::string> fields) {
  fields.resize(columns_);
  Append(fields);
}

void CsvWriter::Append(const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out_ += ',';
    out_ += Quote(fields[i]);
  }
  out_ += '\n';
}

std::string CsvWriter::Quote(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string CsvWriter::Number(double value, int digits) {
  if (std::isnan(value)) return "";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrFormat("%.0f", value);
  }
  std::string text = absl::StrFormat("%.*f", digits, value);
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace sigvisor
