#include "runtime/util/file_privileges.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace distrt {

absl::Status DropFilePrivileges() {
  // capget/capset through syscall(2): glibc has no wrapper and libcap is not
  // worth a dependency for three bits.
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) {
    return absl::InternalError(absl::StrCat("capget: ", std::strerror(errno)));
  }
  for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER}) {
    data[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
  }
  if (syscall(SYS_capset, &header, data) != 0) {
    return absl::InternalError(absl::StrCat("capset: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace distrt
