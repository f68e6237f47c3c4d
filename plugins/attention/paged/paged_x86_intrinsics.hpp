// paged_x86_intrinsics.hpp: what the AVX-512 and AVX2 loops of the paged
// kernel share (paged_block_ops_avx512.cpp, paged_block_ops_avx2.cpp): the
// intrinsics, and fast_exp's constants in the loops' namespace. Included
// only by files compiled for a wide level, and defines nothing.
#pragma once

#include "paged_block_ops_x86.hpp"

#if TESSERA_PAGED_X86

// GCC 12's AVX-512 intrinsics seed their unused masked-off operand with a
// self-initialized "undefined" vector, which -W(maybe-)uninitialized reports
// from the header's lines wherever the optimizer keeps it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <limits>

#include "tessera/fast_exp.hpp"

namespace tessera::plugins::paged_attention::x86 {

using fast_exp::kLn2Hi;
using fast_exp::kLn2Lo;
using fast_exp::kLog2e;
using fast_exp::kMinArg;
using fast_exp::kPoly;

}  // namespace tessera::plugins::paged_attention::x86

#endif  // TESSERA_PAGED_X86
