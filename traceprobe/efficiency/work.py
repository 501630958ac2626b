"""Work per op from its recorded inputs: FLOPs, bytes moved and the category.

Every formula is a pure function of one op's ``Inputs`` (the shapes of ``Input Dims``, the
dtypes of ``Input type`` and the scalars of ``Concrete Inputs``, as recorded with
``record_shapes=True``); :func:`work` picks it by the op's name and returns a :class:`Work`.
The definitions are written down in docs/FIGURES.md ("Kernel efficiency"):

* **FLOPs** of matrix products, convolutions and attention are those of
  ``torch.utils.flop_counter.FlopCounterMode`` (2 per multiply-add, bias adds, softmax and
  masking not counted, a causal mask not halving the count); the tests compare them op by op.
  Elementwise ops count 1 per output element, reductions 1 per input element, softmax 5 and
  norms 8 per element (a convention: FlopCounterMode counts none of these).
* **Bytes** are the minimum traffic: every tensor input read once and every output written
  once, at the dtype's size (an in-place op writes its first input). Outputs are not recorded:
  their shapes follow from the inputs (a product's ``M x N``, a broadcast, a convolution's
  output size from stride, padding and dilation).

An op none of the formulas knows gets its category from its name and no work (``None``):
its kernels' time still counts, at no rate. Tensor lists (the optimizers' ``_foreach_*``
kernels) record no shapes, so they get a category and no work.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

GEMM, ATTENTION, CONV = "gemm", "attention", "convolution"
ELEMENTWISE, REDUCTION, NORM = "elementwise", "reduction", "norm"
COMM, COPY, OTHER = "communication", "copy", "other"
CATEGORIES = (GEMM, ATTENTION, CONV, ELEMENTWISE, REDUCTION, NORM, COMM, COPY, OTHER)
MATRIX = frozenset({GEMM, ATTENTION, CONV})  # the categories that can run on tensor cores

# "Input type" texts -> (dtype, bytes per element)
DTYPES: dict[str, tuple[str, int]] = {
    "float": ("fp32", 4), "double": ("fp64", 8), "c10::Half": ("fp16", 2),
    "c10::BFloat16": ("bf16", 2), "c10::Float8_e4m3fn": ("fp8", 1),
    "c10::Float8_e5m2": ("fp8", 1), "c10::Float8_e4m3fnuz": ("fp8", 1),
    "c10::Float8_e5m2fnuz": ("fp8", 1), "signed char": ("int8", 1),
    "unsigned char": ("uint8", 1), "bool": ("bool", 1), "short int": ("int16", 2),
    "int": ("int32", 4), "long int": ("int64", 8), "c10::complex<float>": ("complex64", 8),
    "c10::complex<double>": ("complex128", 16),
}


@dataclass(frozen=True)
class Inputs:
    """One op's recorded inputs, position by position."""

    dims: tuple[tuple[int, ...] | None, ...]  # a tensor's shape; None for a non-tensor
    types: tuple[str, ...]
    concrete: tuple[str, ...]

    @classmethod
    def parse(cls, dims: str, types: str, concrete: str) -> Inputs:
        d = _load(dims)
        t = [str(x) for x in _load(types)]
        c = [str(x) for x in _load(concrete)]
        shapes = tuple(tuple(int(v) for v in x) if i < len(t) and t[i] in DTYPES
                       and isinstance(x, list) else None for i, x in enumerate(d))
        return cls(shapes, tuple(t), tuple(c))

    def tensors(self) -> list[tuple[tuple[int, ...], int]]:
        """(shape, element size) of every tensor input."""
        return [(s, DTYPES[self.types[i]][1]) for i, s in enumerate(self.dims) if s is not None]

    def shape(self, i: int) -> tuple[int, ...]:
        s = self.dims[i] if i < len(self.dims) else None
        if s is None:
            raise _Unknown
        return s

    def size(self, i: int) -> int:
        return DTYPES[self.types[i]][1] if i < len(self.types) and self.types[i] in DTYPES else 0

    def scalar(self, i: int, default: Any) -> Any:
        if i >= len(self.concrete) or self.concrete[i] == "":
            return default
        text = self.concrete[i].replace("True", "true").replace("False", "false")
        try:
            return json.loads(text)
        except ValueError:
            return default

    def dtype(self) -> str:
        """The dtype of the first tensor input ("" when none)."""
        for i, s in enumerate(self.dims):
            if s is not None:
                return DTYPES[self.types[i]][0]
        return ""


