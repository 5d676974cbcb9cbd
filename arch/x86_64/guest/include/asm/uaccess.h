/* The arch-neutral kernel includes "asm/uaccess.h"; on x86-64 it is uaccess.h. */
#include "arch/x86_64/guest/uaccess.h"
