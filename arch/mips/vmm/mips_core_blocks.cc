// The block engine: MipsCore's fast path (predecode.h). It runs decoded ops block
// by block (a block ends after the delay slot of its first branch) with one
// indirect jump per instruction, and keeps no per-instruction books: the
// instructions a block retired are counted when it ends, and Count, the timer and a
// watched task's count are brought up to date when the engine returns.
//
// It is exact by construction, because it only ever runs what cannot go wrong:
//   - a block starts only when all of it fits before the budget and before the tick
//     at which the timer fires, so the timer fires after the same instruction, and
//     the engine returns with the interrupt still to be taken by Run;
//   - an op whose effect is more than registers and RAM is kBail: the engine stops
//     before it (pc, delay slot and counts exactly as if the reference interpreter had
//     run up to there) and Run's reference step runs it;
//   - a load or store whose page is not in the soft TLB, an add that overflows, an op
//     whose word changed since it was decoded: the same, or decoded again;
//   - nothing the engine runs can raise an exception, change the mode, the ASID,
//     Status, the interrupt lines or the soft TLB, so all of those hold for the
//     whole call.
#include <bit>
#include <cstring>

#include "arch/mips/vmm/mips_core.h"
#include "arch/mips/vmm/predecode.h"

namespace sigvisor::mips {
namespace {

constexpr uint32_t kPageOffsetMask = 0xfff;
constexpr uint32_t kFetchTagMask = ~kPageOffsetMask | 3u;

constexpr int32_t S(uint32_t v) { return static_cast<int32_t>(v); }

template <uint32_t kSize>
inline uint32_t Read(const uint8_t* p) {
  if constexpr (kSize == 1) {
    return *p;
  } else if constexpr (kSize == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  } else {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
}
template <uint32_t kSize>
inline void Write(uint8_t* p, uint32_t v) {
  if constexpr (kSize == 1) {
    *p = static_cast<uint8_t>(v);
  } else if constexpr (kSize == 2) {
    const uint16_t h = static_cast<uint16_t>(v);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &v, 4);
  }
}

}  // namespace

DecodedPage* MipsCore::DecodeNewPage(const uint8_t* host, const void* const* normal,
                                     const void* const* slot) {
  std::unique_ptr<DecodedPage>& page = decoded_pages_[static_cast<size_t>(host - ram_) >> 12];
  page = std::make_unique<DecodedPage>();
  DecodePage(*page, host, OpLabels{normal, slot});
  return page.get();
}

uint64_t MipsCore::RunBlocks(uint64_t limit, bool watched) {
#define SIGVISOR_MIPS_NORMAL_LABEL(name) &&L_##name,
#define SIGVISOR_MIPS_SLOT_LABEL(name) &&S_##name,
  static const void* const kNormal[] = {SIGVISOR_MIPS_OP_KINDS(SIGVISOR_MIPS_NORMAL_LABEL)};
  static const void* const kSlot[] = {SIGVISOR_MIPS_OP_KINDS(SIGVISOR_MIPS_SLOT_LABEL)};
#undef SIGVISOR_MIPS_NORMAL_LABEL
#undef SIGVISOR_MIPS_SLOT_LABEL

  const uint64_t tag_generation = tag_generation_;
  const SoftTlbEntry* const reads = read_cache_.data();
  const SoftTlbEntry* const writes = write_cache_.data();
  uint32_t pc = pc_;
  if ((pc & kFetchTagMask) != fetch_tag_) {
    // Not the fetch page: it becomes the fetch page when the soft TLB has it as RAM
    // (as Fetch would make it), else the reference step translates it.
    const SoftTlbEntry& e = reads[(pc >> 12) % kSoftTlbSize];
    if ((pc & 3) != 0 || e.tag != (tag_generation | (pc & ~kPageOffsetMask)) ||
        e.host == vdso_host_) {
      return 0;
    }
    fetch_tag_ = pc & ~kPageOffsetMask;
    fetch_host_ = e.host;
  }
  uint32_t* const g = gpr_.data();
  g[0] = 0;  // the reference step may have left an r0 write there
  // Mode and Status hold for the whole call: mfc0 and mtc0 need CP0 to be usable.
  const bool cp0_usable = !user_mode() || (status_ & kStatusCU0) != 0;

  uint32_t vbase = fetch_tag_;  // the current page's virtual base
  const uint8_t* code = fetch_host_;
  DecodedPage* page = decoded_pages_[static_cast<size_t>(code - ram_) >> 12].get();
  if (page == nullptr) page = DecodeNewPage(code, kNormal, kSlot);
  DecodedOp* ops = page->ops;
  DecodedOp* op = nullptr;
  DecodedOp* block_start = nullptr;
  uint64_t retired = 0;
  uint32_t target = 0;   // where the block goes after its delay slot
  bool in_slot = false;  // the op running is a delay slot

  // An op's offset in its page: the ops are 32 bytes, the words 4.
#define OFFSET(o) static_cast<uint32_t>((reinterpret_cast<uintptr_t>(o) - \
                                          reinterpret_cast<uintptr_t>(ops)) >> 3)
