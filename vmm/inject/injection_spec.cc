#include "vmm/inject/injection_spec.h"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

constexpr uint64_t kUserAddressLimit = 0x800000000000ull;  // the user half ends here
constexpr uint64_t kMaxCount = 100000;
constexpr size_t kMaxPhaseName = 31;
constexpr int kMaxSignal = 64;

struct ExceptionInfo {
  const char* name;
  const char* mnemonic;
  uint8_t vector;
};

constexpr ExceptionInfo kExceptions[] = {
    {"de", "#DE", 0},  {"db", "#DB", 1},  {"bp", "#BP", 3},  {"of", "#OF", 4},
    {"br", "#BR", 5},  {"ud", "#UD", 6},  {"nm", "#NM", 7},  {"df", "#DF", 8},
    {"ts", "#TS", 10}, {"np", "#NP", 11}, {"ss", "#SS", 12}, {"gp", "#GP", 13},
    {"pf", "#PF", 14}, {"mf", "#MF", 16}, {"ac", "#AC", 17}, {"mc", "#MC", 18},
    {"xm", "#XM", 19},
};

constexpr const char* kExceptionList = "de db bp of br ud nm df ts np ss gp pf mf ac mc xm";

// Linux x86-64 numbering; index = signal number.
constexpr std::array<const char*, 32> kSignalNames = {
    nullptr, "hup",  "int",  "quit", "ill",    "trap", "abrt",  "bus",  "fpe",  "kill", "usr1",
    "segv",  "usr2", "pipe", "alrm", "term",   "stkflt", "chld", "cont", "stop", "tstp", "ttin",
    "ttou",  "urg",  "xcpu", "xfsz", "vtalrm", "prof", "winch", "io",   "pwr",  "sys",
};

const ExceptionInfo* FindException(uint8_t vector) {
  for (const auto& e : kExceptions) {
    if (e.vector == vector) return &e;
  }
  return nullptr;
}

// This Abseil's string_view is its own type, not std::string_view.
absl::string_view A(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(A(a), A(b));
}

enum class NumberError { kNone, kEmpty, kSyntax, kOverflow };

// Decimal or 0x-hex, no sign, no spaces, at most 64 bits. absl::SimpleAtoi and
// SimpleHexAtoi also take a sign and surrounding whitespace, so the digits are
// checked first: after that a failed conversion can only be an overflow.
NumberError ParseNumber(std::string_view s, uint64_t* out) {
  if (s.empty()) return NumberError::kEmpty;
  const bool hex = s.size() >= 2 && s[0] == '0' && absl::ascii_tolower(s[1]) == 'x';
  if (hex) {
    s.remove_prefix(2);
    if (s.empty()) return NumberError::kSyntax;
  }
  for (char c : s) {
    if (!(hex ? absl::ascii_isxdigit(c) : absl::ascii_isdigit(c))) return NumberError::kSyntax;
  }
  const bool ok = hex ? absl::SimpleHexAtoi(A(s), out) : absl::SimpleAtoi(A(s), out);
  return ok ? NumberError::kNone : NumberError::kOverflow;
}

bool IsNumber(std::string_view s) {
  uint64_t unused;
  return ParseNumber(s, &unused) != NumberError::kSyntax && !s.empty();
}

// Always with the 0x, zero too ("%#x" would print 0 as "0").
std::string Hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

std::string Str(std::string_view s) { return std::string(s); }

// Text quoted in an error: kept on one line and of bounded length.
std::string Printable(std::string_view s) {
  constexpr size_t kMax = 120;
  std::string out;
  bool truncated = s.size() > kMax;
  if (truncated) s = s.substr(0, kMax);
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    } else {
      out += char(c);
    }
  }
  if (truncated) out += "...";
  return out;
}

enum class Key { kExc, kSig, kPage, kAt, kOp, kExit, kRandom, kCount, kHit, kPhase, kTask, kCr2, kIn, kAddr };
constexpr int kKeyCount = 14;

enum class Kind { kWhat, kWhen, kOption };

struct KeyInfo {
  const char* name;
  Key key;
  Kind kind;
  const char* example;  // a valid item, for "e.g."
};

