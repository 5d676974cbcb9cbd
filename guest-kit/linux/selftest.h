/* What Linux guarantees about signals, checked from user mode: `sigvisor_case=NAME`
 * or `all`. Prints "PASS NAME" or "FAIL NAME: why" per case; returns the failures. */
#ifndef SIGVISOR_GUEST_KIT_LINUX_SELFTEST_H_
#define SIGVISOR_GUEST_KIT_LINUX_SELFTEST_H_

int linux_selftest_cases(const char *which);

#endif /* SIGVISOR_GUEST_KIT_LINUX_SELFTEST_H_ */
