// hadamard_rotation.hpp: the fixed orthogonal rotation R of a row of n
// values that INT8 W8A8 files may apply to a Linear's inputs (QuaRot,
// Ashkboos et al. 2024: an orthogonal rotation spreads a few outlier
// channels over many, so one scale per token loses less of the rest).
//
// R is block-diagonal: one normalised Walsh-Hadamard matrix of size b
// (Sylvester's construction, H[i][j] = (-1)^popcount(i & j) / sqrt(b)) per
// block of b columns, b the largest power of two dividing n, at most
// kMaxHadamardBlock. R is symmetric and orthogonal, so it is its own inverse
// and x·Wᵀ = (x R)·(W R)ᵀ: a file stores the weights' rows times R and the
// Linear multiplies each activation row by R before quantizing it. Applying
// R to a row costs n·log2(b) additions and n multiplications. The sums are
// normalised at the end, so a finite value above FLT_MAX / b overflows (no
// activation or weight comes near it).
#pragma once

#include <cstdint>

namespace tessera::int8 {

inline constexpr int64_t kMaxHadamardBlock = 4096;

// The block size b of R for rows of n values (1 where n is odd: R is then
// the identity, which spreads nothing).
int64_t hadamard_block(int64_t n);

// row[n] = row · R, in place; applied twice it gives the row back (up to
// rounding): R·R = I.
void rotate_row(float* row, int64_t n);

}  // namespace tessera::int8
