"""Top kernels and CPU ops by summed duration."""

from __future__ import annotations

from frames import kernel, op, runtime, timeline
from traceprobe.metrics.grouping import Windows
from traceprobe.metrics.top import TopKernel, TopOp, top_kernels, top_ops
from traceprobe.report import analyze, check

ONE = Windows.one(0, 100)  # frames that were not cut are one window (its bounds unused)


def test_top_kernels_sum_durations_per_name_and_device() -> None:
    # GIVEN "a" on GPU 0 for 10 and 20 ns (overlapping: sums, not unions), "b" on GPU 0 for 5,
    #       "a" on GPU 1 for 30; 65 ns of kernels in all
    tl = timeline(
        gpu=[
            kernel(0, 10, "a"),
            kernel(5, 25, "a", stream=8),
            kernel(30, 35, "b"),
            kernel(0, 30, "a", device=1),
        ]
    )
    r = analyze(tl)
    check(r)
    # a@0 and a@1 tie at 30: name, then device, break the tie
    assert r.top_kernels == (
        TopKernel("a", 0, 2, 30, 15.0, 30 / 65),
        TopKernel("a", 1, 1, 30, 30.0, 30 / 65),
        TopKernel("b", 0, 1, 5, 5.0, 5 / 65),
    )


def test_top_kernels_keep_ten_of_the_listed_devices() -> None:
    tl = timeline(
        gpu=[kernel(0, i + 1, f"k{i:02d}") for i in range(12)] + [kernel(0, 100, "other", device=1)]
    )
    (rows,) = top_kernels(tl.gpu, [0], ONE, top=10)
    assert [k.name for k in rows] == [f"k{i:02d}" for i in range(11, 1, -1)]
    assert len(top_kernels(tl.gpu, [0], ONE)[0]) == 12  # the report keeps every row; renderers cut
    # fractions are of all 78 ns of device 0's kernels, not just the ten shown
    assert rows[0].fraction == 12 / 78


def test_top_ops_inclusive_totals() -> None:
    # GIVEN x twice (10 + 5), y once 15 (tie with x: by name), z nested inside y;
    #       a runtime call is not a CPU op; ops of any process count
    tl = timeline(
        cpu=[
            op(0, 10, "x"),
            op(20, 25, "x", pid=7),
            op(0, 15, "y"),
            op(1, 2, "z"),
            runtime(0, 50, "cudaMalloc"),
        ]
    )
    r = analyze(tl)
    check(r)
    # on thread (100, 1) y [0,15) encloses x [0,10), which encloses z [1,2): self times
    # y 15 - 10 = 5, x 10 - 1 = 9 (+ 5 for the other process's x), z 1; ranked by self time
    assert r.top_ops == (TopOp("x", 2, 15, 7.5, 14), TopOp("y", 1, 15, 15.0, 5),
                         TopOp("z", 1, 1, 1.0, 1))
    assert r.to_dict()["top_ops"][0] == {
        "name": "x",
        "count": 2,
        "total_us": 0.015,
        "mean_us": 0.0075,
        "self_us": 0.014,
        "input_dims": "",
        "input_types": "",
    }


def test_top_ops_group_by_input_shape() -> None:
    """GIVEN aten::mm on two shapes, the big one nesting an aten::t for 3 ns
    THEN one row per shape, ranked by self time."""
    tl = timeline(cpu=[op(0, 10, "aten::mm"), op(2, 5, "aten::t"), op(20, 24, "aten::mm")])
    tl.cpu["input_dims"] = ["[[64,64],[64,64]]", "[[64,64]]", "[[2,2],[2,2]]"]
    (rows,) = top_ops(tl.cpu, ONE)
    assert [(o.name, o.input_dims, o.self_ns, o.total_ns) for o in rows] == [
        ("aten::mm", "[[64,64],[64,64]]", 7, 10),
        ("aten::mm", "[[2,2],[2,2]]", 4, 4),
        ("aten::t", "[[64,64]]", 3, 3),
    ]


def test_top_of_nothing_is_empty() -> None:
    tl = timeline()
    assert top_kernels(tl.gpu, [], ONE) == [()]
    assert top_ops(tl.cpu, ONE) == [()]
    many = timeline(cpu=[op(0, 1, f"o{i}") for i in range(15)]).cpu
    assert (len(top_ops(many, ONE)[0]), len(top_ops(many, ONE, top=10)[0])) == (15, 10)
