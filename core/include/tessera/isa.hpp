// tessera/isa.hpp: choosing a kernel's instruction set at run time, the one
// way every plugin does it (docs/kernels.md, "Instruction sets").
//
// A kernel that has faster versions for wider instruction sets is written in
// files compiled with that level's flags (CMake: tessera_isa_sources for a
// file written for one level, tessera_isa_variants for one file compiled once
// per level, each in its own namespace TESSERA_ISA_NAMESPACE), never with
// target attributes or target_clones. The code compiled once picks a level
// with best_isa_level() and calls that level's functions (a table per level,
// or isa_select() over one function's variants). So one build runs on any
// x86-64 and uses the widest instructions the CPU has; the tests run every
// level the CPU supports against the scalar one.
//
// TESSERA_ISA=scalar|avx2|avx512|avx512_vnni|amx caps the level (comparisons,
// tests of the narrower paths on a wide CPU); a level the CPU lacks is never chosen.
//
// amx is avx512_vnni plus Intel's AMX-INT8 tiles (Sapphire Rapids and later),
// which Linux hands out only on request (arch_prctl ARCH_REQ_XCOMP_PERM): the
// first cpu_supports(IsaLevel::amx) asks, once per process, and a refusal
// means the CPU is treated as lacking the level. tessera_isa_variants does not
// compile an amx copy (plain C++ gains nothing from tiles): its tables hold
// nullptr there and isa_select() takes avx512_vnni's variant.
#pragma once

// 1 where tessera_isa_variants compiles the x86-64 levels (avx2, avx512,
// avx512_vnni) besides scalar.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TESSERA_ISA_X86 1
#else
#define TESSERA_ISA_X86 0
#endif

#include <cstdlib>
#include <optional>
#include <string_view>

#if TESSERA_ISA_X86 && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tessera {

enum class IsaLevel : int {
  scalar = 0,       // portable C++ (baseline x86-64: SSE2), the reference
  avx2 = 1,         // AVX2 + FMA + F16C
  avx512 = 2,       // AVX-512 F/BW/VL, and the AVX2 set
  avx512_vnni = 3,  // as avx512, with VNNI (vpdpbusd)
  amx = 4,          // as avx512_vnni, with AMX-INT8 tiles the OS has granted
};
inline constexpr int kIsaLevelCount = 5;

constexpr std::string_view isa_level_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::scalar: return "scalar";
    case IsaLevel::avx2: return "avx2";
    case IsaLevel::avx512: return "avx512";
    case IsaLevel::avx512_vnni: return "avx512_vnni";
    case IsaLevel::amx: return "amx";
  }
  return "unknown";
}

constexpr std::optional<IsaLevel> parse_isa_level(std::string_view name) {
  for (int l = 0; l < kIsaLevelCount; ++l)
    if (isa_level_name(static_cast<IsaLevel>(l)) == name) return static_cast<IsaLevel>(l);
  return std::nullopt;
}

// Whether the CPU has AMX-TILE and AMX-INT8 (CPUID leaf 7: EDX bits 24, 25)
// and Linux lets this process use the tile data (XFEATURE_XTILEDATA, 18):
// asked once, the answer kept. The grant is per process, so threads started
// before or after it may all use the tiles.
inline bool amx_int8_granted() noexcept {
#if TESSERA_ISA_X86 && defined(__linux__)
  static const bool granted = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    if ((edx & (1u << 24)) == 0 || (edx & (1u << 25)) == 0) return false;
    constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
    unsigned long features = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &features) != 0) return false;
    return (features & (1ul << kXfeatureXtiledata)) != 0;
  }();
  return granted;
#else
  return false;
#endif
}

// Whether this CPU runs a level's instructions.
inline bool cpu_supports(IsaLevel level) noexcept {
#if TESSERA_ISA_X86
  // Every x86 CPU with AVX2 has F16C; clang's __builtin_cpu_supports does not
  // know "f16c" (GCC's does), so AVX2 + FMA stand for it.
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  switch (level) {
    case IsaLevel::scalar: return true;
    case IsaLevel::avx2: return avx2;
    case IsaLevel::avx512: return avx512;
    case IsaLevel::avx512_vnni: return avx512 && __builtin_cpu_supports("avx512vnni");
    case IsaLevel::amx: return avx512 && __builtin_cpu_supports("avx512vnni") && amx_int8_granted();
  }
  return false;
#else
  return level == IsaLevel::scalar;
#endif
}

// The widest level this CPU runs, capped by $TESSERA_ISA. Read once per library.
inline IsaLevel best_isa_level() noexcept {
  static const IsaLevel best = [] {
    int cap = kIsaLevelCount - 1;
    if (const char* env = std::getenv("TESSERA_ISA")) {
      if (const auto level = parse_isa_level(env)) cap = static_cast<int>(*level);
    }
    for (int l = cap; l > 0; --l)
      if (cpu_supports(static_cast<IsaLevel>(l))) return static_cast<IsaLevel>(l);
    return IsaLevel::scalar;
  }();
  return best;
}

// One function's variant for the best level: `variants` indexed by level;
// a level without a variant (nullptr) falls back to the next narrower one.
template <typename Fn>
Fn isa_select(const Fn (&variants)[kIsaLevelCount], IsaLevel level = best_isa_level()) noexcept {
  for (int l = static_cast<int>(level); l >= 0; --l)
    if (variants[l] != nullptr) return variants[l];
  return variants[0];
}

}  // namespace tessera

// The variants of function `name` that tessera_isa_variants compiled (each
// level's namespace isa_<level> in the current namespace), as the table
// isa_select() takes:
//   static const auto fn = tessera::isa_select<Fn>(TESSERA_ISA_TABLE(silu_mul_kernel));
// TESSERA_ISA_DECLARE(decl) declares one function in every level's namespace.
#if TESSERA_ISA_X86
#define TESSERA_ISA_TABLE(name) \
  {&isa_scalar::name, &isa_avx2::name, &isa_avx512::name, &isa_avx512_vnni::name, nullptr}
#define TESSERA_ISA_DECLARE(decl)      \
  namespace isa_scalar { decl; }       \
  namespace isa_avx2 { decl; }         \
  namespace isa_avx512 { decl; }       \
  namespace isa_avx512_vnni { decl; }
#else
#define TESSERA_ISA_TABLE(name) {&isa_scalar::name, nullptr, nullptr, nullptr, nullptr}
#define TESSERA_ISA_DECLARE(decl) \
  namespace isa_scalar { decl; }
#endif
