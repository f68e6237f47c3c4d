#include "fake_model_testing.hpp"

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include <gtest/gtest.h>

#include "tessera/half.hpp"

namespace tessera::transformer::testing {

// ---- weight store ----------------------------------------------------------

const TensorRef* FakeWeightStore::find(std::string_view name) const noexcept {
  for (const TensorRef& r : refs_)
    if (r.name == name) return &r;
  return nullptr;
}

void FakeWeightStore::index() {
  refs_.clear();
  for (const auto& [name, e] : entries_) refs_.push_back(e.ref);
}

void FakeWeightStore::add(const std::string& name, std::vector<int64_t> shape, std::vector<float> values) {
  Entry& e = entries_[name];
  e.values = std::move(values);
  e.ref = TensorRef{};
  e.ref.name = name;
  e.ref.dtype = DType::f32;
  e.ref.format = "f32";
  e.ref.ndim = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) e.ref.shape[i] = shape[i];
  if (e.ref.numel() != static_cast<int64_t>(e.values.size()))
    throw std::logic_error("fake tensor " + name + ": shape does not match its values");
  e.ref.data = e.values.data();
  e.ref.nbytes = e.values.size() * sizeof(float);
  index();
}

void FakeWeightStore::reshape(const std::string& name, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  add(name, std::move(shape), std::vector<float>(static_cast<size_t>(n), 0.01f));
}

void FakeWeightStore::store_as(const std::string& name, DType dtype) {
  Entry& e = entries_.at(name);
  if (dtype == DType::f32) return;  // already so
  e.ref.dtype = dtype;
  if (dtype == DType::f16 || dtype == DType::bf16) {
    const bool f16 = dtype == DType::f16;
    e.halves.resize(e.values.size());
    for (size_t i = 0; i < e.values.size(); ++i) {
      e.halves[i] = f16 ? f32_to_f16(e.values[i]) : f32_to_bf16(e.values[i]);
      e.values[i] = f16 ? f16_to_f32(e.halves[i]) : bf16_to_f32(e.halves[i]);
    }
    e.ref.format = f16 ? "f16" : "bf16";
    e.ref.data = e.halves.data();
    e.ref.nbytes = e.halves.size() * sizeof(uint16_t);
  } else {
    e.ref.format = "ggml." + std::string(dtype_name(dtype));
  }
  index();
}

const std::vector<float>& FakeWeightStore::values(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw std::logic_error("fake tensor " + name + " is absent");
  return it->second.values;
}

