#include "guest-kit/lib/format.h"

#include <stdint.h>

struct sink {
  char *buf;
  size_t size;
  size_t len;
};

static void put(struct sink *s, char c) {
  if (s->len + 1 < s->size) s->buf[s->len] = c;
  s->len++;
}

static void put_number(struct sink *s, uint64_t value, unsigned base, int width, char pad,
                       int negative, int left) {
  char digits[24];
  int n = 0;
  do {
    unsigned d = (unsigned)(value % base);
    digits[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
    value /= base;
  } while (value);
  if (negative) {
    if (pad == '0') put(s, '-');
    width--;
  }
  if (!left)
    for (int i = n; i < width; i++) put(s, pad);
  if (negative && pad != '0') put(s, '-');
  for (int i = n; i;) put(s, digits[--i]);
  if (left)
    for (int i = n; i < width; i++) put(s, ' ');
}

/* The argument of an integer conversion with `longs` l (or z) modifiers: int, long,
 * long long. Where a long is 64 bits (x86-64) the last two are one case. */
#if __SIZEOF_LONG__ == 8
#define ARG_SIGNED(longs) ((longs) ? va_arg(args, int64_t) : va_arg(args, int))
#define ARG_UNSIGNED(longs) ((longs) ? va_arg(args, uint64_t) : va_arg(args, unsigned))
#else
#define ARG_SIGNED(longs)                                                            \
  ((longs) > 1 ? va_arg(args, int64_t) : (longs) ? (int64_t)va_arg(args, long)       \
                                                 : (int64_t)va_arg(args, int))
#define ARG_UNSIGNED(longs)                                                          \
  ((longs) > 1 ? va_arg(args, uint64_t) : (longs) ? (uint64_t)va_arg(args, unsigned long) \
                                                  : (uint64_t)va_arg(args, unsigned))
#endif

int format_v(char *buf, size_t size, const char *fmt, va_list args) {
  struct sink s = {buf, size, 0};
  for (; *fmt; fmt++) {
    if (*fmt != '%') {
      put(&s, *fmt);
      continue;
    }
    fmt++;
    char pad = ' ';
    int width = 0, longs = 0, alternate = 0, left = 0;
    for (;; fmt++) {
      if (*fmt == '0') pad = '0';
      else if (*fmt == '#') alternate = 1;
      else if (*fmt == '-') left = 1;
      else break;
    }
    if (left) pad = ' ';
    while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
    /* l: long, ll: long long, z: size_t (a long's size on both arches). */
    while (*fmt == 'l' || *fmt == 'z') longs++, fmt++;
    switch (*fmt) {
      case 'd':
      case 'i': {
        int64_t v = ARG_SIGNED(longs);
        put_number(&s, v < 0 ? -(uint64_t)v : (uint64_t)v, 10, width, pad, v < 0, left);
        break;
      }
      case 'u':
      case 'x': {
        uint64_t v = ARG_UNSIGNED(longs);
        if (*fmt == 'x' && alternate) {
          put(&s, '0');
          put(&s, 'x');
        }
        put_number(&s, v, *fmt == 'u' ? 10 : 16, width, pad, 0, left);
        break;
      }
      case 'p':
        put(&s, '0');
        put(&s, 'x');
        put_number(&s, (uint64_t)(uintptr_t)va_arg(args, void *), 16, width, pad, 0, left);
        break;
      case 's': {
        const char *str = va_arg(args, const char *);
        if (!str) str = "(null)";
        int n = 0;
        while (str[n]) n++;
        if (!left)
          for (int i = n; i < width; i++) put(&s, ' ');
        while (*str) put(&s, *str++);
        if (left)
          for (int i = n; i < width; i++) put(&s, ' ');
        break;
      }
      case 'c':
        put(&s, (char)va_arg(args, int));
        break;
      case '%':
        put(&s, '%');
        break;
      case '\0':
        fmt--;
        break;
      default:
        put(&s, '%');
        put(&s, *fmt);
        break;
    }
  }
  if (size) buf[s.len < size ? s.len : size - 1] = '\0';
  return (int)(s.len < size ? s.len : (size ? size - 1 : 0));
}

int format(char *buf, size_t size, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int n = format_v(buf, size, fmt, args);
  va_end(args);
  return n;
}
