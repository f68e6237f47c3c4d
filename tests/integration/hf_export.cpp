#include "hf_export.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "engine/model_builder.hpp"
#include "model/gguf_writer.hpp"
#include "tessera/half.hpp"

namespace tessera::test {

namespace fs = std::filesystem;
using nlohmann::json;

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so is this writer");

namespace {

// Shared by both directions: calls move(gguf_row, hf_row) for every row of every head.
template <typename Move>
bool for_each_qk_row(int64_t rows, int64_t n_head, Move move) {
  if (n_head <= 0 || rows % n_head != 0 || (rows / n_head) % 2 != 0) return false;
  const int64_t d = rows / n_head;  // head_dim
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t i = 0; i < d / 2; ++i)
      for (int64_t s = 0; s < 2; ++s) move(h * d + 2 * i + s, h * d + s * (d / 2) + i);
  return true;
}

std::vector<float> reorder_rows(std::span<const float> w, int64_t rows, int64_t cols, int64_t n_head,
                                bool to_gguf) {
  if (rows <= 0 || cols <= 0 || static_cast<int64_t>(w.size()) != rows * cols) return {};
  std::vector<float> out(w.size());
  const bool ok = for_each_qk_row(rows, n_head, [&](int64_t gguf_row, int64_t hf_row) {
    const int64_t from = to_gguf ? hf_row : gguf_row;
    const int64_t to = to_gguf ? gguf_row : hf_row;
    std::memcpy(out.data() + to * cols, w.data() + from * cols, static_cast<size_t>(cols) * sizeof(float));
  });
  return ok ? out : std::vector<float>{};
}

}  // namespace

std::vector<float> permute_qk_rows(std::span<const float> hf, int64_t rows, int64_t cols, int64_t n_head) {
  return reorder_rows(hf, rows, cols, n_head, /*to_gguf=*/true);
}

std::vector<float> unpermute_qk_rows(std::span<const float> gguf, int64_t rows, int64_t cols, int64_t n_head) {
  return reorder_rows(gguf, rows, cols, n_head, /*to_gguf=*/false);
}

