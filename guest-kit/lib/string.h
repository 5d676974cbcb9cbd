/* Freestanding string and memory helpers shared by the guest kernel and user programs. */
#ifndef SIGVISOR_GUEST_KIT_LIB_STRING_H_
#define SIGVISOR_GUEST_KIT_LIB_STRING_H_

#include <stddef.h>

void *memset(void *dst, int value, size_t len);
void *memcpy(void *dst, const void *src, size_t len);
int memcmp(const void *a, const void *b, size_t len);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t len);

#endif /* SIGVISOR_GUEST_KIT_LIB_STRING_H_ */
