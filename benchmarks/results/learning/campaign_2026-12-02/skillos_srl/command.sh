cd /tmp/L/src; export PYTHONPATH=/tmp/site:/tmp/L/src
export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.30
python3 -m skillax.main --config configs/skillos_alfworld_learning.py --workdir /tmp/L/runs/skillos_srl --config.warmstart.load_dir=/tmp/L/ws/skillos_s --config.warmstart.wait_s=900 --config.model.path=qwen2.5-coder-0.5b --config.train_until_file=/tmp/L/deadline --config.max_train_minutes=20 --config.model.sampler_memory_gb=5 > /tmp/L/logs/skillos_srl.log 2>&1
echo rc=$? >> /tmp/L/logs/skillos_srl.log
