"""The two model configurations (Hugging Face transformers classes)."""
from transformers import Mamba2Config, Mamba2ForCausalLM, MambaConfig, MambaForCausalLM

VOCAB_SIZE = 2048
BOS_ID, EOS_ID = 1, 2

# Token ids shared by both models: SentencePiece <unk>=0, <s>=1, </s>=2, no pad.
_TOKENS = dict(vocab_size=VOCAB_SIZE, bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=None,
               tie_word_embeddings=True)


def mamba1_config():
    return MambaConfig(
        **_TOKENS,
        hidden_size=128,
        num_hidden_layers=4,
        state_size=16,
        expand=2,              # d_inner = 256 (llama.cpp's converter insists on expand 2)
        conv_kernel=4,
        time_step_rank=8,      # "auto" would give ceil(128/16) = 8 as well
        use_bias=False,
        use_conv_bias=True,
        layer_norm_epsilon=1e-5,
        residual_in_fp32=True,
        use_mambapy=False,
        use_associative_scan=False,   # plain sequential scan in eager mode
        pad_vocab_size_multiple=8,    # read by llama.cpp's converter; 2048 needs no padding
    )


def mamba2_config():
    return Mamba2Config(
        **_TOKENS,
        hidden_size=128,
        num_hidden_layers=4,
        state_size=32,
        expand=2,              # d_inner = 256 = num_heads * head_dim
        head_dim=32,
        num_heads=8,
        n_groups=2,            # 4 heads share each B/C group; gated norm in 2 groups of 128
        conv_kernel=4,
        chunk_size=64,
        use_bias=False,
        use_conv_bias=True,
        layer_norm_epsilon=1e-5,
        residual_in_fp32=True,
        norm_before_gate=False,       # informational: HF always gates before the norm
        rms_norm=True,                # informational: HF always uses the gated RMS norm
        pad_vocab_size_multiple=16,   # read by llama.cpp's converter; 2048 needs no padding
    )


CONFIGS = {"mamba1": mamba1_config, "mamba2": mamba2_config}
CLASSES = {"mamba1": MambaForCausalLM, "mamba2": Mamba2ForCausalLM}


def build(name):
    return CLASSES[name](CONFIGS[name]())
