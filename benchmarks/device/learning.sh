#!/bin/bash
# The learning campaign (issue 18; benchmarks/results/learning/PROTOCOL.md) on ONE H200: every
# arm of the three methods as its own process, concurrently, detached (setsid) so the run
# outlives the 10-minute command limit while the machine stays held. From the repo root:
#
# Run each call as `bash benchmarks/device/learning.sh ... > /tmp/x.txt 2>&1; tail ... /tmp/x.txt`:
# piping the script into `tail` waits on the detached processes' inherited pipe until the limit.
#   bash benchmarks/device/learning.sh kit              one call per kit folder, each carrying ONE (.dk1, then
#                                                       .dk2; Skill1 sets also .dk4, .dk7): copy the kit
#                                                       (several folders in one call pass 64 MiB: refused)
#   bash benchmarks/device/learning.sh launch LEFT_S [SLEEP_S]  next call (carry .dk3): start every arm; LEFT_S =
#                                                       device seconds left in the lease (RL deadline);
#                                                       then sleep SLEEP_S (default 240) in the same call.
#                                                       The machine is released 30 s after a call ends:
#                                                       make the next call (wait) at once, nothing between
#                                                       (session 30 lost a launched campaign that way);
#                                                       PREFETCH=N first plans the uncached train games
#                                                       on N processes (once for all arms)
#   bash benchmarks/device/learning.sh wait SECONDS     sleep (until all arms end or SECONDS pass),
#                                                       print status, snapshot results -> $OUT
#   bash benchmarks/device/learning.sh deadline UNIX    move the RL deadline of the running arms
#   bash benchmarks/device/learning.sh plan             print the arms a launch would start (name,
#                                                       GPU memory share, config, overrides); no GPU
#   bash benchmarks/device/learning.sh collect SECONDS  like wait, snapshotting every 60 s (a call cut
#                                                       at the lease's end still returns the last one)
#
# ARMSET=smol (default: campaign 2's seven SmolLM2 arms) | reader (campaign 3: a served zero-shot
# Qwen2.5-Coder-0.5B as SkillOS's executor and Skill-alpha's worker) | qwen (Qwen2.5-Coder-0.5B as
# the SkillOS / Skill-alpha policy and its own frozen reader, in-process) | search (campaigns 5-7) |
# skill1 (campaign 8: Skill1's three arms alone, below; SKILL1_SEEDS="1 ..." adds a grpo and a
# full arm per extra seed, campaign 9); the Qwen sets need the
# Qwen kit calls (reader_bound.sh kit, carry .dkq1 ... .dkq12) between `kit` and `launch`. Give
# every call of a campaign the same ARMSET (status, wait and collect read its arm table).
# Arms: the three methods' `sft` processes run the shared warm start (saved under $L/ws/<method>)
# and evaluate the SFT-only conditions; the RL arms wait for their method's warm start, train until
# the deadline (max_train_minutes = 20 or the deadline, whichever first) and evaluate.
# Outputs (no checkpoints, no frozen weights): $L/runs/<arm>/, $L/logs/<arm>.log, $L/logs/gpu.csv.
# DRY=1 (CPU, this repo's .venv, no kit): every arm at tiny sizes with a 2-layer random model
# (DRY_MODEL), to check the orchestration (warm-start hand-off, deadline file, eval files,
# snapshot, summarize) before a lease is spent on it.
if [ "${DRY:-0}" = 1 ]; then
  export PATH=$PWD/.venv/bin:$PATH OUT=${OUT:-/tmp/L_out} HF_HUB_OFFLINE=1 JAX_PLATFORMS=cpu; mkdir -p $OUT
  # the arms run from a snapshot under $L/src, where <repo>/../shared does not resolve
  export SKILLAX_ALFWORLD_DATA=${SKILLAX_ALFWORLD_DATA:-$(cd .. && pwd)/shared/data/alfworld}
else
  source benchmarks/device/kit.sh
fi
export OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
L=${L:-/tmp/L}
mkdir -p $L/runs $L/logs $L/ws
part=$1
EVAL_RESERVE=${EVAL_RESERVE:-420}   # s kept after the RL deadline for evaluation + export
COLLECT_MARGIN=${COLLECT_MARGIN:-75} # s kept after that for the last snapshot and the transfer
HW=benchmarks/learning/handwritten_skills

# Device memory: each arm has its own share of the GPU (XLA_PYTHON_CLIENT_MEM_FRACTION, preallocated,
# so seven processes cannot starve one another as on 2026-12-01, when five died of OOM), and its
# sampler splits any call predicted over model.sampler_memory_gb into row chunks (same samples;
# engine.sampler.Sampler.call_bytes, benchmarks/sampler_memory.py). Fractions of the H200's 139 GiB:
declare -A MEM=([skill1_sft]=0.09 [skill1_grpo]=0.15 [skill1_full]=0.16 [skillos_sft]=0.11
                [skillos_rl]=0.12 [alpha_sft]=0.12 [alpha_rl]=0.13)   # + gpu_check 0.03: 0.91
SAMPLER_GB=${SAMPLER_GB:-5}
# name | config | overrides (the deadline file and max_train_minutes are added to the RL arms)
ARMS=(
  "skill1_sft|configs/skill1_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/skill1 --config.train.micro_batch=16"
  "skill1_grpo|configs/skill1_alfworld_learning.py|--config.ablation=no_library --config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.train.micro_batch=16"
  "skill1_full|configs/skill1_alfworld_learning.py|--config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.train.micro_batch=16"
  "skillos_sft|configs/skillos_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/skillos --config.eval.handwritten_dir=$HW"
  "skillos_rl|configs/skillos_alfworld_learning.py|--config.warmstart.load_dir=$L/ws/skillos --config.warmstart.wait_s=900"
  "alpha_sft|configs/skill_alpha_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/alpha --config.eval.handwritten_dir=$HW"
  "alpha_rl|configs/skill_alpha_alfworld_learning.py|--config.warmstart.load_dir=$L/ws/alpha --config.warmstart.wait_s=900"
)

