"""Bytes, FLOPs, rates and the roof on tiny hand-built traces, against hand computations.

Each op is a cpu_op with ``Input Dims``/``Input type``/``Concrete Inputs`` and one kernel
launched from inside it (runtime call and kernel linked by correlation, the call naming the
op by ``External id``), on an "NVIDIA H200" (67 TFLOP/s fp32, 494.7 TF32, 4,800 GB/s).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracebuild import TraceBuilder
from traceprobe.efficiency import efficiency, kernel_factors
from traceprobe.efficiency.kernels import tensor_core
from traceprobe.efficiency.work import FORMULAS, work
from traceprobe.load import from_document

H200_FP32, H200_TF32, H200_BW = 67e12, 494.7e12, 4800e9


class Ops:
    def __init__(self, device: str | None = "NVIDIA H200") -> None:
        self.t = TraceBuilder()
        if device:
            self.t.device_properties(0, name=device)
        self.ext = 0
        self.ts = 0.0

    def op(self, name: str, dims: list[Any], types: list[str], concrete: list[str] | None = None,
           kernel: str = "k", kernel_us: float = 10.0, shapes: bool = True,
           inner: str | None = None) -> None:
        """The op (and, with ``inner``, an op nested in it that launches the kernel)."""
        self.ext += 1
        args: dict[str, Any] = {"External id": self.ext}
        if shapes:
            args.update({"Input Dims": dims, "Input type": types,
                         "Concrete Inputs": concrete or [""] * len(dims)})
        self.t.op(name, self.ts, 50, **args)
        launcher = self.ext
        if inner:
            self.ext += 1
            launcher = self.ext
            self.t.op(inner, self.ts + 1, 40, **{"External id": self.ext})
        c = self.t._next_corr()
        self.t.runtime("cudaLaunchKernel", self.ts + 2, 5, correlation=c,
                       **{"External id": launcher})
        self.t.kernel(kernel, self.ts + 10, kernel_us, correlation=c)
        self.ts += 100

    def efficiency(self):  # type: ignore[no-untyped-def]
        return efficiency(from_document(self.t.document()))


F = "float"


@pytest.mark.parametrize(("name", "dims", "types", "concrete", "flops", "nbytes"), [
    # mm [64,32] x [32,16]: 2*64*16*32; reads both, writes 64x16
    ("aten::mm", [[64, 32], [32, 16]], [F, F], None, 2 * 64 * 16 * 32,
     (64 * 32 + 32 * 16 + 64 * 16) * 4),
    # addmm(bias [16], a, b): the bias is read too; FlopCounterMode ignores the bias add
    ("aten::addmm", [[16], [64, 32], [32, 16], [], []], [F, F, F, "Scalar", "Scalar"], None,
     2 * 64 * 16 * 32, (16 + 64 * 32 + 32 * 16 + 64 * 16) * 4),
    ("aten::bmm", [[3, 4, 5], [3, 5, 6]], ["c10::BFloat16"] * 2, None, 2 * 3 * 4 * 6 * 5,
     (60 + 90 + 72) * 2),
    # broadcast add [8,4] + [4]: writes [8,4]
    ("aten::add", [[8, 4], [4], []], [F, F, "Scalar"], None, 32, (32 + 4 + 32) * 4),
    # in-place: reads both, writes the first
    ("aten::add_", [[8, 4], [8, 4], []], [F, F, "Scalar"], None, 32, (32 + 32 + 32) * 4),
    # copy_(bf16 dst, fp32 src): reads 4 bytes, writes 2 per element
    ("aten::copy_", [[8, 4], [8, 4], []], ["c10::BFloat16", F, "Scalar"], None, 0,
     32 * 4 + 32 * 2),
    # sum over dim 1 of [8,4]: reads 32, writes 8
    ("aten::sum", [[8, 4], [], [], []], [F, "ScalarList", "Scalar", ""],
     ["", "[1]", "False", ""], 32, (32 + 8) * 4),
    # fill_: writes only
    ("aten::fill_", [[10, 10], []], [F, "Scalar"], None, 0, 400),
    # conv [1,2,5,5] * [3,2,3,3] + bias, stride 1, no padding: out [1,3,3,3];
    # FLOPs (FlopCounterMode): 2 * 9 out positions * 9 taps * 3 out * 2 in channels
    ("aten::convolution", [[1, 2, 5, 5], [3, 2, 3, 3], [3], [], [], [], [], [], []],
     [F, F, F, "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
     ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"],
     2 * 9 * 9 * 3 * 2, (50 + 54 + 3 + 27) * 4),
    # embedding(weight [100, 8], indices [4, 5] long): reads 20 rows of 8, writes them
    ("aten::embedding", [[100, 8], [4, 5], [], [], []], [F, "long int", "Scalar", "Scalar",
     "Scalar"], None, 0, 20 * 8 + 2 * 20 * 8 * 4),
])
def test_work_by_hand(name: str, dims: list[Any], types: list[str],
                      concrete: list[str] | None, flops: float, nbytes: float) -> None:
    w = work(name, json.dumps(dims), json.dumps(types), json.dumps(concrete or [""] * len(dims)))
    assert (w.flops, w.bytes) == (flops, nbytes)


def test_rates_and_roof_of_one_gemm_by_hand() -> None:
    """GIVEN one aten::mm [64,32]x[32,16] whose kernel took 10 µs on an H200
    THEN TFLOP/s = F/t, GB/s = B/t, it is compute-bound (F/P > B/W) and its roof fraction
    is (F/P)/t."""
    o = Ops()
    o.op("aten::mm", [[64, 32], [32, 16]], [F, F], kernel="sm80_xmma_gemm_f32f32_ffma",
         kernel_us=10)
    e = o.efficiency()
    f, b, t = 2 * 64 * 16 * 32, (64 * 32 + 32 * 16 + 64 * 16) * 4, 10e-6
    row = e.rows.iloc[0]
    assert row["op"] == "aten::mm" and row["calls"] == 1 and row["time_ns"] == 10_000
    assert row["tflops"] == pytest.approx(f / t / 1e12)
    assert row["gbs"] == pytest.approx(b / t / 1e9)
    assert row["intensity"] == pytest.approx(f / b)
    assert row["peak_key"] == "fp32" and not row["tensor_core"]
    assert row["bound"] == ("compute" if f / H200_FP32 >= b / H200_BW else "memory")
    assert row["roof_fraction"] == pytest.approx(max(f / H200_FP32, b / H200_BW) / t)
    assert e.tensor_core_fraction == 0.0


def test_nested_ops_count_once_and_own_their_inner_kernels() -> None:
    """GIVEN aten::convolution whose kernel is launched from a nested aten::cudnn_convolution
    THEN the convolution row owns the kernel and counts the work once (not the inner op)."""
    o = Ops()
    o.op("aten::convolution", [[1, 2, 5, 5], [3, 2, 3, 3], [3], [], [], [], [], [], []],
         [F, F, F, "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
         ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"],
         kernel="implicit_convolve_sgemm", inner="aten::cudnn_convolution")
    e = o.efficiency()
    assert list(e.rows["op"]) == ["aten::convolution"]
    assert e.rows.iloc[0]["flops"] == 2 * 9 * 9 * 3 * 2 and e.rows.iloc[0]["kernels"] == 1


def test_a_trace_without_shapes_gets_times_and_says_what_record_shapes_adds() -> None:
    o = Ops()
    o.op("aten::mm", [], [], shapes=False, kernel="sm80_xmma_gemm_f32f32_ffma")
    e = o.efficiency()
    row = e.rows.iloc[0]
    assert row["time_ns"] == 10_000 and row["category"] == "gemm"
    assert row["flops"] != row["flops"]  # NaN: unknown
    assert any("record_shapes=True" in n for n in e.notes)
    d = e.to_dict()
    assert d["rows"][0]["tflops"] is None and d["shapes"] is False


def test_an_unknown_device_gets_rates_without_a_roof() -> None:
    o = Ops(device="Some Future GPU")
    o.op("aten::mm", [[64, 32], [32, 16]], [F, F])
    e = o.efficiency()
    assert e.roof is None and any("not in the device table" in n for n in e.notes)
    assert e.rows.iloc[0]["tflops"] == pytest.approx(2 * 64 * 16 * 32 / 10e-6 / 1e12)
    assert e.rows.iloc[0]["roof_fraction"] != e.rows.iloc[0]["roof_fraction"]


def test_precision_tf32_keeps_the_share_of_the_roof() -> None:
    """GIVEN a compute-bound fp32 mm off tensor cores at share s of the fp32 roof
    THEN under precision:tf32 its kernel runs s of the TF32 roof: t' = t x P_fp32 / P_tf32."""
    o = Ops()
    o.op("aten::mm", [[1024, 1024], [1024, 1024]], [F, F], kernel="cutlass_80_simt_sgemm",
         kernel_us=100)
    tl = from_document(o.t.document())
    factor, note = kernel_factors(tl, "precision:tf32")
    k = tl.gpu["kind"].to_numpy() == "kernel"
    assert factor[k][0] == pytest.approx(H200_FP32 / H200_TF32)
    assert "1 fp32 op shapes" in note


