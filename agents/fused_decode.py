"""One decode step of an int4 Llama-family model, without transformers' per-layer module calls.

At batch 1 a decode step of the embedded SmolLM2-135M is ~210 tiny matrix products, and
transformers' forward spends more time around them (module calls, mask building, casts)
than in them: 12.1 ms a step, of which the int4 products are 2.6 ms (torch.profiler,
600 cached tokens). This step runs the same arithmetic as straight-line code, with the
query/key/value projections fused into one int4 product and the gate/up projections into
another, and returns logits bit for bit equal to the model's own forward (a test checks
it). The fused weights share memory with the model's layers, so nothing is duplicated and
prefill keeps using the model's forward.

Where the layers keep bfloat16 weights for many rows and the CPU has AMX tiles
(:func:`~langgraph_memagent.agents.quantization.dense_min_rows`), products of that many rows
(a checked draft, a large batch) run through the same fused bfloat16 weights.

It serves only models it can reproduce exactly: a ``llama`` model whose Linear layers are
:class:`~langgraph_memagent.agents.quantization.Int4Linear` without biases and whose MLP is
SiLU-gated; :func:`create_decode_step` returns None for anything else, and the engine then
uses the model's forward (its ``decode_path`` says which).

``compile_decode=True`` on the engine (``--compile-decode``) runs the step compiled ahead of
time (:mod:`.compiled_step`): less time a step after a one-off compile, with logits close to
these but not bit for bit (BENCHMARKS.md section 10).

>>> from langgraph_memagent.agents.loading import load_chat_model
>>> engine = load_chat_model("smollm2-135m").engine  # doctest: +SKIP
>>> engine.decode_path  # doctest: +SKIP
'fused-int4-llama'
>>> load_chat_model("smollm2-135m", compile_decode=True).engine.decode_path  # doctest: +SKIP
'compiled-fused-int4-llama'
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from .extras import needs_extra

with needs_extra("embedded", "the fused decode step"):
    import torch
    import torch.nn.functional as F

from .quantization import GROUP_SIZE, Int4Linear


class _Weight(NamedTuple):
    """One product's weights: the int4 codes, and the bfloat16 copy that takes ``dense_min_rows`` rows or more."""

    packed: Any
    scales: Any
    dense: Any
    dense_min_rows: int


def _weight(linear: Int4Linear) -> _Weight:
    dense = linear.dense_weight if linear.prefill_weights == "bfloat16" else None
    return _Weight(linear.packed, linear.scales_and_zeros, dense, linear.dense_min_rows)


def _fuse(linears: list[Int4Linear]) -> _Weight:
    """One weight for ``linears`` stacked by output; each layer then reads a view of it."""
    parts = [_weight(linear) for linear in linears]
    fused = _Weight(
        torch.cat([part.packed for part in parts]),
        torch.cat([part.scales for part in parts], dim=1),
        None if parts[0].dense is None else torch.cat([part.dense for part in parts]),
        parts[0].dense_min_rows,
    )
    start = 0
    for linear in linears:  # rows of both layouts are contiguous: a slice is the layer's weight
        linear.packed = fused.packed[start : start + linear.out_features]
        if fused.dense is not None:
            linear.dense_weight = fused.dense[start : start + linear.out_features]
        start += linear.out_features
    return fused


def _product(inputs: Any, weight: _Weight) -> Any:
    """The layer's bfloat16 output; adding it to a float32 tensor promotes it exactly, with no extra op."""
    inputs = inputs.to(torch.bfloat16)
    if weight.dense is not None and inputs.shape[0] >= weight.dense_min_rows:
        return F.linear(inputs, weight.dense)
    return torch.ops.aten._weight_int4pack_mm_for_cpu(inputs, weight.packed, GROUP_SIZE, weight.scales)


class _LayerWeights(NamedTuple):
    """What a step reads of one layer, gathered once: attribute lookups on modules cost the eager step ~1%."""

    input_norm: Any
    attention_norm: Any
    scaling: float
    qkv: _Weight
    output: _Weight
    gate_up: _Weight
    down: _Weight