std::unique_ptr<FakeWeightStore> make_tiny_model(const TinySpec& s) {
  auto store = std::make_unique<FakeWeightStore>(s);
  blocks::testing::MapMetadata& m = store->mutable_metadata();
  const std::string a = s.arch + ".";
  m.set("general.architecture", s.arch);
  m.set("general.name", std::string("tiny"));
  m.set(a + "vocab_size", s.vocab);
  m.set(a + "context_length", s.context);
  m.set(a + "embedding_length", s.n_embd);
  m.set(a + "block_count", s.n_layer);
  m.set(a + "feed_forward_length", s.n_ff);
  m.set(a + "attention.head_count", s.n_head);
  m.set(a + "attention.head_count_kv", s.n_kv_head);
  if (s.head_dim != 0) m.set(a + "attention.key_length", s.head_dim);
  m.set(a + "attention.layer_norm_rms_epsilon", 1e-5);
  m.set(a + "rope.freq_base", s.rope_freq_base);
  if (s.rope_scaling != RopeScaling::none) {
    const char* type = s.rope_scaling == RopeScaling::linear ? "linear"
                       : s.rope_scaling == RopeScaling::llama3 ? "llama3" : "yarn";
    m.set(a + "rope.scaling.type", std::string(type));
    m.set(a + "rope.scaling.factor", s.rope_factor);
    m.set(a + "rope.scaling.original_context_length", s.rope_original_context);
  }

  std::mt19937_64 rng(s.seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  // Matrices scaled by 1/sqrt(in) keep activations of order one through the layers.
  const auto matrix = [&](const std::string& name, int64_t out, int64_t in) {
    std::vector<float> v(static_cast<size_t>(out * in));
    const float scale = 1.0f / std::sqrt(static_cast<float>(in));
    for (float& x : v) x = uni(rng) * scale;
    store->add(name, {out, in}, std::move(v));
  };
  const auto vec = [&](const std::string& name, int64_t n, float center, float spread) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = center + spread * uni(rng);
    store->add(name, {n}, std::move(v));
  };

  const int64_t head_dim = s.head_dim != 0 ? s.head_dim : s.n_embd / s.n_head;
  const int64_t q_dim = s.n_head * head_dim, kv_dim = s.n_kv_head * head_dim;
  {
    std::vector<float> embd(static_cast<size_t>(s.vocab * s.n_embd));
    for (float& x : embd) x = uni(rng);
    store->add("token_embd.weight", {s.vocab, s.n_embd}, std::move(embd));
  }
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    vec(p + "attn_norm.weight", s.n_embd, 1.0f, 0.2f);
    matrix(p + "attn_q.weight", q_dim, s.n_embd);
    matrix(p + "attn_k.weight", kv_dim, s.n_embd);
    matrix(p + "attn_v.weight", kv_dim, s.n_embd);
    if (s.qkv_bias) {
      vec(p + "attn_q.bias", q_dim, 0.0f, 0.5f);
      vec(p + "attn_k.bias", kv_dim, 0.0f, 0.5f);
      vec(p + "attn_v.bias", kv_dim, 0.0f, 0.5f);
    }
    matrix(p + "attn_output.weight", s.n_embd, q_dim);
    vec(p + "ffn_norm.weight", s.n_embd, 1.0f, 0.2f);
    matrix(p + "ffn_gate.weight", s.n_ff, s.n_embd);
    matrix(p + "ffn_up.weight", s.n_ff, s.n_embd);
    matrix(p + "ffn_down.weight", s.n_embd, s.n_ff);
  }
  vec("output_norm.weight", s.n_embd, 1.0f, 0.2f);
  if (!s.tied) matrix("output.weight", s.vocab, s.n_embd);
  return store;
}

// ---- Linear, attention, builder --------------------------------------------

PlainLinear::PlainLinear(const TensorRef& weight, const TensorRef* bias)
    : w_(static_cast<const float*>(weight.data)),
      b_(bias ? static_cast<const float*>(bias->data) : nullptr),
      in_(weight.shape[1]),
      out_(weight.shape[0]) {}

void PlainLinear::columns(const float* x, float* y, int64_t n_rows, int64_t begin, int64_t end) const {
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t o = begin; o < end; ++o) {
      double acc = b_ ? b_[o] : 0.0;
      for (int64_t i = 0; i < in_; ++i) acc += static_cast<double>(w_[o * in_ + i]) * x[r * in_ + i];
      y[r * out_ + o] = static_cast<float>(acc);
    }
  }
}

Status PlainLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  columns(x, y, n_rows, 0, out_);
  return Status::Ok();
}

Status PlainLinear::prepare(const float* x, int64_t n_rows) noexcept {
  x_ = x;
  n_rows_ = n_rows;
  ++prepare_calls;
  return Status::Ok();
}

void PlainLinear::compute(float* y, int64_t begin, int64_t end) noexcept {
  if (begin % 3 != 0 || (end % 3 != 0 && end != out_) || begin > end || end > out_) {
    std::fprintf(stderr, "PlainLinear::compute: range [%lld, %lld) breaks the alignment of 3\n",
                 static_cast<long long>(begin), static_cast<long long>(end));
    std::abort();
  }
  columns(x_, y, n_rows_, begin, end);
}