@dataclass(frozen=True)
class Work:
    category: str
    flops: float | None  # None: not known from the recorded inputs
    bytes: float | None
    dtype: str  # of the op's first tensor input; "" when not recorded


class _Unknown(Exception):
    """The recorded inputs do not give the work (missing or odd shapes)."""


def _load(text: str) -> list[Any]:
    if not text:
        return []
    try:
        v = json.loads(text)
    except ValueError:
        return []
    return v if isinstance(v, list) else []


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _tensor_bytes(x: Inputs) -> int:
    return sum(_numel(s) * b for s, b in x.tensors())


# --------------------------------------------------------------------------- matrix products


def _mm(x: Inputs, a: int = 0) -> tuple[float, float]:
    (m, k), (k2, n) = x.shape(a), x.shape(a + 1)
    _same(k, k2)
    out = m * n * x.size(a)
    return 2.0 * m * n * k, _tensor_bytes(x) + out


def _bmm(x: Inputs, a: int = 0) -> tuple[float, float]:
    (b, m, k), (_, k2, n) = x.shape(a), x.shape(a + 1)
    _same(k, k2)
    out = b * m * n * x.size(a)
    return 2.0 * b * m * n * k, _tensor_bytes(x) + out


def _same(a: int, b: int) -> None:
    if a != b:
        raise _Unknown


# --------------------------------------------------------------------------- convolution


def _out_size(n: int, k: int, s: int, p: int, d: int, transposed: bool, op: int) -> int:
    if transposed:
        return (n - 1) * s - 2 * p + d * (k - 1) + op + 1
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def _listed(v: Any, n: int, default: int) -> list[int]:
    if isinstance(v, list) and v:
        return [int(t) for t in v] * (n if len(v) == 1 else 1)
    if isinstance(v, int | float):
        return [int(v)] * n
    return [default] * n


def _conv_flops(x_shape: Sequence[int], w_shape: Sequence[int], out_sp: Sequence[int],
                transposed: bool) -> float:
    """FlopCounterMode's conv_flop_count."""
    conv_sp = list(x_shape[2:]) if transposed else list(out_sp)
    c_out, c_in, *k = w_shape
    return 2.0 * _numel(conv_sp) * _numel(k) * x_shape[0] * c_out * c_in


def _conv(x: Inputs) -> tuple[float, float]:
    # convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
    # groups)
    xs, ws = x.shape(0), x.shape(1)
    sp = len(xs) - 2
    stride = _listed(x.scalar(3, None), sp, 1)
    pad = _listed(x.scalar(4, None), sp, 0)
    dil = _listed(x.scalar(5, None), sp, 1)
    transposed = bool(x.scalar(6, False))
    opad = _listed(x.scalar(7, None), sp, 0)
    groups = int(x.scalar(8, 1) or 1)
    out_sp = [_out_size(xs[2 + i], ws[2 + i], stride[i], pad[i], dil[i], transposed, opad[i])
              for i in range(sp)]
    c_out = ws[1] * groups if transposed else ws[0]
    out = xs[0] * c_out * _numel(out_sp) * x.size(0)
    return _conv_flops(xs, ws, out_sp, transposed), _tensor_bytes(x) + out