#define PC_OF(o) (vbase + OFFSET(o))
#define FRESH_OR_REDECODE()                                                   \
  do {                                                                        \
    uint32_t word_;                                                           \
    std::memcpy(&word_, code + OFFSET(op), 4);                                \
    if (__builtin_expect(word_ != op->raw, 0)) goto stale;                    \
  } while (0)
#define NEXT()            \
  do {                    \
    ++op;                 \
    goto* op->handler;    \
  } while (0)
  // An op with its two ends: on to the next op, or, as a delay slot, to the target.
#define OP(name, ...)                  \
  L_##name : FRESH_OR_REDECODE();      \
  { __VA_ARGS__ }                      \
  NEXT();                              \
  S_##name : FRESH_OR_REDECODE();      \
  { __VA_ARGS__ }                      \
  goto after_slot;
#define A g[op->s]
#define B g[op->t]
#define D g[op->d]
#define LOAD(size, ...)                                                          \
  {                                                                              \
    const uint32_t va = A + op->imm;                                             \
    const SoftTlbEntry& e = reads[(va >> 12) % kSoftTlbSize];                    \
    if (e.tag != (tag_generation | (va & (~kPageOffsetMask | (size - 1))))) {    \
      goto bail;                                                                 \
    }                                                                            \
    const uint32_t v = Read<size>(e.host + (va & kPageOffsetMask));              \
    __VA_ARGS__;                                                                 \
  }
#define STORE(size)                                                              \
  {                                                                              \
    const uint32_t va = A + op->imm;                                             \
    const SoftTlbEntry& e = writes[(va >> 12) % kSoftTlbSize];                   \
    if (e.tag != (tag_generation | (va & (~kPageOffsetMask | (size - 1))))) {    \
      goto bail;                                                                 \
    }                                                                            \
    Write<size>(e.host + (va & kPageOffsetMask), B);                             \
  }
  // lwl/lwr/swl/swr: the aligned word containing the address.
#define WORD(cache)                                                              \
  const uint32_t va = A + op->imm;                                               \
  const SoftTlbEntry& e = cache[(va >> 12) % kSoftTlbSize];                      \
  if (e.tag != (tag_generation | (va & ~kPageOffsetMask))) goto bail;            \
  uint8_t* const word = e.host + (va & kPageOffsetMask & ~3u);
  // A branch: `taken` decides the target; the delay slot runs either way.
#define BRANCH(taken, to)                                                        \
  {                                                                              \
    const uint32_t slot_pc_ = PC_OF(op) + 4;                                     \
    target = (taken) ? (to) : slot_pc_ + 4;                                      \
    goto slot;                                                                   \
  }
  // A branch-likely: not taken, the delay slot is skipped (and does not retire).
#define BRANCH_LIKELY(taken, to)                                                 \
  {                                                                              \
    const uint32_t slot_pc_ = PC_OF(op) + 4;                                     \
    if (taken) {                                                                 \
      target = (to);                                                             \
      goto slot;                                                                 \
    }                                                                            \
    retired += static_cast<uint64_t>(op - block_start) + 1;                      \
    pc = slot_pc_ + 4;                                                           \
    goto transfer;                                                               \
  }
#define REL (PC_OF(op) + 4 + op->imm)

block_begin:
  op = ops + ((pc & kPageOffsetMask) >> 2);
  if (op->block_len > limit - retired) goto out;
  block_start = op;
  goto* op->handler;

