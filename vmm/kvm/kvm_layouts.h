// C layouts of the KVM structures that end in a flexible array.
//
// The uapi headers declare those arrays with __DECLARE_FLEX_ARRAY, which wraps an
// empty struct: size 0 in C, size 1 in C++. Compiled as C++, sizeof(kvm_cpuid2),
// sizeof(kvm_msrs), sizeof(kvm_msr_list) and sizeof(kvm_stats_desc) grow, the array moves, and the ioctl
// numbers that encode those sizes stop matching the kernel's (EINVAL). sigvisor
// uses these fixed C layouts instead, with the ioctl numbers computed from them.
#ifndef SIGVISOR_VMM_KVM_KVM_LAYOUTS_H_
#define SIGVISOR_VMM_KVM_KVM_LAYOUTS_H_

#include <linux/kvm.h>

#include <cstdint>

namespace sigvisor {

// struct kvm_cpuid2 without its entries, which follow at byte 8.
struct KvmCpuid2Header {
  uint32_t nent;
  uint32_t padding;
};
static_assert(sizeof(KvmCpuid2Header) == 8);

// struct kvm_msrs without its entries, which follow at byte 8.
struct KvmMsrsHeader {
  uint32_t nmsrs;
  uint32_t pad;
};
static_assert(sizeof(KvmMsrsHeader) == 8);

// struct kvm_msr_list without its indices, which follow at byte 4.
struct KvmMsrListHeader {
  uint32_t nmsrs;
};
static_assert(sizeof(KvmMsrListHeader) == 4);

// struct kvm_stats_desc without its name, which follows at byte 16.
struct KvmStatsDescFixed {
  uint32_t flags;
  int16_t exponent;
  uint16_t size;
  uint32_t offset;
  uint32_t bucket_size;
};
static_assert(sizeof(KvmStatsDescFixed) == 16);

// struct kvm_xsave: the legacy 4 KiB XSAVE area, without the flexible `extra` that
// only KVM_GET_XSAVE2 fills (AMX).
struct KvmXsave {
  uint32_t region[1024];
};
static_assert(sizeof(KvmXsave) == 4096);

inline constexpr unsigned long kKvmGetSupportedCpuid = _IOWR(KVMIO, 0x05, KvmCpuid2Header);
inline constexpr unsigned long kKvmSetCpuid2 = _IOW(KVMIO, 0x90, KvmCpuid2Header);
inline constexpr unsigned long kKvmGetMsrIndexList = _IOWR(KVMIO, 0x02, KvmMsrListHeader);
inline constexpr unsigned long kKvmGetMsrs = _IOWR(KVMIO, 0x88, KvmMsrsHeader);
inline constexpr unsigned long kKvmSetMsrs = _IOW(KVMIO, 0x89, KvmMsrsHeader);
inline constexpr unsigned long kKvmGetXsave = _IOR(KVMIO, 0xa4, KvmXsave);
inline constexpr unsigned long kKvmSetXsave = _IOW(KVMIO, 0xa5, KvmXsave);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_KVM_KVM_LAYOUTS_H_