class _Layer(torch.nn.Module):
    """One decoder layer's weights: fused projections (buffers, so an exported step can take them as inputs) and the two norms."""

    PRODUCTS = ("qkv", "output", "gate_up", "down")

    def __init__(self, layer: Any):
        super().__init__()
        attention, mlp = layer.self_attn, layer.mlp
        weights = {
            "qkv": _fuse([attention.q_proj, attention.k_proj, attention.v_proj]), "output": _weight(attention.o_proj),
            "gate_up": _fuse([mlp.gate_proj, mlp.up_proj]), "down": _weight(mlp.down_proj),
        }
        for name, weight in weights.items():
            for part in ("packed", "scales", "dense"):
                self.register_buffer(f"{name}_{part}", getattr(weight, part), persistent=False)
        self.dense_min_rows = weights["down"].dense_min_rows
        self.input_norm, self.attention_norm = layer.input_layernorm, layer.post_attention_layernorm
        self.scaling = attention.scaling

    def weights(self) -> _LayerWeights:
        """What a step reads of this layer, read from the buffers and submodules now."""
        products = {
            name: _Weight(getattr(self, f"{name}_packed"), getattr(self, f"{name}_scales"), getattr(self, f"{name}_dense"), self.dense_min_rows)
            for name in self.PRODUCTS
        }
        return _LayerWeights(self.input_norm, self.attention_norm, self.scaling, **products)


def _rms_norm(hidden: Any, norm: Any) -> Any:
    # One fused op with the same float32 arithmetic as transformers' six (a test checks the logits).
    return F.rms_norm(hidden, norm.weight.shape, norm.weight, norm.variance_epsilon)


def _rotate(states: Any, cos: Any, sin: Any) -> Any:
    half = states.shape[-1] // 2
    return states * cos + torch.cat([-states[..., half:], states[..., :half]], dim=-1) * sin