constexpr KeyInfo kKeys[kKeyCount] = {
    {"exc", Key::kExc, Kind::kWhat, "exc=de"},
    {"sig", Key::kSig, Kind::kWhat, "sig=usr1"},
    {"page", Key::kPage, Kind::kWhat, "page=np"},
    {"at", Key::kAt, Kind::kWhen, "at=0xffffffff81000000"},
    {"op", Key::kOp, Kind::kWhen, "op=1"},
    {"exit", Key::kExit, Kind::kWhen, "exit=1"},
    {"random", Key::kRandom, Kind::kWhen, "random"},
    {"count", Key::kCount, Kind::kOption, "count=1"},
    {"hit", Key::kHit, Kind::kOption, "hit=1"},
    {"phase", Key::kPhase, Kind::kOption, "phase=NAME"},
    {"task", Key::kTask, Kind::kOption, "task=1"},
    {"cr2", Key::kCr2, Kind::kOption, "cr2=0x1000"},
    {"in", Key::kIn, Kind::kOption, "in=user"},
    {"addr", Key::kAddr, Kind::kOption, "addr=stack"},
};

constexpr const char* kKeyList = "exc sig page at op exit random count hit phase task cr2 in addr";

const KeyInfo* FindKey(std::string_view name) {
  for (const auto& k : kKeys) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

const KeyInfo* FindKeyIgnoreCase(std::string_view name) {
  for (const auto& k : kKeys) {
    if (EqualsIgnoreCase(name, k.name)) return &k;
  }
  return nullptr;
}

struct Item {
  std::string_view text;  // "key=value" as written
  std::string_view key;
  std::string_view value;
  const KeyInfo* info = nullptr;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) { spec_.text = Str(text); }

  absl::StatusOr<InjectionSpec> Parse();

 private:
  absl::Status Fail(std::string_view part, const std::string& what) const {
    std::string message = "--inject '" + Printable(text_) + "': ";
    if (!part.empty()) message += Printable(part) + ": ";
    message += what;
    return absl::InvalidArgumentError(message);
  }
  // A whole-spec problem (no single part to name).
  absl::Status FailSpec(const std::string& what) const {
    return absl::InvalidArgumentError("--inject '" + Printable(text_) + "': " + what);
  }

  absl::Status SplitItems();
  absl::Status CheckStructure();
  absl::Status ParseValue(const Item& item);
  absl::Status CheckCombinations();

  // A number for `item` in [min, max]; `numbered` words the "from 1" error for 0.
  absl::Status Number(const Item& item, std::string_view value, uint64_t* out) const;

  absl::Status ParseException(const Item& item);
  absl::Status ParseSignal(const Item& item);
  absl::Status ParseAt(const Item& item);
  absl::Status ParseAddr(const Item& item);

  std::string_view text_;
  InjectionSpec spec_;
  std::vector<Item> items_;
  std::array<const Item*, kKeyCount> seen_{};
  const Item* what_ = nullptr;
  const Item* when_ = nullptr;
};

absl::Status Parser::SplitItems() {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t comma = text_.find(',', start);
    if (comma == std::string_view::npos) {
      parts.push_back(text_.substr(start));
      break;
    }
    parts.push_back(text_.substr(start, comma - start));
    start = comma + 1;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].empty()) continue;
    std::string fixed;
    for (auto p : parts) {
      if (p.empty()) continue;
      if (!fixed.empty()) fixed += ',';
      fixed += p;
    }
    std::string where = i == 0                  ? "the spec starts with a comma"
                        : i + 1 == parts.size() ? "the spec ends with a comma"
                                                : "item " + std::to_string(i + 1) + " is empty";
    return FailSpec(where + ": remove the extra comma" +
                    (fixed.empty() ? std::string() : ", e.g. " + Printable(fixed)));
  }
  for (auto part : parts) {
    Item item;
    item.text = part;
    size_t eq = part.find('=');
    item.key = part.substr(0, eq);
    if (eq != std::string_view::npos) item.value = part.substr(eq + 1);
    if (part.find_first_of(" \t\r\n") != std::string_view::npos) {
      return Fail(part, "spaces are not allowed in a spec: write the items without them, e.g. exc=de,op=1");
    }
    item.info = FindKey(item.key);
    if (item.info == nullptr) {
      if (const KeyInfo* other = FindKeyIgnoreCase(item.key)) {
        return Fail(part, "keys are lower case: write " + std::string(other->name) +
                              (eq == std::string_view::npos ? "" : "=" + Str(item.value)));
      }
      if (eq == std::string_view::npos) {
        return Fail(part, "not a key=value item: items are KEY=VALUE (keys: " +
                              std::string(kKeyList) + ") or the bare word random");
      }
      return Fail(part, "unknown key '" + Printable(item.key) + "': the keys are " + kKeyList);
    }
    if (item.info->key == Key::kRandom) {
      if (eq != std::string_view::npos) {
        return Fail(part, "random takes no value: write random (how many: count=N)");
      }
    } else if (eq == std::string_view::npos || item.value.empty()) {
      return Fail(part, std::string(item.info->name) + "= needs a value: write " +
                            item.info->name + "=..., e.g. " + item.info->example);
    }
    items_.push_back(item);
  }
  return absl::OkStatus();
}