case ${ARMSET:-smol} in smol|reader|qwen|search|skill1) ;; *) echo "ARMSET=$ARMSET: one of smol, reader, qwen, search, skill1"; exit 2;; esac
# ARMSET=reader (campaign 3, issue 18's next step): the frozen executor (SkillOS) and worker
# (Skill-alpha) are a ZERO-SHOT Qwen2.5-Coder-0.5B-Instruct served by `mode=serve` on the same GPU
# (its own share; kit: benchmarks/device/reader_bound.sh prep/kit), the curator / editor policy is
# SmolLM2-135M as in campaign 2 (curator / editor SFT only: no play SFT, the reader is not ours).
# The rsft arms evaluate the upper bound first (no skill, hand-written), then the SFT policy's skills.
if [ "${ARMSET:-smol}" = reader ]; then
  RURL=http://127.0.0.1:8765/v1
  EXE="--config.executor.kind=openai --config.executor.openai.base_url=$RURL --config.executor.openai.model=reader --config.executor.openai.max_concurrency=160 --config.executor.openai.timeout_s=300 --config.sft.play_steps=0"
  WRK="--config.worker.kind=openai --config.worker.openai.base_url=$RURL --config.worker.openai.model=reader --config.worker.openai.max_concurrency=160 --config.sft.play_steps=0"
  declare -A MEM=([server]=0.30 [skillos_rsft]=0.10 [skillos_rrl]=0.14 [alpha_rsft]=0.12 [alpha_rrl]=0.16)
  ARMS=(
    "skillos_rsft|configs/skillos_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/skillos_r --config.eval.handwritten_dir=$HW --config.eval.conditions=no_memory,handwritten,curated $EXE"
    "skillos_rrl|configs/skillos_alfworld_learning.py|--config.warmstart.load_dir=$L/ws/skillos_r --config.warmstart.wait_s=900 $EXE"
    "alpha_rsft|configs/skill_alpha_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/alpha_r --config.eval.handwritten_dir=$HW $WRK"
    "alpha_rrl|configs/skill_alpha_alfworld_learning.py|--config.warmstart.load_dir=$L/ws/alpha_r --config.warmstart.wait_s=900 $WRK"
  )
fi

# ARMSET=qwen (campaign 4): campaign 2's SkillOS and Skill-alpha arms with Qwen2.5-Coder-0.5B-Instruct
# as the policy AND (frozen copy after the play SFT) its own reader, in-process: no serving; the
# zero-shot reader won 0 of 24 evidence games in campaign 3, so the play SFT of campaign 2 stays.
# skillos_qgap: the upper-bound experiment with a reader that has a gap: play SFT on the Pick, Look
# and Pick2 games only (sft.play_families), no curator RL; evaluated without skills and with the
# hand-written ones (summarize.py compares the held-out Clean/Heat/Cool types, and the trained ones
# as the control). No gpu_check (a SmolLM2-path check, passed in campaign 2): its share goes to the arms.
# Kit: the Qwen parts as for ARMSET=reader.
if [ "${ARMSET:-smol}" = qwen ]; then
  Q="--config.model.path=qwen2.5-coder-0.5b"
  GAP="--config.sft.play_families=pick_and_place_simple,look_at_obj_in_light,pick_two_obj_and_place"
  declare -A MEM=([skillos_qsft]=0.17 [skillos_qgap]=0.15 [skillos_qrl]=0.22 [alpha_qsft]=0.17 [alpha_qrl]=0.22)
  ARMS=(
    "skillos_qsft|configs/skillos_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/skillos_q --config.eval.handwritten_dir=$HW --config.eval.conditions=no_memory,handwritten,curated $Q"
    "skillos_qgap|configs/skillos_alfworld_learning.py|--config.steps=0 --config.eval.handwritten_dir=$HW --config.eval.conditions=no_memory,handwritten $GAP $Q"
    "skillos_qrl|configs/skillos_alfworld_learning.py|--config.warmstart.load_dir=$L/ws/skillos_q --config.warmstart.wait_s=900 $Q"
    "alpha_qsft|configs/skill_alpha_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/alpha_q --config.eval.handwritten_dir=$HW $Q"
    "alpha_qrl|configs/skill_alpha_alfworld_learning.py|--config.warmstart.load_dir=$L/ws/alpha_q --config.warmstart.wait_s=900 $Q"
  )
fi

# ARMSET=search (campaign 5): the Qwen reader SFT'd on the *searching* expert (sft.play_search:
# it looks for the object receptacle by receptacle, in the places its own-type skill names first
# when that skill is in context), all 200 train games, 70 % of episodes with skills, 70 % of those
# with their own type's skill (written from 8 other games). Upper bound = the rule teacher's skills
# from every train game (benchmarks/learning/teacher_skills, the "handwritten" condition here).
# skillos_ss<k>: the same reader and bound with seed k, for each k of SEEDS (default "1": campaign 5;
# each such arm takes SEED_SHARE of the GPU, default 0.24: keep the shares' sum under ~0.93; SEED_CONDS
# = their conditions, default no_memory,handwritten; add curated for the SFT curator's repo per seed;
# more overrides for these arms may follow after a space, as campaign 6 did: SEED_CONDS="no_memory,
# handwritten --config.eval.splits=valid_unseen --config.env.workers=8 --config.sft.play_contrast=True").
# alpha_ssft: the same lever for Skill-alpha's frozen worker (sft.play_search: 70 % of its play
# episodes carry one rule document of every task type's teacher rules, from 8 other games each,
# rendered as z is at evaluation), SFT only; bound = z_hand of the same teacher skills; ALPHA_EXTRA=
# more overrides for it (e.g. "--config.sft.play_contrast=True --config.env.workers=5"). With the
# default seed arm the four shares sum to 0.95 of the GPU: ONLY=skillos or ONLY=alpha to run a part.
# SEED_ARM=sc names the seed arms skillos_sc<k> (campaign 7: with --config.sft.play_contrast=True in
# SEED_CONDS; summarize.py reports them as "contrast reader, seed k", pooled apart from "search reader");
# SEED_ARM=sd: the same plus --config.rollout.retrieval_fields=name,description in SEED_CONDS
# ("contrast reader, name+description retrieval"; benchmarks/learning/retrieval_fields.py).
if [ "${ARMSET:-smol}" = search ]; then
  Q="--config.model.path=qwen2.5-coder-0.5b"
  S="--config.sft.play_search=True --config.sft.play_tasks=0 --config.sft.play_skill_fraction=0.7 --config.sft.play_relevant_share=0.7 --config.sft.play_skill_games=8 --config.sft.play_steps=${PLAY_STEPS:-200}"
  AS="--config.sft.play_search=True --config.sft.play_skill_fraction=0.7 --config.sft.play_skill_games=8 --config.sft.play_steps=${PLAY_STEPS:-200} ${ALPHA_EXTRA:-}"
  TS=benchmarks/learning/teacher_skills
  declare -A MEM=([skillos_ssft]=0.24 [skillos_srl]=0.30 [alpha_ssft]=0.17)
  ARMS=(
    "skillos_ssft|configs/skillos_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/skillos_s --config.eval.handwritten_dir=$TS --config.eval.conditions=no_memory,handwritten,curated $S $Q"
    "skillos_srl|configs/skillos_alfworld_learning.py|--config.warmstart.load_dir=$L/ws/skillos_s --config.warmstart.wait_s=900 $Q"
    "alpha_ssft|configs/skill_alpha_alfworld_learning.py|--config.steps=0 --config.eval.handwritten_dir=$TS $AS $Q"
  )
  for k in ${SEEDS:-1}; do
    MEM[skillos_${SEED_ARM:-ss}$k]=${SEED_SHARE:-0.24}
    ARMS+=("skillos_${SEED_ARM:-ss}$k|configs/skillos_alfworld_learning.py|--config.steps=0 --config.seed=$k --config.eval.handwritten_dir=$TS --config.eval.conditions=${SEED_CONDS:-no_memory,handwritten} $S $Q")
  done
