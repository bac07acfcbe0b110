// The table a kernel module exports to the runtime: one entry per instantiated kernel. Compiled
// before the kernel (entries_stub.h), so its names are reserved ones: a kernel may name its own
// types anything.
#pragma once

struct __emu_param {
  int is_pointer, size, pointee_size, pointee_const;
  char category;  // 'f' floating, 'i' signed integer, 'u' unsigned integer, '?' other
  const char* type_name;
};
struct __emu_entry {
  const char* name;
  void (*invoke)(void* const* args);
  int nparams;
  const __emu_param* params;
};