def _conv_backward(x: Inputs) -> tuple[float, float]:
    # convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    # transposed, output_padding, groups, output_mask)
    go, xs, ws = x.shape(0), x.shape(1), x.shape(2)
    transposed = bool(x.scalar(7, False))
    mask = x.scalar(10, [True, True, True])
    mask = [bool(m) for m in mask] if isinstance(mask, list) else [True, True, True]

    def t(s: Sequence[int]) -> list[int]:
        return [s[1], s[0], *s[2:]]

    flops, out = 0.0, 0
    e = x.size(0)
    if mask[0]:
        flops += _conv_flops(go, ws, xs[2:], not transposed)
        out += _numel(xs) * e
    if len(mask) > 1 and mask[1]:
        if transposed:
            flops += _conv_flops(t(go), t(xs), t(ws)[2:], False)
        else:
            flops += _conv_flops(t(xs), t(go), t(ws)[2:], False)
        out += _numel(ws) * e
    if len(mask) > 2 and mask[2]:
        out += go[1] * e
    return flops, _tensor_bytes(x) + out


# --------------------------------------------------------------------------- attention


def _attn_dims(q: Sequence[int], k: Sequence[int], v: Sequence[int], bshd: bool
               ) -> tuple[int, int, int, int, int, int]:
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        raise _Unknown
    if bshd:  # [batch, seq, heads, dim] (the _efficient/_flash_attention_* kernels' layout)
        return q[0], q[2], q[1], k[1], q[3], v[3]
    return q[0], q[1], q[2], k[2], q[3], v[3]


def _attention(bshd: bool) -> Callable[[Inputs], tuple[float, float]]:
    def f(x: Inputs) -> tuple[float, float]:
        b, h, sq, sk, d, dv = _attn_dims(x.shape(0), x.shape(1), x.shape(2), bshd)
        flops = 2.0 * b * h * sq * sk * d + 2.0 * b * h * sq * sk * dv
        out = b * h * sq * dv * x.size(0)
        return flops, _tensor_bytes(x) + out
    return f


def _attention_backward(bshd: bool) -> Callable[[Inputs], tuple[float, float]]:
    def f(x: Inputs) -> tuple[float, float]:
        # (grad_out, query, key, value, ...): scores recomputed, then four products
        b, h, sq, sk, d, dv = _attn_dims(x.shape(1), x.shape(2), x.shape(3), bshd)
        flops = 2.0 * b * h * sq * sk * (3 * d + 2 * dv)
        out = sum(_numel(x.shape(i)) * x.size(i) for i in (1, 2, 3))  # dq, dk, dv
        return flops, _tensor_bytes(x) + out
    return f


# --------------------------------------------------------------------------- the rest


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, v in enumerate(s[::-1]):
            j = n - 1 - i
            out[j] = v if out[j] == 1 else out[j]
    return tuple(out)


def _elementwise(per: float = 1.0, out_size: int | None = None
                 ) -> Callable[[Inputs], tuple[float, float]]:
    def f(x: Inputs) -> tuple[float, float]:
        ts = x.tensors()
        if not ts:
            raise _Unknown
        out = _numel(_broadcast([s for s, _ in ts]))
        size = ts[0][1] if out_size is None else out_size
        return per * out, _tensor_bytes(x) + out * size
    return f


def _inplace(per: float = 1.0) -> Callable[[Inputs], tuple[float, float]]:
    """An in-place op: reads its inputs, writes its first."""
    def f(x: Inputs) -> tuple[float, float]:
        ts = x.tensors()
        if not ts:
            raise _Unknown
        first = _numel(ts[0][0]) * ts[0][1]
        return per * _numel(ts[0][0]), _tensor_bytes(x) + first
    return f


def _write_only(x: Inputs) -> tuple[float, float]:
    """fill_ / zero_: the first input is written, not read."""
    ts = x.tensors()
    if not ts:
        raise _Unknown
    return 0.0, float(_numel(ts[0][0]) * ts[0][1])


def _copy(x: Inputs) -> tuple[float, float]:
    """copy_(self, src): reads src, writes self."""
    dst, src = x.shape(0), x.shape(1)
    return 0.0, float(_numel(src) * x.size(1) + _numel(dst) * x.size(0))


def _read_write(x: Inputs) -> tuple[float, float]:
    """clone / contiguous / _to_copy: reads the input, writes a copy of it."""
    s = x.shape(0)
    return 0.0, 2.0 * _numel(s) * x.size(0)


