// CSV (RFC 4180): comma-separated fields, a field quoted when it holds a comma, a
// quote or a line break (quotes doubled inside), lines ended by "\n". The first row
// is the header; every row has as many fields as the header.
#ifndef SIGVISOR_VMM_REPORT_CSV_H_
#define SIGVISOR_VMM_REPORT_CSV_H_

#include <string>
#include <string_view>
#include <vector>

namespace sigvisor {

class CsvWriter {
 public:
  explicit CsvWriter(std::vector<std::string> header);

  // Appends a row; a row with a different number of fields than the header is
  // padded with empty fields or cut (a programming error, but never a broken file).
  void AddRow(std::vector<std::string> fields);

  std::string str() const { return out_; }

  static std::string Quote(std::string_view field);
  // A number as CSV shows it: integers without a decimal point, others with up to
  // `digits` decimals and no trailing zeros; "" for NaN.
  static std::string Number(double value, int digits = 3);

 private:
  void Append(const std::vector<std::string>& fields);
  size_t columns_;
  std::string out_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_REPORT_CSV_H_
