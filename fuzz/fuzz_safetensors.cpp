// Fuzzes the safetensors reader from memory: no crash, no read outside the
// input (ASan sees the reads of each tensor's first and last byte), and every
// accepted tensor's byte size equals its shape times its element size.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "model/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  auto parsed = SafetensorsFile::open_memory(std::as_bytes(std::span(data, size)), "fuzz.safetensors");
  if (!parsed.ok()) return 0;
  unsigned sum = 0;
  for (const auto& t : parsed.value()->tensors()) {
    uint64_t elems = 1;
    for (int64_t d : t.shape) elems *= static_cast<uint64_t>(d);
    if (elems * dtype_info(t.dtype).block_bytes != t.nbytes) {
      std::fprintf(stderr, "fuzz_safetensors: tensor '%s' size does not match its shape\n", t.name.c_str());
      std::abort();
    }
    if (t.nbytes > 0) sum += static_cast<unsigned>(t.data[0]) + static_cast<unsigned>(t.data[t.nbytes - 1]);
    if (parsed.value()->find(t.name) != &t) std::abort();
  }
  return static_cast<int>(sum & 0);
}
