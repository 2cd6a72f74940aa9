"""Inspect the compiled sampler program (CPU bf16 check; DESIGN.md section 4).

XLA's CPU backend can rewrite a bf16 layer stack into fp32 inside the scan (seen: bf16 decode
2.5x slower than fp32). ``weight_upcasts`` lists fp32 arrays in the optimised HLO whose shape
is that of a stacked bf16 weight, i.e. a converted copy of a whole weight stack.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp


def compiled_text(sampler, params, prompts, sampling) -> str:
    """Optimised HLO text of the program ``sampler.generate(params, prompts, sampling)`` runs.

    Compiles (or reuses) the program for that shape bucket; does not execute it.
    """
    lowered = sampler.lower(params, prompts, sampling)
    return lowered.compile().as_text()


def _materialised_shapes(hlo_text: str) -> set[str]:
    """Result shapes of instructions outside fusion bodies (i.e. buffers that exist)."""
    fused = set(re.findall(r"calls=%([\w.\-]+)", hlo_text))
    shapes, current = set(), None
    for line in hlo_text.splitlines():
        head = re.match(r"^(?:ENTRY )?%([\w.\-]+) \(", line)
        if head:
            current = head.group(1)
            continue
        if current in fused:
            continue
        m = re.match(r"\s*(?:ROOT )?%[\w.\-]+ = (f32\[[0-9,]*\])", line)
        if m:
            shapes.add(m.group(1))
    return shapes


def weight_upcasts(hlo_text: str, params) -> list[str]:
    """fp32 buffers in ``hlo_text`` shaped like a low-precision params leaf of rank >= 2.

    Returns e.g. ``["f32[30,576,1536]"]`` when the stacked gate projection was converted.
    Converts fused into a consumer (e.g. an embedding gather) are not buffers and not listed.
    Empty for fp32 params (nothing to detect).
    """
    shapes = set()
    for leaf in jax.tree.leaves(params):
        if leaf.ndim >= 2 and leaf.dtype != jnp.float32:
            shapes.add("f32[" + ",".join(str(d) for d in leaf.shape) + "]")
    return sorted(shapes & _materialised_shapes(hlo_text))
