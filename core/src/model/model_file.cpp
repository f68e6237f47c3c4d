#include "model/model_file.hpp"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/gguf_hparams.hpp"
#include "model/hf_config.hpp"

namespace tessera {

namespace fs = std::filesystem;

std::string storage_format(DType dtype) {
  const std::string name(dtype_name(dtype));
  return is_block_format(dtype) ? "ggml." + name : name;
}

void ModelFile::release_resident(const TensorRef& tensor) const {
  // Each mapping ignores a range outside it, so every file may be asked.
  if (gguf_) gguf_->release_resident(tensor.data, tensor.nbytes);
  for (const auto& shard : shards_) shard->release_resident(tensor.data, tensor.nbytes);
}

const TensorRef* ModelFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::vector<const TensorRef*> ModelFile::tensors() const {
  std::vector<const TensorRef*> out;
  out.reserve(tensors_.size());
  for (const auto& t : tensors_) out.push_back(&t);
  return out;
}

Status ModelFile::add(TensorRef ref) {
  if (index_.count(ref.name) != 0)
    return CorruptData(fmt::format("{}: two tensors map to the name '{}'", source_, ref.name));
  index_.emplace(ref.name, tensors_.size());
  tensors_.push_back(std::move(ref));
  return Status::Ok();
}

namespace {

TensorRef ref_from_gguf(const GgufTensorInfo& t) {
  TensorRef r;
  r.name = t.name;
  r.dtype = t.dtype;
  r.format = storage_format(t.dtype);
  r.ndim = static_cast<int32_t>(t.dims.size());
  for (int i = 0; i < r.ndim; ++i) r.shape[i] = static_cast<int64_t>(t.dims[r.ndim - 1 - i]);  // ne[0] is innermost
  r.data = t.data;
  r.nbytes = t.nbytes;
  return r;
}

Result<nlohmann::json> read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path.string() + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    return CorruptData(path.string() + ": not valid JSON: " + e.what());
  }
}

}  // namespace

class ModelFileBuilder {
 public:
  static Result<std::shared_ptr<ModelFile>> gguf(const std::string& path) {
    auto file = GgufFile::open(path);
    if (!file.ok()) return file.status();
    auto m = std::shared_ptr<ModelFile>(new ModelFile());
    m->kind_ = ModelFile::Kind::gguf;
    m->source_ = path;
    m->gguf_ = file.value();
    auto hp = hparams_from_gguf(*m->gguf_);
    if (!hp.ok()) return hp.status();
    m->hparams_ = std::move(hp).value();
    m->tensors_.reserve(m->gguf_->tensors().size());
    for (const auto& t : m->gguf_->tensors()) TESSERA_RETURN_IF_ERROR(m->add(ref_from_gguf(t)));
    // Without a token list or <arch>.vocab_size the embedding's rows are the vocabulary.
    if (const TensorRef* embd = m->find("token_embd.weight"); m->hparams_.vocab_size == 0 && embd != nullptr)
      m->hparams_.vocab_size = embd->shape[0];
    return m;
  }

