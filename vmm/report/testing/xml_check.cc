#include "vmm/report/testing/xml_check.h"

#include <cctype>
#include <set>
#include <vector>

namespace sigvisor::testing {
namespace {

bool NameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool NameChar(char c) {
  return NameStart(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
}

class Parser {
 public:
  explicit Parser(std::string_view doc) : doc_(doc) {}

  XmlCheck Run() {
    XmlCheck result;
    if (Starts("<?xml")) {
      size_t end = doc_.find("?>");
      if (end == std::string_view::npos) return Fail("unterminated XML declaration");
      pos_ = end + 2;
    }
    std::vector<std::string> open;
    bool root_done = false;
    while (pos_ < doc_.size()) {
      if (Starts("<!--")) {
        size_t end = doc_.find("-->", pos_ + 4);
        if (end == std::string_view::npos) return Fail("unterminated comment");
        pos_ = end + 3;
      } else if (Starts("</")) {
        pos_ += 2;
        std::string name = Name();
        if (name.empty()) return Fail("end tag without a name");
        SkipSpace();
        if (!Eat('>')) return Fail("end tag </" + name + " not closed");
        if (open.empty() || open.back() != name) return Fail("</" + name + "> does not match");
        open.pop_back();
        if (open.empty()) root_done = true;
      } else if (Starts("<")) {
        ++pos_;
        std::string name = Name();
        if (name.empty()) return Fail("tag without a name");
        if (open.empty() && root_done) return Fail("a second root element <" + name + ">");
        if (open.empty()) result_.root = name;
        ++result_.elements;
        std::set<std::string> attributes;
        for (;;) {
          const bool space = SkipSpace();
          if (Eat('>')) {
            open.push_back(name);
            break;
          }
          if (Starts("/>")) {
            pos_ += 2;
            if (open.empty()) root_done = true;
            break;
          }
          if (!space) return Fail("attributes of <" + name + "> need white space before them");
          std::string attribute = Name();
          if (attribute.empty()) return Fail("bad attribute in <" + name + ">");
          if (!attributes.insert(attribute).second) return Fail("attribute " + attribute + " twice");
          SkipSpace();
          if (!Eat('=')) return Fail("attribute " + attribute + " without '='");
          SkipSpace();
          if (pos_ >= doc_.size() || (doc_[pos_] != '"' && doc_[pos_] != '\'')) {
            return Fail("attribute " + attribute + " value not quoted");
          }
          const char quote = doc_[pos_++];
          std::string ignored;
          while (pos_ < doc_.size() && doc_[pos_] != quote) {
            if (doc_[pos_] == '<') return Fail("'<' in attribute " + attribute);
            if (doc_[pos_] == '&') {
              if (!Reference(ignored)) return Fail("bad reference in attribute " + attribute);
            } else {
              ++pos_;
            }
          }
          if (!Eat(quote)) return Fail("unterminated attribute " + attribute);
        }
      } else {
        std::string text;
        while (pos_ < doc_.size() && doc_[pos_] != '<') {
          if (doc_[pos_] == '&') {
            if (!Reference(text)) return Fail("bad character reference");
          } else {
            text += doc_[pos_++];
          }
        }
        bool blank = true;
        for (char c : text) blank = blank && std::isspace(static_cast<unsigned char>(c));
        if (!blank && open.empty()) return Fail("text outside the root element");
        if (!blank) result_.text += text + "\n";
      }
    }
    if (!open.empty()) return Fail("<" + open.back() + "> is never closed");
    if (!root_done) return Fail("no root element");
    result_.ok = true;
    return result_;
  }

 private:
  bool Starts(std::string_view s) const { return doc_.substr(pos_, s.size()) == s; }
  bool Eat(char c) {
    if (pos_ < doc_.size() && doc_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool SkipSpace() {
    const size_t start = pos_;
    while (pos_ < doc_.size() && std::isspace(static_cast<unsigned char>(doc_[pos_]))) ++pos_;
    return pos_ > start;
  }
  std::string Name() {
    const size_t start = pos_;
    if (pos_ < doc_.size() && NameStart(doc_[pos_])) {
      while (pos_ < doc_.size() && NameChar(doc_[pos_])) ++pos_;
    }
    return std::string(doc_.substr(start, pos_ - start));
  }
  // At '&': one reference, decoded into `out`.
  bool Reference(std::string& out) {
    const size_t end = doc_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 10) return false;
    std::string_view name = doc_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    if (name == "amp") out += '&';
    else if (name == "lt") out += '<';
    else if (name == "gt") out += '>';
    else if (name == "quot") out += '"';
    else if (name == "apos") out += '\'';
    else if (name.size() > 1 && name[0] == '#') {
      for (size_t i = 1; i < name.size(); ++i) {
        if (!std::isalnum(static_cast<unsigned char>(name[i]))) return false;
      }
      out += '?';
    } else {
      return false;
    }
    return true;
  }
  XmlCheck Fail(const std::string& what) {
    XmlCheck result;
    result.error = what + " (at byte " + std::to_string(pos_) + ")";
    return result;
  }

  std::string_view doc_;
  size_t pos_ = 0;
  XmlCheck result_;
};

}  // namespace

XmlCheck CheckXml(std::string_view document) { return Parser(document).Run(); }

}  // namespace sigvisor::testing
