cd /tmp/L/src; export PYTHONPATH=/tmp/site:/tmp/L/src
export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.12
python3 -m skillax.main --config configs/skill_alpha_alfworld_learning.py --workdir /tmp/L/runs/alpha_sft --config.steps=0 --config.warmstart.save_dir=/tmp/L/ws/alpha --config.eval.handwritten_dir=benchmarks/learning/handwritten_skills --config.model.sampler_memory_gb=5 > /tmp/L/logs/alpha_sft.log 2>&1
echo rc=$? >> /tmp/L/logs/alpha_sft.log