absl::Status Parser::CheckStructure() {
  for (size_t i = 0; i < items_.size(); ++i) {
    const Item& item = items_[i];
    const KeyInfo& info = *item.info;
    const Item*& seen = seen_[size_t(info.key)];
    if (seen != nullptr) {
      return Fail(item.text, std::string(info.name) + " is given twice (also " + Printable(seen->text) +
                                 "): give it once");
    }
    seen = &item;
    if (i == 0 && info.kind != Kind::kWhat) {
      for (size_t j = 1; j < items_.size(); ++j) {
        if (items_[j].info->kind != Kind::kWhat) continue;
        std::string fixed = Str(items_[j].text);
        for (size_t k = 0; k < items_.size(); ++k) {
          if (k != j) fixed += "," + Str(items_[k].text);
        }
        return Fail(items_[j].text, "the WHAT (exc=, sig= or page=) must be the first item: write " +
                                        Printable(fixed));
      }
      return Fail(item.text,
                  "missing WHAT: a spec starts with exc=NAME, sig=NAME or page=np|ro|evict, e.g. exc=de," +
                      Printable(item.text));
    }
    if (info.kind == Kind::kWhat) {
      if (what_ != nullptr) {
        return Fail(item.text, "a spec injects one thing and " + Printable(what_->text) +
                                   " is already its WHAT: give each its own --inject");
      }
      what_ = &item;
    }
    if (info.kind == Kind::kWhen) {
      if (when_ != nullptr) {
        return Fail(item.text, "a spec has one WHEN and " + Printable(when_->text) +
                                   " is already it: keep one, or give the other its own --inject");
      }
      when_ = &item;
    }
  }
  if (when_ == nullptr) {
    return Fail(what_->text,
                "missing WHEN: add one of at=ADDRESS|SYMBOL[+OFFSET], op=K, exit=N or random, e.g. " +
                    Printable(text_) + ",op=1");
  }
  return absl::OkStatus();
}