  static Result<std::shared_ptr<ModelFile>> safetensors(const std::string& dir) {
    const fs::path root(dir);
    auto config = read_json(root / "config.json");
    if (!config.ok()) return config.status();
    auto hp = hparams_from_hf_config(config.value(), (root / "config.json").string());
    if (!hp.ok()) return hp.status();
    auto shards = open_safetensors_checkpoint(dir);
    if (!shards.ok()) return shards.status();

    auto m = std::shared_ptr<ModelFile>(new ModelFile());
    m->kind_ = ModelFile::Kind::safetensors;
    m->source_ = dir;
    m->hparams_ = std::move(hp).value();
    if (m->hparams_.name.empty()) m->hparams_.name = root.filename().string();
    m->shards_ = std::move(shards).value();
    for (const auto& shard : m->shards_) {
      for (const auto& t : shard->tensors()) {
        TensorRef r;
        // Names outside the mapping (e.g. rotary_emb.inv_freq) keep their HF name.
        r.name = normalize_hf_tensor_name(t.name).value_or(t.name);
        r.dtype = t.dtype;
        r.format = storage_format(t.dtype);
        r.ndim = static_cast<int32_t>(t.shape.size());
        for (int i = 0; i < r.ndim; ++i) r.shape[i] = t.shape[i];
        r.data = t.data;
        r.nbytes = t.nbytes;
        TESSERA_RETURN_IF_ERROR(m->add(std::move(r)));
      }
    }
    if (m->find("output.weight") == nullptr) m->hparams_.tied_embeddings = true;
    std::error_code ec;
    if (fs::exists(root / "tokenizer.json", ec)) m->tokenizer_json_ = (root / "tokenizer.json").string();
    if (fs::exists(root / "tokenizer_config.json", ec))
      m->tokenizer_config_ = (root / "tokenizer_config.json").string();
    return m;
  }
};

Result<std::shared_ptr<ModelFile>> open_model(const std::string& path) {
  std::error_code ec;
  Result<std::shared_ptr<ModelFile>> m = Internal("unset");
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "config.json", ec))
      return NotFound(path + ": a model folder needs config.json (Hugging Face layout)");
    m = ModelFileBuilder::safetensors(path);
  } else if (!fs::exists(path, ec)) {
    return NotFound(path + ": no such file or folder");
  } else {
    m = ModelFileBuilder::gguf(path);
  }
  if (!m.ok()) return m.status();
  TESSERA_RETURN_IF_ERROR(validate_against_hparams(*m.value()));
  return m;
}

Status validate_against_hparams(const WeightStore& store) {
  const ModelHParams& hp = store.hparams();
  const std::string& src = store.source();
  for (const TensorRef* t : store.tensors()) {
    const auto info = dtype_info(t->dtype);
    if (t->ndim < 1 || t->ndim > kMaxDims || info.block_elems == 0)
      return CorruptData(fmt::format("{}: tensor '{}' has an invalid shape or type", src, t->name));
    if (t->cols() % info.block_elems != 0)
      return CorruptData(fmt::format("{}: tensor '{}': row length {} is not a multiple of the {} block size {}", src,
                                     t->name, t->cols(), dtype_name(t->dtype), info.block_elems));
    const uint64_t expected = dtype_row_bytes(t->dtype, static_cast<uint64_t>(t->cols())) *
                              static_cast<uint64_t>(t->rows());
    if (expected != t->nbytes)
      return CorruptData(fmt::format("{}: tensor '{}' holds {} bytes but its shape and type need {}", src, t->name,
                                     t->nbytes, expected));
  }
  const TensorRef* embd = store.find("token_embd.weight");
  if (embd == nullptr) return CorruptData(fmt::format("{}: tensor 'token_embd.weight' is missing", src));
  auto check_matrix = [&](const TensorRef& t) -> Status {
    if (t.ndim != 2)
      return CorruptData(fmt::format("{}: tensor '{}' has {} dimensions, expected 2", src, t.name, t.ndim));
    if (hp.vocab_size != 0 && t.shape[0] != hp.vocab_size)
      return CorruptData(fmt::format("{}: the vocabulary has {} tokens but tensor '{}' has {} rows", src,
                                     hp.vocab_size, t.name, t.shape[0]));
    if (t.shape[1] != hp.embedding_length)
      return CorruptData(fmt::format("{}: embedding_length is {} but tensor '{}' has rows of {}", src,
                                     hp.embedding_length, t.name, t.shape[1]));
    return Status::Ok();
  };
  TESSERA_RETURN_IF_ERROR(check_matrix(*embd));
  if (const TensorRef* out = store.find("output.weight")) TESSERA_RETURN_IF_ERROR(check_matrix(*out));
  return Status::Ok();
}

}  // namespace tessera
