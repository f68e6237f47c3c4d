// make_bigram_gguf: writes a model of the architecture "tessera-bigram"
// (examples/out-of-tree-architecture) from the default model: its tokenizer,
// its token embedding and its final norm, and the bigram's own keys. The
// core has never heard of the architecture; the out-of-tree plugin serves it.
// Usage: make_bigram_gguf SOURCE.gguf OUT.gguf
#include <cstdio>
#include <string>

#include "model/gguf_writer.hpp"
#include "model/model_file.hpp"

int main(int argc, char** argv) {
  using namespace tessera;
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_bigram_gguf SOURCE.gguf OUT.gguf\n");
    return 2;
  }
  auto source = open_model(argv[1]);
  if (!source.ok() || !(*source)->gguf()) {
    std::fprintf(stderr, "error: %s\n", source.ok() ? "not a GGUF file" : source.status().message().c_str());
    return 1;
  }
  const GgufFile& g = *(*source)->gguf();
  GgufWriter w;
  for (const auto& [key, value] : g.metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
  w.set_string("general.architecture", "tessera-bigram");
  w.set_string("general.name", "bigram of " + (*source)->name());
  const TensorRef* embd = (*source)->find("token_embd.weight");
  const TensorRef* norm = (*source)->find("output_norm.weight");
  if (embd == nullptr || norm == nullptr) {
    std::fprintf(stderr, "error: %s lacks token_embd.weight or output_norm.weight\n", argv[1]);
    return 1;
  }
  w.set_u32("tessera-bigram.context_length", 256);
  w.set_u32("tessera-bigram.embedding_length", static_cast<uint32_t>(embd->shape[1]));
  w.set_f32("tessera-bigram.norm_epsilon", 1e-5f);
  for (const TensorRef* t : {embd, norm}) {
    std::vector<uint64_t> dims;  // GGUF order: innermost first
    for (int i = t->ndim - 1; i >= 0; --i) dims.push_back(static_cast<uint64_t>(t->shape[i]));
    const Status s = w.add_tensor_view(t->name, t->dtype, dims, {static_cast<const std::byte*>(t->data), t->nbytes});
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
  }
  const Status s = w.write(argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
