"""Small models in plain torch.nn, shared by the torch tests (import, torch.compile backend, GPU):
an MLP, a convolution block, a pre-norm transformer block and a Llama-style decoder layer.
Imported only by tests that have already skipped without torch.

``build(name, dtype, device)`` gives (model in eval mode, example inputs), seeded, so every test
sees the same weights and inputs.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    def __init__(self, d_in=64, hidden=128, d_out=32):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, d_out)

    def forward(self, x):
        return torch.relu(self.fc2(F.gelu(self.fc1(x))))


class ConvBlock(nn.Module):
    """conv-bn-relu, a strided grouped conv with SiLU, a 1x1 conv, global pooling, a classifier."""

    def __init__(self, channels=16, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=2, padding=1, groups=4)
        self.conv3 = nn.Conv2d(channels, channels, 1)
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.silu(self.conv2(h))
        h = self.conv3(h) + h
        h = F.adaptive_avg_pool2d(h, 1).flatten(1)
        return self.head(h)


class TransformerBlock(nn.Module):
    """Pre-norm: x + attn(ln(x)), then + mlp(ln(x)); causal multi-head attention."""

    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class LlamaDecoderLayer(nn.Module):
    """RMSNorm, grouped-query attention with rotary embeddings (the cos/sin tables computed in
    forward from the positions), SwiGLU MLP; residual connections."""

    def __init__(self, dim=64, heads=4, kv_heads=2, hidden=128, theta=10000.0):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.theta = theta
        self.input_norm = nn.RMSNorm(dim, eps=1e-6)
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.post_norm = nn.RMSNorm(dim, eps=1e-6)
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def rotary(self, seq, dtype, device=None):
        def arange(*args):
            return torch.arange(*args, dtype=torch.float32, device=device)

        inv_freq = 1.0 / (self.theta ** (arange(0, self.head_dim, 2) / self.head_dim))
        angles = torch.outer(arange(seq), inv_freq)
        emb = torch.cat([angles, angles], dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.input_norm(x)
        q = self.q_proj(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(s, x.dtype, x.device)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, s, -1))
        h = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


_MODELS = {
    "mlp": (Mlp, lambda g: (torch.randn(8, 64, generator=g),)),
    "conv": (ConvBlock, lambda g: (torch.randn(2, 3, 16, 16, generator=g),)),
    "transformer": (TransformerBlock, lambda g: (torch.randn(2, 16, 64, generator=g),)),
    "llama": (LlamaDecoderLayer, lambda g: (torch.randn(2, 16, 64, generator=g),)),
}
NAMES = list(_MODELS)


def build(name, dtype=torch.float32, device="cpu"):
    """(model, example inputs) in `dtype` on `device`; the same values every call."""
    make_model, make_inputs = _MODELS[name]
    torch.manual_seed(0)
    model = make_model()
    for m in model.modules():  # statistics a trained network would have, not the identity
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
        if isinstance(m, nn.RMSNorm):
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
    model = model.eval().to(device=device, dtype=dtype)
    inputs = tuple(x.to(device=device, dtype=dtype) for x in make_inputs(torch.Generator().manual_seed(1)))
    return model, inputs


class HfLlama(nn.Module):
    """transformers' LlamaForCausalLM (2 layers, d 64, GQA 4/2 heads, vocab 256), randomly
    initialized, from token embeddings to logits (`from_ids`: from token ids, the embedding lookup
    a gather)."""

    def __init__(self, from_ids=False):
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, vocab_size=256, max_position_embeddings=64)
        config._attn_implementation = "sdpa"
        self.llama = LlamaForCausalLM(config)
        self.from_ids = from_ids

    def forward(self, x):
        if self.from_ids:
            return self.llama(input_ids=x, use_cache=False).logits
        return self.llama(inputs_embeds=x, use_cache=False).logits


def build_hf_llama(dtype=torch.float32, device="cpu", from_ids=False):
    """(transformers' Llama in eval mode, example inputs: [2, 12] token ids or their embeddings);
    needs transformers (the caller skips without it)."""
    torch.manual_seed(0)
    model = HfLlama(from_ids).eval()
    ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(1))
    model = model.to(device=device, dtype=dtype)
    if from_ids:
        return model, (ids.to(device),)
    with torch.no_grad():
        embeddings = model.llama.model.embed_tokens(ids.to(device))
    return model, (embeddings,)


def llama_transformers_example():
    """examples/python/llama_transformers.py as a module (its DecodeStep is the one the tests
    import); needs transformers."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "llama_transformers.py"
    spec = importlib.util.spec_from_file_location("llama_transformers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_hf_llama_decode_step(past_len=7):
    """(the example's DecodeStep of a random 2-layer Llama: every layer's KV cache in as tensors,
    out with the new token's appended; inputs: one token's embedding and the past keys and values
    transformers' own prefill of `past_len` tokens made); needs transformers."""
    from transformers.cache_utils import DynamicCache

    torch.manual_seed(0)
    llama = HfLlama().eval().llama
    ids = torch.randint(0, 256, (1, past_len + 1), generator=torch.Generator().manual_seed(2))
    cache = DynamicCache()
    with torch.no_grad():
        llama(input_ids=ids[:, :past_len], past_key_values=cache, use_cache=True)
        embedding = llama.model.embed_tokens(ids[:, past_len:])
    past = []
    for layer in range(len(cache.layers)):
        past += [cache.layers[layer].keys.clone(), cache.layers[layer].values.clone()]
    return llama_transformers_example().DecodeStep(llama).eval(), (embedding, *past)
