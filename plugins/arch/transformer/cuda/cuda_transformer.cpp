#include "cuda_transformer.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "device_buffer.hpp"
#include "kernels.hpp"
#include "model_config.hpp"
#include "tessera/blocks/rope.hpp"

namespace tessera::transformer::cuda {

// Outside the anonymous namespace: CudaTransformer::State, which has
// external linkage, holds a vector of them.
struct LayerOnDevice {
  DeviceBuffer attn_norm, ffn_norm;           // [n_embd] each
  DeviceBuffer bias_q, bias_k, bias_v, bias_o;  // [q_dim], [kv_dim], [kv_dim], [n_embd]; empty when absent
  DeviceMatrix q, k, v, o, gate, up, down;    // views of `storage`
  DeviceBuffer k_cache, v_cache;              // [max_context, kv_dim] each
};

namespace {

// WeightFormat takes DType's values, so that a stored tensor's dtype names its kernel.
static_assert(static_cast<uint32_t>(WeightFormat::f32) == static_cast<uint32_t>(DType::f32));
static_assert(static_cast<uint32_t>(WeightFormat::f16) == static_cast<uint32_t>(DType::f16));
static_assert(static_cast<uint32_t>(WeightFormat::bf16) == static_cast<uint32_t>(DType::bf16));
static_assert(static_cast<uint32_t>(WeightFormat::q4_0) == static_cast<uint32_t>(DType::q4_0));
static_assert(static_cast<uint32_t>(WeightFormat::q4_1) == static_cast<uint32_t>(DType::q4_1));
static_assert(static_cast<uint32_t>(WeightFormat::q5_0) == static_cast<uint32_t>(DType::q5_0));
static_assert(static_cast<uint32_t>(WeightFormat::q5_1) == static_cast<uint32_t>(DType::q5_1));
static_assert(static_cast<uint32_t>(WeightFormat::q8_0) == static_cast<uint32_t>(DType::q8_0));
static_assert(static_cast<uint32_t>(WeightFormat::q4_k) == static_cast<uint32_t>(DType::q4_k));
static_assert(static_cast<uint32_t>(WeightFormat::q5_k) == static_cast<uint32_t>(DType::q5_k));
static_assert(static_cast<uint32_t>(WeightFormat::q6_k) == static_cast<uint32_t>(DType::q6_k));

bool decodable(DType t) {
  switch (t) {
    case DType::f32: case DType::f16: case DType::bf16: case DType::q4_0: case DType::q4_1: case DType::q5_0:
    case DType::q5_1: case DType::q8_0: case DType::q4_k: case DType::q5_k: case DType::q6_k:
      return true;
    default:
      return false;
  }
}

}  // namespace

struct CudaTransformer::State {
  ModelConfig config;
  CudaTransformerOptions options;
  std::string device_name;
  cudaStream_t stream = nullptr;
  cudaGraphExec_t step_graph = nullptr;

  std::vector<DeviceBuffer> storage;  // every weight matrix's bytes
  DeviceMatrix token_embd, output;
  DeviceBuffer output_norm;           // [n_embd]
  std::vector<LayerOnDevice> layers;
  DeviceBuffer cos_sin;               // [max_context, 2, head_dim / 2]
  uint64_t weight_bytes = 0;

  // Activations for up to max_batch_rows rows.
  DeviceBuffer resid, normed, q, k, v, attn, gate, up, logits;
  DeviceBuffer ids;        // [max_batch_rows] int32: prompt ids
  DeviceBuffer token;      // [1] int32: the last greedy choice, next step's input
  DeviceBuffer position;   // [1] int32: tokens in the cache
  int64_t host_position = 0;
  int64_t logit_rows = 0;  // rows the last forward left in `logits`