absl::Status Parser::Number(const Item& item, std::string_view value, uint64_t* out) const {
  switch (ParseNumber(value, out)) {
    case NumberError::kNone:
      return absl::OkStatus();
    case NumberError::kEmpty:
      return Fail(item.text, "missing number: write " + std::string(item.info->example));
    case NumberError::kSyntax:
      return Fail(item.text, "'" + Printable(value) +
                                 "' is not a number: write a decimal or 0x-hex number without a sign, e.g. " +
                                 item.info->example);
    case NumberError::kOverflow:
      return Fail(item.text, Printable(value) + " does not fit 64 bits: write a number up to 0xffffffffffffffff");
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseException(const Item& item) {
  std::string_view value = item.value;
  size_t colon = value.find(':');
  std::string_view name = value.substr(0, colon);
  std::optional<std::string_view> code;
  if (colon != std::string_view::npos) code = value.substr(colon + 1);

  std::optional<uint8_t> vector = ExceptionVectorByName(name);
  if (!vector.has_value()) {
    uint64_t number;
    if (!name.empty() && absl::ascii_isdigit(name[0])) {
      absl::Status status = Number(item, name, &number);
      if (!status.ok()) return status;
      return Fail(item.text, "vector " + Printable(name) +
                                 " is not an exception (vectors are 0-31): write a name (" + kExceptionList +
                                 ") or a vector number, e.g. exc=13:0");
    }
    return Fail(item.text, "unknown exception '" + Printable(name) + "': write a name (" + kExceptionList +
                               ") or a vector number, e.g. exc=ud");
  }
  if (!ExceptionInjectable(*vector)) {
    std::string what = *vector == 2 ? "vector 2 (NMI)" : "vector " + std::to_string(*vector);
    return Fail(item.text, what + " is not an exception sigvisor injects: write one of " + kExceptionList +
                               " (vectors 0 1 3-8 10-14 16-19)");
  }
  spec_.vector = *vector;
  const ExceptionInfo& info = *FindException(*vector);
  std::string label = absl::ascii_isdigit(name[0]) ? std::string(info.mnemonic) + " (vector " + Str(name) + ")"
                                       : std::string(info.mnemonic);
  if (ExceptionHasErrorCode(*vector)) {
    if (!code.has_value()) {
      return Fail(item.text, label + " pushes an error code: write exc=" + Printable(name) + ":CODE, e.g. exc=" +
                                 Printable(name) + ":0");
    }
    if (code->empty()) {
      return Fail(item.text, "missing error code after ':': write exc=" + Printable(name) + ":CODE, e.g. exc=" +
                                 Printable(name) + ":0");
    }
    uint64_t error_code = 0;
    switch (ParseNumber(*code, &error_code)) {
      case NumberError::kNone:
        break;
      case NumberError::kEmpty:
      case NumberError::kSyntax:
        return Fail(item.text, "error code '" + Printable(*code) +
                                   "' is not a number: write a decimal or 0x-hex number without a sign, e.g. exc=" +
                                   Printable(name) + ":0");
      case NumberError::kOverflow:
        error_code = std::numeric_limits<uint64_t>::max();
        break;
    }
    if (error_code > std::numeric_limits<uint32_t>::max()) {
      return Fail(item.text, "error code " + Printable(*code) +
                                 " does not fit 32 bits: write one up to 0xffffffff");
    }
    spec_.error_code = uint32_t(error_code);
  } else if (code.has_value()) {
    return Fail(item.text, label + " pushes no error code: write exc=" + Printable(name));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseSignal(const Item& item) {
  std::optional<int> signo = SignalByName(item.value);
  if (signo.has_value()) {
    spec_.signo = *signo;
    return absl::OkStatus();
  }
  if (absl::ascii_isdigit(item.value[0])) {
    uint64_t number;
    absl::Status status = Number(item, item.value, &number);
    if (!status.ok()) return status;
    return Fail(item.text, "signal " + Printable(item.value) + " is out of range: signals are 1-64, e.g. sig=10");
  }
  return Fail(item.text, "unknown signal '" + Printable(item.value) +
                             "': write a name (usr1 or SIGUSR1, case does not matter) or a number 1-64");
}

bool IsSymbolChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || absl::ascii_isdigit(c) || c == '_' || c == '.' || c == '$';
}

absl::Status Parser::ParseAt(const Item& item) {
  std::string_view value = item.value;
  if (absl::ascii_isdigit(value[0])) {
    if (!IsNumber(value)) {
      return Fail(item.text, "'" + Printable(value) +
                                 "' is not an address: write at=ADDRESS (decimal or 0x-hex, e.g. "
                                 "at=0xffffffff81000000) or at=SYMBOL[+OFFSET]");
    }
    absl::Status status = Number(item, value, &spec_.address);
    if (!status.ok()) return status;
    return absl::OkStatus();
  }
  size_t plus = value.find('+');
  std::string_view symbol = value.substr(0, plus);
  if (symbol.empty()) {
    return Fail(item.text, "missing symbol before '+': write at=SYMBOL+OFFSET, e.g. at=sys_kill+0x10");
  }
  for (char c : symbol) {
    if (!IsSymbolChar(c)) {
      return Fail(item.text, "'" + Printable(std::string_view(&c, 1)) +
                                 "' cannot be in a symbol (letters, digits, _ . $): write at=SYMBOL[+OFFSET] "
                                 "or at=ADDRESS, e.g. at=sys_kill+0x10");
    }
  }
  spec_.symbol = Str(symbol);
  if (plus != std::string_view::npos) {
    std::string_view offset = value.substr(plus + 1);
    switch (ParseNumber(offset, &spec_.symbol_offset)) {
      case NumberError::kNone:
        break;
      case NumberError::kEmpty:
        return Fail(item.text, "missing offset after '+': write at=" + Printable(symbol) + "+OFFSET, e.g. at=" +
                                   Printable(symbol) + "+0x10");
      case NumberError::kSyntax:
        return Fail(item.text, "offset '" + Printable(offset) +
                                   "' is not a number: write a decimal or 0x-hex offset without a sign, e.g. at=" +
                                   Printable(symbol) + "+0x10");
      case NumberError::kOverflow:
        return Fail(item.text, "offset " + Printable(offset) + " does not fit 64 bits");
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseAddr(const Item& item) {
  if (item.value == "access") {
    spec_.page_target = PageTarget::kAccess;
    return absl::OkStatus();
  }
  if (item.value == "stack") {
    spec_.page_target = PageTarget::kStack;
    return absl::OkStatus();
  }
  if (!absl::ascii_isdigit(item.value[0])) {
    return Fail(item.text, "write addr=access, addr=stack or addr=ADDRESS (e.g. addr=0x400000)");
  }
  uint64_t address;
  absl::Status status = Number(item, item.value, &address);
  if (!status.ok()) return status;
  if (address >= kUserAddressLimit) {
    return Fail(item.text, "not a user address (a page= target must be below 0x800000000000): name a page "
                           "in the user half, e.g. addr=0x400000, or write addr=access or addr=stack");
  }
  spec_.page_target = PageTarget::kAddress;
  spec_.page_address = address;
  return absl::OkStatus();
}

absl::Status Parser::ParseValue(const Item& item) {
  uint64_t n = 0;
  absl::Status status;
  switch (item.info->key) {
    case Key::kExc:
      spec_.what = InjectWhat::kException;
      return ParseException(item);
    case Key::kSig:
      spec_.what = InjectWhat::kSignal;
      return ParseSignal(item);
    case Key::kPage:
      spec_.what = InjectWhat::kPage;
      if (item.value == "np") spec_.page_mode = PageMode::kNotPresent;
      else if (item.value == "ro") spec_.page_mode = PageMode::kReadOnly;
      else if (item.value == "evict") spec_.page_mode = PageMode::kEvicted;
      else return Fail(item.text, "write page=np, page=ro or page=evict");
      return absl::OkStatus();
    case Key::kAt:
      spec_.when = InjectWhen::kAt;
      return ParseAt(item);
    case Key::kOp:
      spec_.when = InjectWhen::kOp;
      if (status = Number(item, item.value, &n); !status.ok()) return status;
      if (n == 0) return Fail(item.text, "operations are numbered from 1: write op=1 for the first");
      spec_.op = n;
      return absl::OkStatus();
    case Key::kExit:
      spec_.when = InjectWhen::kExit;
      if (status = Number(item, item.value, &n); !status.ok()) return status;
      if (n == 0) return Fail(item.text, "VM exits are numbered from 1: write exit=1 for the first");
      spec_.exit_index = n;
      return absl::OkStatus();
    case Key::kRandom:
      spec_.when = InjectWhen::kRandom;
      return absl::OkStatus();
    case Key::kCount:
      if (status = Number(item, item.value, &n); !status.ok()) return status;
      if (n == 0) return Fail(item.text, "a spec injects at least once: write count=1 or more");
      if (n > kMaxCount) {
        return Fail(item.text, "at most 100000 injections per spec: write count=100000 or less");
      }
      spec_.count = n;
      return absl::OkStatus();
    case Key::kHit:
      if (status = Number(item, item.value, &n); !status.ok()) return status;
      if (n == 0) return Fail(item.text, "hits are numbered from 1: write hit=1 for the first");
      spec_.hit = n;
      return absl::OkStatus();
    case Key::kPhase:
      if (item.value.size() > kMaxPhaseName) {
        return Fail(item.text, "a phase name has at most 31 characters (this one has " +
                                   std::to_string(item.value.size()) + ")");
      }
      for (char c : item.value) {
        if (!(IsSymbolChar(c) && c != '.' && c != '$')) {
          return Fail(item.text, "a phase name has only letters, digits and _, e.g. phase=hostsig");
        }
      }
      spec_.phase = Str(item.value);
      return absl::OkStatus();
    case Key::kTask:
      if (status = Number(item, item.value, &n); !status.ok()) return status;
      if (n == 0) return Fail(item.text, "pids start at 1: write task=PID, e.g. task=1");
      if (n > uint64_t(std::numeric_limits<int>::max())) {
        return Fail(item.text, "not a pid (at most 2147483647): write task=PID, e.g. task=1");
      }
      spec_.task = int(n);
      return absl::OkStatus();
    case Key::kCr2:
      if (status = Number(item, item.value, &n); !status.ok()) return status;
      spec_.cr2 = n;
      return absl::OkStatus();
    case Key::kIn:
      if (item.value == "user") spec_.mode = ExceptionMode::kUser;
      else if (item.value == "kernel") spec_.mode = ExceptionMode::kKernel;
      else return Fail(item.text, "write in=user or in=kernel");
      return absl::OkStatus();
    case Key::kAddr:
      return ParseAddr(item);
  }
  return absl::OkStatus();
}

absl::Status Parser::CheckCombinations() {
  for (const Item& item : items_) {
    switch (item.info->key) {
      case Key::kCr2:
        if (spec_.what != InjectWhat::kException || spec_.vector != 14) {
          return Fail(item.text, "cr2= goes only with exc=pf (the address a #PF reports): remove it, or "
                                 "write exc=pf:CODE");
        }
        break;
      case Key::kIn:
        if (spec_.what != InjectWhat::kException) {
          return Fail(item.text, "in= goes only with exc= (where the exception is raised): remove it");
        }
        break;
      case Key::kTask:
        if (spec_.what != InjectWhat::kSignal) {
          return Fail(item.text, "task= goes only with sig= (the pid the signal goes to): remove it");
        }
        break;
      case Key::kAddr:
        if (spec_.what != InjectWhat::kPage) {
          return Fail(item.text, "addr= goes only with page= (which page): remove it");
        }
        if (spec_.page_target == PageTarget::kAccess && spec_.when != InjectWhen::kAt) {
          return Fail(item.text, "addr=access needs an at= trigger (the page the instruction there accesses): "
                                 "write at=ADDRESS|SYMBOL, or use addr=stack or addr=ADDRESS");
        }
        break;
      case Key::kHit:
        if (spec_.when != InjectWhen::kAt) {
          return Fail(item.text, "hit= goes only with at= (which execution of the breakpoint): remove it" +
                                     std::string(spec_.when == InjectWhen::kOp ? " (op=K already picks one)" : ""));
        }
        break;
      case Key::kPhase:
        if (spec_.when != InjectWhen::kOp && spec_.when != InjectWhen::kRandom) {
          return Fail(item.text, "phase= goes only with op= or random (which phase's operations count): "
                                 "remove it, or write op=K");
        }
        break;
      default:
        break;
    }
  }
  // The last injection's hit, operation or exit number must exist.
  uint64_t first = 0;
  const char* what = nullptr;
  switch (spec_.when) {
    case InjectWhen::kAt: first = spec_.hit; what = "hit"; break;
    case InjectWhen::kOp: first = spec_.op; what = "op"; break;
    case InjectWhen::kExit: first = spec_.exit_index; what = "exit"; break;
    case InjectWhen::kRandom: break;
  }
  if (what != nullptr && spec_.count - 1 > std::numeric_limits<uint64_t>::max() - first) {
    const Item* part = seen_[size_t(Key::kCount)];
    return Fail(part->text, std::string(what) + "=" + std::to_string(first) +
                                " plus count-1 goes past 0xffffffffffffffff: write a smaller count");
  }
  return absl::OkStatus();
}

absl::StatusOr<InjectionSpec> Parser::Parse() {
  if (text_.empty()) {
    return FailSpec("the spec is empty: write WHAT,WHEN, e.g. --inject exc=de,op=1");
  }
  absl::Status status = SplitItems();
  if (!status.ok()) return status;
  status = CheckStructure();
  if (!status.ok()) return status;
  for (const Item& item : items_) {
    status = ParseValue(item);
    if (!status.ok()) return status;
  }
  status = CheckCombinations();
  if (!status.ok()) return status;
  return spec_;
}

}  // namespace

absl::StatusOr<InjectionSpec> ParseInjectionSpec(std::string_view text) { return Parser(text).Parse(); }

std::optional<uint8_t> ExceptionVectorByName(std::string_view name) {
  for (const auto& e : kExceptions) {
    if (EqualsIgnoreCase(name, e.name)) return e.vector;
  }
  uint64_t number;
  if (ParseNumber(name, &number) == NumberError::kNone && number <= 31) return uint8_t(number);
  return std::nullopt;
}

bool ExceptionHasErrorCode(uint8_t vector) {
  switch (vector) {
    case 8: case 10: case 11: case 12: case 13: case 14: case 17:
      return true;
    default:
      return false;
  }
}

bool ExceptionInjectable(uint8_t vector) { return FindException(vector) != nullptr; }

std::string ExceptionName(uint8_t vector) {
  if (const ExceptionInfo* e = FindException(vector)) return e->name;
  return std::to_string(vector);
}

std::optional<int> SignalByName(std::string_view name) {
  uint64_t number;
  switch (ParseNumber(name, &number)) {
    case NumberError::kNone:
      if (number >= 1 && number <= uint64_t(kMaxSignal)) return int(number);
      return std::nullopt;
    case NumberError::kOverflow:
      return std::nullopt;
    default:
      break;
  }
  if (name.size() > 3 && EqualsIgnoreCase(name.substr(0, 3), "sig")) name.remove_prefix(3);
  for (size_t i = 1; i < kSignalNames.size(); ++i) {
    if (EqualsIgnoreCase(name, kSignalNames[i])) return int(i);
  }
  return std::nullopt;
}

std::string FormatInjectionSpec(const InjectionSpec& spec) {
  std::string out;
  switch (spec.what) {
    case InjectWhat::kException:
      out = "exc=" + ExceptionName(spec.vector);
      if (spec.error_code.has_value()) out += ":" + std::to_string(*spec.error_code);
      break;
    case InjectWhat::kSignal:
      out = "sig=";
      if (spec.signo >= 1 && size_t(spec.signo) < kSignalNames.size()) out += kSignalNames[size_t(spec.signo)];
      else out += std::to_string(spec.signo);
      break;
    case InjectWhat::kPage:
      out = spec.page_mode == PageMode::kNotPresent ? "page=np"
            : spec.page_mode == PageMode::kReadOnly ? "page=ro"
                                                    : "page=evict";
      break;
  }
  switch (spec.when) {
    case InjectWhen::kAt:
      if (spec.symbol.empty()) {
        out += ",at=" + Hex(spec.address);
      } else {
        out += ",at=" + spec.symbol;
        if (spec.symbol_offset != 0) out += "+" + Hex(spec.symbol_offset);
      }
      if (spec.hit != 1) out += ",hit=" + std::to_string(spec.hit);
      break;
    case InjectWhen::kOp:
      out += ",op=" + std::to_string(spec.op);
      break;
    case InjectWhen::kExit:
      out += ",exit=" + std::to_string(spec.exit_index);
      break;
    case InjectWhen::kRandom:
      out += ",random";
      break;
  }
  if (!spec.phase.empty()) out += ",phase=" + spec.phase;
  if (spec.count != 1) out += ",count=" + std::to_string(spec.count);
  if (spec.what == InjectWhat::kSignal && spec.task != 0) out += ",task=" + std::to_string(spec.task);
  if (spec.what == InjectWhat::kException) {
    if (spec.cr2.has_value()) out += ",cr2=" + Hex(*spec.cr2);
    if (spec.mode == ExceptionMode::kKernel) out += ",in=kernel";
  }
  if (spec.what == InjectWhat::kPage) {
    if (spec.page_target == PageTarget::kAccess) out += ",addr=access";
    if (spec.page_target == PageTarget::kAddress) out += ",addr=" + Hex(spec.page_address);
  }
  return out;
}

}  // namespace sigvisor
