// tessera/abi.hpp: the plugin ABI's version, and how an object says which
// minor it was built for.
//
// Rules (docs/architecture.md, "Plugin ABI"):
//  * The major changes when a shipped interface or layout changes; the core
//    refuses a library built for another major.
//  * Within a major, interfaces only grow: a method added in minor N is
//    appended to its interface inside `#if TESSERA_ABI_MINOR >= N`. Every
//    object that crosses the boundary derives from AbiObject and reports the
//    minor its library was built for, so a caller (the core, or a plugin
//    calling another plugin's object) calls a minor-N method only when
//    `provides(object, N)`: an older library's vtable has no such slot.
//  * A library may be built for an older minor than this SDK offers, by
//    defining TESSERA_ABI_MINOR before including any SDK header (as
//    _WIN32_WINNT or GLIB_VERSION_MAX_ALLOWED work): it then sees and
//    implements only that minor's interfaces and runs on any core of the
//    same major at that minor or newer.
#pragma once

#include <cstdint>

// The interfaces this SDK describes.
#define TESSERA_ABI_MAJOR 3
#define TESSERA_SDK_ABI_MINOR 9

#ifndef TESSERA_ABI_MINOR
#define TESSERA_ABI_MINOR TESSERA_SDK_ABI_MINOR
#endif
#if TESSERA_ABI_MINOR > TESSERA_SDK_ABI_MINOR
#error "TESSERA_ABI_MINOR is newer than this SDK offers"
#endif

// The C++ standard library a library was built with. C++ types (std::string,
// std::vector, std::span, std::optional) cross the plugin boundary, so a plugin
// built against another standard library, or libstdc++'s pre-C++11 string ABI,
// would read them wrongly: the core compares this text and refuses the library.
#define TESSERA_STRINGIFY_IMPL(x) #x
#define TESSERA_STRINGIFY(x) TESSERA_STRINGIFY_IMPL(x)
#if defined(_LIBCPP_VERSION)
#define TESSERA_CXX_RUNTIME "libc++ (ABI v" TESSERA_STRINGIFY(_LIBCPP_ABI_VERSION) ")"
#elif defined(__GLIBCXX__)
#if _GLIBCXX_USE_CXX11_ABI
#define TESSERA_CXX_RUNTIME "libstdc++ (C++11 ABI)"
#else
#define TESSERA_CXX_RUNTIME "libstdc++ (pre-C++11 ABI)"
#endif
#else
#define TESSERA_CXX_RUNTIME "unknown C++ standard library"
#endif

// Only 64-bit targets: the layouts the static_asserts in the SDK pin are LP64's.
static_assert(sizeof(void*) == 8, "Tessera's plugin ABI is defined for 64-bit targets");

namespace tessera {

inline constexpr uint32_t kAbiMajor = TESSERA_ABI_MAJOR;
inline constexpr uint32_t kAbiMinor = TESSERA_ABI_MINOR;

// Base of every object that crosses the plugin boundary.
class AbiObject {
 public:
  virtual ~AbiObject() = default;
  // The ABI minor of the library that made this object. Hidden visibility:
  // each library binds its own copy, so the answer is the maker's, even in a
  // library built without Tessera's version script.
  [[gnu::visibility("hidden")]] virtual uint32_t abi_minor() const noexcept { return TESSERA_ABI_MINOR; }
};

// Base of every object a plugin's factory makes (tessera/plugin.hpp). The
// concrete family interface derives from it with single, non-virtual
// inheritance, so the core may static_cast a PluginObject* made by a factory
// of family F to F's interface. Declared here, not in plugin.hpp, so that the
// interface headers need not pull in the plugin entry's Boost.DLL.
class PluginObject : public AbiObject {};

// Whether `object`'s library offers the methods added in ABI minor `minor`.
inline bool provides(const AbiObject& object, uint32_t minor) noexcept { return object.abi_minor() >= minor; }

}  // namespace tessera
