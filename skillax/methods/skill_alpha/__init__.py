"""Skill-alpha: progressive skill editing trained with the rollback reward (DESIGN.md §1.1).

``config.mode = "skill_alpha"``; ``run(cfg, workdir)`` (:mod:`.loop`):

    z_0 <- config.skill (may be empty); stream x_1..x_T <- evidence (experience / document /
           reasoning) with anchored-query pools; worker <- frozen copy of the initial editor
    for step in steps:                                   # lanes = units per step
        for each lane (z_{t-1}, x_t): q_anc <- k anchors of x_t's family
            r_ctrl   <- V(worker(q_anc | z_{t-1}))                                (unit.py)
            A_1..A_G ~ editor(. | z_{t-1}, x_t)       # one sampler call for all lanes x G
            z^(i)    <- Edit(z_{t-1}, A_i);  r_edit_i <- V(worker(q_anc | z^(i)))  # valid, non-NOOP
            R_i      <- rollback reward (reward.py)   # one scorer call for all worker runs
            z_t      <- carry rule (carry.py; default: best verified edit, else z_{t-1})
        GRPO update over each lane's G candidates (objectives.py; ddof 1, entropy 0.001, KL off)
        metrics JSONL, checkpoint (editor + lane skills)
    inference: edit the stream once with the trained editor -> z_T as a SKILL.md folder with
               its changelog (inference.py); evaluation: held-out tasks with z_T vs no skill

Modules: reward (the rollback reward), carry, prompts, anchors (anchored-query scorers),
unit (one training unit), objectives (GRPO rows), evidence_stream, documents (embedded
document-to-skill data), setting (worker / stream / scorer per setting), inference,
evaluate, sft_data (warm-start transcripts), config (defaults), loop.
"""

from __future__ import annotations


def run(cfg, workdir=None):
    """Entry point of ``config.mode = "skill_alpha"`` (see :func:`.loop.run`)."""
    from skillax.methods.skill_alpha.loop import run as _run

    return _run(cfg, workdir)
