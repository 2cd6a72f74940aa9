cd /tmp/L/src; export PYTHONPATH=/tmp/site:/tmp/L/src
export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.17
python3 -m skillax.main --config configs/skill_alpha_alfworld_learning.py --workdir /tmp/L/runs/alpha_qsft --config.steps=0 --config.warmstart.save_dir=/tmp/L/ws/alpha_q --config.eval.handwritten_dir=benchmarks/learning/handwritten_skills --config.model.path=qwen2.5-coder-0.5b --config.model.sampler_memory_gb=5 > /tmp/L/logs/alpha_qsft.log 2>&1
echo rc=$? >> /tmp/L/logs/alpha_qsft.log
