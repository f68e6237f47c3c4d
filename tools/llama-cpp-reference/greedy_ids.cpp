// greedy_ids: llama.cpp's greedy continuation of given prompt ids, for comparing
// Tessera with an independent engine. Reads one prompt per line (token ids);
// prints the generated ids, then the top-1 minus top-2 logit margin per step.
// Usage: greedy_ids MODEL.gguf N_GEN < prompts.txt   (F32KV=1: f32 KV cache, no flash attention)
#include <llama.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>
#include <algorithm>
int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: llref MODEL N_GEN < prompts(ids per line)\n"); return 2; }
  llama_backend_init();
  auto mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  int n_gen = atoi(argv[2]);
  int n_vocab = llama_vocab_n_tokens(vocab);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream is(line);
    std::vector<llama_token> ids; int t; while (is >> t) ids.push_back(t);
    auto cp = llama_context_default_params();
    cp.n_ctx = 2048; if (getenv("F32KV")) { cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32; cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED; } cp.n_batch = 2048; cp.n_threads = 2; cp.n_threads_batch = 2;
    llama_context* ctx = llama_init_from_model(model, cp);
    llama_batch b = llama_batch_get_one(ids.data(), (int)ids.size());
    if (llama_decode(ctx, b)) { fprintf(stderr, "decode failed\n"); return 1; }
    std::vector<int> out; std::vector<float> margin;
    for (int i = 0; i < n_gen; ++i) {
      float* l = llama_get_logits_ith(ctx, -1);
      int best = 0; for (int v = 1; v < n_vocab; ++v) if (l[v] > l[best]) best = v;
      float second = -1e30f; for (int v = 0; v < n_vocab; ++v) if (v != best && l[v] > second) second = l[v];
      out.push_back(best); margin.push_back(l[best] - second);
      if (llama_vocab_is_eog(vocab, best)) break;
      llama_token tok = best;
      llama_batch nb = llama_batch_get_one(&tok, 1);
      if (llama_decode(ctx, nb)) { fprintf(stderr, "decode failed\n"); return 1; }
    }
    for (size_t i = 0; i < out.size(); ++i) printf("%d%s", out[i], i + 1 < out.size() ? " " : "\n");
    for (size_t i = 0; i < margin.size(); ++i) printf("%.4f%s", margin[i], i + 1 < margin.size() ? " " : "\n");
    fflush(stdout);
    llama_free(ctx);
  }
  return 0;
}
