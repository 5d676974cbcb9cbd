/* User address spaces for the arch-neutral kernel: paging_new_address_space(),
 * paging_map_user(), paging_user_to_phys(), PAGE_USER_RO/RW, PAGE_NX. */
#include "arch/x86_64/guest/paging.h"
