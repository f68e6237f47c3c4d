// kernels_avx512_vnni.cpp: AVX-512 kernels with VNNI (vpdpbusd: u8 x i8 dots
// summed straight into i32). Compiled with the avx512 flags plus -mavx512vnni.
#define TESSERA_GGML_VNNI 1
#include "kernels_avx512_impl.hpp"

namespace tessera::ggml {
const KernelTable& avx512_vnni_kernel_table() { return make_table(IsaLevel::avx512_vnni, "avx512_vnni"); }
}  // namespace tessera::ggml