Status PlainAttention::forward(const AttentionArgs& a) noexcept {
  ++calls;
  const int32_t group = a.n_head / a.n_kv_head;
  std::vector<double>& scores = scores_;
  for (const AttentionSeq& s : a.seqs) {
    for (int32_t i = 0; i < s.n_query; ++i) {
      const int32_t n_ctx = s.n_past + i + 1;  // causal: positions [0, n_past + i]
      scores.assign(static_cast<size_t>(n_ctx), 0.0);
      for (int32_t h = 0; h < a.n_head; ++h) {
        const float* q = a.q + (static_cast<int64_t>(s.q_row + i) * a.n_head + h) * a.head_dim;
        const int32_t kv_head = h / group;
        double max_score = -1e300;
        for (int32_t p = 0; p < n_ctx; ++p) {
          const float* k = a.kv.k_f32() + a.kv.slot_offset(s.block_table, p) + kv_head * a.head_dim;
          double dot = 0.0;
          for (int32_t e = 0; e < a.head_dim; ++e) dot += static_cast<double>(q[e]) * k[e];
          scores[p] = dot * a.scale;
          max_score = std::max(max_score, scores[p]);
        }
        double total = 0.0;
        for (double& sc : scores) total += (sc = std::exp(sc - max_score));
        float* out = a.out + (static_cast<int64_t>(s.q_row + i) * a.n_head + h) * a.head_dim;
        for (int32_t e = 0; e < a.head_dim; ++e) {
          double acc = 0.0;
          for (int32_t p = 0; p < n_ctx; ++p)
            acc += scores[p] * a.kv.v_f32()[a.kv.slot_offset(s.block_table, p) + kv_head * a.head_dim + e];
          out[e] = static_cast<float>(acc / total);
        }
      }
    }
  }
  return Status::Ok();
}

bool FakeBuilder::used_after_expiry(const char* what) const {
  if (expired_) ADD_FAILURE() << "the model called ModelBuilder::" << what << " after build()";
  return expired_;
}

Result<std::unique_ptr<Linear>> FakeBuilder::linear(std::string_view name, std::string_view bias_name) noexcept {
  if (used_after_expiry("linear")) return Internal("builder expired");
  const TensorRef* w = weights_.find(name);
  if (w == nullptr) return NotFound("fake builder: no tensor " + std::string(name));
  if (w->dtype != DType::f32) return Unsupported("fake builder: PlainLinear reads f32 only");
  const TensorRef* b = bias_name.empty() ? nullptr : weights_.find(bias_name);
  return std::unique_ptr<Linear>(std::make_unique<PlainLinear>(*w, b));
}

// Both serve the tensor's f32 values whatever its storage (see store_as).
Status FakeBuilder::dequantize(const TensorRef& tensor, float* out) noexcept {
  if (used_after_expiry("dequantize")) return Internal("builder expired");
  const auto& v = weights_.values(tensor.name);
  std::copy(v.begin(), v.end(), out);
  return Status::Ok();
}

Status FakeBuilder::dequantize_rows(const TensorRef& tensor, int64_t first_row, int64_t n_rows, float* out) noexcept {
  if (used_after_expiry("dequantize_rows")) return Internal("builder expired");
  ++dequantize_rows_calls;
  if (first_row < 0 || first_row + n_rows > tensor.rows())
    return InvalidArgument("fake builder: rows out of range");
  const auto& v = weights_.values(tensor.name);
  std::copy_n(v.begin() + first_row * tensor.cols(), n_rows * tensor.cols(), out);
  return Status::Ok();
}

namespace {

class FakeRowDecoder final : public RowDecoder {
 public:
  FakeRowDecoder(const std::vector<float>& values, int64_t rows, int64_t cols)
      : values_(values), rows_(rows), cols_(cols) {}
  Status decode(int64_t first_row, int64_t n_rows, float* out) const noexcept override {
    if (first_row < 0 || n_rows < 0 || first_row + n_rows > rows_) return InvalidArgument("fake decoder: rows out of range");
    std::copy_n(values_.begin() + first_row * cols_, n_rows * cols_, out);
    return Status::Ok();
  }

 private:
  const std::vector<float>& values_;
  int64_t rows_, cols_;
};

}  // namespace

Result<std::unique_ptr<RowDecoder>> FakeBuilder::row_decoder(const TensorRef& tensor) noexcept {
  if (used_after_expiry("row_decoder")) return Internal("builder expired");
  if (!weights_.row_decoders) return Status(Unsupported("fake builder: no row decoders"));
  ++row_decoders_made;
  return std::unique_ptr<RowDecoder>(
      std::make_unique<FakeRowDecoder>(weights_.values(tensor.name), tensor.rows(), tensor.cols()));
}

// ---- KV cache ----------------------------------------------------------------

