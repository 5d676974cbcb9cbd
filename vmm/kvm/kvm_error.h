// absl::Status for a failed KVM ioctl or syscall: names the call and the errno.
#ifndef SIGVISOR_VMM_KVM_KVM_ERROR_H_
#define SIGVISOR_VMM_KVM_KVM_ERROR_H_

#include <cerrno>
#include <cstring>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sigvisor {

// `what` failed with `err` (an errno): "KVM_CREATE_VM: Too many open files (errno 24)".
inline absl::Status ErrnoError(std::string_view what, int err) {
  std::string message = absl::StrFormat("%s: %s (errno %d)", what, strerror(err), err);
  switch (err) {
    case ENOENT: return absl::NotFoundError(message);
    case EACCES:
    case EPERM: return absl::PermissionDeniedError(message);
    case ENOMEM:
    case EMFILE:
    case ENFILE: return absl::ResourceExhaustedError(message);
    case EINVAL: return absl::InvalidArgumentError(message);
    case EINTR: return absl::AbortedError(message);
    default: return absl::InternalError(message);
  }
}

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_KVM_KVM_ERROR_H_
