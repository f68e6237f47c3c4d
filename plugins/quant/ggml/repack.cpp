// repack.cpp: interleave 8 or 16 rows of ggml blocks (layouts described in blocks.hpp).
#include "repack.hpp"

#include <cstring>
#include <type_traits>

namespace tessera::ggml {

namespace {

// Row r's 16 bytes of nibbles (one ggml block's qs) into the chunks of an
// R-row block: bytes 4k..4k+3 go to chunk k, at bytes 4r..4r+3.
template <int R>
void chunk_nibbles(const uint8_t* row_qs, int r, uint8_t* chunks) {
  for (int k = 0; k < 4; ++k) std::memcpy(chunks + 4 * R * k + 4 * r, row_qs + 4 * k, 4);
}

// R rows (8 or 16) of a nibble format (Q4_1, Q5_0, Q5_1) into Group: the
// scales (and minimums), the quants chunked (chunk_nibbles), and for Q5 the
// fifth bits regrouped into the chunk masks of blocks.hpp.
template <typename Block, typename Group, int R>
void repack_nibble_rows(const Block* src, int64_t rows, int64_t nb, Group* dst) {
  constexpr bool kHighBits = requires(const Block& in) { in.qh; };
  for (int64_t g = 0; g < rows / R; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      Group& out = dst[g * nb + b];
      if constexpr (kHighBits) std::memset(out.qh, 0, sizeof out.qh);
      for (int r = 0; r < R; ++r) {
        const Block& in = src[(g * R + r) * nb + b];
        out.d[r] = in.d;
        if constexpr (requires { in.m; }) out.m[r] = in.m;
        chunk_nibbles<R>(in.qs, r, out.qs);
        if constexpr (kHighBits) {
          using Mask = std::remove_reference_t<decltype(out.qh[0])>;  // uint32_t (8 rows) or uint64_t (16)
          uint32_t high;
          std::memcpy(&high, in.qh, sizeof high);
          for (int k = 0; k < 4; ++k) {
            for (int i = 0; i < 4; ++i) {
              out.qh[k] |= static_cast<Mask>((high >> (4 * k + i)) & 1u) << (4 * r + i);
              out.qh[4 + k] |= static_cast<Mask>((high >> (16 + 4 * k + i)) & 1u) << (4 * r + i);
            }
          }
        }
      }
    }
  }
}

// R rows of Q4_0 into its groups of pairs (blocks.hpp), each block's quants
// chunked (chunk_nibbles).
template <int R>
void repack_q4_0_pairs(const BlockQ4_0* src, int64_t rows, int64_t nb, void* dst) {
  const auto group_bytes = static_cast<size_t>(nb * R) * sizeof(BlockQ4_0);
  for (int64_t g = 0; g < rows / R; ++g) {
    auto* group = static_cast<uint8_t*>(dst) + static_cast<size_t>(g) * group_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      // GroupBlocks gives read-only pointers into the group being written.
      auto* d = const_cast<uint16_t*>(GroupBlocks<BlockQ4_0Pair<R>>::d(group, nb, b));
      auto* qs = const_cast<uint8_t*>(GroupBlocks<BlockQ4_0Pair<R>>::qs(group, nb, b));
      for (int r = 0; r < R; ++r) {
        const BlockQ4_0& in = src[(g * R + r) * nb + b];
        d[r] = in.d;
        chunk_nibbles<R>(in.qs, r, qs);
      }
    }
  }
}

}  // namespace

void repack_q4_0x8(const BlockQ4_0* src, int64_t rows, int64_t nb, void* dst) {
  repack_q4_0_pairs<kRepackRows>(src, rows, nb, dst);
}

void repack_q4_0x16(const BlockQ4_0* src, int64_t rows, int64_t nb, void* dst) {
  repack_q4_0_pairs<kWideRepackRows>(src, rows, nb, dst);
}

void repack_q5_0x16(const BlockQ5_0* src, int64_t rows, int64_t nb, BlockQ5_0x16* dst) {
  repack_nibble_rows<BlockQ5_0, BlockQ5_0x16, kWideRepackRows>(src, rows, nb, dst);
}

void repack_q5_1x16(const BlockQ5_1* src, int64_t rows, int64_t nb, BlockQ5_1x16* dst) {
  repack_nibble_rows<BlockQ5_1, BlockQ5_1x16, kWideRepackRows>(src, rows, nb, dst);
}

