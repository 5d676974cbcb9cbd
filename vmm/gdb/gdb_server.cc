#include "vmm/gdb/gdb_server.h"

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace sigvisor::gdb {
namespace {

constexpr size_t kPacketSize = 0x4000;  // what we tell gdb it may send
constexpr size_t kMaxMemoryRead = 0x2000;

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// "ADDR,LEN" -> both, or nullopt.
std::optional<std::pair<uint64_t, uint64_t>> AddressLength(std::string_view text) {
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  std::optional<uint64_t> address = ParseHex(text.substr(0, comma));
  std::optional<uint64_t> length = ParseHex(text.substr(comma + 1));
  if (!address || !length) return std::nullopt;
  return std::make_pair(*address, *length);
}

}  // namespace

GdbServer::GdbServer(std::unique_ptr<RspConnection> connection, GdbTarget& target)
    : connection_(std::move(connection)), target_(target) {}

absl::StatusOr<GdbServer::Action> GdbServer::Serve(const std::string& stop_reply) {
  if (!stop_reply.empty()) {
    last_stop_ = stop_reply;
    if (absl::Status s = connection_->Send(stop_reply); !s.ok()) return s;
  }
  for (;;) {
    absl::StatusOr<RspConnection::Incoming> in = connection_->Receive();
    if (!in.ok()) return in.status();
    if (in->interrupt) continue;  // already stopped
    std::optional<Action> action;
    const std::string reply = Handle(in->packet, action);
    if (action) {
      if (*action == Action::kDetach || (*action == Action::kKill && !reply.empty())) {
        (void)connection_->Send(reply);
      }
      return *action;
    }
    if (absl::Status s = connection_->Send(reply); !s.ok()) return s;
    if (in->packet == "QStartNoAckMode") {
      no_ack_ = true;
      connection_->set_no_ack(true);
    }
  }
}

void GdbServer::Finish(const std::string& reply) {
  (void)connection_->Send(reply);
}

std::string GdbServer::Error(const absl::Status& status) {
  std::fprintf(stderr, "sigvisor: gdb: %s\n", std::string(status.message()).c_str());
  if (!error_messages_) return "E01";
  std::string text(status.message());
  for (char& c : text) {
    if (c == '$' || c == '#' || c == '}' || c == '*') c = ' ';
  }
  return "E." + text;
}

std::string GdbServer::Handle(const std::string& packet, std::optional<Action>& action) {
  if (packet.empty()) return "";
  const char kind = packet[0];
  const std::string_view args = std::string_view(packet).substr(1);
  switch (kind) {
    case '?': return last_stop_;
    case 'g': {
      absl::StatusOr<std::vector<uint8_t>> regs = target_.ReadRegisters();
      return regs.ok() ? HexEncode(*regs) : Error(regs.status());
    }
    case 'G': {
      std::optional<std::vector<uint8_t>> raw = HexDecode(args);
      if (!raw) return "E01";
      absl::Status s = target_.WriteRegisters(*raw);
      return s.ok() ? "OK" : Error(s);
    }
    case 'p': {
      std::optional<uint64_t> n = ParseHex(args);
      if (!n) return "E01";
      absl::StatusOr<std::vector<uint8_t>> value = target_.ReadRegister(static_cast<int>(*n));
      return value.ok() ? HexEncode(*value) : Error(value.status());
    }
    case 'P': {
      const size_t eq = args.find('=');
      if (eq == std::string_view::npos) return "E01";
      std::optional<uint64_t> n = ParseHex(args.substr(0, eq));
      std::optional<std::vector<uint8_t>> raw = HexDecode(args.substr(eq + 1));
      if (!n || !raw) return "E01";
      absl::Status s = target_.WriteRegister(static_cast<int>(*n), *raw);
      return s.ok() ? "OK" : Error(s);
    }
    case 'm': {
      auto range = AddressLength(args);
      if (!range) return "E01";
      absl::StatusOr<std::vector<uint8_t>> bytes =
          target_.ReadMemory(range->first, std::min<uint64_t>(range->second, kMaxMemoryRead));
      if (!bytes.ok()) return "E14";  // EFAULT: gdb says "Cannot access memory"
      return HexEncode(*bytes);
    }
    case 'M':
    case 'X': {
      const size_t colon = args.find(':');
      if (colon == std::string_view::npos) return "E01";
      auto range = AddressLength(args.substr(0, colon));
      if (!range) return "E01";
      std::vector<uint8_t> data;
      if (kind == 'M') {
        std::optional<std::vector<uint8_t>> raw = HexDecode(args.substr(colon + 1));
        if (!raw) return "E01";
        data = std::move(*raw);
      } else {
        data = UnescapeBinary(args.substr(colon + 1));
      }
      if (data.size() != range->second) return "E01";
      if (data.empty()) return "OK";
      absl::Status s = target_.WriteMemory(range->first, data);
      return s.ok() ? "OK" : "E14";
    }
    case 'c':
    case 's':
    case 'C':
    case 'S': {
      if (!refused_.empty()) return RefuseToResume();
      std::string_view rest = args;
      if (kind == 'C' || kind == 'S') {  // a signal number first: ignored
        const size_t semi = rest.find(';');
        rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      }
      if (!rest.empty()) {
        std::optional<uint64_t> pc = ParseHex(rest);
        if (!pc) return "E01";
        if (absl::Status s = target_.SetPc(*pc); !s.ok()) return Error(s);
      }
      action = (kind == 'c' || kind == 'C') ? Action::kContinue : Action::kStep;
      return "";
    }
    case 'D':
      refused_.clear();
      action = Action::kDetach;
      return "OK";
    case 'k':
      action = Action::kKill;
      return "";
    case 'H':
    case 'T':
      return "OK";
    case 'Z':
    case 'z':
      return HandleBreakpoint(packet);
    case 'q':
      return HandleQuery(packet);
    case 'Q':
      if (packet == "QStartNoAckMode") return "OK";
      return "";
    case 'v':
      if (packet == "vCont?") return "vCont;c;C;s;S";
      if (StartsWith(packet, "vCont;")) {
        std::string reply = HandleVCont(packet, action);
        if (action && !refused_.empty()) {
          action.reset();
          return RefuseToResume();
        }
        return reply;
      }
      if (StartsWith(packet, "vKill")) {
        action = Action::kKill;
        return "OK";
      }
      return "";  // vMustReplyEmpty and everything else: not supported
    default: return "";
  }
}

std::string GdbServer::HandleVCont(const std::string& packet, std::optional<Action>& action) {
  // vCont;ACTION[:THREAD][;ACTION[:THREAD]]...: one vCPU, so the first action that
  // names it (or none) applies.
  for (std::string_view item : Split(std::string_view(packet).substr(6), ';')) {
    if (item.empty()) continue;
    const char what = item[0];
    if (what == 'c' || what == 'C') {
      action = Action::kContinue;
      return "";
    }
    if (what == 's' || what == 'S') {
      action = Action::kStep;
      return "";
    }
    if (what == 't') return "OK";  // stop: it is stopped already
  }
  return "E01";
}

std::string GdbServer::RefuseToResume() {
  for (const auto& [key, why] : refused_) {
    const std::string line = absl::StrCat("sigvisor: refused: ", why,
                                          "; the guest does not run while it is set: delete it\n");
    (void)connection_->Send(
        "O" + HexEncode({reinterpret_cast<const uint8_t*>(line.data()), line.size()}));
  }
  return "T05thread:01;";  // stopped where it was
}

std::string GdbServer::HandleBreakpoint(const std::string& packet) {
  // Z TYPE,ADDR,KIND (conditions after ';' are ignored).
  const std::string_view body = std::string_view(packet).substr(1, packet.find(';') - 1);
  std::vector<std::string_view> parts = Split(body, ',');
  if (parts.size() < 3) return "E01";
  std::optional<uint64_t> type = ParseHex(parts[0]);
  std::optional<uint64_t> address = ParseHex(parts[1]);
  std::optional<uint64_t> kind = ParseHex(parts[2]);
  if (!type || !address || !kind || *type > 4) return "E01";
  const BreakType t = static_cast<BreakType>(*type);
  const std::string key(body);
  if (packet[0] == 'z' && refused_.erase(key) != 0) return "OK";  // it was never inserted
  absl::Status s = packet[0] == 'Z'
                       ? target_.InsertBreakpoint(t, *address, static_cast<int>(*kind))
                       : target_.RemoveBreakpoint(t, *address, static_cast<int>(*kind));
  if (s.code() == absl::StatusCode::kUnimplemented) return "";  // gdb then does not use it
  if (packet[0] == 'Z' && s.code() == absl::StatusCode::kFailedPrecondition && !error_messages_) {
    std::fprintf(stderr, "sigvisor: gdb: %s\n", std::string(s.message()).c_str());
    refused_[key] = std::string(s.message());
    return "OK";
  }
  return s.ok() ? "OK" : Error(s);
}

std::string GdbServer::HandleQuery(const std::string& packet) {
  if (StartsWith(packet, "qSupported")) {
    error_messages_ = packet.find("error-message+") != std::string::npos;
    return absl::StrCat("PacketSize=", absl::Hex(kPacketSize),
                        ";qXfer:features:read+;swbreak+;hwbreak+;vContSupported+;"
                        "QStartNoAckMode+",
                        error_messages_ ? ";error-message+" : "");
  }
  if (packet == "qAttached" || StartsWith(packet, "qAttached:")) return "1";
  if (packet == "qC") return "QC1";
  if (packet == "qfThreadInfo") return "m1";
  if (packet == "qsThreadInfo") return "l";
  if (StartsWith(packet, "qThreadExtraInfo")) {
    const std::string name = "vCPU 0";
    return HexEncode({reinterpret_cast<const uint8_t*>(name.data()), name.size()});
  }
  if (StartsWith(packet, "qSymbol")) return "OK";
  constexpr std::string_view kTargetXml = "qXfer:features:read:target.xml:";
  if (StartsWith(packet, kTargetXml)) {
    auto range = AddressLength(std::string_view(packet).substr(kTargetXml.size()));
    if (!range) return "E01";
    const std::string xml = target_.TargetXml();
    if (range->first >= xml.size()) return "l";
    const std::string_view chunk = std::string_view(xml).substr(range->first, range->second);
    const bool last = range->first + chunk.size() >= xml.size();
    return (last ? "l" : "m") +
           EscapeBinary({reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size()});
  }
  if (StartsWith(packet, "qXfer:")) return "E00";
  return "";
}

}  // namespace sigvisor::gdb