fi

# ARMSET=skill1 (campaign 8): Skill1's three arms alone on the GPU (issue 18: "give each method its
# own lease"), with the issue-17 loop (overlapped play, one prefill per group, coarse row buckets):
# larger GPU shares, 7 environment workers per RL arm (2 RL arms + the SFT arm's eval on 16 cores),
# SKILL1_EXTRA = overrides for all three arms (the campaign's step size: commands.sh).
if [ "${ARMSET:-smol}" = skill1 ]; then
  declare -A MEM=([skill1_sft]=0.14 [skill1_grpo]=0.30 [skill1_full]=0.32)
  X="--config.train.micro_batch=16 ${SKILL1_EXTRA:-}"
  # SKILL1_MODEL=qwen (campaign 15): every Skill1 arm's policy is Qwen2.5-Coder-0.5B-Instruct
  # (3.7x SmolLM2-135M's parameters; the Qwen kit calls, reader_bound.sh kit, go between `kit`
  # and `launch`, as for ARMSET=qwen) instead of SmolLM2-135M: the reader bound was null for two
  # 135M warm starts (campaigns 12-13), so no 135M library can reach the goal.
  case ${SKILL1_MODEL:-smol} in
    smol) ;;
    qwen) X="$X --config.model.path=qwen2.5-coder-0.5b";;
    *) echo "SKILL1_MODEL=$SKILL1_MODEL: one of smol, qwen"; exit 2;;
  esac
  # SKILL1_ROWS (session 18): the sampler's row buckets (model.batch_buckets) of every Skill1 arm.
  # Default: no call pads to fewer than 32 rows (a training step's 8 tasks x G = 4). Agent play
  # samples whichever rows wait, so with "auto" (8, 16, 32, ...) the row count walks 8 / 16 / 32
  # and each (rows, chunk) pair builds late: replayed on campaign 15's logs, 12 -> 4 (full) and
  # 11 -> 1 (GRPO) programs built after RL step 0, ~100 s of builds an arm
  # (benchmarks/build_keys.py, benchmarks/results/build_keys.jsonl). Same samples (padded rows
  # never sample); a padded row costs prefill compute only. Since session 27 SKILL1_ROWS=auto gives
  # the same batch sizes (model.batch_floor = tasks x group = 32) but prefills a step's 8 shared
  # prompts on 8 rows (model.prefill_floor; this list pads them to 32, as every campaign did); the
  # old "auto" = SKILL1_ROWS=auto with --config.model.batch_floor=0 in SKILL1_EXTRA.
  X="$X --config.model.batch_buckets=${SKILL1_ROWS:-32,64,96,128,192,256,384,512,768,1024}"
  ARMS=(
    "skill1_sft|configs/skill1_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/skill1 --config.env.workers=4 $X"
    "skill1_grpo|configs/skill1_alfworld_learning.py|--config.ablation=no_library --config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=7 $X"
    "skill1_full|configs/skill1_alfworld_learning.py|--config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=7 $X"
  )
  # SKILL1_BOUND=1: skill1_hw, the warm start evaluated with the hand-written skills as its library
  # (init_skills; no RL): how much a correct same-type skill in context can give this policy, the
  # upper bound of any learned library (issue 18; campaign 9 found the policy chose a same-type
  # skill in 96-99 % of games and won no more with it). It evaluates with_library only and is
  # paired with the SFT arm's without_library eval of the same weights (summarize.py; half the
  # eval time). Campaign 10: at 0.07 of the GPU with the campaign's 8 GB sampler budget it died
  # of OOM; at 0.11 with a 4 GB budget and 5 workers it evaluated both splits in ~9 min.
  if [ "${SKILL1_BOUND:-0}" = 1 ]; then
    MEM[skill1_hw]=0.11
    ARMS+=("skill1_hw|configs/skill1_alfworld_learning.py|--config.steps=0 --config.init_skills=${HW}_skill1 --config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=5 --config.eval.ablate_retrieval=False --config.model.sampler_memory_gb=4 $X")
  fi
  # SKILL1_L1Z=1 (campaign 14): skill1_l1z, the full arm with rl.lambda_rerank=0 -- the paper's
  # "lambda1 = 0" ablation row (the policy still queries and reranks, the rerank tokens get no
  # loss). In the full arms of campaigns 9-13 the update's gradient norm (before clipping) was
  # 0.08-0.13 at step 0 (util + distil, no rerank tokens yet) and a median 0.2-7.1 over the later
  # steps (0.6-7.1 since campaign 11's rerank demos; clipped at 1.0 in 20-21 of 22 steps in
  # campaigns 12-13); the GRPO arms' median is 0.08-0.09. So the REINFORCE rerank term (no
  # baseline, NDCG ~0.93, summed over the permutation's tokens) sets the direction of the full
  # arm's update. This arm measures what that costs the play policy.
  # Three RL arms + SFT: 0.26 of the H200 and 5 environment workers each. Not with SKILL1_SEEDS
  # or SKILL1_BOUND (their memory plans assume the base arms' shares).
  # SKILL1_UTIL=1 (campaign 16): skill1_util, the full arm with rl.lambda_rerank=0 and
  # rl.lambda_distil=0 -- the play (util) objective alone, with the library built and retrieved
  # into every prompt as in the full arm (the policy still reranks and distils; those tokens get
  # no loss). Campaign 15 (Qwen2.5-0.5B): GRPO - SFT +0.224 on unseen, while the full arm without
  # its library was -0.015 from SFT. This arm tells the two candidate causes apart: training with
  # skills in context (util arm ~ full arm) or the rerank/distil terms (util arm ~ GRPO).
  # Same memory plan as SKILL1_L1Z; the two are exclusive (4 RL arms do not fit at Qwen sizes).
  # SKILL1_OBJ_NORMS=1: the full arm logs each objective's gradient norm
  # on RL step 0 and every 5th step (rl.objective_grad_norms_every=5; a logged step's update
  # takes ~2x as long, so ~1.2x on average; the full arm only).
  if [ "${SKILL1_L1Z:-0}" = 1 ] || [ "${SKILL1_UTIL:-0}" = 1 ]; then
    if [ -n "${SKILL1_SEEDS:-}" ] || [ "${SKILL1_BOUND:-0}" = 1 ]; then
      echo "SKILL1_L1Z=1 / SKILL1_UTIL=1 run without SKILL1_SEEDS and SKILL1_BOUND (one memory plan)"; exit 2
    fi
    if [ "${SKILL1_L1Z:-0}" = 1 ] && [ "${SKILL1_UTIL:-0}" = 1 ]; then
      echo "SKILL1_L1Z=1 and SKILL1_UTIL=1 are exclusive (one third RL arm)"; exit 2
    fi
    if [ "${SKILL1_UTIL:-0}" = 1 ]; then
      third="skill1_util"; lam="--config.rl.lambda_rerank=0 --config.rl.lambda_distil=0"
      MEM[skill1_sft]=0.14; R=0.26
    else
      third="skill1_l1z"; lam="--config.rl.lambda_rerank=0"
      MEM[skill1_sft]=0.12; R=0.26
    fi
    MEM[skill1_grpo]=$R; MEM[skill1_full]=$R; MEM[$third]=$R
    ARMS=("${ARMS[@]//--config.env.workers=7/--config.env.workers=5}")
    ARMS+=("$third|configs/skill1_alfworld_learning.py|$lam --config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=5 $X")
  fi
  if [ "${SKILL1_OBJ_NORMS:-0}" = 1 ]; then
    ARMS[2]="${ARMS[2]} --config.rl.objective_grad_norms_every=5"
  fi
  # SKILL1_NOTHINK=1 (session 19, a candidate for campaign 17): skill1_sftnt, a second SFT arm whose
  # warm start answers <action>X</action> without the think block (play.think=False: prompt and
  # demonstrations; play.require_think=False). Campaign 15's GRPO arm dropped the think block at RL
  # step 15 and gained 22 points held out; this arm against the SFT arm (same games, paired:
  # summarize.py) tells how much of that the answer format alone gives. SFT + evaluation only
  # (its warm start is saved to $L/ws/skill1nt). 0.14 of the GPU: with the base arms only (0.76).
  if [ "${SKILL1_NOTHINK:-0}" = 1 ]; then
    if [ "${SKILL1_L1Z:-0}" = 1 ] || [ "${SKILL1_UTIL:-0}" = 1 ] || [ -n "${SKILL1_SEEDS:-}" ] || [ "${SKILL1_BOUND:-0}" = 1 ]; then
      echo "SKILL1_NOTHINK=1 runs with the base arms only (its 0.14 of the GPU beside 0.76)"; exit 2
    fi
    MEM[skill1_sftnt]=0.14
    ARMS+=("skill1_sftnt|configs/skill1_alfworld_learning.py|--config.steps=0 --config.warmstart.save_dir=$L/ws/skill1nt --config.play.think=False --config.play.require_think=False --config.env.workers=3 $X")
  fi
  # RC_PIN: the released-code arms' KL, pinned after SKILL1_EXTRA (the last override wins). Until
  # session 28 the objective's preset overwrote any value, so campaign 17's rc arm trained with k3
  # KL 0.01 although SKILL1_EXTRA asked for 0.05; an explicit value wins now
  # (skillax/config_preset.py), and the pin keeps every rc arm on campaign 17's 0.01 so that seeds
  # pool. K = 3 and the 0.1 invalid penalty still come from the preset (the config leaves them at
  # Skill1's defaults; a run prints each preset key it set or kept).
  RC_PIN="--config.rl.kl_coef=0.01 --config.rl.kl_estimator=k3"
  # RC_SHARE: a released-code GRPO arm's GPU share. Qwen (PROTOCOL.md session 32): campaign 19's
  # rc arm peaked at 20.1 GB (memory/peak_gb over 21 RL steps, SAMPLER_GB=8) in its 41.9 GB, and
  # the session-29 rule gives an rc arm peaking at <= 26 GB 0.20 of an H200; 0.195 (27.4 GiB) so
  # that SFT + two rc arms fit an H100 under the 0.95 cap (0.247 + 2 x 0.344 = 0.935). SmolLM2:
  # GRPO's share, as before.
  RC_SHARE=${MEM[skill1_grpo]}
  [ "${SKILL1_MODEL:-smol}" = qwen ] && RC_SHARE=0.195
  # SKILL1_RC=1 (session 24, campaign 17): skill1_grpo_rc, the GRPO arm (no library) trained with
  # --config.objective=released_code (Skill1's public code: every turn a step sample, 10 x won, 0.1
  # off per format-invalid step, k3 KL 0.01; methods/skill1/objectives.py) from the same warm start.
  # In campaigns 15 and 16h the paper objective's GRPO arm dropped the <action> tag around RL steps
  # 12-15 (118 of 134 held-out games at step 12 in 16h); this arm tests the format-scoring lever
  # against it (paired with skill1_grpo: summarize.py). GRPO's share, 5 environment workers.
  # add_rc_arm NAME SWITCH WORKERS [OVERRIDES]: a released-code GRPO arm (no library) from the
  # base warm start, RC_SHARE, OVERRIDES set last; refused beside the switches that change the
  # base arms' memory plan (SWITCH names the caller in the message).
  add_rc_arm() {
    if [ "${SKILL1_L1Z:-0}" = 1 ] || [ "${SKILL1_UTIL:-0}" = 1 ] || [ -n "${SKILL1_SEEDS:-}" ] || [ "${SKILL1_BOUND:-0}" = 1 ] \
       || { [ "$2" != "SKILL1_RC=1" ] && [ -n "${SKILL1_RC_SEEDS:-}" ]; }; then
      echo "$2 runs with the base arms only (GRPO's share beside them)"; exit 2
    fi
    MEM[$1]=$RC_SHARE
    ARMS+=("$1|configs/skill1_alfworld_learning.py|--config.ablation=no_library --config.objective=released_code --config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=$3 $X $RC_PIN${4:+ $4}")
  }
  [ "${SKILL1_RC:-0}" = 1 ] && add_rc_arm skill1_grpo_rc SKILL1_RC=1 5
  # SKILL1_RC_LR=3e-6 (session 29, campaign 19): skill1_grpo_rc_lr, SKILL1_RC's arm with the RL
  # learning rate given here (after SKILL1_EXTRA and the KL pin: the last override wins; the SFT
  # warm start uses sft.lr, so it is the same for both). Campaign 18 (reduced, seed 0) moved as far
  # from the warm start as seed 2's rc arm (util KL 0.03 -> ~0.14 over 25 steps in both) and lost
  # 0.216 held out where seed 2 gained 0.157: at lr 1e-5 a 25-step run's direction is a seed's
  # draw. RC_SHARE, 5 environment workers; base arms only (Qwen, with SKILL1_RC=1 beside it:
  # 0.14 + 0.195 + 0.195 of an H200, which an H100 holds too, rescaled: 0.935).
  if [ -n "${SKILL1_RC_LR:-}" ]; then
    awk -v x="$SKILL1_RC_LR" 'BEGIN { exit !(x ~ /^[0-9.]+([eE]-?[0-9]+)?$/ && x + 0 > 0 && x + 0 < 1e-3) }' \
      || { echo "SKILL1_RC_LR=$SKILL1_RC_LR: a learning rate in (0, 1e-3), e.g. 3e-6"; exit 2; }
    add_rc_arm skill1_grpo_rc_lr SKILL1_RC_LR 5 "--config.train.lr=$SKILL1_RC_LR"
  fi
  # SKILL1_RC_BATCH=16x8 (session 29; the lever after campaign 19's outcomes (b) and (c),
  # PROTOCOL.md 2026-12-07 session 29): skill1_grpo_rc_b, SKILL1_RC's arm with TASKS tasks x GROUP
  # rollouts a step (the paper's 16 x 8 = 128 episodes against the config's 8 x 4), set last. A step
  # takes ~4x as long (environment and update scale with the episodes), so the deadline, not
  # RL_STEPS, usually ends it: compare it at the steps it reached. GRPO's share (the sampler's
  # memory budget splits its 128-row calls), 8 environment workers; base arms only.
  if [ -n "${SKILL1_RC_BATCH:-}" ]; then
    case $SKILL1_RC_BATCH in
      [1-9]x[1-9]|[1-9]x[1-9][0-9]|[1-9][0-9]x[1-9]|[1-9][0-9]x[1-9][0-9]) ;;
      *) echo "SKILL1_RC_BATCH=$SKILL1_RC_BATCH: TASKSxGROUP, each 1..99, e.g. 16x8"; exit 2;;
    esac
    [ "${SKILL1_RC_BATCH#*x}" -ge 2 ] || { echo "SKILL1_RC_BATCH=$SKILL1_RC_BATCH: GRPO needs a group of >= 2"; exit 2; }
    add_rc_arm skill1_grpo_rc_b SKILL1_RC_BATCH 8 "--config.tasks_per_step=${SKILL1_RC_BATCH%x*} --config.group_size=${SKILL1_RC_BATCH#*x}"
    MEM[skill1_grpo_rc_b]=${MEM[skill1_grpo]}   # 4x the rows a step: GRPO's share, not RC_SHARE (unmeasured)
  fi
  # SKILL1_FULL_RC=1 (session 27): skill1_full_rc, the full arm (library: query, rerank, use, distil)
  # trained with --config.objective=released_code (step samples for query, rank and play; distil
  # runs but gets no loss, as in the public code), from the same warm start: issue 18's headline
  # (full with library - GRPO w/o library) under the objective whose GRPO arm beat SFT in campaign
  # 17. The full arm's share, 5 environment workers; base arms only (SKIP the paper-objective arms
  # and add SKILL1_RC=1 for its pair: 0.14 + 0.30 + 0.32 = 0.76 of an H200).
  if [ "${SKILL1_FULL_RC:-0}" = 1 ]; then
    if [ "${SKILL1_L1Z:-0}" = 1 ] || [ "${SKILL1_UTIL:-0}" = 1 ] || [ -n "${SKILL1_SEEDS:-}" ] || [ "${SKILL1_BOUND:-0}" = 1 ] \
       || [ -n "${SKILL1_RC_SEEDS:-}" ]; then
      echo "SKILL1_FULL_RC=1 runs with the base arms only (the full arm's share beside them)"; exit 2
    fi
    MEM[skill1_full_rc]=${MEM[skill1_full]}
    ARMS+=("skill1_full_rc|configs/skill1_alfworld_learning.py|--config.objective=released_code --config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=5 $X $RC_PIN")
  fi
  # SKILL1_TRAJ=1 (session 26): skill1_grpo_traj, the GRPO arm (no library) under the paper objective
  # with rl.util_weighting=trajectory (each episode counts once in the util token mean; campaign 17's
  # paper-objective surrogate averaged +0.159 a step, pulled by long lost episodes). GRPO's share,
  # 5 environment workers; base arms only. With SKILL1_RC=1 as well, SKIP one of skill1_grpo /
  # skill1_full (four RL-sized shares do not fit an H200).
  if [ "${SKILL1_TRAJ:-0}" = 1 ]; then
    if [ "${SKILL1_L1Z:-0}" = 1 ] || [ "${SKILL1_UTIL:-0}" = 1 ] || [ -n "${SKILL1_SEEDS:-}" ] || [ "${SKILL1_BOUND:-0}" = 1 ] \
       || [ -n "${SKILL1_RC_SEEDS:-}" ]; then
      echo "SKILL1_TRAJ=1 runs with the base arms only (GRPO's share beside them)"; exit 2
    fi
    MEM[skill1_grpo_traj]=${MEM[skill1_grpo]}
    ARMS+=("skill1_grpo_traj|configs/skill1_alfworld_learning.py|--config.ablation=no_library --config.rl.util_weighting=trajectory --config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=5 $X")
  fi
  # SKILL1_RC_SEEDS="0 1" (session 26, campaign 18): per seed k, an SFT arm skill1_sft_s<k> with its
  # own warm start ($L/ws/skill1_s<k>) and the released-code GRPO arm skill1_grpo_rc_s<k> from it,
  # both with --config.seed=k, in place of the base arms. Campaign 17 (seed 2) measured rc - SFT
  # +0.157 [+0.067, +0.254] on the common-random-number evaluation; PROTOCOL.md 2026-12-06f pools
  # GRPO - SFT over seeds, so this puts two more seeds in one lease. Shares: SFT 0.14, rc RC_SHARE
  # (Qwen 0.195): two seeds take 0.67 of an H200; on an H100 one seed fits (the launch's
  # rescale refuses more). SKILL1_EXTRA must not set --config.seed (each arm sets its own).
  if [ -n "${SKILL1_RC_SEEDS:-}" ]; then
    if [ "${SKILL1_RC:-0}" = 1 ] || [ "${SKILL1_L1Z:-0}" = 1 ] || [ "${SKILL1_UTIL:-0}" = 1 ] || [ -n "${SKILL1_SEEDS:-}" ] \
       || [ "${SKILL1_BOUND:-0}" = 1 ] || [ "${SKILL1_NOTHINK:-0}" = 1 ] || [ "${SKILL1_TRAJ:-0}" = 1 ] \
       || [ "${SKILL1_FULL_RC:-0}" = 1 ]; then
      echo "SKILL1_RC_SEEDS runs alone (it replaces the base arms; no SKILL1_RC/L1Z/UTIL/SEEDS/BOUND/NOTHINK/TRAJ/FULL_RC)"; exit 2
    fi
    case " ${SKILL1_EXTRA:-} " in *" --config.seed="*)
      echo "SKILL1_RC_SEEDS sets each arm's --config.seed: take it out of SKILL1_EXTRA"; exit 2;; esac
    ARMS=(); declare -A MEM=()
    for k in $SKILL1_RC_SEEDS; do
      case $k in [0-9]) ;; *) echo "SKILL1_RC_SEEDS=$SKILL1_RC_SEEDS: each seed one of 0..9"; exit 2;; esac
      MEM[skill1_sft_s$k]=0.14; MEM[skill1_grpo_rc_s$k]=$RC_SHARE
      ARMS+=("skill1_sft_s$k|configs/skill1_alfworld_learning.py|--config.steps=0 --config.seed=$k --config.warmstart.save_dir=$L/ws/skill1_s$k --config.env.workers=4 $X"
             "skill1_grpo_rc_s$k|configs/skill1_alfworld_learning.py|--config.ablation=no_library --config.objective=released_code --config.seed=$k --config.warmstart.load_dir=$L/ws/skill1_s$k --config.warmstart.wait_s=900 --config.env.workers=5 $X $RC_PIN")
    done
  fi
  # SKILL1_SEEDS="1 2": a grpo and a full arm per extra seed k in 1..9 (skill1_grpo<k>,
  # skill1_full<k>, with --config.seed=k; seed 0 is the base arms'), from the same warm start; all
  # RL arms then share 0.93 of the H200 less the SFT (and bound) arm equally, 4 environment
  # workers each (campaign 9, one extra seed: 0.12 + 4 x 0.20 of memory, 19 workers on 16 cores;
  # two extra seeds: 6 x 0.135 = 18.8 GB an arm, below campaign 2's 0.15).
  if [ -n "${SKILL1_SEEDS:-}" ]; then
    for k in $SKILL1_SEEDS; do
      case $k in [1-9]) ;; *) echo "SKILL1_SEEDS=$SKILL1_SEEDS: each seed one of 1..9 (0 is the base arms')"; exit 2;; esac
    done
    n=0   # the RL arms that will start (SKIP'd ones take no memory)
    for a in skill1_grpo skill1_full $(for k in $SKILL1_SEEDS; do echo skill1_grpo$k skill1_full$k; done); do
      case " ${SKIP:-} " in *" $a "*) ;; *) n=$((n + 1));; esac
    done
    [ $n -gt 0 ] || n=1
    if [ "${SKILL1_BOUND:-0}" = 1 ]; then MEM[skill1_sft]=0.10; MEM[skill1_hw]=0.11; else MEM[skill1_sft]=0.12; fi
    R=$(awk -v n=$n -v a=${MEM[skill1_sft]} -v b=${MEM[skill1_hw]:-0} 'BEGIN { r = (0.93 - a - b) / n; if (r > 0.20) r = 0.20; printf "%.3f", r }')
    MEM[skill1_grpo]=$R; MEM[skill1_full]=$R
    ARMS=("${ARMS[@]//--config.env.workers=7/--config.env.workers=4}")
    ARMS[0]=${ARMS[0]//--config.env.workers=4/--config.env.workers=3}
    for k in $SKILL1_SEEDS; do
      MEM[skill1_grpo$k]=$R; MEM[skill1_full$k]=$R
      ARMS+=("skill1_grpo$k|configs/skill1_alfworld_learning.py|--config.ablation=no_library --config.seed=$k --config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=4 $X"
             "skill1_full$k|configs/skill1_alfworld_learning.py|--config.seed=$k --config.warmstart.load_dir=$L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=4 $X")
    done
  fi
fi

if [ "${DRY:-0}" = 1 ]; then
  M=${DRY_MODEL:?a tiny HF model folder}
  T1="--config.model.path=$M --config.model.dtype=float32 --config.model.max_len=2048 --config.env.max_steps=2 --config.env.workers=1 --config.train.micro_batch=2 --config.eval.batch_size=0"
  D_skill1="$T1 --config.tasks_per_step=1 --config.group_size=2 --config.sft.steps=1 --config.sft.n_tasks=4 --config.sft.batch_size=2 --config.eval.n_tasks=2 --config.rollout.action_tokens=16 --config.rollout.distil_tokens=32 --config.rollout.query_tokens=8"
  D_skillos="$T1 --config.groups_per_step=1 --config.group_size=2 --config.tasks_per_group=2 --config.executor.action_tokens=16 --config.rollout.curator_tokens=32 --config.rollout.max_prompt_tokens=1500 --config.sft.steps=1 --config.sft.n_tasks=4 --config.sft.batch_size=2 --config.sft.play_steps=1 --config.sft.play_tasks=2 --config.sft.play_max_len=1024 --config.sft.max_len=2048 --config.eval.n_groups=1"
  D_alpha="$T1 --config.lanes=1 --config.unit.group_size=2 --config.unit.anchors_k=1 --config.unit.max_new_tokens=32 --config.worker.action_tokens=16 --config.sft.play_steps=1 --config.sft.steps=1 --config.sft.batch_size=2 --config.sft.play_batch_size=2 --config.sft.play_max_len=1024 --config.sft.max_len=2048 --config.eval.n_tasks=2 --config.train.length_buckets=(1024,2048)"
  for i in "${!ARMS[@]}"; do
    case ${ARMS[$i]} in skill1*) d=$D_skill1;; skillos*) d=$D_skillos;; alpha*) d=$D_alpha;; esac
    [ "${ARMSET:-smol}" = reader ] && d="$d --config.sft.play_steps=0"   # the reader is served: no play SFT
    ARMS[$i]="${ARMS[$i]} $d"
  done
