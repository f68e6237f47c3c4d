// tessera/simd_clones.hpp: TESSERA_SIMD_CLONES, instruction-set dispatch for
// one function without a global -march.
//
// GCC and clang compile a function marked with it three times (AVX-512F,
// Haswell's AVX2 + FMA, baseline x86-64) and pick one when the library loads,
// so a plugin built for any x86-64 uses the wider vectors where the CPU has
// them and never runs an instruction it lacks. Elsewhere, and where
// TESSERA_NO_SIMD_CLONES is defined (the tests of the baseline paths), it
// expands to nothing.
//
// Keep marked functions in an anonymous namespace: GCC gives the ifunc
// resolver of an external target_clones function default visibility despite
// -fvisibility=hidden, and a plugin must export nothing but its entry.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TESSERA_NO_SIMD_CLONES)
#define TESSERA_SIMD_CLONES __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define TESSERA_SIMD_CLONES
#endif