def _reduction(x: Inputs) -> tuple[float, float]:
    """sum / mean / amax ...(self, dim, keepdim): reads the input, writes the reduced result."""
    s = x.shape(0)
    dims = x.scalar(1, None)
    if isinstance(dims, int):
        dims = [dims]
    if isinstance(dims, list) and dims and len(s):
        keep = {d % len(s) for d in dims if isinstance(d, int)}
        out = _numel([v for i, v in enumerate(s) if i not in keep])
    else:
        out = 1
    return float(_numel(s)), _tensor_bytes(x) + out * x.size(0)


def _scaled(per: float, writes: int = 1) -> Callable[[Inputs], tuple[float, float]]:
    """per FLOPs per element of the first input; reads the inputs, writes ``writes`` tensors
    of the first input's size."""
    def f(x: Inputs) -> tuple[float, float]:
        s = x.shape(0)
        return per * _numel(s), _tensor_bytes(x) + writes * _numel(s) * x.size(0)
    return f


def _dropout(x: Inputs) -> tuple[float, float]:
    """native_dropout(input, p, train): the output and a bool mask."""
    s = x.shape(0)
    return float(_numel(s)), _tensor_bytes(x) + _numel(s) * (x.size(0) + 1)


def _embedding(x: Inputs) -> tuple[float, float]:
    """embedding(weight [V, D], indices): gathers one row of D per index."""
    (_, d), idx = x.shape(0), x.shape(1)
    rows = _numel(idx) * d * x.size(0)
    return 0.0, float(_numel(idx) * x.size(1) + 2 * rows)


def _embedding_backward(x: Inputs) -> tuple[float, float]:
    """embedding_dense_backward(grad_output, indices, num_weights, ...): scatters the rows."""
    go = x.shape(0)
    rows = int(x.scalar(2, 0) or 0)
    d = go[-1] if go else 0
    return float(_numel(go)), _tensor_bytes(x) + rows * d * x.size(0) + _numel(go) * x.size(0)


def _addmm(x: Inputs) -> tuple[float, float]:
    return _mm(x, 1)


def _baddbmm(x: Inputs) -> tuple[float, float]:
    return _bmm(x, 1)


FORMULAS: dict[str, tuple[str, Callable[[Inputs], tuple[float, float]]]] = {
    "aten::mm": (GEMM, _mm), "aten::addmm": (GEMM, _addmm), "aten::bmm": (GEMM, _bmm),
    "aten::baddbmm": (GEMM, _baddbmm), "aten::_scaled_mm": (GEMM, _mm),
    "aten::convolution": (CONV, _conv), "aten::_convolution": (CONV, _conv),
    "aten::convolution_backward": (CONV, _conv_backward),
    "aten::_scaled_dot_product_efficient_attention": (ATTENTION, _attention(False)),
    "aten::_scaled_dot_product_flash_attention": (ATTENTION, _attention(False)),
    "aten::_scaled_dot_product_cudnn_attention": (ATTENTION, _attention(False)),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (ATTENTION, _attention(False)),
    "aten::_efficient_attention_forward": (ATTENTION, _attention(True)),
    "aten::_flash_attention_forward": (ATTENTION, _attention(True)),
    "aten::_scaled_dot_product_efficient_attention_backward":
        (ATTENTION, _attention_backward(False)),
    "aten::_scaled_dot_product_flash_attention_backward": (ATTENTION, _attention_backward(False)),
    "aten::_scaled_dot_product_cudnn_attention_backward": (ATTENTION, _attention_backward(False)),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward":
        (ATTENTION, _attention_backward(False)),
    "aten::_efficient_attention_backward": (ATTENTION, _attention_backward(True)),
    "aten::_flash_attention_backward": (ATTENTION, _attention_backward(True)),
    "aten::copy_": (COPY, _copy), "aten::clone": (COPY, _read_write),
    "aten::_to_copy": (COPY, _read_write),
    "aten::fill_": (ELEMENTWISE, _write_only), "aten::zero_": (ELEMENTWISE, _write_only),
    "aten::native_dropout": (ELEMENTWISE, _dropout),
    "aten::native_layer_norm": (NORM, _scaled(8.0)),
    "aten::native_layer_norm_backward": (NORM, _scaled(8.0)),
    "aten::_fused_rms_norm": (NORM, _scaled(4.0)), "aten::rms_norm": (NORM, _scaled(4.0)),
    "aten::native_batch_norm": (NORM, _scaled(8.0)),
    "aten::_native_batch_norm_legit": (NORM, _scaled(8.0)),
    "aten::cudnn_batch_norm": (NORM, _scaled(8.0)),
    "aten::native_batch_norm_backward": (NORM, _scaled(8.0)),
    "aten::native_group_norm": (NORM, _scaled(8.0)),
    "aten::native_group_norm_backward": (NORM, _scaled(8.0)),
    "aten::_softmax": (NORM, _scaled(5.0)), "aten::_log_softmax": (NORM, _scaled(5.0)),
    "aten::_softmax_backward_data": (NORM, _scaled(3.0)),
    "aten::_log_softmax_backward_data": (NORM, _scaled(3.0)),
    "aten::embedding": (OTHER, _embedding),
    "aten::embedding_dense_backward": (OTHER, _embedding_backward),
}
for _n in ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "norm",
           "linalg_vector_norm", "var", "std", "var_mean", "std_mean", "logsumexp", "all",
           "any"):
    FORMULAS[f"aten::{_n}"] = (REDUCTION, _reduction)