fi

selected() {   # arm $1 is started: it matches the prefix ONLY (default all) and is not in SKIP (space-separated names)
  case $1 in ${ONLY:-*}*) ;; *) return 1;; esac
  for x in ${SKIP:-}; do [ "$x" = "$1" ] && return 1; done
  return 0
}

# The GPU shares above are fractions of an H200 (143,771 MiB as nvidia-smi reports it). On a card
# with less memory (an H100: 81,559 MiB) every share is rescaled to keep its bytes, so an arm that
# fitted on the H200 fits the same way; a launch whose shares (rescaled or not: the arms it starts,
# and the served reader) sum over 0.95 of its card is refused, naming them: SKIP arms until they fit (PROTOCOL.md says
# which for a campaign). GPU_MIB=N stands in for the card's figure (`GPU_MIB=81559 ... plan` here).
H200_MIB=143771
rescale_mem() {
  local mib=${GPU_MIB:-$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -n 1)}
  case $mib in ''|*[!0-9]*) return 0;; esac
  local k a n used="" sum what="shares"
  if [ "$mib" -lt $((H200_MIB - 4096)) ]; then
    for k in "${!MEM[@]}"; do
      MEM[$k]=$(awk -v s=${MEM[$k]} -v m=$mib -v h=$H200_MIB 'BEGIN { printf "%.3f", s * h / m }')
    done
    what="rescaled shares"
  fi
  for a in "${ARMS[@]}"; do n=${a%%|*}; selected $n && used="$used $n=${MEM[$n]:-0}"; done
  [ "${ARMSET:-smol}" = reader ] && used="$used server=${MEM[server]}"
  sum=$(echo "$used" | tr ' ' '\n' | awk -F= 'NF == 2 { t += $2 } END { printf "%.3f", t }')
  [ "$what" = shares ] || echo "GPU of $mib MiB (an H200 has $H200_MIB): shares rescaled to keep their bytes:$used (sum $sum)"
  # on an H200 too (session 29): switches can add arms beside each other past the card
  awk -v t=$sum 'BEGIN { exit !(t > 0.95) }' && { echo "the $what sum to $sum > 0.95 of this GPU: SKIP some of:$used"; return 1; }
  return 0
}

