"""Writes tests/data/hf-quantized: two tiny Llama checkpoints packed by the
reference packers themselves, and the float32 logits transformers gives for
the weights they hold.

  gptq-act-order/  AutoGPTQ 0.7.1's exllama QuantLinear.pack: 4 bits, groups
                   of 32, act-order (a random g_idx), symmetric, format v1
  awq-gemm/        AutoAWQ 0.2.9's WQLinear_GEMM.from_linear: 4 bits, groups
                   of 32, zero points

Each Linear is first given weights that are exactly s·(q − z) for random
q, z and f16 scales s, so the packer recovers q and z without rounding and
the float model below holds the very weights the checkpoint stores. The
logits (64 positions of the held-out Mamba test text, vocabulary 2048) are
those of transformers' LlamaForCausalLM in float32 with these weights: an
engine that reads the packing right reproduces them.

Run by make.sh (which fetches the packers' sources from PyPI); not by CI.
"""
import importlib.util
import json
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

SEED = 20261203
GROUP = 32
POSITIONS = 64

root = Path(__file__).resolve().parents[2]
packers = Path(sys.argv[1])           # unpacked auto_gptq wheel and autoawq sdist
out_dir = root / "tests" / "data" / "hf-quantized"
mamba = root / "tests" / "data" / "mamba"


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def awq_gemm_module():
    # The packer's own module, without the package __init__ (which imports
    # AutoAWQ's model zoo and needs a GPU stack).
    awq_root = packers / "autoawq-0.2.9" / "awq"
    for name, sub in [("awq", ""), ("awq.modules", "modules"), ("awq.modules.linear", "modules/linear")]:
        pkg = types.ModuleType(name)
        pkg.__path__ = [str(awq_root / sub)]
        sys.modules[name] = pkg
    sys.path.insert(0, str(awq_root.parent))
    return load_module("awq.modules.linear.gemm", awq_root / "modules" / "linear" / "gemm.py")


def tiny_llama():
    config = LlamaConfig(vocab_size=2048, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).float().eval()
    with torch.no_grad():
        for p in model.parameters():   # f16-representable, as the files store them
            p.copy_(p.half().float())
        for layer in model.model.layers:  # norms away from 1, so a swapped norm shows
            layer.input_layernorm.weight.copy_((1 + 0.2 * torch.randn(128)).half().float())
            layer.post_attention_layernorm.weight.copy_((1 + 0.2 * torch.randn(128)).half().float())
    return model


def linears(model):
    for i, layer in enumerate(model.model.layers):
        for name in ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                     "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]:
            module = layer
            for part in name.split("."):
                module = getattr(module, part)
            yield f"model.layers.{i}.{name}", module


def set_grid_weights(linear, rng, symmetric, g_idx):
    """Gives `linear` weights s·(q − z); returns scales and zeros, [out, groups]."""
    out_f, in_f = linear.weight.shape
    groups = in_f // GROUP
    q = torch.from_numpy(rng.integers(0, 16, size=(out_f, in_f))).int()
    zeros = torch.full((out_f, groups), 8, dtype=torch.int32) if symmetric else \
        torch.from_numpy(rng.integers(1, 16, size=(out_f, groups))).int()
    scales = torch.from_numpy(rng.uniform(0.002, 0.02, size=(out_f, groups))).half().float()
    w = scales[:, g_idx] * (q - zeros[:, g_idx]).float()
    with torch.no_grad():
        linear.weight.copy_(w)
    return scales, zeros


def save_folder(name, model, tensors, quantization_config):
    folder = out_dir / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    config = model.config.to_dict()
    config["architectures"] = ["LlamaForCausalLM"]
    config["torch_dtype"] = "float16"
    config["rope_theta"] = 10000.0
    config["quantization_config"] = quantization_config
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(folder / "model.safetensors"))
    for f in ["tokenizer.json", "tokenizer_config.json"]:
        shutil.copy(mamba / "mamba1-hf" / f, folder / f)


def plain_tensors(model, packed_names):
    """Every parameter except the packed Linears' weights, as f16."""
    state = model.state_dict()
    return {k: v.half() for k, v in state.items()
            if k != "lm_head.weight" and not any(k == n + ".weight" for n in packed_names)}


def logits_of(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float().numpy()


def main():
    exllama = load_module("qlinear_exllama", packers / "auto_gptq" / "nn_modules" / "qlinear" / "qlinear_exllama.py")
    gemm = awq_gemm_module()
    ids = [int(x) for x in (mamba / "mamba1.heldout.txt").read_text().split()][:POSITIONS]
    rng = np.random.default_rng(SEED)
    out_dir.mkdir(parents=True, exist_ok=True)
    checks = {}

    # GPTQ with act-order: each group is a random set of 32 input columns.
    model = tiny_llama()
    tensors, names = {}, []
    for name, linear in linears(model):
        in_f = linear.in_features
        g_idx = torch.from_numpy(rng.permutation(in_f) // GROUP).int()
        scales, zeros = set_grid_weights(linear, rng, symmetric=True, g_idx=g_idx)
        packed = exllama.QuantLinear(4, GROUP, in_f, linear.out_features, bias=False)
        packed.pack(linear, scales, zeros.clone(), g_idx=g_idx)
        for part in ["qweight", "qzeros", "scales", "g_idx"]:
            tensors[f"{name}.{part}"] = getattr(packed, part).clone()
        names.append(name)
    tensors.update(plain_tensors(model, names))
    save_folder("gptq-act-order", model, tensors,
                {"quant_method": "gptq", "bits": 4, "group_size": GROUP, "desc_act": True, "sym": True,
                 "checkpoint_format": "gptq"})
    logits_of(model, ids).astype("<f4").tofile(out_dir / "gptq-act-order.logits.f32")

    # AWQ GEMM with zero points, groups in column order.
    model = tiny_llama()
    tensors, names = {}, []
    for name, linear in linears(model):
        in_f = linear.in_features
        g_idx = torch.arange(in_f) // GROUP
        scales, zeros = set_grid_weights(linear, rng, symmetric=False, g_idx=g_idx)
        packed = gemm.WQLinear_GEMM.from_linear(linear, 4, GROUP, scales=scales.t().contiguous(),
                                                zeros=zeros.t().contiguous())
        for part in ["qweight", "qzeros", "scales"]:
            tensors[f"{name}.{part}"] = getattr(packed, part).clone()
        names.append(name)
    tensors.update(plain_tensors(model, names))
    save_folder("awq-gemm", model, tensors,
                {"quant_method": "awq", "bits": 4, "group_size": GROUP, "zero_point": True, "version": "gemm"})
    logits_of(model, ids).astype("<f4").tofile(out_dir / "awq-gemm.logits.f32")

    (out_dir / "heldout.txt").write_text(" ".join(map(str, ids)) + "\n")
    print("wrote", out_dir)


if __name__ == "__main__":
    main()
