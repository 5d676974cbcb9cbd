#include "vmm/inject/injection_spec.h"

#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sigvisor {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

InjectionSpec Parse(std::string_view text) {
  auto spec = ParseInjectionSpec(text);
  EXPECT_TRUE(spec.ok()) << text << ": " << spec.status();
  if (!spec.ok()) return InjectionSpec{};
  EXPECT_EQ(spec->text, text);
  // The canonical form parses back to the same spec.
  std::string canonical = FormatInjectionSpec(*spec);
  auto again = ParseInjectionSpec(canonical);
  EXPECT_TRUE(again.ok()) << canonical << ": " << again.status();
  if (again.ok()) {
    again->text = spec->text;
    EXPECT_TRUE(*again == *spec) << text << " -> " << canonical;
  }
  return *spec;
}

std::string Error(std::string_view text) {
  auto spec = ParseInjectionSpec(text);
  EXPECT_FALSE(spec.ok()) << text << " parsed";
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  std::string message(spec.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

TEST(InjectionSpecTest, ExceptionByOperation) {
  InjectionSpec s = Parse("exc=de,op=3");
  EXPECT_EQ(s.what, InjectWhat::kException);
  EXPECT_EQ(s.vector, 0);
  EXPECT_FALSE(s.error_code.has_value());
  EXPECT_FALSE(s.cr2.has_value());
  EXPECT_EQ(s.mode, ExceptionMode::kUser);
  EXPECT_EQ(s.when, InjectWhen::kOp);
  EXPECT_EQ(s.op, 3u);
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.phase, "");
  EXPECT_EQ(FormatInjectionSpec(s), "exc=de,op=3");
}

TEST(InjectionSpecTest, EveryExceptionName) {
  const struct {
    const char* name;
    int vector;
    bool code;
  } kCases[] = {{"de", 0, false},  {"db", 1, false},  {"bp", 3, false},  {"of", 4, false},
                {"br", 5, false},  {"ud", 6, false},  {"nm", 7, false},  {"df", 8, true},
                {"ts", 10, true},  {"np", 11, true},  {"ss", 12, true},  {"gp", 13, true},
                {"pf", 14, true},  {"mf", 16, false}, {"ac", 17, true},  {"mc", 18, false},
                {"xm", 19, false}};
  for (const auto& c : kCases) {
    std::string text = std::string("exc=") + c.name + (c.code ? ":5" : "") + ",exit=1";
    InjectionSpec s = Parse(text);
    EXPECT_EQ(s.vector, c.vector) << text;
    EXPECT_EQ(s.error_code.has_value(), c.code) << text;
    if (c.code) {
      EXPECT_EQ(*s.error_code, 5u);
    }
    EXPECT_EQ(ExceptionVectorByName(c.name), c.vector);
    EXPECT_EQ(ExceptionHasErrorCode(uint8_t(c.vector)), c.code);
    EXPECT_EQ(ExceptionName(uint8_t(c.vector)), c.name);
    EXPECT_TRUE(ExceptionInjectable(uint8_t(c.vector)));
    // By number too.
    InjectionSpec n = Parse("exc=" + std::to_string(c.vector) + (c.code ? ":5" : "") + ",exit=1");
    EXPECT_EQ(n.vector, c.vector);
  }
  EXPECT_EQ(ExceptionVectorByName("GP"), 13);
  EXPECT_EQ(ExceptionVectorByName("0x1f"), 31);
  EXPECT_EQ(ExceptionVectorByName("32"), std::nullopt);
  EXPECT_EQ(ExceptionVectorByName("nmi"), std::nullopt);
  EXPECT_EQ(ExceptionName(2), "2");
  EXPECT_FALSE(ExceptionInjectable(2));
  EXPECT_FALSE(ExceptionInjectable(9));
  EXPECT_FALSE(ExceptionInjectable(15));
  EXPECT_FALSE(ExceptionInjectable(20));
}

TEST(InjectionSpecTest, PageFaultWithErrorCodeCr2AndKernelMode) {
  InjectionSpec s = Parse("exc=pf:0x6,in=kernel,cr2=0x7fff0000,at=sys_kill+0x10,hit=2,count=3");
  EXPECT_EQ(s.vector, 14);
  EXPECT_EQ(s.error_code, 6u);
  EXPECT_EQ(s.cr2, 0x7fff0000u);
  EXPECT_EQ(s.mode, ExceptionMode::kKernel);
  EXPECT_EQ(s.when, InjectWhen::kAt);
  EXPECT_EQ(s.symbol, "sys_kill");
  EXPECT_EQ(s.symbol_offset, 0x10u);
  EXPECT_EQ(s.hit, 2u);
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(FormatInjectionSpec(s), "exc=pf:6,at=sys_kill+0x10,hit=2,count=3,cr2=0x7fff0000,in=kernel");
}

TEST(InjectionSpecTest, GpInKernelAtSymbol) {
  InjectionSpec s = Parse("exc=gp:0,in=kernel,at=sys_kill");
  EXPECT_EQ(s.vector, 13);
  EXPECT_EQ(s.error_code, 0u);
  EXPECT_EQ(s.symbol, "sys_kill");
  EXPECT_EQ(s.symbol_offset, 0u);
  EXPECT_EQ(s.address, 0u);
  EXPECT_EQ(s.hit, 1u);
  EXPECT_EQ(s.mode, ExceptionMode::kKernel);
  EXPECT_EQ(Parse("exc=ud,in=user,exit=1").mode, ExceptionMode::kUser);
}

TEST(InjectionSpecTest, AtAddressAndSymbolCharacters) {
  InjectionSpec s = Parse("exc=ud,at=0xffffffff81000000");
  EXPECT_EQ(s.when, InjectWhen::kAt);
  EXPECT_EQ(s.symbol, "");
  EXPECT_EQ(s.address, 0xffffffff81000000u);
  EXPECT_EQ(Parse("exc=ud,at=4096").address, 4096u);
  EXPECT_EQ(Parse("exc=ud,at=0XFFFF").address, 0xffffu);
  EXPECT_EQ(Parse("exc=ud,at=0xffffffffffffffff").address, 0xffffffffffffffffu);
  InjectionSpec t = Parse("exc=ud,at=.L_entry$1+16");
  EXPECT_EQ(t.symbol, ".L_entry$1");
  EXPECT_EQ(t.symbol_offset, 16u);
  EXPECT_EQ(Parse("exc=ud,at=_start+0").symbol_offset, 0u);
}

TEST(InjectionSpecTest, Signals) {
  InjectionSpec s = Parse("sig=usr1,op=2,phase=hostsig");
  EXPECT_EQ(s.what, InjectWhat::kSignal);
  EXPECT_EQ(s.signo, 10);
  EXPECT_EQ(s.op, 2u);
  EXPECT_EQ(s.phase, "hostsig");
  EXPECT_EQ(s.task, 0);
  EXPECT_EQ(Parse("sig=SIGSEGV,exit=5,task=7").task, 7);
  EXPECT_EQ(Parse("sig=SigTerm,random").signo, 15);
  EXPECT_EQ(Parse("sig=64,random").signo, 64);
  EXPECT_EQ(FormatInjectionSpec(Parse("sig=0x22,random")), "sig=34,random");

  const char* kNames[] = {nullptr, "hup",  "int",  "quit", "ill",    "trap",   "abrt", "bus",
                          "fpe",   "kill", "usr1", "segv", "usr2",   "pipe",   "alrm", "term",
                          "stkflt", "chld", "cont", "stop", "tstp",  "ttin",   "ttou", "urg",
                          "xcpu",  "xfsz", "vtalrm", "prof", "winch", "io",    "pwr",  "sys"};
  for (int i = 1; i <= 31; ++i) {
    EXPECT_EQ(SignalByName(kNames[i]), i) << kNames[i];
    std::string upper = "SIG";
    for (const char* p = kNames[i]; *p; ++p) upper += (*p >= 'a' && *p <= 'z') ? char(*p - 'a' + 'A') : *p;
    EXPECT_EQ(SignalByName(upper), i) << upper;
    EXPECT_EQ(SignalByName(std::to_string(i)), i);
  }
  EXPECT_EQ(SignalByName("0"), std::nullopt);
  EXPECT_EQ(SignalByName("65"), std::nullopt);
  EXPECT_EQ(SignalByName("sig"), std::nullopt);
  EXPECT_EQ(SignalByName("sigsig"), std::nullopt);
  EXPECT_EQ(SignalByName("-1"), std::nullopt);
}

TEST(InjectionSpecTest, Pages) {
  InjectionSpec s = Parse("page=np,addr=access,at=0xffffffff80101234");
  EXPECT_EQ(s.what, InjectWhat::kPage);
  EXPECT_EQ(s.page_mode, PageMode::kNotPresent);
  EXPECT_EQ(s.page_target, PageTarget::kAccess);
  EXPECT_EQ(s.address, 0xffffffff80101234u);

  InjectionSpec e = Parse("page=evict,random,count=50");
  EXPECT_EQ(e.page_mode, PageMode::kEvicted);
  EXPECT_EQ(e.page_target, PageTarget::kStack);
  EXPECT_EQ(e.when, InjectWhen::kRandom);
  EXPECT_EQ(e.count, 50u);

  InjectionSpec r = Parse("page=ro,op=1,addr=0x7ffffffff000");
  EXPECT_EQ(r.page_mode, PageMode::kReadOnly);
  EXPECT_EQ(r.page_target, PageTarget::kAddress);
  EXPECT_EQ(r.page_address, 0x7ffffffff000u);
  EXPECT_EQ(Parse("page=ro,op=1,addr=stack").page_target, PageTarget::kStack);
}

TEST(InjectionSpecTest, Limits) {
  EXPECT_EQ(Parse("exc=de,op=1,count=100000").count, 100000u);
  EXPECT_EQ(Parse("exc=de,exit=18446744073709551615").exit_index, 18446744073709551615u);
  EXPECT_EQ(Parse("exc=de,op=0x10").op, 16u);
  EXPECT_EQ(Parse("exc=de,op=007").op, 7u);
  EXPECT_EQ(Parse("exc=de,random,phase=abcdefghijklmnopqrstuvwxyz_1234").phase.size(), 31u);
  EXPECT_EQ(Parse("sig=kill,op=1,task=2147483647").task, 2147483647);
  EXPECT_EQ(Parse("exc=gp:0xffffffff,op=1").error_code, 0xffffffffu);
}

TEST(InjectionSpecTest, ErrorFormat) {
  EXPECT_EQ(Error("exc=gp,op=1"),
            "--inject 'exc=gp,op=1': exc=gp: #GP pushes an error code: write exc=gp:CODE, e.g. exc=gp:0");
  EXPECT_EQ(Error("exc=de,op=0"),
            "--inject 'exc=de,op=0': op=0: operations are numbered from 1: write op=1 for the first");
}

TEST(InjectionSpecTest, Errors) {
  const struct {
    const char* spec;
    const char* part;     // the part named in the message
    const char* message;  // a distinctive substring
  } kCases[] = {
      // Structure.
      {"", "", "the spec is empty"},
      {"exc=de,,op=1", "", "item 2 is empty: remove the extra comma, e.g. exc=de,op=1"},
      {"exc=de,op=1,", "", "the spec ends with a comma"},
      {",exc=de,op=1", "", "the spec starts with a comma"},
      {"exc=de,foo=1,op=1", "foo=1", "unknown key 'foo'"},
      {"exc=de,bogus", "bogus", "not a key=value item"},
      {"exc=de,OP=1", "OP=1", "keys are lower case: write op=1"},
      {"exc=de, op=1", " op=1", "spaces are not allowed"},
      {"exc=de,op=1,op=2", "op=2", "op is given twice (also op=1)"},
      {"exc=de,random,random", "random", "random is given twice"},
      {"op=1", "op=1", "missing WHAT"},
      {"count=2,op=1", "count=2", "missing WHAT"},
      {"op=1,exc=de", "exc=de", "must be the first item: write exc=de,op=1"},
      {"exc=de", "exc=de", "missing WHEN"},
      {"exc=de,count=2", "exc=de", "missing WHEN"},
      {"exc=de,sig=usr1,op=1", "sig=usr1", "injects one thing and exc=de is already its WHAT"},
      {"exc=de,op=1,exit=2", "exit=2", "one WHEN and op=1 is already it"},
      {"exc=de,random=3", "random=3", "random takes no value"},
      {"exc=de,op=", "op=", "op= needs a value"},
      {"exc=,op=1", "exc=", "exc= needs a value"},
      {"exc=de,op", "op", "op= needs a value"},
      // Numbers.
      {"exc=de,op=-1", "op=-1", "'-1' is not a number: write a decimal or 0x-hex"},
      {"exc=de,op=+1", "op=+1", "'+1' is not a number"},
      {"exc=de,op=0x", "op=0x", "'0x' is not a number"},
      {"exc=de,op=12abc", "op=12abc", "not a number"},
      {"exc=de,op=18446744073709551616", "op=18446744073709551616", "does not fit 64 bits"},
      {"exc=de,exit=0x10000000000000000", "exit=0x10000000000000000", "does not fit 64 bits"},
      {"exc=de,op=0", "op=0", "operations are numbered from 1"},
      {"exc=de,exit=0", "exit=0", "VM exits are numbered from 1"},
      {"exc=de,at=f,hit=0", "hit=0", "hits are numbered from 1"},
      {"exc=de,op=1,count=0", "count=0", "at least once"},
      {"exc=de,op=1,count=100001", "count=100001", "at most 100000"},
      {"exc=de,exit=18446744073709551615,count=2", "count=2", "goes past 0xffffffffffffffff"},
      // Exceptions.
      {"exc=xx,op=1", "exc=xx", "unknown exception 'xx'"},
      {"exc=2,op=1", "exc=2", "vector 2 (NMI) is not an exception sigvisor injects"},
      {"exc=9,op=1", "exc=9", "vector 9 is not an exception sigvisor injects"},
      {"exc=15,op=1", "exc=15", "vector 15 is not an exception sigvisor injects"},
      {"exc=20,op=1", "exc=20", "vector 20 is not an exception sigvisor injects"},
      {"exc=31,op=1", "exc=31", "vector 31 is not an exception sigvisor injects"},
      {"exc=32,op=1", "exc=32", "vector 32 is not an exception (vectors are 0-31)"},
      {"exc=13,op=1", "exc=13", "#GP (vector 13) pushes an error code: write exc=13:CODE"},
      {"exc=pf,op=1", "exc=pf", "#PF pushes an error code"},
      {"exc=df,op=1", "exc=df", "#DF pushes an error code"},
      {"exc=ac,op=1", "exc=ac", "#AC pushes an error code"},
      {"exc=de:0,op=1", "exc=de:0", "#DE pushes no error code: write exc=de"},
      {"exc=ud:1,op=1", "exc=ud:1", "#UD pushes no error code"},
      {"exc=gp:,op=1", "exc=gp:", "missing error code after ':'"},
      {"exc=gp:x,op=1", "exc=gp:x", "error code 'x' is not a number"},
      {"exc=gp:0x100000000,op=1", "exc=gp:0x100000000", "does not fit 32 bits"},
      {"exc=ud,op=1,cr2=0x1000", "cr2=0x1000", "cr2= goes only with exc=pf"},
      {"sig=usr1,op=1,in=kernel", "in=kernel", "in= goes only with exc="},
      {"exc=ud,op=1,in=both", "in=both", "write in=user or in=kernel"},
      // Signals.
      {"sig=usr3,op=1", "sig=usr3", "unknown signal 'usr3'"},
      {"sig=0,op=1", "sig=0", "signal 0 is out of range: signals are 1-64"},
      {"sig=65,op=1", "sig=65", "signal 65 is out of range"},
      {"sig=SIG,op=1", "sig=SIG", "unknown signal"},
      {"sig=usr1,op=1,task=0", "task=0", "pids start at 1"},
      {"sig=usr1,op=1,task=2147483648", "task=2147483648", "not a pid"},
      {"exc=ud,op=1,task=3", "task=3", "task= goes only with sig="},
      // Pages.
      {"page=gone,op=1", "page=gone", "write page=np, page=ro or page=evict"},
      {"page=np,op=1,addr=access", "addr=access", "addr=access needs an at= trigger"},
      {"page=np,random,addr=access", "addr=access", "addr=access needs an at= trigger"},
      {"page=np,op=1,addr=0x800000000000", "addr=0x800000000000", "not a user address"},
      {"page=np,op=1,addr=0xffffffff81000000", "addr=0xffffffff81000000", "below 0x800000000000"},
      {"page=np,op=1,addr=heap", "addr=heap", "write addr=access, addr=stack or addr=ADDRESS"},
      {"exc=ud,op=1,addr=stack", "addr=stack", "addr= goes only with page="},
      // Triggers and their options.
      {"exc=ud,at=sys-kill", "at=sys-kill", "'-' cannot be in a symbol"},
      {"exc=ud,at=sys_kill+", "at=sys_kill+", "missing offset after '+'"},
      {"exc=ud,at=sys_kill+x", "at=sys_kill+x", "offset 'x' is not a number"},
      {"exc=ud,at=+0x10", "at=+0x10", "missing symbol before '+'"},
      {"exc=ud,at=0xffffffff8100zz00", "at=0xffffffff8100zz00", "is not an address"},
      {"exc=ud,at=0x10+4", "at=0x10+4", "is not an address"},
      {"exc=ud,op=2,hit=2", "hit=2", "hit= goes only with at="},
      {"exc=ud,exit=2,phase=work", "phase=work", "phase= goes only with op= or random"},
      {"exc=ud,at=f,phase=work", "phase=work", "phase= goes only with op= or random"},
      {"exc=ud,op=1,phase=abcdefghijklmnopqrstuvwxyz_12345", "", "at most 31 characters (this one has 32)"},
      {"exc=ud,op=1,phase=a-b", "phase=a-b", "only letters, digits and _"},
      {"exc=ud,op=1,phase=a.b", "phase=a.b", "only letters, digits and _"},
  };
  for (const auto& c : kCases) {
    std::string message = Error(c.spec);
    std::string prefix = std::string("--inject '") + c.spec + "': ";
    EXPECT_THAT(message, StartsWith(prefix));
    if (*c.part != '\0') {
      EXPECT_THAT(message, StartsWith(prefix + c.part + ": ")) << c.spec;
    }
    EXPECT_THAT(message, HasSubstr(c.message)) << c.spec;
  }
}

TEST(InjectionSpecTest, ErrorsStayOnOneLine) {
  std::string message = Error(std::string("exc=de,op=1\n,x", 15));
  EXPECT_THAT(message, HasSubstr("\\x0a"));
  std::string long_spec = "exc=de,op=" + std::string(500, '9');
  EXPECT_LT(Error(long_spec).size(), 500u);  // quoted text is cut at 120 characters
}

}  // namespace
}  // namespace sigvisor
