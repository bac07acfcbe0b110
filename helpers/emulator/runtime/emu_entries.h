// The table a kernel module exports to the runtime: one entry per instantiated kernel.
#pragma once

struct EmuParam {
  int is_pointer, size, pointee_size, pointee_const;
  char category;  // 'f' floating, 'i' signed integer, 'u' unsigned integer, '?' other
  const char* type_name;
};
struct EmuEntry {
  const char* name;
  void (*invoke)(void* const* args);
  int nparams;
  const EmuParam* params;
};
