/*
 * Open files and pipes. Pipes have a 4 KiB ring buffer; a reader blocks while the
 * pipe is empty and has writers, a writer while it is full and has readers, and a
 * write with no reader left gets EPIPE and SIGPIPE, as on Linux. Console writes are
 * handed to the VMM page by page without a copy (see sys_write's comment).
 */
#include "guest-kit/kernel/file.h"

#include "asm/paging.h"
#include "asm/uaccess.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/signal.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/uapi/syscalls.h"

#define PIPE_SIZE 4096
#define MAX_PIPES 8
#define MAX_OPEN_FILES 32

struct pipe {
  int in_use;
  int readers, writers;
  uint64_t head, tail; /* bytes written and read so far; head - tail is the fill */
  uint8_t buffer[PIPE_SIZE];
};

static struct pipe pipes[MAX_PIPES];
static struct file open_files[MAX_OPEN_FILES];
static struct file console = {FILE_CONSOLE, 1, 0};

static struct file *file_alloc(enum file_kind kind, struct pipe *pipe) {
  for (int i = 0; i < MAX_OPEN_FILES; i++) {
    if (open_files[i].refs) continue;
    open_files[i] = (struct file){kind, 1, pipe};
    return &open_files[i];
  }
  return 0;
}

static void file_put(struct file *file) {
  if (--file->refs > 0 || file == &console) return;
  struct pipe *pipe = file->pipe;
  if (file->kind == FILE_PIPE_READ) pipe->readers--;
  if (file->kind == FILE_PIPE_WRITE) pipe->writers--;
  if (!pipe->readers && !pipe->writers) pipe->in_use = 0;
  wake_up(pipe); /* the other end may now see EOF or EPIPE */
}

void files_init_console(struct file **files) {
  for (int fd = 0; fd < 3; fd++) {
    files[fd] = &console;
    console.refs++;
  }
}

void files_share(struct file **child, struct file *const *parent) {
  for (int fd = 0; fd < MAX_FILES; fd++) {
    child[fd] = parent[fd];
    if (child[fd]) child[fd]->refs++;
  }
}

void files_close_all(struct file **files) {
  for (int fd = 0; fd < MAX_FILES; fd++) {
    if (files[fd]) file_put(files[fd]);
    files[fd] = 0;
  }
}

static struct file *fd_file(int fd) {
  return fd >= 0 && fd < MAX_FILES ? current->files[fd] : 0;
}

/* Console output: the user buffer is not copied (each byte would cost several
 * emulated instructions at CPL0); its pages are translated and their guest-physical
 * addresses handed to the VMM, one hypercall per page. */
static int64_t console_write(uint64_t buf, uint64_t len) {
  if (!access_ok(buf, len)) return -EFAULT;
  uint64_t done = 0;
  while (done < len) {
    uint64_t va = buf + done;
    uint64_t chunk = PAGE_SIZE - (va & (PAGE_SIZE - 1));
    if (chunk > len - done) chunk = len - done;
    uintptr_t pa = paging_user_to_phys(current->page_table, va, 0);
    if (!pa) return done ? (int64_t)done : -EFAULT;
    hc_console_write((const char *)pa, chunk);
    done += chunk;
  }
  return (int64_t)done;
}

static int64_t pipe_read(struct pipe *pipe, uint64_t buf, uint64_t len) {
  if (!access_ok(buf, len)) return -EFAULT;
  if (len == 0) return 0;
  while (pipe->head == pipe->tail) {
    if (!pipe->writers) return 0; /* end of file */
    if (signal_pending(current)) return -EINTR;
    sleep_on(pipe);
  }
  uint64_t available = pipe->head - pipe->tail;
  uint64_t n = len < available ? len : available;
  uint64_t offset = pipe->tail % PIPE_SIZE;
  uint64_t first = n < PIPE_SIZE - offset ? n : PIPE_SIZE - offset;
  if (copy_to_user((void *)(uintptr_t)buf, pipe->buffer + offset, first) ||
      copy_to_user((void *)(uintptr_t)(buf + first), pipe->buffer, n - first))
    return -EFAULT;
  pipe->tail += n;
  wake_up(pipe);
  return (int64_t)n;
}