  ~State() {
    if (step_graph != nullptr) cudaGraphExecDestroy(step_graph);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  DeviceMatrix upload_matrix(const WeightStore& weights, const std::string& name) {
    const TensorRef* t = weights.find(name);
    if (t == nullptr) throw std::runtime_error("cuda: " + weights.source() + " has no tensor " + name);
    if (!decodable(t->dtype))
      throw std::runtime_error("cuda: " + name + " is " + std::string(dtype_info(t->dtype).name) +
                               ", which the GPU kernels do not decode yet");
    const int64_t unit = dtype_info(t->dtype).block_elems == 256 ? 256 : 32;
    if (t->ndim != 2 || t->cols() % unit != 0)
      throw std::runtime_error("cuda: " + name + " must be a matrix whose rows are a multiple of " +
                               std::to_string(unit) + " values");
    DeviceBuffer& b = storage.emplace_back(t->nbytes);
    b.upload(t->data, t->nbytes);
    DeviceMatrix m;
    m.data = b.as<uint8_t>();
    m.format = static_cast<WeightFormat>(t->dtype);
    m.rows = t->rows();
    m.cols = t->cols();
    m.row_bytes = static_cast<int64_t>(t->nbytes) / m.rows;
    return m;
  }

  // A vector of `width` values as f32 on the device; empty when absent and optional.
  DeviceBuffer upload_vector(const WeightStore& weights, const std::string& name, int64_t width, bool optional) {
    const TensorRef* t = weights.find(name);
    if (t == nullptr) {
      if (optional) return {};
      throw std::runtime_error("cuda: " + weights.source() + " has no tensor " + name);
    }
    if (t->numel() != width)
      throw std::runtime_error("cuda: " + name + " has " + std::to_string(t->numel()) + " values, not " +
                               std::to_string(width));
    DeviceBuffer out(static_cast<size_t>(width) * sizeof(float));
    if (t->dtype == DType::f32) {
      out.upload(t->data, t->nbytes);
      return out;
    }
    if (!decodable(t->dtype) || width % 32 != 0)
      throw std::runtime_error("cuda: vector " + name + " in " + std::string(dtype_info(t->dtype).name) +
                               " is not supported on the GPU");
    DeviceBuffer raw(t->nbytes);
    raw.upload(t->data, t->nbytes);
    const int32_t zero = 0;
    DeviceBuffer row0(sizeof(int32_t));
    row0.upload(&zero, sizeof zero);
    const DeviceMatrix m{raw.as<uint8_t>(), static_cast<WeightFormat>(t->dtype), 1, width,
                         static_cast<int64_t>(t->nbytes)};
    // The uploads ran on the legacy stream; the gather runs on ours.
    check_cuda(cudaDeviceSynchronize(), "vector upload");
    gather_rows(m, row0.as<int32_t>(), 1, out.as<float>(), stream);
    check_cuda(cudaStreamSynchronize(stream), "vector upload");
    return out;
  }

  void enqueue_forward(const int32_t* ids_dev, int64_t n, bool every_row_logits) {
    const ModelConfig& c = config;
    const int64_t d = c.n_embd;
    const auto eps = static_cast<float>(c.hparams.rms_norm_eps);
    const auto n_head = static_cast<int32_t>(c.n_head), n_kv = static_cast<int32_t>(c.n_kv_head);
    const auto hd = static_cast<int32_t>(c.head_dim);
    const bool neox = c.rope().style == blocks::RopeStyle::neox;
    const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
    const int32_t* pos = position.as<int32_t>();
    float* x = resid.as<float>();
    float* h = normed.as<float>();

    gather_rows(token_embd, ids_dev, n, x, stream);
    for (LayerOnDevice& l : layers) {
      // Eight launches a layer: the fused ones are bit for bit the plain
      // chain (matvec ×3, rope ×2, store_rows ×2; matvec + add; matvec ×2 +
      // swiglu), which cuda_kernels_test checks.
      rms_norm(x, l.attn_norm.as<float>(), h, n, d, eps, stream);
      const MatvecTarget qkv[] = {{l.q, l.bias_q.as<float>(), q.as<float>()},
                                  {l.k, l.bias_k.as<float>(), k.as<float>()},
                                  {l.v, l.bias_v.as<float>(), v.as<float>()}};
      matvec_group(qkv, 3, h, n, stream);
      rope_and_store(q.as<float>(), k.as<float>(), v.as<float>(), l.k_cache.as<float>(), l.v_cache.as<float>(),
                     cos_sin.as<float>(), pos, n, n_head, n_kv, hd, neox, stream);
      attention(q.as<float>(), l.k_cache.as<float>(), l.v_cache.as<float>(), attn.as<float>(), pos, n, n_head, n_kv,
                hd, scale, stream);
      matvec(l.o, attn.as<float>(), x, n, l.bias_o.as<float>(), stream, Store::add);
      rms_norm(x, l.ffn_norm.as<float>(), h, n, d, eps, stream);
      matvec_swiglu(l.gate, l.up, h, gate.as<float>(), n, stream, up.as<float>());
      matvec(l.down, gate.as<float>(), x, n, nullptr, stream, Store::add);
    }
    const int64_t rows = every_row_logits ? n : 1;
    const float* last = x + (n - rows) * d;
    rms_norm(last, output_norm.as<float>(), h, rows, d, eps, stream);
    matvec(output, h, logits.as<float>(), rows, nullptr, stream);
    argmax_and_advance(logits.as<float>() + (rows - 1) * c.vocab, c.vocab, token.as<int32_t>(),
                       position.as<int32_t>(), static_cast<int32_t>(n), stream);
    logit_rows = rows;
  }

  int32_t read_token() {
    check_cuda(cudaGetLastError(), "kernel launch");
    int32_t id = -1;
    check_cuda(cudaMemcpyAsync(&id, token.as<int32_t>(), sizeof id, cudaMemcpyDeviceToHost, stream), "token");
    check_cuda(cudaStreamSynchronize(stream), "forward");
    if (id < 0) {
      host_position = 0;  // the sequence is over: the next call must be start()
      throw std::runtime_error("cuda: the logits hold NaN (a broken forward pass)");
    }
    return id;
  }

  Status check_prompt(std::span<const int32_t> ids) const {
    if (ids.empty()) return InvalidArgument("cuda: the prompt is empty");
    if (static_cast<int64_t>(ids.size()) > options.max_context)
      return InvalidArgument("cuda: the prompt has " + std::to_string(ids.size()) + " tokens, the context holds " +
                             std::to_string(options.max_context));
    for (int32_t id : ids)
      if (id < 0 || id >= config.vocab)
        return InvalidArgument("cuda: token id " + std::to_string(id) + " is outside the vocabulary");
    return Status::Ok();
  }

  // Runs `ids` (checked) from position 0 in chunks; with `out`, gathers every row's logits.
  int32_t run_prompt(std::span<const int32_t> ids, std::vector<float>* out) {
    // Until the prompt has run, there is no sequence to step (a failure midway leaves none).
    host_position = 0;
    logit_rows = 0;
    const int32_t zero = 0;
    check_cuda(cudaMemcpyAsync(position.as<int32_t>(), &zero, sizeof zero, cudaMemcpyHostToDevice, stream), "reset");
    if (out != nullptr) out->resize(ids.size() * static_cast<size_t>(config.vocab));
    int32_t next = -1;
    for (size_t first = 0; first < ids.size(); first += static_cast<size_t>(options.max_batch_rows)) {
      const size_t n = std::min(ids.size() - first, static_cast<size_t>(options.max_batch_rows));
      check_cuda(cudaMemcpyAsync(this->ids.as<int32_t>(), ids.data() + first, n * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, stream),
                 "prompt ids");
      enqueue_forward(this->ids.as<int32_t>(), static_cast<int64_t>(n), out != nullptr);
      if (out != nullptr)
        check_cuda(cudaMemcpyAsync(out->data() + first * static_cast<size_t>(config.vocab), logits.as<float>(),
                                   n * static_cast<size_t>(config.vocab) * sizeof(float), cudaMemcpyDeviceToHost,
                                   stream),
                   "logits");
      next = read_token();
    }
    host_position = static_cast<int64_t>(ids.size());
    return next;
  }

  int32_t run_step() {
    if (!options.graphs) {
      enqueue_forward(token.as<int32_t>(), 1, false);
    } else {
      if (step_graph == nullptr) {
        cudaGraph_t graph = nullptr;
        check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "graph capture");
        try {
          enqueue_forward(token.as<int32_t>(), 1, false);
        } catch (...) {
          cudaStreamEndCapture(stream, &graph);  // leave the stream usable
          if (graph != nullptr) cudaGraphDestroy(graph);
          throw;
        }
        check_cuda(cudaStreamEndCapture(stream, &graph), "graph capture");
        const cudaError_t made = cudaGraphInstantiate(&step_graph, graph, 0);
        cudaGraphDestroy(graph);
        check_cuda(made, "graph instantiate");
      }
      check_cuda(cudaGraphLaunch(step_graph, stream), "graph launch");
      logit_rows = 1;
    }
    const int32_t next = read_token();
    ++host_position;
    return next;
  }
};

Result<std::unique_ptr<CudaTransformer>> CudaTransformer::create(const WeightStore& weights,
                                                                 const CudaTransformerOptions& options) noexcept {
  return guard([&]() -> Result<std::unique_ptr<CudaTransformer>> {
    auto config = resolve_config(weights);
    if (!config.ok()) return config.status();
    auto s = std::make_unique<State>();
    s->config = std::move(config).value();
    s->options = options;
    const ModelConfig& c = s->config;
    s->options.max_context = std::max<int64_t>(1, std::min(options.max_context, c.max_context));
    // At most 65535 rows: the attention grid's second dimension.
    s->options.max_batch_rows =
        std::clamp<int64_t>(std::min(options.max_batch_rows, s->options.max_context), 1, 65535);
    if (c.head_dim % 32 != 0 || c.head_dim > 256 || c.head_dim / 32 == 5 || c.head_dim / 32 == 6 ||
        c.head_dim / 32 == 7)
      return InvalidArgument("cuda: head_dim " + std::to_string(c.head_dim) +
                             " is not one the GPU attention kernel takes (32, 64, 96, 128 or 256)");
    if (c.n_embd % 32 != 0 || c.n_ff % 32 != 0)
      return InvalidArgument("cuda: n_embd and n_ff must be multiples of 32 on the GPU");

    int count = 0;
    check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (options.device < 0 || options.device >= count)
      return InvalidArgument("cuda: no device " + std::to_string(options.device) + " (" + std::to_string(count) +
                             " present)");
    check_cuda(cudaSetDevice(options.device), "cudaSetDevice");
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, options.device), "cudaGetDeviceProperties");
    s->device_name = prop.name;
    check_cuda(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreate");

    const TensorNames& names = c.names;
    s->token_embd = s->upload_matrix(weights, names.global("token_embd.weight"));
    const std::string output_name = names.global("output.weight");
    s->output = weights.find(output_name) != nullptr ? s->upload_matrix(weights, output_name) : s->token_embd;
    s->output_norm = s->upload_vector(weights, names.global("output_norm.weight"), c.n_embd, false);
    s->weight_bytes = static_cast<uint64_t>(s->output.rows * s->output.row_bytes);
    const size_t cache_bytes = static_cast<size_t>(s->options.max_context * c.kv_dim()) * sizeof(float);
    for (int64_t i = 0; i < c.n_layer; ++i) {
      LayerOnDevice l;
      l.attn_norm = s->upload_vector(weights, names.layer(i, "attn_norm.weight"), c.n_embd, false);
      l.ffn_norm = s->upload_vector(weights, names.layer(i, "ffn_norm.weight"), c.n_embd, false);
      l.bias_q = s->upload_vector(weights, names.layer(i, "attn_q.bias"), c.q_dim(), true);
      l.bias_k = s->upload_vector(weights, names.layer(i, "attn_k.bias"), c.kv_dim(), true);
      l.bias_v = s->upload_vector(weights, names.layer(i, "attn_v.bias"), c.kv_dim(), true);
      l.bias_o = s->upload_vector(weights, names.layer(i, "attn_output.bias"), c.n_embd, true);
      l.q = s->upload_matrix(weights, names.layer(i, "attn_q.weight"));
      l.k = s->upload_matrix(weights, names.layer(i, "attn_k.weight"));
      l.v = s->upload_matrix(weights, names.layer(i, "attn_v.weight"));
      l.o = s->upload_matrix(weights, names.layer(i, "attn_output.weight"));
      l.gate = s->upload_matrix(weights, names.layer(i, "ffn_gate.weight"));
      l.up = s->upload_matrix(weights, names.layer(i, "ffn_up.weight"));
      l.down = s->upload_matrix(weights, names.layer(i, "ffn_down.weight"));
      for (const DeviceMatrix* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
        s->weight_bytes += static_cast<uint64_t>(m->rows * m->row_bytes);
      const auto fits = [](const DeviceMatrix& m, int64_t rows, int64_t cols) {
        return m.rows == rows && m.cols == cols;
      };
      const bool shapes_fit = fits(l.q, c.q_dim(), c.n_embd) && fits(l.k, c.kv_dim(), c.n_embd) &&
                              fits(l.v, c.kv_dim(), c.n_embd) && fits(l.o, c.n_embd, c.q_dim()) &&
                              fits(l.gate, c.n_ff, c.n_embd) && fits(l.up, c.n_ff, c.n_embd) &&
                              fits(l.down, c.n_embd, c.n_ff);
      if (!shapes_fit) return InvalidArgument("cuda: layer " + std::to_string(i) + "'s matrices do not fit its hyper-parameters");
      l.k_cache = DeviceBuffer(cache_bytes);
      l.v_cache = DeviceBuffer(cache_bytes);
      s->layers.push_back(std::move(l));
    }
    if (s->token_embd.cols != c.n_embd || s->token_embd.rows < c.vocab || s->output.rows != c.vocab)
      return InvalidArgument("cuda: the embedding or output matrix does not fit the vocabulary and n_embd");

    // cos/sin as the CPU's RopeTable computes them (double angle, rounded once).
    const std::vector<double> freqs = blocks::rope_frequencies(c.rope());
    const int64_t half = c.head_dim / 2;
    std::vector<float> table(static_cast<size_t>(s->options.max_context * c.head_dim));
    for (int64_t p = 0; p < s->options.max_context; ++p)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(p) * freqs[static_cast<size_t>(i)];
        table[static_cast<size_t>(p * c.head_dim + i)] = static_cast<float>(std::cos(angle));
        table[static_cast<size_t>(p * c.head_dim + half + i)] = static_cast<float>(std::sin(angle));
      }
    s->cos_sin = DeviceBuffer(table.size() * sizeof(float));
    s->cos_sin.upload(table.data(), table.size() * sizeof(float));

    const auto rows = static_cast<size_t>(s->options.max_batch_rows);
    const auto f = sizeof(float);
    s->resid = DeviceBuffer(rows * c.n_embd * f);
    s->normed = DeviceBuffer(rows * c.n_embd * f);
    s->q = DeviceBuffer(rows * c.q_dim() * f);
    s->k = DeviceBuffer(rows * c.kv_dim() * f);
    s->v = DeviceBuffer(rows * c.kv_dim() * f);
    s->attn = DeviceBuffer(rows * c.q_dim() * f);
    s->gate = DeviceBuffer(rows * c.n_ff * f);
    s->up = DeviceBuffer(rows * c.n_ff * f);
    s->logits = DeviceBuffer(rows * c.vocab * f);
    s->ids = DeviceBuffer(rows * sizeof(int32_t));
    s->token = DeviceBuffer(sizeof(int32_t));
    s->position = DeviceBuffer(sizeof(int32_t));
    check_cuda(cudaDeviceSynchronize(), "upload");
    return std::unique_ptr<CudaTransformer>(new CudaTransformer(std::move(s)));
  });
}