slot:
  in_slot = true;
  ++op;
  goto* op->slot_handler;

after_slot:
  in_slot = false;
  retired += static_cast<uint64_t>(op - block_start) + 1;
  pc = target;
transfer:
  if ((pc & kFetchTagMask) == vbase) goto block_begin;
  {
    // Another page: on without leaving when the soft TLB has it as RAM (as Fetch
    // would make it the fetch page), else Run's reference step translates it.
    const SoftTlbEntry& e = reads[(pc >> 12) % kSoftTlbSize];
    if ((pc & 3) != 0 || e.tag != (tag_generation | (pc & ~kPageOffsetMask)) ||
        e.host == vdso_host_) {
      goto out;
    }
    vbase = pc & ~kPageOffsetMask;
    code = e.host;
    fetch_tag_ = vbase;
    fetch_host_ = code;
    page = decoded_pages_[static_cast<size_t>(code - ram_) >> 12].get();
    if (page == nullptr) page = DecodeNewPage(code, kNormal, kSlot);
    ops = page->ops;
    goto block_begin;
  }

stale:
  // The word changed since it was decoded (a store to code, from any core, or the
  // host's): decode it again and run it as it is now.
  RedecodeWord(*page, code, OFFSET(op) / 4, OpLabels{kNormal, kSlot});
  if (in_slot) goto* op->slot_handler;
  // Its block may now be longer than the one checked against the limit: start anew.
  retired += static_cast<uint64_t>(op - block_start);
  pc = PC_OF(op);
  goto block_begin;

L_Bail:
S_Bail:
  FRESH_OR_REDECODE();
bail:
  // Stop before this op: the reference interpreter runs it, from exactly here.
  retired += static_cast<uint64_t>(op - block_start);
  pc = PC_OF(op);
  if (in_slot) {
    pc_ = pc;
    npc_ = target;
    delay_slot_ = true;
    goto done;
  }
  goto out;