launched() {   # the arms the launch started ($L/arms, one name a line), else the ones it would start:
  # a wait/collect call made without the launch's environment (SKIP, SKILL1_RC, ...) still waits for
  # exactly those arms (session 26: one without SKIP waited its whole 480 s for arms never started)
  if [ -f $L/arms ]; then awk '!seen[$0]++' $L/arms; return; fi   # a second launch adds its arms
  for a in "${ARMS[@]}"; do n=${a%%|*}; selected $n && echo $n; done
}

status() {
  echo "== $(date -u +%T) deadline $(cat $L/deadline 2>/dev/null) (now $(date +%s))"
  for n in $(launched); do
    f=$L/runs/$n/metrics.jsonl
    steps=$( [ -f $f ] && wc -l < $f || echo 0 )
    ev=$(ls $L/runs/$n/eval/*.jsonl 2>/dev/null | wc -l)
    echo "-- $n: rl_steps=$steps eval_files=$ev $(grep -h '^rc=' $L/logs/$n.log 2>/dev/null)"
    grep -v '^[IW][0-9]\{4\} ' $L/logs/$n.log 2>/dev/null | tail -n 2 | cut -c1-300
  done
  tail -n 1 $L/logs/gpu_check.log 2>/dev/null | cut -c1-400
  [ -f $L/logs/server.log ] && { echo "-- server: $(curl -s -m 5 http://127.0.0.1:8765/health)"; grep -v '^[IW][0-9]\{4\} ' $L/logs/server.log | tail -n 2 | cut -c1-300; }
  tail -n 3 $L/logs/gpu.csv 2>/dev/null
  uptime
}

snapshot() {   # everything but weights -> $OUT/learning.tgz (< 16 MiB)
  tar czf $OUT/learning.tgz.tmp -C $L --exclude=checkpoints --exclude=frozen --exclude=warmstart --exclude='*.tmp' runs logs deadline \
    2>/dev/null; mv $OUT/learning.tgz.tmp $OUT/learning.tgz
  ls -la $OUT/learning.tgz | awk '{print "snapshot bytes", $5}'
}

join_qwen() {   # the Qwen2.5-Coder-0.5B GGUF from its kit parts (reader_bound.sh kit), sha256-checked
  [ "${DRY:-0}" = 1 ] && return 0
  cat $K/qwen.part_* > $K/qwen.gguf
  local want got; want=$(python3 -c "from skillax.models.gguf_assets import QWEN25_CODER_SHA256 as s; print(s)")
  got=$(sha256sum < $K/qwen.gguf | cut -d' ' -f1); echo "qwen gguf sha256 $got"
  [ "$got" = "$want" ] || { echo "sha256 mismatch (expected $want): missing kit parts?"; return 1; }
  export SKILLAX_QWEN25_GGUF=$K/qwen.gguf
}

start_reader() {   # the served reader (ARMSET=reader): its own preallocated share, up to 256 rows a call
  local model=qwen2.5-coder-0.5b
  [ "${DRY:-0}" = 1 ] && model=${DRY_READER:?a tiny HF chat model folder}
  { echo "cd $PWD; export PYTHONPATH=/tmp/site:$PWD"
    [ "${DRY:-0}" = 1 ] || echo "export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=${MEM[server]}"
    printf 'python3 -m skillax.main --config configs/serve.py --config.model.path=%q --config.model.max_len=4096 ' "$model"
    printf -- '--config.serve.port=8765 --config.serve.model_name=reader --config.serve.max_batch_rows=256 '
    printf -- '--config.serve.max_queue=2048 --config.serve.default_max_tokens=128 --config.model.sampler_memory_gb=%s' "$SAMPLER_GB"
    # compile the executor's shapes (6 row buckets x 3 prompt buckets, 128 new tokens) before serving (issue 20)
    [ "${DRY:-0}" = 1 ] || printf -- ' --config.serve.warmup_prompt_tokens=%s' "${SERVE_WARMUP:-1024,1536,2048}"
    printf ' > %q 2>&1\n' "$L/logs/server.log"
  } > $L/logs/server.sh
  setsid nohup bash $L/logs/server.sh > /dev/null 2>&1 < /dev/null &
  for _ in $(seq 1 150); do grep -q '"url"' $L/logs/server.log 2>/dev/null && break; sleep 2; done
  grep '"url"' $L/logs/server.log || { echo "server did not start"; tail -20 $L/logs/server.log; return 1; }
}

all_done() {
  for n in $(launched); do grep -q '^rc=' $L/logs/$n.log 2>/dev/null || return 1; done
  return 0
}

if [ "$part" = kit ]; then
  python3 -c "import jax, sys; print(sys.version.split()[0], jax.__version__, jax.devices())"
  ls $K; nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
elif [ "$part" = launch ]; then
  left=${2:?device seconds left}
  # a machine released between the kit calls comes back bare (2026-12-03b: .dk1 was lost and the
  # launch failed on an import); name what is missing instead
  if [ "${DRY:-0}" != 1 ]; then
    need=".dk1 .dk2"; case ${ARMSET:-smol} in smol|skill1) need="$need .dk4 .dk7";; esac   # MiniLM (two halves): Skill1 arms only
    miss=$(for d in $need; do [ -f $K/copied$d ] || printf '%s ' $d; done)
    [ -z "$miss" ] || { echo "kit folders not on this machine: $miss(a fresh machine after an idle release?): run their kit calls again"; exit 1; }
  fi
  [ "${DRY:-0}" = 1 ] || rescale_mem || exit 1
  now=$(date +%s)
  echo $((now + left - EVAL_RESERVE - COLLECT_MARGIN)) > $L/deadline
  echo "launch $now, lease ends ~$((now + left)), RL deadline $(cat $L/deadline)"
  python3 -c "import fast_downward, textworld, alfworld, grain, ml_collections, rank_bm25, gguf, sentence_transformers, openai; print('imports ok')" || exit 1
  # the sampler paths first tested on CPU, at the SmolLM2 shape, while the arms load and SFT
  # setsid: a process left running by a call is killed when the call returns unless it has its
  # own session (the 2026-12-01 GPU log stopped with the launch call)
  # the arms run from a snapshot of the tree: a later call's tree sync cannot change their code
  mkdir -p $L/src && tar cf - --exclude='./.dk*' --exclude=./.git --exclude=./.venv --exclude=./.whl . | tar xf - -C $L/src
  cd $L/src
  case ${DRY:-0}:${ARMSET:-smol} in 0:smol|0:reader)   # the SmolLM2 sampler-path check (passed in campaign 2)
    XLA_PYTHON_CLIENT_MEM_FRACTION=0.03 setsid nohup timeout 240 python3 benchmarks/device/gpu_check.py > $L/logs/gpu_check.log 2>&1 < /dev/null &
  esac
  case ${ARMSET:-smol}:${SKILL1_MODEL:-smol} in reader:*|qwen:*|search:*|skill1:qwen) join_qwen || exit 1;; esac
  if [ "${ARMSET:-smol}" = reader ]; then start_reader || exit 1; fi
  # one command per background job, every stream redirected: `[ ... ] || cmd > f &` backgrounds a
  # subshell that keeps the call's stdout open for as long as nvidia-smi runs (session 26: a launch
  # piped to `tail` never returned and the call ran out its timeout)
  if [ "${DRY:-0}" != 1 ]; then
    setsid nohup nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 15 > $L/logs/gpu.csv 2>&1 < /dev/null &
  fi
  # PREFETCH=N: plan the valid_train games the kit's cache lacks ONCE, on N worker processes, before
  # any arm starts (campaign 6: four arms planned the same 120 games each, 10 GPU-idle minutes)
  if [ -n "${PREFETCH:-}" ] && [ "${DRY:-0}" != 1 ]; then
    echo "cached planner records: $(ls $SKILLAX_CACHE/experts/alfworld-planner-wheel 2>/dev/null | wc -l)"
    timeout ${PREFETCH_S:-420} python3 -m skillax.agents.envs.prefetch --splits valid_train --workers $PREFETCH \
      || echo "prefetch cut at ${PREFETCH_S:-420} s: the arms plan what is left"
  fi
  for a in "${ARMS[@]}"; do
    IFS='|' read -r n cfg ov <<< "$a"
    selected $n || continue   # ONLY=prefix / SKIP="name ...": start only those arms
    extra=""
    case $n in *sft) ;; *) extra="--config.train_until_file=$L/deadline --config.max_train_minutes=${RL_MINUTES:-20}";; esac
    # RL_STEPS=N: the RL arms stop after N steps as well (the protocol's "same number of RL steps"
    # for a method's arms; campaign 13). Arms that set their own --config.steps (sft, the bound) keep it.
    case " $ov " in *" --config.steps="*) ;; *) [ -n "${RL_STEPS:-}" ] && extra="$extra --config.steps=$RL_STEPS";; esac
    case " $ov " in *" --config.model.sampler_memory_gb="*) ;;   # the arm's own sampler budget wins
      *) extra="$extra --config.model.sampler_memory_gb=$SAMPLER_GB";; esac
    read -r -a args <<< "$ov $extra"          # one word per override; quoted into the arm's script
    { echo "cd $PWD; export PYTHONPATH=/tmp/site:$PWD"
      [ "${DRY:-0}" = 1 ] || echo "export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=${MEM[$n]}"
      printf 'python3 -m skillax.main --config %q --workdir %q' "$cfg" "$L/runs/$n"
      printf ' %q' "${args[@]}"; printf ' > %q 2>&1\necho rc=$? >> %q\n' "$L/logs/$n.log" "$L/logs/$n.log"
    } > $L/logs/$n.sh
    setsid nohup bash $L/logs/$n.sh > /dev/null 2>&1 < /dev/null &
    echo $n >> $L/arms; echo "started $n"
  done
  sleep ${3:-240}; status; snapshot
elif [ "$part" = wait ] || [ "$part" = collect ]; then
  # no launch on this machine: it was released (idle > 30 s between calls) and came back bare,
  # and the arms died with the old one (session 30: a wait found a fresh machine, slept its 480 s
  # and listed three arms at 0 steps). Say so at once, without sleeping.
  [ -f $L/arms ] || { echo "NO LAUNCH ON THIS MACHINE ($L/arms absent): no arm was started here -- released between calls and back bare (the arms are gone), or the launch stopped before starting any"; exit 3; }
  t_end=$(( $(date +%s) + ${2:-500} ))
  while [ $(date +%s) -lt $t_end ] && ! all_done; do
    sleep 20
    if [ "$part" = collect ] && [ $(( ($(date +%s) - t_end) % 60 )) -lt 20 ]; then snapshot > /dev/null; fi
  done
  all_done && pkill -f "[s]erve.port=8765"   # ARMSET=reader: every arm over, stop the served reader
  status; snapshot
  # the planner records the device made (PREFETCH or the arms' own planning) come back too: untar into
  # .dk3/cache here (`tar xzf experts.tgz -C .dk3/cache`) so the next kit carries them (campaign 7
  # planned 112 games on the device, 323 s, and left them there)
  [ "${DRY:-0}" = 1 ] || { [ -d $SKILLAX_CACHE/experts ] && tar czf $OUT/experts.tgz -C $SKILLAX_CACHE experts \
    && ls -la $OUT/experts.tgz | awk '{print "planner records bytes", $5}'; }
  # the XLA programs this lease built (kit.sh's JAX_COMPILATION_CACHE_DIR), compressed, in parts of
  # 15 MiB (benchmarks/device/jaxcache.sh says how they come back and travel). Only when every arm
  # is over: an entry still being written would travel truncated.
  if [ "$part" = collect ] && [ "${DRY:-0}" != 1 ] && all_done; then bash benchmarks/device/jaxcache.sh pack $K $OUT; fi
elif [ "$part" = deadline ]; then
  echo ${2:?unix time} > $L/deadline; status
elif [ "$part" = plan ]; then   # the arms a launch would start: name, GPU memory share, config, overrides
  [ -z "${GPU_MIB:-}" ] || rescale_mem || echo "(a launch would refuse this plan)"
  for a in "${ARMS[@]}"; do
    IFS='|' read -r n cfg ov <<< "$a"
    selected $n && echo "$n mem=${MEM[$n]:-} $cfg $ov"
  done
else
  echo "usage: learning.sh kit | launch LEFT_S | wait S | deadline UNIX | collect S | plan"; exit 2
fi
