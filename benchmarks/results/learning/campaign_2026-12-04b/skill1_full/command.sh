cd /tmp/L/src; export PYTHONPATH=/tmp/site:/tmp/L/src
export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.32
python3 -m skillax.main --config configs/skill1_alfworld_learning.py --workdir /tmp/L/runs/skill1_full --config.warmstart.load_dir=/tmp/L/ws/skill1 --config.warmstart.wait_s=900 --config.env.workers=7 --config.train.micro_batch=16 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen --config.model.path=qwen2.5-coder-0.5b --config.train_until_file=/tmp/L/deadline --config.max_train_minutes=20 --config.steps=30 --config.model.sampler_memory_gb=8 > /tmp/L/logs/skill1_full.log 2>&1
echo rc=$? >> /tmp/L/logs/skill1_full.log