L_PageEnd:
S_PageEnd:  // (never a delay slot: a branch on the last word is kBail)
  retired += static_cast<uint64_t>(op - block_start);
  pc = vbase + 4096;
  goto transfer;

  OP(Nop, )
  OP(Sll, D = B << op->sa;)
  OP(Srl, D = B >> op->sa;)
  OP(Rotr, D = std::rotr(B, op->sa);)
  OP(Sra, D = static_cast<uint32_t>(S(B) >> op->sa);)
  OP(Sllv, D = B << (A & 31);)
  OP(Srlv, D = B >> (A & 31);)
  OP(Rotrv, D = std::rotr(B, static_cast<int>(A & 31));)
  OP(Srav, D = static_cast<uint32_t>(S(B) >> (A & 31));)
  OP(Movz, if (B == 0) D = A;)
  OP(Movn, if (B != 0) D = A;)
  OP(Mfhi, D = hi_;)
  OP(Mthi, hi_ = A;)
  OP(Mflo, D = lo_;)
  OP(Mtlo, lo_ = A;)
  OP(Mult, {
    const int64_t p = int64_t{S(A)} * int64_t{S(B)};
    lo_ = static_cast<uint32_t>(p);
    hi_ = static_cast<uint32_t>(static_cast<uint64_t>(p) >> 32);
  })
  OP(Multu, {
    const uint64_t p = uint64_t{A} * uint64_t{B};
    lo_ = static_cast<uint32_t>(p);
    hi_ = static_cast<uint32_t>(p >> 32);
  })
  OP(Div, {
    const uint32_t a = A, b = B;
    if (b == 0) {  // unpredictable: HI/LO stay as they were
    } else if (a == 0x80000000u && b == 0xffffffffu) {
      lo_ = 0x80000000u;
      hi_ = 0;
    } else {
      lo_ = static_cast<uint32_t>(S(a) / S(b));
      hi_ = static_cast<uint32_t>(S(a) % S(b));
    }
  })
  OP(Divu, {
    const uint32_t a = A, b = B;
    if (b != 0) {
      lo_ = a / b;
      hi_ = a % b;
    }
  })
  OP(Add, {
    int32_t r;
    if (__builtin_add_overflow(S(A), S(B), &r)) goto bail;  // the reference raises it
    D = static_cast<uint32_t>(r);
  })
  OP(Addu, D = A + B;)
  OP(Sub, {
    int32_t r;
    if (__builtin_sub_overflow(S(A), S(B), &r)) goto bail;
    D = static_cast<uint32_t>(r);
  })
  OP(Subu, D = A - B;)
  OP(And, D = A & B;)
  OP(Or, D = A | B;)
  OP(Xor, D = A ^ B;)
  OP(Nor, D = ~(A | B);)
  OP(Slt, D = S(A) < S(B) ? 1 : 0;)
  OP(Sltu, D = A < B ? 1 : 0;)
  OP(Addi, {
    int32_t r;
    if (__builtin_add_overflow(S(A), S(op->imm), &r)) goto bail;
    D = static_cast<uint32_t>(r);
  })
  OP(Addiu, D = A + op->imm;)
  OP(Slti, D = S(A) < S(op->imm) ? 1 : 0;)
  OP(Sltiu, D = A < op->imm ? 1 : 0;)
  OP(Andi, D = A & op->imm;)
  OP(Ori, D = A | op->imm;)
  OP(Xori, D = A ^ op->imm;)
  OP(Lui, D = op->imm;)
  OP(Mul, D = static_cast<uint32_t>(int64_t{S(A)} * int64_t{S(B)});)
  OP(Madd, {
    const uint64_t acc = (uint64_t{hi_} << 32) | lo_;
    const uint64_t r = acc + static_cast<uint64_t>(int64_t{S(A)} * int64_t{S(B)});
    lo_ = static_cast<uint32_t>(r);
    hi_ = static_cast<uint32_t>(r >> 32);
  })
  OP(Maddu, {
    const uint64_t acc = (uint64_t{hi_} << 32) | lo_;
    const uint64_t r = acc + uint64_t{A} * uint64_t{B};
    lo_ = static_cast<uint32_t>(r);
    hi_ = static_cast<uint32_t>(r >> 32);
  })
  OP(Msub, {
    const uint64_t acc = (uint64_t{hi_} << 32) | lo_;
    const uint64_t r = acc - static_cast<uint64_t>(int64_t{S(A)} * int64_t{S(B)});
    lo_ = static_cast<uint32_t>(r);
    hi_ = static_cast<uint32_t>(r >> 32);
  })
  OP(Msubu, {
    const uint64_t acc = (uint64_t{hi_} << 32) | lo_;
    const uint64_t r = acc - uint64_t{A} * uint64_t{B};
    lo_ = static_cast<uint32_t>(r);
    hi_ = static_cast<uint32_t>(r >> 32);
  })
  OP(Clz, D = static_cast<uint32_t>(std::countl_zero(A));)
  OP(Clo, D = static_cast<uint32_t>(std::countl_one(A));)
  OP(Ext, D = (A >> op->sa) & op->imm;)
  OP(Ins, D = (B & ~op->imm) | ((A << op->sa) & op->imm);)
  OP(Wsbh, D = ((B & 0x00ff00ffu) << 8) | ((B >> 8) & 0x00ff00ffu);)
  OP(Seb, D = static_cast<uint32_t>(static_cast<int8_t>(B));)
  OP(Seh, D = static_cast<uint32_t>(static_cast<int16_t>(B));)
  OP(Mfc0, {
    if (!cp0_usable) goto bail;  // the reference raises Coprocessor Unusable
    D = ReadCp0(op->imm, op->sa);
  })
  OP(Mtc0, {
    if (!cp0_usable) goto bail;
    WriteCp0(op->imm, op->sa, B);
  })
  OP(Lb, LOAD(1, D = static_cast<uint32_t>(static_cast<int8_t>(v))))
  OP(Lh, LOAD(2, D = static_cast<uint32_t>(static_cast<int16_t>(v))))
  OP(Lw, LOAD(4, D = v))
  OP(Lbu, LOAD(1, D = v))
  OP(Lhu, LOAD(2, D = v))
  OP(Lwl, {
    WORD(reads)
    const uint32_t shift = 8 * (3 - (va & 3));
    const uint32_t keep = shift == 0 ? 0 : (0xffffffffu >> (32 - shift));
    D = (Read<4>(word) << shift) | (B & keep);
  })
  OP(Lwr, {
    WORD(reads)
    const uint32_t shift = 8 * (va & 3);
    const uint32_t keep = shift == 0 ? 0 : ~(0xffffffffu >> shift);
    D = (Read<4>(word) >> shift) | (B & keep);
  })
  OP(Sb, STORE(1))
  OP(Sh, STORE(2))
  OP(Sw, STORE(4))
  OP(Swl, {
    WORD(writes)
    const uint32_t shift = 8 * (3 - (va & 3));
    const uint32_t keep = shift == 0 ? 0 : ~(0xffffffffu >> shift);
    Write<4>(word, (Read<4>(word) & keep) | (B >> shift));
  })
  OP(Swr, {
    WORD(writes)
    const uint32_t shift = 8 * (va & 3);
    const uint32_t keep = shift == 0 ? 0 : (0xffffffffu >> (32 - shift));
    Write<4>(word, (Read<4>(word) & keep) | (B << shift));
  })

  // Branches. A branch in a delay slot is kBail, so their slot labels only say so.