CudaTransformer::CudaTransformer(std::unique_ptr<State> state) : s_(std::move(state)) {}
CudaTransformer::~CudaTransformer() = default;

Result<int32_t> CudaTransformer::start(std::span<const int32_t> ids) noexcept {
  return guard([&]() -> Result<int32_t> {
    TESSERA_RETURN_IF_ERROR(s_->check_prompt(ids));
    return s_->run_prompt(ids, nullptr);
  });
}

Result<int32_t> CudaTransformer::step() noexcept {
  return guard([&]() -> Result<int32_t> {
    if (s_->host_position <= 0) return InvalidArgument("cuda: step() before start()");
    if (s_->host_position >= s_->options.max_context)
      return InvalidArgument("cuda: the context is full (" + std::to_string(s_->options.max_context) + " tokens)");
    return s_->run_step();
  });
}

Status CudaTransformer::last_logits(std::vector<float>& out) noexcept {
  return guard([&]() -> Status {
    if (s_->logit_rows == 0) return InvalidArgument("cuda: no forward has run");
    out.resize(static_cast<size_t>(s_->config.vocab));
    check_cuda(cudaMemcpy(out.data(), s_->logits.as<float>() + (s_->logit_rows - 1) * s_->config.vocab,
                          out.size() * sizeof(float), cudaMemcpyDeviceToHost),
               "logits");
    return Status::Ok();
  });
}

Status CudaTransformer::all_logits(std::span<const int32_t> ids, std::vector<float>& out) noexcept {
  return guard([&]() -> Status {
    TESSERA_RETURN_IF_ERROR(s_->check_prompt(ids));
    s_->run_prompt(ids, &out);
    return Status::Ok();
  });
}

int64_t CudaTransformer::vocab() const noexcept { return s_->config.vocab; }
int64_t CudaTransformer::max_context() const noexcept { return s_->options.max_context; }
int64_t CudaTransformer::position() const noexcept { return s_->host_position; }
uint64_t CudaTransformer::weight_bytes() const noexcept { return s_->weight_bytes; }
const std::string& CudaTransformer::device_name() const noexcept { return s_->device_name; }

}  // namespace tessera::transformer::cuda
