// kernels_avx512.cpp: AVX-512 F/BW/VL kernels (vpmaddubsw + vpmaddwd for the
// integer dots). Compiled with -mavx512f -mavx512bw -mavx512vl -mavx2 -mfma -mf16c.
#define TESSERA_GGML_VNNI 0
#include "kernels_avx512_impl.hpp"

namespace tessera::ggml {
const KernelTable& avx512_kernel_table() { return make_table(IsaLevel::avx512, "avx512"); }
}  // namespace tessera::ggml
