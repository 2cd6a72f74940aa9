"""Skill-alpha: progressive skill editing trained with the rollback reward (DESIGN.md §1.1).

``config.mode = "skill_alpha"``; ``run(cfg, workdir)`` (:mod:`.loop`):

    worker <- play SFT (optional) -> frozen copy; editor <- edit SFT on the teacher's edits
           (or both, and the evidence stream, from a shared warm start: ``warm``)
    z_0 <- config.skill (may be empty); stream x_1..x_T <- evidence (experience / document /
           reasoning; experience: the worker's own runs by default, ``evidence.source``)
    for step in steps (until RLClock):                   # lanes = units per step
        for each lane (z_{t-1}, x_t): q_anc <- k anchors of x_t's family
            r_ctrl   <- V(worker(q_anc | z_{t-1}))                                (unit.py)
            A_1..A_G ~ editor(. | z_{t-1}, x_t)       # one sampler call for all lanes x G
            z^(i)    <- Edit(z_{t-1}, A_i);  r_edit_i <- V(worker(q_anc | z^(i)))  # valid, non-NOOP
            R_i      <- rollback reward (reward.py)   # one scorer call for all worker runs
            z_t      <- carry rule (carry.py; default: best verified edit, else z_{t-1})
        GRPO update over each lane's G candidates (objectives.py; ddof 1, entropy 0.001, KL off)
        metrics JSONL, checkpoint (editor + lane skills)
    inference: edit the stream once with the trained editor -> z_T as a SKILL.md folder with
               its changelog (inference.py); evaluation (evaluate.py): held-out games with
               no skill / z_T / z_hand, one record per game and condition

Several processes (issue 21, ``skillax.distributed``; ours -- the paper runs one process -- with
the design of SkillOS's loop, ``skillos/train.py``): every process holds
the same host state -- z_0, the stream, the lanes (each lane's z), the anchors -- builds every
unit's editor prompt and the same worker-job plan, and runs its contiguous share
(``collectives.share``) of each batched call on its own devices and environments: the editor's
rows of its block of units (``unit.sample_edits``) and its block of the call's games -- the
evidence games, the units' rollback evaluations (control and edited skills) and the held-out
episodes (``anchors.EnvScorer.play``), sampling with its own replica of the editor's and the
frozen worker's weights (``PolicyEngine``'s per-process sampler replica). Each row / turn keeps
the key it has in the 1-process
call (its global index under the call's reserved word; a held-out episode: its game's id on the
worker's evaluation stream, ``evaluate`` module), and the outputs are all-gathered in
call order, so every process then computes the same rewards, carries and lane updates
(checked by digest after every step: ``loop.units_bytes``) and the same training batch (global
arrays, ``engine.train``'s digest check). Inference (one editor call per chunk) runs on every
process with the same keys (z_T checked by digest). Process 0 writes the files (metrics,
``samples.jsonl``, ``evidence_stream.json``, ``eval*``, ``skill/``, ``results.json``, plots);
checkpoints are orbax's multi-process save. With one process every call is the unsplit call
(bit-identical to before). Not built: the document / reasoning settings, ``stage = "sft_data"``,
and the SFT stages or saving a warm start (their frozen worker is a per-process replica) --
refused before any model loads or any SFT (``loop.check_processes`` / ``check_warm_start``).
Loading a warm start (``load_dir`` or the run's own) works (``warm.load``; tested), and so
should resuming from a checkpoint (the collective restore of the engine and the frozen worker,
as SkillOS's; not tested for Skill-alpha).

Modules: reward (the rollback reward; own-score ablation), carry, action_space (the editor's
actions; ablations), prompts, anchors (anchored-query scorers), unit (one training unit),
objectives (GRPO rows), evidence_stream, documents (embedded document-to-skill data), setting
(worker / stream / scorer per setting), inference, evaluate, handwritten (z_hand), sft_data
(warm-start transcripts), warm (shared warm start), config (defaults), loop.
"""

from __future__ import annotations


def run(cfg, workdir=None):
    """Entry point of ``config.mode = "skill_alpha"`` (see :func:`.loop.run`)."""
    from skillax.methods.skill_alpha.loop import run as _run

    return _run(cfg, workdir)
