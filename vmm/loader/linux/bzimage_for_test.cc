#include "vmm/loader/linux/bzimage_for_test.h"

#include <algorithm>

namespace sigvisor::linux_boot::testing {

Data FakeVmlinux() {
  Data elf = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  for (int i = 0; i < 4000; ++i) elf.push_back(uint8_t(i % 251));
  return elf;
}

Data Build(const Spec& spec) {
  const size_t kernel = (size_t{spec.setup_sects == 0 ? 4u : spec.setup_sects} + 1) * 512;
  Data file(kernel + spec.payload_offset + spec.payload.size() + 0x100, 0);
  file[0x1f1] = spec.setup_sects;
  Put<uint16_t>(file, 0x1fe, kBootFlag);
  file[0x200] = 0xeb;  // jmp short
  file[0x201] = spec.header_jump;
  Put<uint32_t>(file, 0x202, kHdrSMagic);
  Put<uint16_t>(file, 0x206, spec.version);
  file[0x211] = spec.loadflags;
  Put<uint32_t>(file, 0x22c, spec.initrd_addr_max);
  Put<uint32_t>(file, 0x230, spec.kernel_alignment);
  file[0x234] = spec.relocatable;
  Put<uint16_t>(file, 0x236, spec.xloadflags);
  Put<uint32_t>(file, 0x238, spec.cmdline_size);
  Put<uint32_t>(file, 0x248, spec.payload_offset);
  Put<uint32_t>(file, 0x24c, uint32_t(spec.payload.size()) + spec.extra_payload_length);
  Put<uint64_t>(file, 0x258, spec.pref_address);
  Put<uint32_t>(file, 0x260, spec.init_size);
  std::copy(spec.payload.begin(), spec.payload.end(), file.begin() + kernel + spec.payload_offset);
  return file;
}

}  // namespace sigvisor::linux_boot::testing
