"""A faster stand-in for transformers' Mamba-1 selective scan, for training only.

transformers' CPU path indexes a [batch, d_inner, seq, state] tensor once per
time step; autograd then materialises a full-size gradient for every index,
which makes the backward pass quadratic in the sequence length.  This version
does the same arithmetic on time-major tensors split with unbind(), so the
backward pass stays linear.  train.py checks that it agrees with the original
before it trains, and every number that is published (perplexities and the
reference data) comes from the unmodified transformers code.
"""
import contextlib

import torch
import torch.nn.functional as F
from transformers.models.mamba import modeling_mamba


def selective_scan(hidden_states, dt, A, B, C, D=None, z=None, delta_bias=None,
                   delta_softplus=False, return_last_state=False, **_):
    # Shapes as transformers passes them: hidden_states, dt, z: [b, d, l];
    # A: [d, n]; B, C: [b, n, l]; D, delta_bias: [d].
    if delta_bias is not None:
        dt = dt + delta_bias.to(dt.dtype)[..., None]
    if delta_softplus:
        dt = F.softplus(dt)
    u = hidden_states.float()
    dt_t = dt.float().transpose(1, 2)                      # [b, l, d]
    dA = torch.exp(dt_t[..., None] * A.float())            # [b, l, d, n]
    dBu = (dt_t * u.transpose(1, 2))[..., None] * B.float().transpose(1, 2)[:, :, None, :]
    Ct = C.float().transpose(1, 2)                         # [b, l, n]
    h = torch.zeros_like(dBu[:, 0])
    ys = []
    for a_t, bu_t, c_t in zip(dA.unbind(1), dBu.unbind(1), Ct.unbind(1)):
        h = a_t * h + bu_t
        ys.append((h * c_t[:, None, :]).sum(-1))
    y = torch.stack(ys, dim=-1)                            # [b, d, l]
    if D is not None:
        y = y + u * D.float()[None, :, None]
    if z is not None:
        y = y * F.silu(z.float())
    y = y.to(hidden_states.dtype)
    return (y, h) if return_last_state else y


@contextlib.contextmanager
def patched():
    """Route transformers' Mamba-1 mixer through selective_scan while active."""
    original = modeling_mamba.mamba_selective_scan
    modeling_mamba.mamba_selective_scan = selective_scan
    try:
        yield
    finally:
        modeling_mamba.mamba_selective_scan = original