void repack_q5_0x8(const BlockQ5_0* src, int64_t rows, int64_t nb, BlockQ5_0x8* dst) {
  repack_nibble_rows<BlockQ5_0, BlockQ5_0x8, kRepackRows>(src, rows, nb, dst);
}

void repack_q5_1x8(const BlockQ5_1* src, int64_t rows, int64_t nb, BlockQ5_1x8* dst) {
  repack_nibble_rows<BlockQ5_1, BlockQ5_1x8, kRepackRows>(src, rows, nb, dst);
}

void repack_q4_1x8(const BlockQ4_1* src, int64_t rows, int64_t nb, BlockQ4_1x8* dst) {
  repack_nibble_rows<BlockQ4_1, BlockQ4_1x8, kRepackRows>(src, rows, nb, dst);
}

void repack_q8_0x8(const BlockQ8_0* src, int64_t rows, int64_t nb, BlockQ8_0x8* dst) {
  for (int64_t g = 0; g < rows / kRepackRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0x8& out = dst[g * nb + b];
      for (int r = 0; r < kRepackRows; ++r) {
        const BlockQ8_0& in = src[(g * kRepackRows + r) * nb + b];
        out.d[r] = in.d;
        for (int k = 0; k < 8; ++k) std::memcpy(out.qs + 32 * k + 4 * r, in.qs + 4 * k, 4);
      }
    }
  }
}

void repack_q4_1x16(const BlockQ4_1* src, int64_t rows, int64_t nb, BlockQ4_1x16* dst) {
  repack_nibble_rows<BlockQ4_1, BlockQ4_1x16, kWideRepackRows>(src, rows, nb, dst);
}

void repack_q8_0x16(const BlockQ8_0* src, int64_t rows, int64_t nb, void* dst) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t g = 0; g < rows / kWideRepackRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      // Block b's scales and quants: in pair b / 2, or the lone last block.
      const int64_t pair = b / 2;
      uint16_t* d;
      uint8_t* qs;
      if (b / 2 < nb / 2) {
        auto* p = reinterpret_cast<BlockQ8_0x16Pair*>(out) + pair;
        d = p->d[b % 2];
        qs = p->qs[b % 2];
      } else {
        auto* last = reinterpret_cast<BlockQ8_0x16*>(out + (nb / 2) * sizeof(BlockQ8_0x16Pair));
        d = last->d;
        qs = last->qs;
      }
      for (int r = 0; r < kWideRepackRows; ++r) {
        const BlockQ8_0& in = src[(g * kWideRepackRows + r) * nb + b];
        d[r] = in.d;
        for (int k = 0; k < 8; ++k) {
          for (int i = 0; i < 4; ++i) {  // q + 128 as a byte: flipping bit 7 of the two's complement
            qs[64 * k + 4 * r + i] = static_cast<uint8_t>(in.qs[4 * k + i]) ^ 0x80u;
          }
        }
      }
    }
    out += nb * sizeof(BlockQ8_0x16);
  }
}

namespace {

// One format's 8-row (narrow) or 16-row (wide) repacking, its types taken
// from the two functions.
template <typename Block, typename Narrow, typename Wide>
void repack_either(bool wide, const void* src, int64_t rows, int64_t nb, void* dst,
                   void (*narrow_rows)(const Block*, int64_t, int64_t, Narrow*),
                   void (*wide_rows)(const Block*, int64_t, int64_t, Wide*)) {
  const auto* in = static_cast<const Block*>(src);
  if (wide) wide_rows(in, rows, nb, static_cast<Wide*>(dst));
  else narrow_rows(in, rows, nb, static_cast<Narrow*>(dst));
}

}  // namespace

void repack_rows(DType type, bool wide, const void* src, int64_t rows, int64_t nb, void* dst) {
  switch (type) {
    case DType::q4_0: return repack_either(wide, src, rows, nb, dst, &repack_q4_0x8, &repack_q4_0x16);
    case DType::q4_1: return repack_either(wide, src, rows, nb, dst, &repack_q4_1x8, &repack_q4_1x16);
    case DType::q5_0: return repack_either(wide, src, rows, nb, dst, &repack_q5_0x8, &repack_q5_0x16);
    case DType::q5_1: return repack_either(wide, src, rows, nb, dst, &repack_q5_1x8, &repack_q5_1x16);
    case DType::q8_0: return repack_either(wide, src, rows, nb, dst, &repack_q8_0x8, &repack_q8_0x16);
    default: return;
  }
}

}  // namespace tessera::ggml
