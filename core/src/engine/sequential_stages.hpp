// sequential_stages.hpp: the order in which GPTQ calibrates one layer's
// Linears when it goes "true sequential" (Frantar et al.'s reference
// `--true-sequential`, AutoGPTQ's and GPTQModel's default).
//
// All at once, every Linear of layer l observes inputs that the layer's
// original weights computed: the attention output projection sees what the
// float q/k/v gave, the down projection what the float gate/up gave. True
// sequential quantizes the layer in stages in forward order, each stage
// observed with the stages before it already quantized, so that GPTQ also
// compensates for the errors the layer's own earlier Linears make. Linears
// that read the same input share a stage (their inputs would not change).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace tessera {

// The stages of one layer's weights, named "blk.N.KIND.weight", in forward
// order, as indices into `names` (each stage in the order given):
//   Transformer: {attn_q, attn_k, attn_v}, {attn_output}, {ffn_gate, ffn_up},
//                {ffn_down};
//   Mamba:       {ssm_in}, {ssm_x}, {ssm_dt}, {ssm_out}.
// A kind missing from the layer (a weight the format cannot hold) leaves its
// stage out. A layer holding any other kind is one stage, everything
// observed together: where that kind sits in the forward is not known, and a
// stage placed after it would never be reached.
std::vector<std::vector<size_t>> sequential_stages(std::span<const std::string> names);

// The weights of the layer's last stage, whose products nothing observed
// after them reads, only the layer's output (the down projection; Mamba's
// out projection), as indices into `names`. Empty where that is not known: a
// kind the stages above do not know, or Transformer and Mamba kinds in one
// layer (a hybrid's order is its architecture's, not this table's).
std::vector<size_t> output_only_weights(std::span<const std::string> names);

}  // namespace tessera
