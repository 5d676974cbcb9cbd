// A parsed, validated guest image: an ELF64 sigvisor image, or a Multiboot v1 kernel
// (ELF32 or ELF64, or any file whose Multiboot header carries address fields).
//
// The input is untrusted (a user-supplied file, or fuzz data), so Parse checks every
// offset, size and sum it uses against the buffer before touching it, and reports
// each problem as an absl::Status with a one-line message. Once Parse succeeds, every
// accessor is infallible: all ranges were validated up front.
//
// Accepted images: ELF64, little-endian, EM_X86_64, ET_EXEC, statically linked
// (no PT_INTERP), at least one PT_LOAD, PT_LOAD segments that lie inside the file,
// have p_filesz <= p_memsz, do not wrap around 2^64 and do not overlap in physical
// memory, and an entry point inside an executable PT_LOAD (by virtual address, or by
// physical address: a Linux vmlinux's e_entry is physical, startup_64's load address).
// Section headers are optional: an image with e_shoff == 0 loads, just without
// symbols or sections.
//
// Multiboot v1 kernels (multiboot.h): an ELF32 file (EM_386 or EM_X86_64) is
// accepted only when it carries a Multiboot header; its headers and symbols are
// widened to the ELF64 forms and checked the same way. A header with
// the address fields (flag bit 16) decides the load instead of the program headers,
// as QEMU does; then the file need not be ELF at all, and it has one segment.
//
// Ownership: the image bytes live in one immutable, shared heap buffer. ElfImage is
// cheap to copy and move, and every span it hands out (bytes(), segment file_bytes,
// section bytes) points into that buffer, so it stays valid for as long as any copy
// of the image is alive, including across moves.
#ifndef SIGVISOR_VMM_LOADER_ELF_IMAGE_H_
#define SIGVISOR_VMM_LOADER_ELF_IMAGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/loader/multiboot.h"
#include "vmm/loader/symbol_table.h"

namespace sigvisor {

// One PT_LOAD program header.
struct ElfSegment {
  uint64_t paddr = 0;  // where LoadElfImage copies it (guest-physical)
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t filesz = 0;  // file_bytes.size(); [filesz, memsz) is zero-filled (bss)
  uint32_t flags = 0;   // PF_R | PF_W | PF_X
  std::span<const uint8_t> file_bytes;  // into the image's shared buffer
};

// One SHT_PROGBITS section with SHF_EXECINSTR, for a disassembler scan.
struct ElfSection {
  std::string name;
  uint64_t vaddr = 0;
  std::span<const uint8_t> bytes;  // into the image's shared buffer
};

struct ElfParseOptions {
  // Also accept ET_DYN (PIE) and dynamically linked (PT_INTERP) images, as the
  // host's own binaries are. For tests and tools that only inspect an image
  // (symbols, sections); such an image is not bootable() and LoadElfImage refuses it.
  bool allow_host_binaries = false;
};

class ElfImage {
 public:
  // Parses and validates `bytes`, taking ownership of them.
  static absl::StatusOr<ElfImage> Parse(std::vector<uint8_t> bytes);
  static absl::StatusOr<ElfImage> Parse(std::vector<uint8_t> bytes,
                                        const ElfParseOptions& options);
  // An image of nothing: no bytes, segments, notes, symbols or sections, not bootable.
  // What a restore of a Linux kernel runs with: the snapshot holds the kernel as it ran,
  // and the file's hash, not its code, says it is the kernel that was saved.
  static ElfImage Empty();

  uint64_t entry() const { return entry_; }
  // e_type: ET_EXEC, or ET_DYN when parsed with allow_host_binaries.
  uint16_t type() const { return type_; }
  // A static ET_EXEC image, i.e. one that LoadElfImage may boot.
  bool bootable() const { return bootable_; }

  // The PT_LOAD segments, in program header order.
  const std::vector<ElfSegment>& segments() const { return segments_; }
  // Lowest p_paddr and highest p_paddr + p_memsz over the PT_LOAD segments.
  uint64_t load_begin() const { return load_begin_; }
  uint64_t load_end() const { return load_end_; }

  // The descriptor of the sigvisor ABI note (owner "sigvisor", type
  // SIGVISOR_NOTE_TYPE_ABI), found in PT_NOTE segments or SHT_NOTE sections;
  // nullopt if the image has none.
  std::optional<uint32_t> abi_version() const { return abi_version_; }

  // The most CPUs an SMP kernel runs on: the descriptor of its SMP note (owner
  // "sigvisor", type SIGVISOR_NOTE_TYPE_SMP, one uint32_t, 1 to SIGVISOR_MAX_CPUS); 0
  // when the image has none (a uniprocessor build: one vCPU only). A note of another
  // size, or with a count outside that range, fails Parse.
  uint32_t smp_max_cpus() const { return smp_max_cpus_; }

  // The 32-bit physical entry of the Xen PVH boot protocol: the note with owner "Xen",
  // type XEN_ELFNOTE_PHYS32_ENTRY (18), that Linux carries with CONFIG_PVH and QEMU and
  // Firecracker enter a vmlinux by. Its descriptor is 4 bytes, or 8 as x86-64 Linux
  // writes it (an address, which must be below 4 GiB). nullopt if the image has none.
  std::optional<uint32_t> pvh_entry() const { return pvh_entry_; }

  // The Multiboot v1 header, for a kernel booted the way `qemu -kernel` boots it;
  // nullopt for a sigvisor image.
  const std::optional<MultibootHeader>& multiboot() const { return multiboot_; }
  // 32 for an ELF32 container, 64 for ELF64, 0 for a non-ELF Multiboot kernel.
  int elf_class() const { return elf_class_; }

  // From the SHT_SYMTAB section; empty for a stripped image.
  const SymbolTable& symbols() const { return symbols_; }

  // The whole file.
  std::span<const uint8_t> bytes() const { return *bytes_; }

  // The SHT_PROGBITS + SHF_EXECINSTR sections, in section header order.
  std::vector<ElfSection> executable_sections() const { return executable_sections_; }

 private:
  explicit ElfImage(std::shared_ptr<const std::vector<uint8_t>> bytes)
      : bytes_(std::move(bytes)) {}
  void ComputeLoadRange();
  absl::StatusOr<ElfImage> ApplyMultibootAddressFields();

  std::shared_ptr<const std::vector<uint8_t>> bytes_;
  uint64_t entry_ = 0;
  uint16_t type_ = 0;
  bool bootable_ = false;
  std::vector<ElfSegment> segments_;
  uint64_t load_begin_ = 0;
  uint64_t load_end_ = 0;
  std::optional<uint32_t> abi_version_;
  uint32_t smp_max_cpus_ = 0;
  std::optional<uint32_t> pvh_entry_;
  std::optional<MultibootHeader> multiboot_;
  int elf_class_ = 64;
  SymbolTable symbols_;
  std::vector<ElfSection> executable_sections_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LOADER_ELF_IMAGE_H_
