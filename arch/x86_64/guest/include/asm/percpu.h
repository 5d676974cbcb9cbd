/* this_cpu_read()/this_cpu_write() for the arch-neutral kernel (seed 001). */
#include "arch/x86_64/guest/percpu.h"
