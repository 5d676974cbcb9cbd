/* Self-checking tests of the kernel's signal and process semantics, run as
 * `workload=selftest case=NAME` (or case=all). Each prints "PASS NAME" or
 * "FAIL NAME: why"; the return value is the number of failures. */
#ifndef SIGVISOR_GUEST_KIT_USER_SELFTEST_H_
#define SIGVISOR_GUEST_KIT_USER_SELFTEST_H_

int selftest_main(const char *args);
/* The helper processes the tests spawn (args "role=..."). */
int selftest_child(const char *role, const char *args);

#endif /* SIGVISOR_GUEST_KIT_USER_SELFTEST_H_ */
