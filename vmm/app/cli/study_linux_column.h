// `sigvisor study ... --linux KERNEL`: each seed study's Linux column, traced on the
// study's host after its bench (vmm/app/study/linux_column.h says what it counts).
#ifndef SIGVISOR_VMM_APP_CLI_STUDY_LINUX_COLUMN_H_
#define SIGVISOR_VMM_APP_CLI_STUDY_LINUX_COLUMN_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "vmm/app/cli/options.h"
#include "vmm/app/launch/image.h"
#include "vmm/app/study/linux_column.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/symbol_table.h"

namespace sigvisor::cli {

class LinuxColumnTracer {
 public:
  // Loads the kernel and its kallsyms now, so that a bad --linux is refused before the
  // first run. Each trace's run (its Linux boot included) has the study's --timeout.
  static absl::StatusOr<LinuxColumnTracer> Load(const std::string& kernel,
                                                const StudyOptions& options);

  // Traces one op of each phase study `name` needs, in Linux and in the study's two
  // builds (`old_build`, `new_build`: their variant names), and makes its column. A Linux
  // trace that fails makes a column that says why; a build's, one whose builds' cells
  // are empty and say why. The study's own figures stand either way.
  study::LinuxColumn Column(std::string_view name, const std::string& old_build,
                            const std::string& new_build, const KvmSystem& kvm,
                            const HostInfo& host) const;

 private:
  LinuxColumnTracer(std::string kernel, const StudyOptions& options, launch::LoadedImage image,
                    std::shared_ptr<const SymbolTable> symbols)
      : kernel_(std::move(kernel)),
        options_(&options),
        image_(std::move(image)),
        symbols_(std::move(symbols)) {}

  std::string kernel_;
  const StudyOptions* options_;
  launch::LoadedImage image_;
  std::shared_ptr<const SymbolTable> symbols_;
};

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_STUDY_LINUX_COLUMN_H_
