set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site devrun/whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u) > $OUT/0_env.txt 2>&1
timeout 170 python3 benchmarks/bench_moe.py devrun/moe_sm90.py --reps 20 --baseline-reps 1 > $OUT/bench_moe.txt 2>&1; echo "rc $?" >> $OUT/bench_moe.txt
date -u >> $OUT/0_env.txt
timeout 100 python3 -m submitgen bench devrun/mla_sm90.py --shapes benchmark --iters 20 > $OUT/bench_mla.txt 2>&1; echo "rc $?" >> $OUT/bench_mla.txt
date -u >> $OUT/0_env.txt
timeout 180 python3 -m submitgen test devrun/moe_sm90.py --shapes all > $OUT/test_moe.txt 2>&1; echo "rc $?" >> $OUT/test_moe.txt
date -u >> $OUT/0_env.txt
timeout 120 python3 -m submitgen test devrun/mla_sm90.py --shapes all > $OUT/test_mla.txt 2>&1; echo "rc $?" >> $OUT/test_mla.txt
date -u >> $OUT/0_env.txt
