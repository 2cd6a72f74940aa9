cd /tmp/L/src; export PYTHONPATH=/tmp/site:/tmp/L/src
export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.15
python3 -m skillax.main --config configs/skillos_alfworld_learning.py --workdir /tmp/L/runs/skillos_qgap --config.steps=0 --config.eval.handwritten_dir=benchmarks/learning/handwritten_skills --config.eval.conditions=no_memory\,handwritten --config.sft.play_families=pick_and_place_simple\,look_at_obj_in_light\,pick_two_obj_and_place --config.model.path=qwen2.5-coder-0.5b --config.train_until_file=/tmp/L/deadline --config.max_train_minutes=20 --config.model.sampler_memory_gb=5 > /tmp/L/logs/skillos_qgap.log 2>&1
echo rc=$? >> /tmp/L/logs/skillos_qgap.log
