/* struct pt_regs and user_mode() for the arch-neutral kernel. */
#include "arch/x86_64/guest/pt_regs.h"
