/* Open files: the console and pipe ends, shared by reference count. */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_FILE_H_
#define SIGVISOR_GUEST_KIT_KERNEL_FILE_H_

#include <stdint.h>

#define MAX_FILES 8

enum file_kind { FILE_CONSOLE = 1, FILE_PIPE_READ, FILE_PIPE_WRITE };

struct pipe;

struct file {
  enum file_kind kind;
  int refs;
  struct pipe *pipe;
};

/* fd 0-2 on the console. */
void files_init_console(struct file **files);
/* The child shares every open file of the parent. */
void files_share(struct file **child, struct file *const *parent);
void files_close_all(struct file **files);

int64_t sys_read(int fd, uint64_t buf, uint64_t len);
int64_t sys_write(int fd, uint64_t buf, uint64_t len);
int64_t sys_close(int fd);
int64_t sys_pipe(uint64_t fds);

#endif /* SIGVISOR_GUEST_KIT_KERNEL_FILE_H_ */