#define BRANCH_OP(name, ...) \
  S_##name : goto L_Bail;    \
  L_##name : FRESH_OR_REDECODE(); \
  __VA_ARGS__
  // The and-link forms write ra whether or not they branch, after reading rs.
#define AND_LINK(branch, cond) \
  {                            \
    const uint32_t a = A;      \
    g[31] = PC_OF(op) + 8;     \
    branch(cond, REL)          \
  }
  BRANCH_OP(Beq, BRANCH(A == B, REL))
  BRANCH_OP(Bne, BRANCH(A != B, REL))
  BRANCH_OP(Blez, BRANCH(S(A) <= 0, REL))
  BRANCH_OP(Bgtz, BRANCH(S(A) > 0, REL))
  BRANCH_OP(Beql, BRANCH_LIKELY(A == B, REL))
  BRANCH_OP(Bnel, BRANCH_LIKELY(A != B, REL))
  BRANCH_OP(Blezl, BRANCH_LIKELY(S(A) <= 0, REL))
  BRANCH_OP(Bgtzl, BRANCH_LIKELY(S(A) > 0, REL))
  BRANCH_OP(Bltz, BRANCH(S(A) < 0, REL))
  BRANCH_OP(Bgez, BRANCH(S(A) >= 0, REL))
  BRANCH_OP(Bltzl, BRANCH_LIKELY(S(A) < 0, REL))
  BRANCH_OP(Bgezl, BRANCH_LIKELY(S(A) >= 0, REL))
  BRANCH_OP(Bltzal, AND_LINK(BRANCH, S(a) < 0))
  BRANCH_OP(Bgezal, AND_LINK(BRANCH, S(a) >= 0))
  BRANCH_OP(Bltzall, AND_LINK(BRANCH_LIKELY, S(a) < 0))
  BRANCH_OP(Bgezall, AND_LINK(BRANCH_LIKELY, S(a) >= 0))
  BRANCH_OP(J, BRANCH(true, ((PC_OF(op) + 4) & 0xf0000000u) | op->imm))
  BRANCH_OP(Jal, {
    g[31] = PC_OF(op) + 8;
    BRANCH(true, ((PC_OF(op) + 4) & 0xf0000000u) | op->imm)
  })
  BRANCH_OP(Jr, BRANCH(true, A))
  BRANCH_OP(Jalr, {
    const uint32_t to = A;  // before the link, which may overwrite rs
    D = PC_OF(op) + 8;
    BRANCH(true, to)
  })

#undef OFFSET
#undef PC_OF
#undef FRESH_OR_REDECODE
#undef NEXT
#undef OP
#undef A
#undef B
#undef D
#undef LOAD
#undef STORE
#undef WORD
#undef BRANCH
#undef BRANCH_LIKELY
#undef REL
#undef AND_LINK
#undef BRANCH_OP

out:
  pc_ = pc;
  npc_ = pc + 4;
  delay_slot_ = false;
done:
  g[0] = 0;
  counters_.instructions += retired;
  if (watched) watched_user_instructions_ += retired;
  ticks_ += retired;
  if (ticks_ == timer_at_) FireTimer();
  return retired;
}

}  // namespace sigvisor::mips
