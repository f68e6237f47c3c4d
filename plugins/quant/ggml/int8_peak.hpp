// int8_peak.hpp: how many 8-bit multiply-adds one core can issue per second
// with the instruction each level's kernels multiply with: the ceiling a
// prefill's products run against, as the read bandwidth is decode's
// (bench_quant_kernels Int8Peak, docs/kernels.md "Prefill against the
// multiply-add ceiling").
//
// Each loop keeps independent chains of the level's product in flight (more
// than its latency times its issue rate), on operands held in registers (for
// AVX2, weights from a 1 KiB ring in L1: see int8_peak_avx2.cpp), so it
// measures issue rate alone: no unpacking, no scales. A kernel can only come
// near it; the figure says how near.
#pragma once

#include <cstdint>

namespace tessera::ggml {

// Each runs `rounds` rounds of the loop and returns the multiply-adds done
// (u8 x i8 products summed into i32 lanes). Call only where the CPU has the
// level (force_isa_level / cpu_supports); amx only where Linux granted the tiles.
int64_t int8_peak_avx2(int64_t rounds);         // vpmaddubsw, vpmaddwd, vpaddd: 32 per three, 256-bit
int64_t int8_peak_avx512_vnni(int64_t rounds);  // vpdpbusd: 64 per instruction, 512-bit
int64_t int8_peak_amx(int64_t rounds);          // tdpbusd: 16 x 16 x 64 per instruction

}  // namespace tessera::ggml