static int64_t pipe_write(struct pipe *pipe, uint64_t buf, uint64_t len) {
  if (!access_ok(buf, len)) return -EFAULT;
  uint64_t done = 0;
  while (done < len) {
    if (!pipe->readers) {
      send_signal_from_kernel(current, SIGPIPE, current->pid);
      return done ? (int64_t)done : -EPIPE;
    }
    uint64_t space = PIPE_SIZE - (pipe->head - pipe->tail);
    if (!space) {
      if (signal_pending(current)) return done ? (int64_t)done : -EINTR;
      sleep_on(pipe);
      continue;
    }
    uint64_t n = len - done < space ? len - done : space;
    uint64_t offset = pipe->head % PIPE_SIZE;
    uint64_t first = n < PIPE_SIZE - offset ? n : PIPE_SIZE - offset;
    if (copy_from_user(pipe->buffer + offset, (const void *)(uintptr_t)(buf + done), first) ||
        copy_from_user(pipe->buffer, (const void *)(uintptr_t)(buf + done + first), n - first))
      return done ? (int64_t)done : -EFAULT;
    pipe->head += n;
    done += n;
    wake_up(pipe);
  }
  return (int64_t)done;
}

int64_t sys_read(int fd, uint64_t buf, uint64_t len) {
  struct file *file = fd_file(fd);
  if (!file) return -EBADF;
  switch (file->kind) {
    case FILE_CONSOLE: return 0; /* no console input */
    case FILE_PIPE_READ: return pipe_read(file->pipe, buf, len);
    default: return -EBADF;
  }
}

int64_t sys_write(int fd, uint64_t buf, uint64_t len) {
  struct file *file = fd_file(fd);
  if (!file) return -EBADF;
  switch (file->kind) {
    case FILE_CONSOLE: return console_write(buf, len);
    case FILE_PIPE_WRITE: return pipe_write(file->pipe, buf, len);
    default: return -EBADF;
  }
}

int64_t sys_close(int fd) {
  struct file *file = fd_file(fd);
  if (!file) return -EBADF;
  current->files[fd] = 0;
  file_put(file);
  return 0;
}

static int fd_alloc(struct file *file) {
  for (int fd = 0; fd < MAX_FILES; fd++) {
    if (current->files[fd]) continue;
    current->files[fd] = file;
    return fd;
  }
  return -EMFILE;
}

int64_t sys_pipe(uint64_t fds) {
  if (!access_ok(fds, 2 * sizeof(int))) return -EFAULT;
  struct pipe *pipe = 0;
  for (int i = 0; i < MAX_PIPES && !pipe; i++)
    if (!pipes[i].in_use) pipe = &pipes[i];
  if (!pipe) return -ENOMEM;
  struct file *reader = file_alloc(FILE_PIPE_READ, pipe);
  struct file *writer = reader ? file_alloc(FILE_PIPE_WRITE, pipe) : 0;
  if (!writer) {
    if (reader) reader->refs = 0;
    return -ENOMEM;
  }
  pipe->in_use = 1;
  pipe->readers = pipe->writers = 1;
  pipe->head = pipe->tail = 0;
  int read_fd = fd_alloc(reader);
  int write_fd = read_fd < 0 ? read_fd : fd_alloc(writer);
  if (write_fd < 0) {
    if (read_fd >= 0) sys_close(read_fd);
    else file_put(reader);
    file_put(writer);
    return write_fd;
  }
  int err = 0;
  err |= __put_user(read_fd, (int *)(uintptr_t)fds);
  err |= __put_user(write_fd, (int *)(uintptr_t)fds + 1);
  return err;
}
