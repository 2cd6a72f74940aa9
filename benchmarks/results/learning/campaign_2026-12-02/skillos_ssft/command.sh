cd /tmp/L/src; export PYTHONPATH=/tmp/site:/tmp/L/src
export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.24
python3 -m skillax.main --config configs/skillos_alfworld_learning.py --workdir /tmp/L/runs/skillos_ssft --config.steps=0 --config.warmstart.save_dir=/tmp/L/ws/skillos_s --config.eval.handwritten_dir=benchmarks/learning/teacher_skills --config.eval.conditions=no_memory\,handwritten\,curated --config.sft.play_search=True --config.sft.play_tasks=0 --config.sft.play_skill_fraction=0.7 --config.sft.play_relevant_share=0.7 --config.sft.play_skill_games=8 --config.sft.play_steps=240 --config.model.path=qwen2.5-coder-0.5b --config.model.sampler_memory_gb=5 > /tmp/L/logs/skillos_ssft.log 2>&1
echo rc=$? >> /tmp/L/logs/skillos_ssft.log
