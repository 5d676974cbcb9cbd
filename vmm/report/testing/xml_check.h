// Checks that a document is well-formed XML (the subset an SVG writer produces and
// a little more): an optional <?xml ...?> declaration, comments, exactly one root
// element, properly nested and matching tags, quoted attribute values without '<',
// no attribute given twice, and only the five predefined or numeric character
// references. It collects the character data (entities decoded), so a test can look
// for the text a reader sees.
#ifndef SIGVISOR_VMM_REPORT_TESTING_XML_CHECK_H_
#define SIGVISOR_VMM_REPORT_TESTING_XML_CHECK_H_

#include <string>
#include <string_view>

namespace sigvisor::testing {

struct XmlCheck {
  bool ok = false;
  std::string error;     // where and what, when !ok
  std::string root;      // the root element's name
  std::string text;      // all character data, each run followed by '\n'
  size_t elements = 0;
};

XmlCheck CheckXml(std::string_view document);

}  // namespace sigvisor::testing

#endif  // SIGVISOR_VMM_REPORT_TESTING_XML_CHECK_H_
