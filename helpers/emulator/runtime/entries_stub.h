// Included before the kernel (so that none of the kernel's macros reach it), and used after it by
// the lines the emulator appends: turns each requested kernel instantiation into an __emu_entry.
#pragma once
#include "emu_entries.h"

namespace __emu_stub {
template <class T>
constexpr char category() {
  return std::is_floating_point<T>::value ? 'f'
         : std::is_integral<T>::value     ? (std::is_signed<T>::value ? 'i' : 'u')
                                          : '?';
}
template <class T>
const char* type_name() { return __PRETTY_FUNCTION__; }  // "... [with T = const float*]"

template <class P>
__emu_param param() {
  using V = std::remove_cv_t<P>;
  if constexpr (std::is_pointer<V>::value) {
    using E = std::remove_pointer_t<V>;
    using Sized = std::conditional_t<std::is_void<E>::value, char, E>;
    return {1, (int)sizeof(V), (int)sizeof(Sized), (int)std::is_const<E>::value,
            category<std::remove_cv_t<E>>(), type_name<P>()};
  } else {
    return {0, (int)sizeof(V), 0, 0, category<V>(), type_name<P>()};
  }
}
template <class... P, size_t... I>
void call(void (*f)(P...), void* const* a, std::index_sequence<I...>) {
  f(*static_cast<std::remove_reference_t<P>*>(a[I])...);
}
template <class... P>
void __invoke(void (*f)(P...), void* const* a) { call(f, a, std::index_sequence_for<P...>{}); }
template <class... P>
constexpr int __count(void (*)(P...)) { return (int)sizeof...(P); }
template <class... P>
const __emu_param* __params(void (*)(P...)) {
  static const __emu_param p[] = {param<P>()..., __emu_param{}};
  return p;
}
}  // namespace __emu_stub
