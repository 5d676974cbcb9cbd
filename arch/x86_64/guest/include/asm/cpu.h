/* cpu_init() and cpu_set_kernel_stack() for the arch-neutral kernel. */
#include "arch/x86_64/guest/cpu.h"
