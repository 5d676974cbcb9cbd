#include "vmm/app/images/embedded_images.h"

#include <map>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

// Each variant's image bytes, defined by the embedded_image() rules in BUILD.bazel.
#define SIGVISOR_SEED(key, old_value, new_value, seed, config)
#define SIGVISOR_VARIANT(symbol, name, ...)    \
  extern "C" const uint8_t symbol##_start[]; \
  extern "C" const uint8_t symbol##_end[];
#include "vmm/app/images/variant_table.inc"
#include "vmm/app/images/mips_variant_table.inc"
#undef SIGVISOR_SEED
#undef SIGVISOR_VARIANT

namespace sigvisor {
namespace {

std::span<const uint8_t> Between(const uint8_t* start, const uint8_t* end) {
  return {start, static_cast<size_t>(end - start)};
}

}  // namespace

std::span<const SeedSwitch> SeedSwitches(GuestArch arch) {
#define SIGVISOR_SEED(key, old_value, new_value, seed, config) \
  {key, old_value, new_value, seed, config},
#define SIGVISOR_VARIANT(symbol, name, ...)
  static const SeedSwitch kX86Seeds[] = {
#include "vmm/app/images/variant_table.inc"
  };
  static const SeedSwitch kMipsSeeds[] = {
#include "vmm/app/images/mips_variant_table.inc"
  };
#undef SIGVISOR_SEED
#undef SIGVISOR_VARIANT
  if (arch == GuestArch::kMips) return kMipsSeeds;
  return kX86Seeds;
}

std::span<const KernelVariant> KernelVariants(GuestArch arch) {
#define SIGVISOR_SEED(key, old_value, new_value, seed, config)
#define SIGVISOR_VARIANT(symbol, name, ...) \
  {name, {__VA_ARGS__}, Between(symbol##_start, symbol##_end), kArch},
  static const std::vector<KernelVariant> kX86Variants = [] {
    constexpr GuestArch kArch = GuestArch::kX86_64;
    return std::vector<KernelVariant>{
#include "vmm/app/images/variant_table.inc"
    };
  }();
  static const std::vector<KernelVariant> kMipsVariants = [] {
    constexpr GuestArch kArch = GuestArch::kMips;
    return std::vector<KernelVariant>{
#include "vmm/app/images/mips_variant_table.inc"
    };
  }();
#undef SIGVISOR_SEED
#undef SIGVISOR_VARIANT
  if (arch == GuestArch::kMips) return kMipsVariants;
  return kX86Variants;
}

bool IsSeedBuild(const KernelVariant& variant) {
  std::span<const SeedSwitch> seeds = SeedSwitches(variant.arch);
  for (size_t i = 0; i < seeds.size() && i < variant.values.size(); ++i) {
    if (!seeds[i].is_seed() && variant.values[i] != seeds[i].old_value) return false;
  }
  return true;
}

std::string DescribeVariant(const KernelVariant& variant) {
  std::vector<std::string> words;
  std::span<const SeedSwitch> seeds = SeedSwitches(variant.arch);
  for (size_t i = 0; i < seeds.size(); ++i) {
    // A setting at its default (debugreg=native) is what every build has: not said,
    // so the seed builds describe themselves as they always have.
    if (!seeds[i].is_seed() && variant.values[i] == seeds[i].old_value) continue;
    words.push_back(absl::StrFormat("%s=%s", seeds[i].key, variant.values[i]));
  }
  return absl::StrJoin(words, " ");
}

absl::StatusOr<const KernelVariant*> ResolveVariant(std::string_view spec, GuestArch arch) {
  std::span<const SeedSwitch> seeds = SeedSwitches(arch);
  std::vector<std::string_view> wanted;
  for (const SeedSwitch& seed : seeds) wanted.push_back(seed.old_value);

  std::vector<std::string_view> parts;
  for (size_t begin = 0;;) {
    size_t comma = spec.find(',', begin);
    parts.push_back(spec.substr(begin, comma - begin));
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  std::vector<std::string_view> given(seeds.size());  // each key's override, once
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string_view part = parts[i];
    if (i == 0 && (part == "baseline" || part == "accelerated")) {
      if (part == "accelerated") {  // every seed's change; settings stay at their default
        for (size_t s = 0; s < seeds.size(); ++s) {
          if (seeds[s].is_seed()) wanted[s] = seeds[s].new_value;
        }
      }
      continue;
    }
    size_t equals = part.find('=');
    std::string_view key = part.substr(0, equals);
    size_t index = 0;
    while (index < seeds.size() && seeds[index].key != key) ++index;
    if (equals == std::string_view::npos || index == seeds.size()) {
      std::vector<std::string> keys;
      for (const SeedSwitch& seed : seeds) keys.push_back(std::string(seed.key));
      return absl::InvalidArgumentError(absl::StrFormat(
          "--variant '%s': '%s' is not baseline, accelerated or key=value with a key of: %s",
          spec, part, absl::StrJoin(keys, ", ")));
    }
    std::string_view value = part.substr(equals + 1);
    if (value != seeds[index].old_value && value != seeds[index].new_value) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--variant '%s': %s takes %s or %s (%s), not '%s'", spec, key,
          seeds[index].old_value, seeds[index].new_value,
          seeds[index].is_seed() ? "seed " + std::string(seeds[index].seed) : "not a seed",
          value));
    }
    // A key given twice with different values: neither is the one meant.
    if (!given[index].empty() && given[index] != value) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--variant '%s': %s is given twice, as %s and as %s: give one", spec,
                          key, given[index], value));
    }
    given[index] = value;
    wanted[index] = value;
  }
  std::vector<std::string> built;
  for (const KernelVariant& variant : KernelVariants(arch)) {
    if (variant.values == wanted) return &variant;
    built.push_back(std::string(variant.name));
  }
  return absl::NotFoundError(absl::StrFormat(
      "--variant '%s' is not built (the built variants are: %s)", spec,
      absl::StrJoin(built, "; ")));
}

absl::StatusOr<ElfImage> ParseKernel(const KernelVariant& variant) {
  return ElfImage::Parse(std::vector<uint8_t>(variant.bytes.begin(), variant.bytes.end()));
}

}  // namespace sigvisor
