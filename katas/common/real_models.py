"""Real architectures from `transformers`, tiny and offline: the models the lessons must hold for.

Each entry builds a `transformers` model from a configuration (about 2 layers, hidden size 32) with seeded random
weights. Nothing is downloaded: the hub's offline switches are set before `transformers` is imported, and no
`from_pretrained` is ever called. The model is wrapped so that it takes positional tensors and returns one tensor
(the last hidden state, or the pooled features of a CNN), which every capture in `katas.common.capture` accepts.

    from katas.common.real_models import REAL_MODELS
    entry = REAL_MODELS["bert"]
    model = entry.build()            # fresh, eval mode, same weights on every call
    first = entry.inputs(0)          # example inputs at the first shape
    second = entry.inputs(1)         # a second batch size (and sequence length or image size where it can vary)

What each model brings that the toy models do not:
  bert       GELU (erf), attention with transposes and views, LayerNorm, an int64 position-id path
  gpt2       `gelu_new` (the tanh formula written out) and `Conv1D` (addmm with an [in, out] weight)
  llama      SiLU, RMSNorm, rotary embeddings, no biases
  vit        patch embedding (conv), a CLS token 50x smaller than the patch tokens, GELU
  resnet     in-place add and relu (BasicBlock), batch norm
  mobilenet  depthwise convolutions, relu6, many small partitions
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn

# Set before transformers is imported anywhere in the process: it reads them once. Nothing here needs the hub,
# and a grader or CI machine may have no network at all.
for _switch in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_switch, "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

SEED = 20261205
VOCAB = 128


class TextModel(nn.Module):
    """input_ids -> last hidden state. The configurations set use_cache=False: export and the NPU take tensors,
    and a decoder's KV-cache object is not one."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.inner(input_ids=input_ids).last_hidden_state


class VisionModel(nn.Module):
    """pixel_values -> last hidden state (ViT) or pooled features (CNNs)."""

    def __init__(self, inner: nn.Module, pooled: bool) -> None:
        super().__init__()
        self.inner, self.pooled = inner, pooled

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        out = self.inner(pixel_values=pixel_values)
        return out.pooler_output if self.pooled else out.last_hidden_state


@dataclass(frozen=True)
class RealModel:
    """One architecture: how to build it, its inputs at two shapes, and what it shows."""

    name: str
    family: str                                  # "text" or "vision"
    shows: str
    make: Callable[[], nn.Module]
    shapes: tuple[tuple[int, ...], tuple[int, ...]]  # input shape at the first and the second shape

    def build(self) -> nn.Module:
        """A fresh model in eval mode; the same weights on every call (seeded). Batch norm holds statistics
        measured on data, as a trained model's do (see `_measure_batch_norm`)."""
        torch.manual_seed(SEED)
        model = self.make()
        _measure_batch_norm(model, self.shapes[0][1:])
        return model.eval()

    def inputs(self, which: int = 0, seed: int = 0) -> tuple[torch.Tensor]:
        """Example inputs at the first (0) or the second (1) shape."""
        shape = self.shapes[which]
        gen = torch.Generator().manual_seed(SEED + 7 * which + seed)
        if self.family == "text":
            return (torch.randint(0, VOCAB, shape, generator=gen),)
        return (torch.randn(shape, generator=gen),)

    def dynamic_shapes(self) -> tuple[dict[int, object]]:
        """`torch.export` dynamic shapes that cover both example shapes (batch, and sequence or image size)."""
        dim = torch.export.Dim
        if self.family == "text":
            return ({0: dim("batch", min=1, max=64), 1: dim("seq", min=2, max=64)},)
        if self.name in ("vit", "mobilenet"):   # ViT's position embeddings and MobileNet's "same" padding fix the side
            return ({0: dim("batch", min=1, max=64)},)
        side = dim("side", min=32, max=256)
        return ({0: dim("batch", min=1, max=64), 2: side, 3: side},)


def _measure_batch_norm(model: nn.Module, image_shape: tuple[int, ...], batches: int = 8) -> None:
    """Give every batch norm the running statistics of its inputs, from `batches` seeded random batches.

    At their starting statistics (mean 0, variance 1) the untrained CNNs shrink their activations 10-25x per
    convolution: MobileNetV2's reach 1e-22 by its last residual add, far below any int8 scale (measured in kata 9),
    which no trained model does. Measured statistics normalise each layer's output, as training leaves them."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the batches
    gen = torch.Generator().manual_seed(SEED - 1)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn((16, *image_shape), generator=gen))


def _bert() -> nn.Module:
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, attn_implementation="eager", use_cache=False)
    return TextModel(BertModel(cfg, add_pooling_layer=False))


def _gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2Model
    cfg = GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=0,
                     eos_token_id=0, attn_implementation="eager", use_cache=False)
    return TextModel(GPT2Model(cfg))


def _llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaModel
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64, bos_token_id=0,
                      eos_token_id=0, attn_implementation="eager", use_cache=False)
    return TextModel(LlamaModel(cfg))


def _vit() -> nn.Module:
    from transformers import ViTConfig, ViTModel
    cfg = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=32,
                    patch_size=8, num_channels=3, attn_implementation="eager")
    return VisionModel(ViTModel(cfg, add_pooling_layer=False), pooled=False)


def _resnet() -> nn.Module:
    from transformers import ResNetConfig, ResNetModel
    cfg = ResNetConfig(num_channels=3, embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic")
    return VisionModel(ResNetModel(cfg), pooled=True)


def _mobilenet() -> nn.Module:
    from transformers import MobileNetV2Config, MobileNetV2Model
    cfg = MobileNetV2Config(num_channels=3, image_size=32, depth_multiplier=0.25)
    return VisionModel(MobileNetV2Model(cfg), pooled=True)


REAL_MODELS: dict[str, RealModel] = {m.name: m for m in (
    RealModel("bert", "text", "GELU (erf), attention, LayerNorm, int64 position ids", _bert, ((2, 8), (3, 12))),
    RealModel("gpt2", "text", "gelu_new written out, Conv1D as addmm", _gpt2, ((2, 8), (3, 12))),
    RealModel("llama", "text", "SiLU, RMSNorm, rotary embeddings", _llama, ((2, 8), (3, 12))),
    RealModel("vit", "vision", "patch conv, CLS token, GELU", _vit, ((2, 3, 32, 32), (3, 3, 32, 32))),
    RealModel("resnet", "vision", "in-place add_ and relu_, batch norm", _resnet, ((2, 3, 32, 32), (3, 3, 40, 40))),
    RealModel("mobilenet", "vision", "depthwise conv, relu6, many partitions", _mobilenet,
              ((2, 3, 32, 32), (3, 3, 32, 32))),
)}