Status TestKvCache::configure(const SequenceStateSpec& spec) noexcept {
  for (const LayerMemorySpec& l : spec.layers) {
    if (l.kind != LayerMemoryKind::attention) return Unsupported("test cache: attention layers only");
    n_kv_head_ = l.n_kv_head;
    head_dim_ = l.head_dim;
  }
  const size_t floats = static_cast<size_t>(n_blocks_) * block_size_ * n_kv_head_ * head_dim_;
  k_.assign(spec.layers.size(), std::vector<float>(floats, 0.0f));
  v_.assign(spec.layers.size(), std::vector<float>(floats, 0.0f));
  // Hand out blocks in a scrambled order (odd ids descending, then even ones):
  // a model that ignored the block table would read the wrong slots.
  free_.clear();
  for (int32_t b = 0; b < n_blocks_; ++b) free_.push_back(b % 2 == 0 ? b / 2 : n_blocks_ - 1 - b / 2);
  return Status::Ok();
}

Result<SeqId> TestKvCache::create_sequence() noexcept {
  const SeqId id = next_id_++;
  seqs_[id] = Sequence{};
  return id;
}

void TestKvCache::release(SeqId seq) noexcept {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  free_.insert(free_.end(), it->second.blocks.begin(), it->second.blocks.end());
  seqs_.erase(it);
}

Status TestKvCache::append_slots(SeqId seq, int32_t n) noexcept {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return NotFound("test cache: no sequence");
  Sequence& s = it->second;
  const int32_t new_length = s.length + n;
  const size_t blocks_needed = static_cast<size_t>((new_length + block_size_ - 1) / block_size_);
  if (blocks_needed - s.blocks.size() > free_.size()) return OutOfMemory("test cache: pool full");
  while (s.blocks.size() < blocks_needed) {
    s.blocks.push_back(free_.front());
    free_.erase(free_.begin());
  }
  s.length = new_length;
  return Status::Ok();
}

Result<SeqId> TestKvCache::fork(SeqId seq) noexcept {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return NotFound("test cache: no sequence");
  const Sequence src = it->second;
  auto made = create_sequence();
  if (!append_slots(made.value(), src.length).ok()) return OutOfMemory("test cache: pool full");
  const size_t row = static_cast<size_t>(n_kv_head_) * head_dim_;
  const Sequence& dst = seqs_[made.value()];
  for (size_t l = 0; l < k_.size(); ++l) {
    for (size_t b = 0; b < src.blocks.size(); ++b) {
      const size_t from = static_cast<size_t>(src.blocks[b]) * block_size_ * row;
      const size_t to = static_cast<size_t>(dst.blocks[b]) * block_size_ * row;
      std::copy_n(k_[l].begin() + from, block_size_ * row, k_[l].begin() + to);
      std::copy_n(v_[l].begin() + from, block_size_ * row, v_[l].begin() + to);
    }
  }
  return made;
}

Status TestKvCache::truncate(SeqId seq, int32_t new_length) noexcept {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return NotFound("test cache: no sequence");
  Sequence& s = it->second;
  if (new_length < 0 || new_length > s.length) return InvalidArgument("test cache: bad length");
  s.length = new_length;
  const size_t keep = static_cast<size_t>((new_length + block_size_ - 1) / block_size_);
  while (s.blocks.size() > keep) {
    free_.push_back(s.blocks.back());
    s.blocks.pop_back();
  }
  return Status::Ok();
}

int32_t TestKvCache::length(SeqId seq) const noexcept {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.length;
}

std::span<const int32_t> TestKvCache::block_table(SeqId seq) const noexcept {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return {};
  return it->second.blocks;
}

KvLayerView TestKvCache::layer(int32_t layer) noexcept {
  KvLayerView v;
  v.block_size = block_size_;
  v.n_kv_head = n_kv_head_;
  v.head_dim = head_dim_;
  v.k = k_[static_cast<size_t>(layer)].data();
  v.v = v_[static_cast<size_t>(layer)].data();
  return v;
}

MemoryStats TestKvCache::stats() const noexcept {
  MemoryStats s;
  s.blocks_total = n_blocks_;
  s.blocks_used = n_blocks_ - static_cast<int64_t>(free_.size());
  return s;
}

}  // namespace tessera::transformer::testing