std::optional<std::string> hf_tensor_name(std::string_view gguf_name) {
  struct Part {
    std::string_view gguf, hf;
  };
  static constexpr Part kGlobal[] = {
      {"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};
  static constexpr Part kLayer[] = {
      {"attn_q", "self_attn.q_proj"},   {"attn_k", "self_attn.k_proj"},   {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"}, {"ffn_gate", "mlp.gate_proj"}, {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},    {"attn_norm", "input_layernorm"}, {"ffn_norm", "post_attention_layernorm"}};

  std::string_view module, suffix;
  for (std::string_view s : {".weight", ".bias"}) {
    if (gguf_name.size() > s.size() && gguf_name.ends_with(s)) {
      module = gguf_name.substr(0, gguf_name.size() - s.size());
      suffix = s;
    }
  }
  if (suffix.empty()) return std::nullopt;
  for (const auto& p : kGlobal)
    if (module == p.gguf) return std::string(p.hf) + std::string(suffix);
  if (!module.starts_with("blk.")) return std::nullopt;
  module.remove_prefix(4);
  const size_t dot = module.find('.');
  int64_t layer = -1;
  const auto [end, ec] = std::from_chars(module.data(), module.data() + (dot == std::string_view::npos ? 0 : dot), layer);
  if (dot == std::string_view::npos || dot == 0 || ec != std::errc() || end != module.data() + dot) return std::nullopt;
  const std::string_view rest = module.substr(dot + 1);
  for (const auto& p : kLayer)
    if (rest == p.gguf) return fmt::format("model.layers.{}.{}{}", layer, p.hf, suffix);
  return std::nullopt;
}

Result<LlamaShape> llama_shape(const ModelFile& model) {
  if (!model.gguf()) return InvalidArgument(model.source() + ": HF export reads GGUF files only");
  const GgufFile& g = *model.gguf();
  if (model.architecture() != "llama")
    return Unsupported(fmt::format("HF export writes LlamaForCausalLM only; the model's architecture is '{}'",
                                   model.architecture()));
  if (g.get_string("llama.rope.scaling.type").value_or("none") != "none")
    return Unsupported("HF export does not write rope_scaling; the model uses RoPE scaling");
  LlamaShape s;
  s.name = model.name();
  auto count = [&](const char* key, int64_t fallback) { return g.get_int(key).value_or(fallback); };
  s.embedding_length = count("llama.embedding_length", 0);
  s.feed_forward_length = count("llama.feed_forward_length", 0);
  s.block_count = count("llama.block_count", 0);
  s.head_count = count("llama.attention.head_count", 0);
  s.head_count_kv = count("llama.attention.head_count_kv", s.head_count);
  s.head_dim = count("llama.attention.key_length", s.head_count > 0 ? s.embedding_length / s.head_count : 0);
  s.context_length = count("llama.context_length", 0);
  s.vocab_size = static_cast<int64_t>(g.array_length("tokenizer.ggml.tokens").value_or(0));
  s.rms_norm_eps = g.get_float("llama.attention.layer_norm_rms_epsilon").value_or(1e-5);
  s.rope_freq_base = g.get_float("llama.rope.freq_base").value_or(10000.0);
  s.tied_embeddings = model.find("output.weight") == nullptr;
  if (s.embedding_length <= 0 || s.block_count <= 0 || s.head_count <= 0 || s.vocab_size <= 0)
    return CorruptData(model.source() + ": the llama.* keys do not describe a model");
  return s;
}

Result<json> hf_config_json(const LlamaShape& hp, HfWeightType type) {
  return json{
      {"architectures", json::array({"LlamaForCausalLM"})},
      {"model_type", "llama"},
      {"_name_or_path", hp.name},
      {"hidden_size", hp.embedding_length},
      {"intermediate_size", hp.feed_forward_length},
      {"num_hidden_layers", hp.block_count},
      {"num_attention_heads", hp.head_count},
      {"num_key_value_heads", hp.head_count_kv},
      {"head_dim", hp.head_dim},
      {"hidden_act", "silu"},
      {"rms_norm_eps", hp.rms_norm_eps},
      {"rope_theta", hp.rope_freq_base},
      {"rope_scaling", nullptr},
      {"max_position_embeddings", hp.context_length},
      {"vocab_size", hp.vocab_size},
      {"tie_word_embeddings", hp.tied_embeddings},
      {"torch_dtype", type == HfWeightType::f32 ? "float32" : "bfloat16"},
  };
}

namespace {

Status bad_tokenizer(const GgufFile& g, const std::string& what) {
  return Unsupported(fmt::format("{}: cannot export the tokenizer: {}", g.path(), what));
}

// The HF pre_tokenizer node equivalent to a GGUF tokenizer.ggml.pre value.
std::optional<json> hf_pre_tokenizer(std::string_view pre) {
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  if (pre == "gpt-2") return byte_level;
  // What SmolLM's own tokenizer.json holds: each digit alone, then the GPT-2 split.
  if (pre == "smollm" || pre == "starcoder")
    return json{{"type", "Sequence"},
                {"pretokenizers", json::array({json{{"type", "Digits"}, {"individual_digits", true}}, byte_level})}};
  return std::nullopt;
}

// Text of the token a GGUF id key names, or nullopt when the key is absent.
Result<std::optional<std::string>> token_text_of(const GgufFile& g, const std::vector<std::string>& tokens,
                                                 const char* key) {
  if (g.find(key) == nullptr) return std::optional<std::string>();
  const auto id = g.get_int(key);
  if (!id || *id < 0 || *id >= static_cast<int64_t>(tokens.size()))
    return bad_tokenizer(g, fmt::format("{} is not a token id below {}", key, tokens.size()));
  return std::optional<std::string>(tokens[static_cast<size_t>(*id)]);
}

}  // namespace

Result<json> hf_tokenizer_json(const GgufFile& g) {
  if (g.get_string("tokenizer.ggml.model").value_or("") != "gpt2")
    return bad_tokenizer(g, "only byte-level BPE ('gpt2') tokenizers have a tokenizer.json form here");
  const std::string pre_name = g.get_string("tokenizer.ggml.pre").value_or("");
  const auto pre = hf_pre_tokenizer(pre_name);
  if (!pre) return bad_tokenizer(g, fmt::format("pre-tokenizer '{}' has no HF equivalent in this exporter", pre_name));
  const auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  const auto merges = g.get_string_array("tokenizer.ggml.merges");
  const auto types = g.get_int_array("tokenizer.ggml.token_type");
  if (!tokens || !merges) return bad_tokenizer(g, "tokenizer.ggml.tokens or tokenizer.ggml.merges is missing");
  if (types && types->size() != tokens->size())
    return bad_tokenizer(g, fmt::format("{} token types for {} tokens", types->size(), tokens->size()));

  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < tokens->size(); ++id) {
    const std::string& text = (*tokens)[id];
    // A JSON object cannot hold one text twice: the ids would silently shift.
    if (vocab.contains(text)) return bad_tokenizer(g, fmt::format("token text '{}' appears twice", text));
    vocab[text] = id;
    const int64_t type = types ? (*types)[id] : 1;
    const bool special = type == 2 || type == 3;  // unknown, control
    if (special || type == 4) {                   // user_defined: added but not special
      added.push_back({{"id", id}, {"content", text}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", !special}, {"special", special}});
    }
  }
  return json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", *pre},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"vocab", std::move(vocab)},
        {"merges", *merges}}},
  };
}

Result<json> hf_tokenizer_config_json(const GgufFile& g) {
  const auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (!tokens) return bad_tokenizer(g, "tokenizer.ggml.tokens is missing");
  json config = {
      {"tokenizer_class", "GPT2Tokenizer"},
      {"add_bos_token", g.get_bool("tokenizer.ggml.add_bos_token").value_or(false)},
      {"clean_up_tokenization_spaces", false},
  };
  if (auto add_eos = g.get_bool("tokenizer.ggml.add_eos_token")) config["add_eos_token"] = *add_eos;
  for (const auto& [hf_key, gguf_key] : {std::pair{"bos_token", "tokenizer.ggml.bos_token_id"},
                                         {"eos_token", "tokenizer.ggml.eos_token_id"},
                                         {"pad_token", "tokenizer.ggml.padding_token_id"},
                                         {"unk_token", "tokenizer.ggml.unknown_token_id"}}) {
    auto text = token_text_of(g, *tokens, gguf_key);
    if (!text.ok()) return text.status();
    if (*text) config[hf_key] = **text;
  }
  if (auto tmpl = g.get_string("tokenizer.chat_template")) config["chat_template"] = *tmpl;
  if (auto ctx = g.get_int(g.architecture() + ".context_length")) config["model_max_length"] = *ctx;
  return config;
}

namespace {

Status write_json(const fs::path& path, const json& j) {
  std::ofstream out(path, std::ios::binary);
  out << j.dump(2) << '\n';
  out.close();
  if (!out) return Internal(path.string() + ": write failed");
  return Status::Ok();
}

// One tensor of the safetensors file, in write order.
struct Planned {
  const TensorRef* ref;
  std::string hf_name;
  int64_t qk_heads;  // > 0: rows to un-permute with this many heads
  uint64_t begin, end;
};

// Writes model.safetensors tensor by tensor, so that memory holds one f32 tensor at a time.
Status write_safetensors(const ModelFile& model, const LlamaShape& hp, CoreModelBuilder& dequantizer,
                         const fs::path& path, HfWeightType type) {
  const uint64_t elem_bytes = type == HfWeightType::f32 ? 4 : 2;
  std::vector<Planned> plan;
  uint64_t offset = 0;
  for (const TensorRef& tensor : model.tensors()) {
    const TensorRef* t = &tensor;
    auto name = hf_tensor_name(t->name);
    if (!name) return Unsupported(fmt::format("{}: tensor '{}' has no Hugging Face name", model.source(), t->name));
    int64_t heads = 0;
    if (t->name.ends_with(".attn_q.weight")) heads = hp.head_count;
    if (t->name.ends_with(".attn_k.weight")) heads = hp.head_count_kv;
    const uint64_t bytes = static_cast<uint64_t>(t->numel()) * elem_bytes;
    plan.push_back({t, std::move(*name), heads, offset, offset + bytes});
    offset += bytes;
  }
  json header = json::object();
  for (const Planned& p : plan) {
    json shape = json::array();
    for (int i = 0; i < p.ref->ndim; ++i) shape.push_back(p.ref->shape[i]);
    header[p.hf_name] = {{"dtype", type == HfWeightType::f32 ? "F32" : "BF16"}, {"shape", shape}, {"data_offsets", json::array({p.begin, p.end})}};
  }
  header["__metadata__"] = {{"format", "pt"}, {"exported_from", model.source()}};
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // keeps the data 8-byte aligned, as the reference writer does

  std::ofstream out(path, std::ios::binary);
  if (!out) return Internal(path.string() + ": cannot create");
  const uint64_t header_len = text.size();
  out.write(reinterpret_cast<const char*>(&header_len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<float> values;
  std::vector<uint16_t> halves;  // BF16 bits
  for (const Planned& p : plan) {
    values.resize(static_cast<size_t>(p.ref->numel()));
    TESSERA_RETURN_IF_ERROR(dequantizer.dequantize(*p.ref, values.data()));
    if (p.qk_heads > 0) {
      values = unpermute_qk_rows(values, p.ref->rows(), p.ref->cols(), p.qk_heads);
      if (values.empty())
        return CorruptData(fmt::format("{}: tensor '{}' [{}, {}] does not split into {} heads of even size",
                                       model.source(), p.ref->name, p.ref->rows(), p.ref->cols(), p.qk_heads));
    }
    if (type == HfWeightType::f32) {
      out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
    } else {
      halves.resize(values.size());
      std::transform(values.begin(), values.end(), halves.begin(), f32_to_bf16);
      out.write(reinterpret_cast<const char*>(halves.data()), static_cast<std::streamsize>(halves.size() * 2));
    }
  }
  out.close();
  if (!out) return Internal(path.string() + ": write failed (disk full?)");
  return Status::Ok();
}

}  // namespace

Status export_hf_folder(const ModelFile& model, const std::vector<std::shared_ptr<Quantizer>>& quantizers,
                        const fs::path& dir, HfWeightType type) {
  if (!model.gguf()) return InvalidArgument(model.source() + ": HF export reads GGUF files only");
  const GgufFile& g = *model.gguf();
  auto shape = llama_shape(model);
  if (!shape.ok()) return shape.status();
  auto config = hf_config_json(*shape, type);
  if (!config.ok()) return config.status();
  auto tokenizer = hf_tokenizer_json(g);
  if (!tokenizer.ok()) return tokenizer.status();
  auto tokenizer_config = hf_tokenizer_config_json(g);
  if (!tokenizer_config.ok()) return tokenizer_config.status();

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal(dir.string() + ": cannot create: " + ec.message());
  TESSERA_RETURN_IF_ERROR(write_json(dir / "config.json", *config));
  TESSERA_RETURN_IF_ERROR(write_json(dir / "tokenizer.json", *tokenizer));
  TESSERA_RETURN_IF_ERROR(write_json(dir / "tokenizer_config.json", *tokenizer_config));
  CoreModelBuilder dequantizer(model, quantizers, /*make_attention=*/{});
  return write_safetensors(model, *shape, dequantizer, dir / "model.safetensors", type);
}

Status export_f32_gguf(const ModelFile& original, const ModelFile& folder, const fs::path& file) {
  if (!original.gguf()) return InvalidArgument(original.source() + ": the metadata must come from a GGUF file");
  GgufWriter writer;
  for (const auto& [key, value] : original.gguf()->metadata()) {
    if (key != "general.alignment") writer.set(key, value);
  }
  writer.set_u32("general.file_type", 0);  // llama.cpp's LLAMA_FTYPE_ALL_F32
  auto shape = llama_shape(original);
  if (!shape.ok()) return shape.status();
  const LlamaShape& hp = *shape;
  std::vector<std::vector<float>> permuted;  // Q/K copies; the rest is written from the folder's mapping
  permuted.reserve(2 * static_cast<size_t>(hp.block_count));
  for (const TensorRef& tensor : original.tensors()) {
    const TensorRef* t = &tensor;
    const auto hf_name = hf_tensor_name(t->name);
    const TensorRef* f = hf_name ? folder.find(*hf_name) : nullptr;
    if (f == nullptr || f->dtype != DType::f32 || f->shape != t->shape)
      return CorruptData(fmt::format("{}: tensor '{}' is missing, not F32 or of another shape", folder.source(), t->name));
    std::vector<uint64_t> dims;  // GGUF order: innermost first
    for (int i = f->ndim - 1; i >= 0; --i) dims.push_back(static_cast<uint64_t>(f->shape[i]));
    const std::span<const float> values(static_cast<const float*>(f->data), static_cast<size_t>(f->numel()));
    int64_t heads = 0;
    if (t->name.ends_with(".attn_q.weight")) heads = hp.head_count;
    if (t->name.ends_with(".attn_k.weight")) heads = hp.head_count_kv;
    std::span<const float> data = values;
    if (heads > 0) {
      permuted.push_back(permute_qk_rows(values, f->rows(), f->cols(), heads));
      if (permuted.back().empty())
        return CorruptData(fmt::format("{}: tensor '{}' does not split into {} heads", folder.source(), t->name, heads));
      data = permuted.back();
    }
    TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(t->name, DType::f32, std::move(dims), std::as_bytes(data)));
  }
  return writer.write(file.string());
}

}  // namespace tessera::test
