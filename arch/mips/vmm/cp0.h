// Coprocessor 0 of the emulated MIPS32r2 core (a 74Kf as QEMU's `-cpu 74Kf` shows
// it): register numbers, the bits the interpreter interprets, exception codes and
// the fixed identification values of docs/mips-platform.md.
#ifndef SIGVISOR_ARCH_MIPS_VMM_CP0_H_
#define SIGVISOR_ARCH_MIPS_VMM_CP0_H_

#include <cstdint>

namespace sigvisor::mips {

// CP0 register numbers (the `rd` field of mfc0/mtc0; the select is separate).
enum Cp0Reg : uint32_t {
  kCp0Index = 0,
  kCp0Random = 1,
  kCp0EntryLo0 = 2,
  kCp0EntryLo1 = 3,
  kCp0Context = 4,  // select 2: UserLocal
  kCp0PageMask = 5,
  kCp0Wired = 6,
  kCp0HwrEna = 7,
  kCp0BadVAddr = 8,
  kCp0Count = 9,
  kCp0EntryHi = 10,
  kCp0Compare = 11,
  kCp0Status = 12,
  kCp0Cause = 13,
  kCp0Epc = 14,
  kCp0PrId = 15,  // select 1: EBase
  kCp0Config = 16,
  kCp0LlAddr = 17,
  kCp0ErrorEpc = 30,
};

// Status.
inline constexpr uint32_t kStatusIE = 1u << 0;
inline constexpr uint32_t kStatusEXL = 1u << 1;
inline constexpr uint32_t kStatusERL = 1u << 2;
inline constexpr uint32_t kStatusKsuMask = 3u << 3;
inline constexpr uint32_t kStatusImShift = 8;
inline constexpr uint32_t kStatusBEV = 1u << 22;
inline constexpr uint32_t kStatusCU0 = 1u << 28;
// What mtc0 may change: CU3/CU2/CU0 (CU1 stays 0: there is no FPU), RP, FR, RE, BEV,
// IM, KSU, ERL, EXL, IE.
inline constexpr uint32_t kStatusWritable = 0xde40ff1fu;

// Cause.
inline constexpr uint32_t kCauseBD = 1u << 31;
inline constexpr uint32_t kCauseTI = 1u << 30;
inline constexpr uint32_t kCauseCeShift = 28;
inline constexpr uint32_t kCauseIV = 1u << 23;
inline constexpr uint32_t kCauseIpShift = 8;
inline constexpr uint32_t kCauseIP2 = 1u << 10;  // hardware interrupt 0: the IPI device
inline constexpr uint32_t kCauseIP7 = 1u << 15;  // hardware interrupt 5: the timer
inline constexpr uint32_t kCauseSoftwareWritable = kCauseIV | (3u << kCauseIpShift);
inline constexpr uint32_t kCauseExcCodeMask = 0x1fu << 2;

// EntryHi / EntryLo / PageMask fields.
inline constexpr uint32_t kEntryHiAsidMask = 0xffu;
inline constexpr uint32_t kEntryHiVpn2Mask = 0xffffe000u;
inline constexpr uint32_t kEntryLoWritable = 0x3fffffffu;  // PFN 25:6, C, D, V, G
inline constexpr uint32_t kEntryLoG = 1u << 0;
inline constexpr uint32_t kEntryLoV = 1u << 1;
inline constexpr uint32_t kEntryLoD = 1u << 2;
inline constexpr uint32_t kPageMaskWritable = 0x1fffe000u;

// Exception codes (Cause.ExcCode).
enum class ExcCode : uint32_t {
  kInterrupt = 0,
  kTlbModified = 1,
  kTlbLoad = 2,   // TLBL: refill or invalid on a load or fetch
  kTlbStore = 3,  // TLBS
  kAddressLoad = 4,
  kAddressStore = 5,
  kInstructionBusError = 6,
  kDataBusError = 7,
  kSyscall = 8,
  kBreakpoint = 9,
  kReservedInstruction = 10,
  kCoprocessorUnusable = 11,
  kOverflow = 12,
  kTrap = 13,
};

// Identification and configuration (docs/mips-platform.md, "CPU").
inline constexpr uint32_t kPrId74Kf = 0x00019700u;
inline constexpr uint32_t kResetEBase = 0x80000000u;
inline constexpr uint32_t kEBaseWritable = 0x3ffff000u;
inline constexpr int kTlbEntries = 32;
// Config0: M (Config1 follows), AR = 1 (release 2), MT = 1 (standard TLB), little
// endian, K0 = 3 (cacheable). Only K0 is writable.
inline constexpr uint32_t kConfig0 = (1u << 31) | (1u << 10) | (1u << 7) | 3u;
inline constexpr uint32_t kConfig0Writable = 7u;
// Config1: M, MMUSize-1 = 31, I- and D-cache 256 sets x 32 bytes x 4 ways (IS = 2,
// IL = 4, IA = 3), FP = 0.
inline constexpr uint32_t kConfig1 = (1u << 31) | (31u << 25) | (2u << 22) | (4u << 19) |
                                     (3u << 16) | (2u << 13) | (4u << 10) | (3u << 7);
inline constexpr uint32_t kConfig2 = 1u << 31;  // M: Config3 follows
inline constexpr uint32_t kConfig3 = 1u << 13;  // ULRI: UserLocal implemented
inline constexpr uint32_t kICacheLineBytes = 32;

// HWREna bits rdhwr honours in user mode (the bit number is the hardware register).
inline constexpr uint32_t kHwrCpuNum = 0;
inline constexpr uint32_t kHwrSynciStep = 1;
inline constexpr uint32_t kHwrCc = 2;
inline constexpr uint32_t kHwrCcRes = 3;
inline constexpr uint32_t kHwrUserLocal = 29;
inline constexpr uint32_t kHwrEnaWritable = 0xfu | (1u << kHwrUserLocal);

// Count advances once every this many cycles (the 74Kf's CC rate; rdhwr CCRes).
inline constexpr uint32_t kCyclesPerCount = 2;

// Exception vectors (Status.BEV = 0 bases on EBase; BEV = 1 on the boot ROM).
inline constexpr uint32_t kVectorRefill = 0x000;
inline constexpr uint32_t kVectorGeneral = 0x180;
inline constexpr uint32_t kVectorInterrupt = 0x200;  // Cause.IV = 1
inline constexpr uint32_t kBootExceptionBase = 0xbfc00200u;

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_CP0_H_