def _unsupported_reason(model: Any) -> str | None:
    config = model.config
    if getattr(config, "model_type", None) != "llama":
        return f"model_type {getattr(config, 'model_type', None)!r} is not 'llama'"
    if config.hidden_act != "silu":
        return f"hidden_act {config.hidden_act!r} is not 'silu'"
    layers = getattr(getattr(model, "model", None), "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):  # e.g. a PEFT wrapper: its layers are LoRA layers anyway
        return "no decoder layers at model.model.layers"
    for name, module in layers.named_modules():
        if isinstance(module, torch.nn.Linear):
            return f"{name} is not int4"
        if isinstance(module, Int4Linear) and module.bias is not None:
            return f"{name} has a bias"
    return None


class _FusedLayers(torch.nn.Module):
    """The step's arithmetic as a module of the model's own weights (shared, not copied)."""

    def __init__(self, model: Any):
        super().__init__()
        body = model.model
        self.embed, self.rotary, self.norm, self.lm_head = body.embed_tokens, body.rotary_emb, body.norm, model.lm_head
        self.heads, self.kv_heads = model.config.num_attention_heads, model.config.num_key_value_heads
        self.head_dim = body.layers[0].self_attn.head_dim
        self.layers = torch.nn.ModuleList(_Layer(layer) for layer in body.layers)

    def layer_weights(self) -> list[_LayerWeights]:
        """Every layer's :meth:`_Layer.weights`."""
        return [layer.weights() for layer in self.layers]

    def forward(
        self, input_ids: Any, mask: Any, position_ids: Any, length: int, key_buffers: list, value_buffers: list, layer_weights: list | None = None,
    ) -> Any:
        """Logits of the new tokens; writes columns ``length`` on of every layer's key and value buffer.

        Every row's tokens go through each product as rows of one matrix (rows x tokens of them).
        ``layer_weights`` (:meth:`layer_weights`, gathered once) spares the eager step the lookups; without
        it they are read from the buffers, which an export's ``functional_call`` has made its inputs.
        """
        layer_weights = self.layer_weights() if layer_weights is None else layer_weights
        rows, tokens = input_ids.shape
        positions = rows * tokens
        hidden = self.embed(input_ids.reshape(positions))
        cos, sin = self.rotary(hidden, position_ids)  # (rows, tokens, head_dim)
        cos, sin = cos.reshape(positions, 1, -1), sin.reshape(positions, 1, -1)  # broadcast over the heads
        query_size, key_size = self.heads * self.head_dim, self.kv_heads * self.head_dim
        for layer, key_buffer, value_buffer in zip(layer_weights, key_buffers, value_buffers):
            qkv = _product(_rms_norm(hidden, layer.input_norm), layer.qkv).float()
            # Queries and keys rotate as one tensor: the same elementwise arithmetic, half the ops.
            rotated = _rotate(qkv[:, : query_size + key_size].view(positions, self.heads + self.kv_heads, self.head_dim), cos, sin)
            query = rotated[:, : self.heads].view(rows, tokens, self.heads, self.head_dim).transpose(1, 2)
            key_buffer[:, :, length : length + tokens] = rotated[:, self.heads :].view(rows, tokens, self.kv_heads, self.head_dim).transpose(1, 2)
            value_buffer[:, :, length : length + tokens] = qkv[:, query_size + key_size :].view(rows, tokens, self.kv_heads, self.head_dim).transpose(1, 2)
            keys, values = key_buffer[:, :, : length + tokens], value_buffer[:, :, : length + tokens]
            if mask is None or tokens > 1:
                attended = F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=layer.scaling, enable_gqa=True)
            else:
                grouped = query.reshape(rows, self.kv_heads, self.heads // self.kv_heads, self.head_dim)
                attended = F.scaled_dot_product_attention(grouped, keys, values, attn_mask=mask, scale=layer.scaling)
                attended = attended.view(rows, self.heads, 1, self.head_dim)
            hidden = hidden + _product(attended.transpose(1, 2).reshape(positions, query_size), layer.output)
            gate, up = _product(_rms_norm(hidden, layer.attention_norm), layer.gate_up).float().chunk(2, dim=-1)
            hidden = hidden + _product(F.silu(gate) * up, layer.down)
        return self.lm_head(_rms_norm(hidden, self.norm))


class FusedDecodeStep:
    """``step(input_ids, attention_mask, position_ids, cache)``: next-token logits, one row per sequence.

    ``input_ids`` and ``position_ids`` are (rows, 1); ``attention_mask`` is (rows, cached + 1)
    with 0 over left padding. One unpadded row may bring several tokens (rows 1, tokens n: a
    draft to check, :mod:`.prompt_lookup`), each attending to the cache and the tokens before
    it. ``cache`` is the transformers cache the model's forward filled, with
    :class:`~langgraph_memagent.agents._kv_slab.SlabLayer` layers: the step writes the new keys
    and values into their buffers and counts them.

    ``compiled=True`` runs the same code compiled ahead of time by AOTInductor
    (:class:`~langgraph_memagent.agents.compiled_step.CompiledStep`: one token per row, a
    package per kind of batch, cached on disk). Inductor fuses the norms, rotations and casts
    into its own loops, whose float32 rounding differs from the eager operations', and a
    difference in the last bit can round an int4 kernel's bfloat16 input the other way: logits
    are close to the model's, not bit for bit (up to 0.125 apart on one measured step, the same
    greedy token; accuracy in BENCHMARKS.md section 10).
    """

    def __init__(self, model: Any, *, compiled: bool = False):
        self.fused = _FusedLayers(model)
        self.layers = self.fused.layer_weights()
        self.compiled = compiled
        if compiled:
            from .compiled_step import CompiledStep

            self._forward = CompiledStep(self.fused)
        else:
            self._forward = functools.partial(self.fused.forward, layer_weights=self.layers)

    def __call__(self, input_ids: Any, attention_mask: Any, position_ids: Any, cache: Any) -> Any:
        """Logits (rows, vocabulary) for one new token per row; or (rows, tokens, vocabulary) when
        ``input_ids`` holds several tokens of one unpadded row (a draft being verified, causally masked)."""
        rows, tokens = input_ids.shape
        length = cache.layers[0].get_seq_length()
        buffers = [layer.buffers_with_room(tokens, contiguous=self.compiled) for layer in cache.layers]
        if tokens > 1:
            if rows != 1 or not bool(attention_mask.all()):
                raise ValueError(f"several tokens per step need one unpadded row, got {rows} rows of {tokens} tokens")
            # Token i sees the cache and the new tokens up to itself.
            mask = torch.ones((tokens, length + tokens), dtype=torch.bool, device=input_ids.device).tril(length)
        else:
            # Like transformers' SDPA path: no mask when nothing is padded, else the query heads of
            # each key/value head attend as a group of queries under one shared mask.
            mask = None if bool(attention_mask.all()) else attention_mask.bool()[:, None, None, :]
        logits = self._forward(input_ids, mask, position_ids, length, [keys for keys, _ in buffers], [values for _, values in buffers])
        for layer in cache.layers:
            layer.extend(tokens)
        return logits if tokens == 1 else logits.view(rows, tokens, -1)


def create_decode_step(model: Any, *, compiled: bool = False) -> FusedDecodeStep | None:
    """A :class:`FusedDecodeStep` for ``model``, or None where it cannot reproduce the model's forward.

    ``compiled=True`` (see :class:`FusedDecodeStep`) on a model it cannot serve is refused, naming why.
    """
    reason = _unsupported_reason(model)
    if reason is not None and compiled:
        raise ValueError(f"compile_decode needs an int4 Llama model (quantization='int4'): {reason}")
    return None if reason is not None else FusedDecodeStep(model, compiled=compiled)