@pytest.mark.parametrize(("name", "tc"), [
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_"
     "aligna4_alignc4_execute_kernel__5x_cublas", False),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>(cutlass_80_simt_"
     "sgemm_256x128_8x4_nt_align1::Params)", False),
    ("ampere_sgemm_128x64_nn", False),
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_"
     "tensor16x8x8_execute_kernel__5x_cublas", True),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", True),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", True),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>", True),
    ("fmha_cutlassF_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionKernel)",
     True),
    ("Cijk_Ailk_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0", True),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
     False),
])
def test_tensor_core_kernel_name_rules(name: str, tc: bool) -> None:
    assert tensor_core(name) is tc


@pytest.mark.parametrize(("props", "want"), [
    ({"name": "NVIDIA H200", "numSms": 132}, "H200 SXM"),
    ({"name": "NVIDIA H100 80GB HBM3", "numSms": 132}, "H100 SXM5"),
    ({"name": "NVIDIA H100 PCIe"}, "H100 PCIe"),
    ({"name": "NVIDIA A100-SXM4-80GB"}, "A100 SXM4 80GB"),
    ({"name": "Tesla V100-SXM2-16GB"}, "V100 SXM2"),
    ({"name": "NVIDIA B200"}, "B200"),
    ({"name": "AMD Instinct MI300X"}, "MI300X"),
    ({"name": "AMD Instinct MI250X", "numSms": 110}, "MI250X (one GCD)"),
    # ROCm's generic name: the CU count of a CDNA part decides (the HTA corpus's MI250 trace)
    ({"name": "AMD Radeon Graphics", "numSms": 104, "computeMajor": 9}, "MI250 (one GCD)"),
    ({"name": "AMD Radeon Graphics", "numSms": 12, "computeMajor": 11}, None),
    ({"name": "NVIDIA GeForce RTX 4090"}, None),
])
def test_device_table_lookup(props: dict[str, Any], want: str | None) -> None:
    from traceprobe.efficiency.devices import roof_of

    r = roof_of(props)
    assert (r.name if r else None) == want



_JSONISH = st.recursive(
    st.one_of(st.integers(-3, 3),
              st.sampled_from(["float", "", "Scalar", "[1, 1]", "True", "c10::BFloat16"])),
    lambda c: st.lists(c, max_size=4), max_leaves=12)


@given(name=st.sampled_from(sorted(FORMULAS)), dims=_JSONISH, types=_JSONISH,
       concrete=_JSONISH)
def test_any_recorded_inputs_give_work_or_none_never_an_error(name: str, dims: Any, types: Any,
                                                              concrete: Any) -> None:
    w = work(name, json.dumps(dims), json.dumps(types), json.dumps(concrete))
    assert w.flops is None or w.flops == w.flops  # a number or unknown, never NaN
