cd /tmp/L/src; export PYTHONPATH=/tmp/site:/tmp/L/src
export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.247
python3 -m skillax.main --config configs/skill1_alfworld_learning.py --workdir /tmp/L/runs/skill1_sft --config.steps=0 --config.warmstart.save_dir=/tmp/L/ws/skill1 --config.env.workers=4 --config.train.micro_batch=16 --config.seed=0 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen --config.model.path=qwen2.5-coder-0.5b --config.model.batch_buckets=32\,64\,96\,128\,192\,256\,384\,512\,768\,1024 --config.model.sampler_memory_gb=8 > /tmp/L/logs/skill1_sft.log 2>&1
echo rc=$? >> /tmp/L/logs/skill1_sft.log
