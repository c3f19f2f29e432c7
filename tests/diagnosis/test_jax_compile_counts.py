"""A JAX compile log read by readers/runtime_logs.py: how often one function is compiled is no recompilation finding
by itself (reviewer's case, written apart from the fixtures). JAX has no recompile limit: a jit compiles once per
signature it meets, static arguments included, so jax.random's jitted samplers (`_truncated_normal`, static shape)
compile once per parameter shape while a model is initialised, the same arguments logged each time."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.readers import read_file


def _init_compile(shape: str) -> str:
    return ("WARNING:absl:Finished tracing + transforming _truncated_normal for pjit in 0.02 sec\n"
            "WARNING:absl:Compiling _truncated_normal with global shapes and types [ShapedArray(uint32[2])]. "
            "Argument mapping: [UnspecifiedValue].\n"
            f"WARNING:absl:Finished XLA compilation of jit(_truncated_normal) in 0.05 sec\n"
            f"INFO:absl:initialised parameter of shape {shape}\n")


def test_a_model_init_compiling_a_sampler_per_parameter_shape_is_no_recompilation(tmp_path):
    shapes = ["(784, 512)", "(512, 512)", "(512, 256)", "(256, 128)", "(128, 64)", "(64, 32)", "(32, 10)",
              "(512, 1024)", "(1024, 10)", "(3, 3, 64, 64)"]
    path = tmp_path / "train.log"
    path.write_text("".join(_init_compile(s) for s in shapes)
                    + "".join(f"epoch {e} train_loss {2.0 - e * 0.1:.2f}\n" for e in range(1, 6)))
    d = diagnose(read_file(path))
    assert d.verdict["id"] != "recompilation"
    assert all(h["id"] != "recompilation" for h in d.hypotheses)
