// repack.hpp: ggml rows -> the 8- and 16-row interleaved layouts of blocks.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "blocks.hpp"
#include "tessera/tensor.hpp"

namespace tessera::ggml {

// `rows` (a multiple of 8) rows of nb blocks each, ggml layout -> repacked.
// dst holds rows / 8 groups of nb blocks.
// Q4_0's paired groups (blocks.hpp), 8 or 16 rows: dst holds rows / R groups
// of R * nb * 18 bytes.
void repack_q4_0x8(const BlockQ4_0* src, int64_t rows, int64_t nb, void* dst);
void repack_q4_0x16(const BlockQ4_0* src, int64_t rows, int64_t nb, void* dst);
void repack_q4_1x8(const BlockQ4_1* src, int64_t rows, int64_t nb, BlockQ4_1x8* dst);
void repack_q8_0x8(const BlockQ8_0* src, int64_t rows, int64_t nb, BlockQ8_0x8* dst);
// `rows` a multiple of 16; dst holds rows / 16 groups of nb blocks.
void repack_q4_1x16(const BlockQ4_1* src, int64_t rows, int64_t nb, BlockQ4_1x16* dst);
void repack_q5_0x16(const BlockQ5_0* src, int64_t rows, int64_t nb, BlockQ5_0x16* dst);
// `rows` a multiple of 8 (the 8-row Q5 layouts).
void repack_q5_0x8(const BlockQ5_0* src, int64_t rows, int64_t nb, BlockQ5_0x8* dst);
void repack_q5_1x8(const BlockQ5_1* src, int64_t rows, int64_t nb, BlockQ5_1x8* dst);
void repack_q5_1x16(const BlockQ5_1* src, int64_t rows, int64_t nb, BlockQ5_1x16* dst);
// Each Q8_0 group is nb / 2 BlockQ8_0x16Pair and, for odd nb, one BlockQ8_0x16.
void repack_q8_0x16(const BlockQ8_0* src, int64_t rows, int64_t nb, void* dst);
// The same by format (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): `rows` rows of `src`
// into the 16-row layout (`wide`) or the 8-row one; dst holds their bytes.
void repack_rows(DType type, bool wide, const void* src, int64_t rows, int64_t nb, void* dst);
// K-quants, `rows` a multiple of 8 (repack_kquant.cpp): dst holds rows / 8
// groups of nb repacked super-blocks.
void repack_q4_kx8(const BlockQ4K* src, int64_t rows, int64_t nb, BlockQ4Kx8* dst);
void repack_q5_kx8(const BlockQ5K* src, int64_t rows, int64_t nb, BlockQ5Kx8* dst);
void repack_q6_kx8(const BlockQ6K* src, int64_t rows, int64_t nb, BlockQ6Kx8* dst);
void repack_q2_kx8(const BlockQ2K* src, int64_t rows, int64_t nb, BlockQ2Kx8* dst);
void repack_q3_kx8(const BlockQ3K* src, int64_t rows, int64_t nb, BlockQ3Kx8* dst);
// The same by format (a K-quant, is_kquant): the bytes of one repacked
// super-block of 8 rows (BlockQ2Kx8 .. BlockQ6Kx8), and the repacking into
// rows / 8 * nb of them.
size_t kquant_x8_block_bytes(DType type);
void repack_kquant_x8(DType type, const void* src, int64_t rows, int64_t nb, void* dst);

}  // namespace tessera::ggml