for _n in ("add", "sub", "mul", "div", "rsub", "pow", "maximum", "minimum", "where",
           "masked_fill", "addcmul", "addcdiv", "lerp", "threshold_backward", "gelu_backward",
           "silu_backward", "sigmoid_backward", "tanh_backward", "native_dropout_backward",
           "neg", "exp", "log", "sqrt", "rsqrt", "abs", "reciprocal", "sign", "tanh", "sigmoid",
           "relu", "gelu", "silu", "clamp", "clamp_min", "clamp_max", "tril", "triu", "cos",
           "sin", "erf", "hardtanh", "leaky_relu", "mse_loss", "mse_loss_backward", "sqrt"):
    FORMULAS[f"aten::{_n}"] = (ELEMENTWISE, _elementwise())
    FORMULAS[f"aten::{_n}_"] = (ELEMENTWISE, _inplace())
for _n in ("eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "logical_not", "logical_and"):
    FORMULAS[f"aten::{_n}"] = (ELEMENTWISE, _elementwise(out_size=1))


def category_of_name(name: str) -> str:
    """The category of an op no formula knows, from its name."""
    if name in FORMULAS:
        return FORMULAS[name][0]
    low = name.lower()
    if "_foreach_" in low or "fused_adam" in low or "fused_sgd" in low:
        return ELEMENTWISE
    if "c10d::" in low or "nccl" in low or "all_reduce" in low or "allreduce" in low:
        return COMM
    if "attention" in low:
        return ATTENTION
    if "conv" in low:
        return CONV
    if any(t in low for t in ("matmul", "linear", "gemm")):
        return GEMM
    if "norm" in low or "softmax" in low:
        return NORM
    return OTHER


def work(name: str, dims: str, types: str, concrete: str) -> Work:
    """The work of one op (one distinct (name, Input Dims, Input type, Concrete Inputs))."""
    cat = category_of_name(name)
    entry = FORMULAS.get(name)
    if entry is None or not dims:
        return Work(cat, None, None, _dtype_only(dims, types, concrete))
    try:
        x = Inputs.parse(dims, types, concrete)
    except (ValueError, TypeError):
        return Work(cat, None, None, "")
    try:
        flops, nbytes = entry[1](x)
    except (_Unknown, ValueError, TypeError, IndexError, ZeroDivisionError):
        return Work(cat, None, None, x.dtype())
    return Work(cat, float(flops), float(nbytes), x.dtype())


def _dtype_only(dims: str, types: str, concrete: str) -> str:
    if not types:
        return ""
    try:
        return Inputs.parse(dims, types, concrete).dtype()
    except (ValueError, TypeError):
        return ""
